// Shared by the vendor-library tests (vendor_libs_nvml_test.cc, vendor_libs_dcmi_hydmi_test.cc):
// where the fake libraries and the host fixtures are, a fixture with one member changed, and
// checks of how a library loaded. Needs XPU_FAKE_LIB_DIR (xpu_fake_vendor_test). For tests only.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_TESTING_VENDOR_LIBS_CHECKS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_TESTING_VENDOR_LIBS_CHECKS_H_

#include <dlfcn.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery::testing {

inline const std::string kFakeDir = XPU_FAKE_LIB_DIR;
inline const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

// True when a real `file` is on the loader path: then "no library anywhere" cannot be tested.
inline bool RealLibraryOnLoaderPath(const char* file) {
  void* h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

// The fake library's fixture `fixture` with the member `key` set to the JSON `value`, written to
// `dir`; its path.
inline std::string FixtureWith(const std::string& fixture, const std::string& key,
                               const std::string& value, const xpu::testing::TempDir& dir) {
  std::ifstream in(fixture);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"" + key + "\": ");
  REQUIRE(at != std::string::npos);
  const size_t start = at + key.size() + 4;
  const size_t end = text.find_first_of(",\n}", start);
  text.replace(start, end - start, value);
  std::string path = dir.path() + "/" + key + ".json";
  std::ofstream(path) << text;
  return path;
}

// Points the fake library's variable `env` at the host's fixture `file` with `key` set to
// `value` (FixtureWith).
inline void UseFixtureWith(const char* env, const std::string& file, const std::string& key,
                           const std::string& value, const xpu::testing::TempDir& dir) {
  setenv(env, FixtureWith(kHosts + file, key, value, dir).c_str(), 1);
}

// The fake library's variable `env` pointed at `host`'s fixture `file`, then `probe` (ProbeNvml,
// ProbeDcmi, ...) over the fake libraries' folder; when `count` is given, the library must load
// and `count_of` (the facts' devices) must find that many.
template <typename Facts, typename CountOf>
Facts ProbeHost(const char* env, const std::string& host, const char* file,
                Facts (*probe)(const std::vector<std::string>&), std::optional<size_t> count,
                CountOf count_of) {
  setenv(env, (kHosts + host + "/fake-vendor/" + file).c_str(), 1);
  Facts facts = probe({kFakeDir});
  if (count) {
    REQUIRE(facts.library.loaded);
    REQUIRE(count_of(facts) == *count);
  }
  return facts;
}

// NVML of `host`'s fixture; with `devices`, it must load and find that many GPUs.
inline NvmlFacts Nvml(const std::string& host, std::optional<size_t> devices = std::nullopt) {
  return ProbeHost("XPU_FAKE_NVML_JSON", host, "nvml.json", &ProbeNvml, devices,
                   [](const NvmlFacts& f) { return f.devices.size(); });
}
inline NvmlFacts LoadedNvml(const std::string& host, size_t devices) { return Nvml(host, devices); }

// DCMI of `host`'s fixture; with `chips`, it must load and find that many chips.
inline DcmiFacts Dcmi(const std::string& host, std::optional<size_t> chips = std::nullopt) {
  return ProbeHost("XPU_FAKE_DCMI_JSON", host, "dcmi.json", &ProbeDcmi, chips,
                   [](const DcmiFacts& f) { return f.chips.size(); });
}
inline DcmiFacts LoadedDcmi(const std::string& host, size_t chips) { return Dcmi(host, chips); }

// `library` loaded from `path` with every symbol and no error.
inline void RequireLoaded(const LibraryStatus& library, const std::string& name,
                          const std::string& path) {
  INFO(library.error);
  REQUIRE(library.loaded);
  CHECK(library.name == name);
  CHECK(library.path == path);
  CHECK(library.error.empty());
  CHECK(library.missing_symbols.empty());
}

// `library` was found but did not load: its init failed with `error`.
inline void CheckInitFailed(const LibraryStatus& library, const std::string& error) {
  CHECK_FALSE(library.loaded);
  CHECK(library.error == error);
}

}  // namespace xpu::discovery::testing

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_TESTING_VENDOR_LIBS_CHECKS_H_
