// Hardware discovery (kubeletplugin/discovery/discovery.h) over a host tree the input edits: the
// fixture host roots of e2e/fixtures/hosts/ are copied once into a scratch directory (under
// $XPU_FUZZ_SCRATCH, else /dev/shm when there is one), each input rewrites, adds or removes files
// there, discovery runs on the result, and the edits are undone. The input is a list of directives,
// each a line that starts with "%% ", the content of a file following its directive line:
//
//   %% host atlas800t-a2                 (the fixture to start from; default: the first)
//   %% file etc/hccn.conf                (the lines up to the next directive are the content)
//   address_0=192.168.100.101
//   %% remove sys/bus/pci/devices/0000:19:00.0
//
// Paths are relative to the host root and may not contain "." or "..": edits stay inside the copy
// (writing through the fixture's own sysfs links included). Vendor libraries are not probed.
//
// Invariant: discovery succeeds (host problems are conditions, not errors), which includes its
// own check that the inventory passes api::ValidateNodeInventory. (The inventory codec's round
// trip is api_objects' work; here it would halve the speed.)
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "kubeletplugin/discovery/discovery.h"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDirective = "%% ";
constexpr size_t kMaxEdits = 32;

// The fixture trees, and their scratch copies (made on first use, removed at exit).
class Hosts {
 public:
  Hosts() : fixtures_(fs::path(XPU_SOURCE_DIR) / "e2e/fixtures/hosts") {
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(fixtures_, ec)) {
      if (entry.is_directory(ec)) names_.push_back(entry.path().filename().string());
    }
    std::sort(names_.begin(), names_.end());
    const char* scratch = std::getenv("XPU_FUZZ_SCRATCH");  // scripts/fuzz sets it
    const fs::path base = scratch != nullptr                 ? fs::path(scratch)
                          : fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm")
                                                             : fs::temp_directory_path();
    std::string dir = (base / "xpu-fuzz-discovery-XXXXXX").string();
    FUZZ_CHECK(::mkdtemp(dir.data()) != nullptr, dir);
    scratch_ = dir;
  }
  ~Hosts() {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
  Hosts(const Hosts&) = delete;
  Hosts& operator=(const Hosts&) = delete;

  const std::string& DefaultName() const { return names_.front(); }
  fs::path Fixture(const std::string& name) const { return fixtures_ / name; }
  // The scratch copy of fixture `name`; empty for an unknown name.
  fs::path Copy(const std::string& name) {
    if (std::find(names_.begin(), names_.end(), name) == names_.end()) return {};
    fs::path copy = scratch_ / name;
    if (copied_.insert(name).second) {
      fs::copy(Fixture(name), copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
    return copy;
  }

 private:
  fs::path fixtures_;
  fs::path scratch_;
  std::vector<std::string> names_;
  std::set<std::string> copied_;
};

Hosts& TheHosts() {
  static Hosts hosts;  // destroyed at exit, which removes the scratch copies
  return hosts;
}

// A path the input may edit: relative, without "." or "..", and without NUL (the system calls
// would stop there: "sys/bus/pci/<NUL>/x" names sys/bus/pci, and undoing an edit of it copied the
// fixture's directory into itself until memory ran out).
bool SafePath(const fs::path& path) {
  if (path.empty() || path.is_absolute()) return false;
  if (path.native().find('\0') != std::string::npos) return false;
  for (const fs::path& part : path) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

// Applies edits to a copy and undoes them, in reverse order, when destroyed: a touched path is
// removed and copied back from the fixture (when it had it); a directory the edits created is
// removed once empty.
class Edits {
 public:
  Edits(fs::path fixture, fs::path root) : fixture_(std::move(fixture)), root_(std::move(root)) {}
  ~Edits() {
    std::error_code ec;
    for (auto it = log_.rbegin(); it != log_.rend(); ++it) {
      const fs::path at = root_ / it->path;
      if (it->created_dir) {
        if (fs::is_empty(at, ec)) fs::remove(at, ec);
        continue;
      }
      fs::remove_all(at, ec);
      if (fs::exists(fs::symlink_status(fixture_ / it->path, ec))) {
        fs::copy(fixture_ / it->path, at,
                 fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
      }
    }
  }
  Edits(const Edits&) = delete;
  Edits& operator=(const Edits&) = delete;

  void Write(const fs::path& path, std::string_view content) {
    std::error_code ec;
    const fs::path at = root_ / path;
    if (fs::is_directory(fs::symlink_status(at, ec))) return;
    fs::path parent;
    for (const fs::path& part : path.parent_path()) {
      parent /= part;
      if (fs::exists(fs::symlink_status(root_ / parent, ec))) continue;
      if (!fs::create_directory(root_ / parent, ec)) return;
      log_.push_back({parent, true});
    }
    log_.push_back({path, false});
    // A link (to a file or a directory) is replaced, so that undoing restores what it named.
    if (fs::is_symlink(fs::symlink_status(at, ec))) fs::remove(at, ec);
    std::ofstream(at, std::ios::binary | std::ios::trunc) << content;
  }

  void Remove(const fs::path& path) {
    std::error_code ec;
    log_.push_back({path, false});
    fs::remove_all(root_ / path, ec);
  }

 private:
  struct Entry {
    fs::path path;
    bool created_dir;
  };
  fs::path fixture_;
  fs::path root_;
  std::vector<Entry> log_;
};

// One directive: "host NAME", "file PATH" (with content) or "remove PATH".
struct Directive {
  std::string_view verb;
  std::string_view arg;
  std::string_view content;
};

std::vector<Directive> ParseDirectives(std::string_view input) {
  std::vector<Directive> out;
  if (!input.starts_with(kDirective)) return out;
  for (std::string_view block : xpu::fuzz::Split(input.substr(kDirective.size()),
                                                 "\n" + std::string(kDirective), kMaxEdits + 1)) {
    const std::vector<std::string_view> lines = xpu::fuzz::Split(block, "\n", 2);
    const std::vector<std::string_view> words = xpu::fuzz::Split(lines[0], " ", 2);
    out.push_back({words[0], words.size() > 1 ? words[1] : "", lines.size() > 1 ? lines[1] : ""});
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Directive> directives = ParseDirectives(xpu::fuzz::AsText(data, size));
  Hosts& hosts = TheHosts();
  std::string host = hosts.DefaultName();
  if (!directives.empty() && directives.front().verb == "host") host = directives.front().arg;
  const fs::path root = hosts.Copy(host);
  if (root.empty()) return 0;

  std::optional<xpu::StatusOr<xpu::api::NodeInventory>> result;
  {
    Edits edits(hosts.Fixture(host), root);
    for (const Directive& d : directives) {
      const fs::path path(d.arg);
      if (!SafePath(path)) continue;
      if (d.verb == "file") edits.Write(path, d.content);
      if (d.verb == "remove") edits.Remove(path);
    }
    xpu::discovery::DiscoveryOptions options;
    options.host_root = root.string();
    options.now = "2026-01-01T00:00:00Z";
    options.probe_vendor_libraries = false;
    result = xpu::discovery::Discover(options);
  }
  // Discover checks its result with api::ValidateNodeInventory and fails when it is invalid.
  FUZZ_CHECK(result->ok(), result->status().ToString());
  return 0;
}
