// Where a fake vendor library finds its answers: the file named by an environment variable, else
// the fixture of the host root it was loaded from. A fixture host links the library's real file
// name (usr/lib/<arch>/libnvidia-ml.so.1, usr/local/Ascend/driver/lib64/driver/libdcmi.so) to
// the build tree's fake, so a plugin that searches the host root's library folders loads it; the
// fake then answers from <host root>/fake-vendor/<file>, found by walking up from the path it was
// loaded by. Header-only: each fake is a shared library of its own.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_TESTING_FIXTURE_JSON_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_TESTING_FIXTURE_JSON_H_

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace xpu::discovery::testing {

// `anchor`: any function of the calling library (dladdr names the file it came from).
inline std::string FixtureJsonPath(const char* env_var, const char* file, void* anchor) {
  const char* env = std::getenv(env_var);
  if (env != nullptr && *env != '\0') return env;
  Dl_info info{};
  if (dladdr(anchor, &info) == 0 || info.dli_fname == nullptr) return "";
  std::string dir = info.dli_fname;
  for (int up = 0; up < 8; ++up) {
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    dir.resize(slash);
    std::string candidate = dir + "/fake-vendor/" + file;
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace xpu::discovery::testing

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_TESTING_FIXTURE_JSON_H_
