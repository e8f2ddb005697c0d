#include "kubeletplugin/discovery/versions.h"

#include <catch2/catch.hpp>

namespace xpu::discovery {
namespace {

TEST_CASE("vendor versions normalise to semver") {
  const struct {
    const char* reported;
    const char* semver;  // "": not a version
  } kCases[] = {
      {"24.1.rc2", "24.1.0-rc2"},
      {"8.0.RC3", "8.0.0-rc3"},
      {"7.5.0.1.220", "7.5.0"},
      {"580.159.04", "580.159.4"},
      {"570.158.01", "570.158.1"},
      {"23.0.0", "23.0.0"},
      {"6.3.8-V1.5.2", "6.3.8-v1.5.2"},
      {"24.04.2", "24.4.2"},
      {"neuware 3.15.3", "3.15.3"},
      {"TopsRider 3.2.109\n", "3.2.109"},
      {"12", "12.0.0"},
      {"1.2.3+build5", "1.2.3"},
      {"", ""},
      {"unknown", ""},
      {"v", ""},
  };
  for (const auto& c : kCases) {
    INFO(c.reported);
    CHECK(NormalizeSemver(c.reported) == c.semver);
  }
}

}  // namespace
}  // namespace xpu::discovery
