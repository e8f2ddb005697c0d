#include "base/flags.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"

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

struct Options {
  std::string name;
  std::chrono::milliseconds period{1000};
  bool on = false;
  int count = 0;
  std::vector<std::string> items;
};

std::vector<Flag> Table(Options* o) {
  return {{"--name", "NAME", "a name", StringFlag(&o->name)},
          {"--period", "DURATION", "how often\n(default 1s)", DurationFlag(&o->period)},
          {"--on", "BOOL", "on or off", BoolFlag(&o->on)},
          {"--a-rather-long-count", "N", "how many", IntFlag(&o->count, 0, 9)},
          {"--item", "X", "repeatable", ValueFlag([o](const std::string& v) {
             o->items.push_back(v);
             return OkStatus();
           })}};
}

TEST_CASE("flag table: parses into the options, stops at --help, names bad flags") {
  Options o;
  auto help = ParseFlagTable({"--name", "n", "--period=2s", "--on", "true", "--a-rather-long-count",
                              "3", "--item", "x", "--item=y"},
                             Table(&o));
  REQUIRE_OK(help);
  CHECK_FALSE(*help);
  CHECK(o.name == "n");
  CHECK(o.period == std::chrono::seconds(2));
  CHECK(o.on);
  CHECK(o.count == 3);
  CHECK(o.items == std::vector<std::string>{"x", "y"});

  Options h;
  CHECK(*ParseFlagTable({"--name", "n", "-h", "--bogus"}, Table(&h)));
  CHECK(h.name == "n");

  Options bad;
  CHECK(ParseFlagTable({"--bogus"}, Table(&bad)).status().message() == "unknown flag --bogus");
  CHECK(ParseFlagTable({"--on", "yes"}, Table(&bad)).status().message() ==
        "parse flag --on: want true or false, got yes");
  CHECK(ParseFlagTable({"--a-rather-long-count", "10"}, Table(&bad)).status().message() ==
        "parse flag --a-rather-long-count: 10 is outside [0, 9]");
  CHECK(ParseFlagTable({"--name"}, Table(&bad)).status().message() ==
        "parse flag --name: needs a value");
}

TEST_CASE("flag table: usage lines align the help, continuation lines under it") {
  Options o;
  CHECK(FlagTableUsage(Table(&o), 22) ==
        "  --name NAME           a name\n"
        "  --period DURATION     how often\n"
        "                        (default 1s)\n"
        "  --on BOOL             on or off\n"
        "  --a-rather-long-count N  how many\n"
        "  --item X              repeatable\n"
        "  --help                print this help\n");
}

TEST_CASE("flag table: the shared daemon rows parse into their fields") {
  std::string level;
  std::string kubeconfig;
  std::string driver;
  const std::vector<Flag> table = {LogLevelFlag(&level), KubeconfigFlag(&kubeconfig),
                                   DriverNameFlag(&driver)};
  auto help = ParseFlagTable(
      {"--log-level", "debug", "--kubeconfig=/etc/kc", "--driver-name", "gpu.example.com"}, table);
  REQUIRE_OK(help);
  CHECK_FALSE(*help);
  CHECK(level == "debug");
  CHECK(kubeconfig == "/etc/kc");
  CHECK(driver == "gpu.example.com");
  const std::string usage = FlagTableUsage(table, 24);
  CHECK(usage.find("--kubeconfig FILE") != std::string::npos);
  CHECK(usage.find("$KUBECONFIG") != std::string::npos);
}

}  // namespace
}  // namespace xpu
