#include "kubeletplugin/discovery/versions.h"

#include <catch2/catch.hpp>

namespace xpu::discovery {
namespace {

TEST_CASE("vendor versions normalise to semver") {
  CHECK(NormalizeSemver("24.1.rc2") == "24.1.0-rc2");
  CHECK(NormalizeSemver("8.0.RC3") == "8.0.0-rc3");
  CHECK(NormalizeSemver("7.5.0.1.220") == "7.5.0");
  CHECK(NormalizeSemver("580.159.04") == "580.159.4");
  CHECK(NormalizeSemver("570.158.01") == "570.158.1");
  CHECK(NormalizeSemver("23.0.0") == "23.0.0");
  CHECK(NormalizeSemver("6.3.8-V1.5.2") == "6.3.8-v1.5.2");
  CHECK(NormalizeSemver("24.04.2") == "24.4.2");
  CHECK(NormalizeSemver("neuware 3.15.3") == "3.15.3");
  CHECK(NormalizeSemver("TopsRider 3.2.109\n") == "3.2.109");
  CHECK(NormalizeSemver("12") == "12.0.0");
  CHECK(NormalizeSemver("1.2.3+build5") == "1.2.3");
  CHECK(NormalizeSemver("").empty());
  CHECK(NormalizeSemver("unknown").empty());
  CHECK(NormalizeSemver("v").empty());
}

}  // namespace
}  // namespace xpu::discovery
