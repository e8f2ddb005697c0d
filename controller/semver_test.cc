#include "controller/semver.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace xpu::controller {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("ValidateVersionRange accepts comparators and names a bad one") {
  for (const char* ok : {">=535.0.0 <600.0.0", ">=535.0.0,<600.0.0", ">=535.0.0, <600.0.0",
                         "=24.1.0", ">= 8.0.0", "<=1.2.3-rc.1+build.5", ">0.0.0", "  <1.0.0  "}) {
    INFO(ok);
    CHECK(ValidateVersionRange(ok).ok());
  }
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "empty version range"},
      {" , ", "empty version range"},
      {"535.0.0", "comparator \"535.0.0\": expected one of >=, >, <=, <, ="},
      {"==1.0.0", "comparator \"==1.0.0\": expected one of"},
      {"=>1.0.0", "comparator \"=>1.0.0\": expected one of"},
      {">=", "comparator \">=\": missing version"},
      {">=1.0.0 <", "comparator \"<\": missing version"},
      {">=1.0",
       "comparator \">=1.0\": \"1.0\" is not a semantic version (expected "
       "MAJOR.MINOR.PATCH)"},
      {">=v1.0.0", "\"v1.0.0\" is not a semantic version"},
      {">=01.0.0", "leading zero in \"01\""},
      {">=1.0.0-01", "leading zero in pre-release identifier \"01\""},
      {">=1.0.0-", "bad pre-release"},
      {">=1.0.0-rc..1", "bad pre-release"},
      {">=1.0.0+", "bad build metadata"},
      {">=1.0.0_rc1", "is not a semantic version"},
      {">=99999999999999999999.0.0", "number too large"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    const Status status = ValidateVersionRange(c.text);
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.message(), Contains(c.message));
  }
}

TEST_CASE("InRange compares with semver precedence") {
  struct Case {
    std::string range;
    std::string version;
    bool in;
  };
  const std::vector<Case> cases = {
      {">=535.0.0 <600.0.0", "535.0.0", true},
      {">=535.0.0 <600.0.0", "550.54.15", true},
      {">=535.0.0 <600.0.0", "525.60.13", false},
      {">=535.0.0 <600.0.0", "600.0.0", false},
      {">=535.0.0,<600.0.0", "599.99.99", true},
      {">535.0.0", "535.0.0", false},
      {">535.0.0", "535.0.1", true},
      {"<=12.2.0", "12.2.0", true},
      {"<12.2.0", "12.2.0", false},
      {"=24.1.0", "24.1.0", true},
      {"=24.1.0", "24.1.1", false},
      // Build metadata is ignored.
      {"=24.1.0", "24.1.0+build.7", true},
      {"=24.1.0+a", "24.1.0+b", true},
      // A pre-release orders before its release and after the previous one.
      {">=24.1.0", "24.1.0-rc2", false},
      {"<24.1.0", "24.1.0-rc2", true},
      {">=24.0.0", "24.1.0-rc2", true},
      {">=8.0.0-rc3", "8.0.0-rc3", true},
      {">=8.0.0-rc3", "8.0.0", true},
      // Pre-release precedence (semver.org §11): 1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta
      // < 1.0.0-beta < 1.0.0-beta.2 < 1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0.
      {"<1.0.0-alpha.1", "1.0.0-alpha", true},
      {"<1.0.0-alpha.beta", "1.0.0-alpha.1", true},
      {"<1.0.0-beta", "1.0.0-alpha.beta", true},
      {"<1.0.0-beta.2", "1.0.0-beta", true},
      {"<1.0.0-beta.11", "1.0.0-beta.2", true},
      {"<1.0.0-rc.1", "1.0.0-beta.11", true},
      {"<1.0.0", "1.0.0-rc.1", true},
      {">1.0.0-beta.11", "1.0.0-beta.2", false},
      {">1.0.0-rc.1", "1.0.0-rc.1", false},
      // Numeric fields compare as numbers, not text.
      {">=10.0.0", "9.99.99", false},
      {">=1.10.0", "1.9.0", false},
      {">=1.0.0-rc.10", "1.0.0-rc.9", false},
      // Not semver, or a bad range: never in range.
      {">=1.0.0", "1.0", false},
      {">=1.0.0", "v1.0.0", false},
      {">=1.0.0", "", false},
      {">=1.0", "2.0.0", false},
  };
  for (const auto& c : cases) {
    INFO(c.range << " ∋ " << c.version);
    CHECK(InRange(VersionRange{c.range}, c.version) == c.in);
  }
}

}  // namespace
}  // namespace xpu::controller
