// The main of the fuzz_replay_<name> programs: runs a fuzz target's LLVMFuzzerTestOneInput once on
// every file named on the command line or found (sorted, recursively) in a directory named there,
// without libFuzzer, so that any compiler builds it and the unit tier replays the corpora in
// fuzz/corpus/ (under the sanitizers in the ASan build). A crash or broken invariant aborts; a
// missing path, an unreadable file or no input at all is exit status 1.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// The files of `path`: itself, or the regular files below it in name order.
bool CollectInputs(const fs::path& path, std::vector<fs::path>* out) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    out->push_back(path);
    return true;
  }
  if (!fs::is_directory(path, ec)) {
    std::fprintf(stderr, "replay: %s: not a file or directory\n", path.c_str());
    return false;
  }
  std::vector<fs::path> found;
  for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) found.push_back(it->path());
  }
  if (ec) {
    std::fprintf(stderr, "replay: list %s: %s\n", path.c_str(), ec.message().c_str());
    return false;
  }
  std::sort(found.begin(), found.end());
  out->insert(out->end(), found.begin(), found.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 1;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!CollectInputs(argv[i], &inputs)) return 1;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  size_t bytes = 0;
  for (const fs::path& input : inputs) {
    std::fprintf(stderr, "replay: %s\n", input.c_str());  // unbuffered: names the input of a crash
    std::ifstream in(input, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "replay: read %s failed\n", input.c_str());
      return 1;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    bytes += data.size();
  }
  std::printf("replay: ran %zu inputs (%zu bytes)\n", inputs.size(), bytes);
  return 0;
}
