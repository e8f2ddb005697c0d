#include "base/flags.h"

#include <catch2/catch.hpp>

namespace xpu {
namespace {

TEST_CASE("durations: units, bare seconds, errors name the flag") {
  using std::chrono::milliseconds;
  CHECK(*ParseDuration("--x", "500ms") == milliseconds(500));
  CHECK(*ParseDuration("--x", "5s") == milliseconds(5000));
  CHECK(*ParseDuration("--x", "5") == milliseconds(5000));
  CHECK(*ParseDuration("--x", "2m") == milliseconds(120'000));
  CHECK(*ParseDuration("--x", "1h") == milliseconds(3'600'000));
  CHECK(ParseDuration("--x", "soon").status().message() ==
        "parse flag --x: \"soon\" is not a duration");
  CHECK(ParseDuration("--x", "5d").status().message() ==
        "parse flag --x: \"5d\" has an unknown unit (ms, s, m, h)");
  CHECK(ParseDuration("--x", "0s").status().message() == "parse flag --x: must be positive");
  CHECK(ParseDuration("--x", "9223372036854775807h").status().message() ==
        "parse flag --x: too large");
}

TEST_CASE("flag reader: both value forms, help, unknown and missing values") {
  FlagReader f({"--a", "1", "--b=two", "--n", "7", "--d=250ms", "--zz"});
  REQUIRE(f.Next());
  CHECK(f.Is("--a"));
  CHECK(*f.Value() == "1");
  REQUIRE(f.Next());
  CHECK(f.Is("--b"));
  CHECK(*f.Value() == "two");
  REQUIRE(f.Next());
  CHECK(*f.Int(0, 10) == 7);
  REQUIRE(f.Next());
  CHECK(f.Duration()->count() == 250);
  REQUIRE(f.Next());
  CHECK(f.Unknown().message() == "unknown flag --zz");
  CHECK(f.Value().status().message() == "parse flag --zz: needs a value");
  CHECK_FALSE(f.Next());
  CHECK_FALSE(f.help());

  FlagReader h({"--a", "1", "--help", "--b"});
  REQUIRE(h.Next());
  CHECK(*h.Value() == "1");
  CHECK_FALSE(h.Next());
  CHECK(h.help());

  FlagReader bad({"--n=x", "--n=11"});
  REQUIRE(bad.Next());
  CHECK(bad.Int(0, 10).status().message() == "parse flag --n: \"x\" is not an integer");
  REQUIRE(bad.Next());
  CHECK(bad.Int(0, 10).status().message() == "parse flag --n: 11 is outside [0, 10]");
}

}  // namespace
}  // namespace xpu
