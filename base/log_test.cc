#include "base/log.h"

#include <catch2/catch.hpp>
#include <sstream>

namespace xpu {
namespace {

TEST_CASE("log writes key=value lines at or above its level", "[log]") {
  std::ostringstream out;
  Logger log(out, "info");
  log.Debug("hidden");
  log.Info("node n1: \"quoted\"\nsecond line");
  log.Error("boom");
  const std::string text = out.str();
  CHECK(text.find("hidden") == std::string::npos);
  CHECK(text.find(" level=info msg=\"node n1: \\\"quoted\\\" second line\"\n") !=
        std::string::npos);
  CHECK(text.find(" level=error msg=\"boom\"\n") != std::string::npos);
  CHECK(text.rfind("time=", 0) == 0);
  CHECK(Logger::IsLevel("warning"));
  CHECK_FALSE(Logger::IsLevel("verbose"));
}

TEST_CASE("the --log-level check names the flag and the levels") {
  CHECK(Logger::CheckLevelFlag("debug").ok());
  CHECK(Logger::CheckLevelFlag("loud").message() ==
        "--log-level: \"loud\" is not error, warning, info or debug");
}

}  // namespace
}  // namespace xpu
