// Semantic versions: discovery's normalisation of vendor version strings
// (kubeletplugin/discovery/versions.h), the API's version attribute check (api/validation.h)
// and the controller's support-matrix ranges (controller/semver.h). The input is a range, a
// newline and a version (">=535.0.0 <600.0.0\n570.158.1"); the whole input is also a raw vendor
// version string.
//
// Invariants: a normalised version (from a raw string of at most 128 bytes, as discovery reads
// them) is empty or a valid version attribute, and normalising it again changes nothing; every
// valid version attribute is a version the controller can judge: it is >= 0.0.0-0, = itself and
// not < itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/validation.h"
#include "controller/semver.h"
#include "fuzz/fuzz_util.h"
#include "kubeletplugin/discovery/versions.h"

namespace {

// The longest raw version string discovery keeps (kubeletplugin/discovery/discovery.cc).
constexpr size_t kMaxRawVersion = 128;

bool Holds(const std::string& range, std::string_view version) {
  return xpu::controller::InRange(xpu::controller::VersionRange{range}, version);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = xpu::fuzz::AsText(data, size);
  if (input.size() <= kMaxRawVersion) {
    const std::string normalised = xpu::discovery::NormalizeSemver(input);
    if (!normalised.empty()) {
      const xpu::Status valid = xpu::api::ValidateVersionAttribute(normalised, "version");
      FUZZ_CHECK(valid.ok(), valid.ToString());
      FUZZ_CHECK(xpu::discovery::NormalizeSemver(normalised) == normalised, normalised);
    }
  }

  const std::vector<std::string_view> parts = xpu::fuzz::Split(input, "\n", 2);
  const std::string range(parts[0]);
  const std::string_view version = parts.size() == 2 ? parts[1] : parts[0];
  if (xpu::controller::ValidateVersionRange(range).ok()) (void)Holds(range, version);
  if (xpu::api::ValidateVersionAttribute(version, "version").ok()) {
    const std::string v(version);
    FUZZ_CHECK(Holds(">=0.0.0-0", v), v);
    FUZZ_CHECK(Holds("=" + v, v), v);
    FUZZ_CHECK(!Holds("<" + v, v), v);
  }
  return 0;
}
