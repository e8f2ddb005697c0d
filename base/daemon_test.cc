#include "base/daemon.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>

namespace xpu {
namespace {

TEST_CASE("SIGTERM sets the daemon's stop, and a flood of later signals never blocks") {
  const StopFlag& stop = StopOnSignals();
  CHECK_FALSE(stop.IsSet());
  REQUIRE(std::raise(SIGTERM) == 0);
  CHECK(stop.WaitFor(std::chrono::minutes(1)));  // set by the signal thread, not by a timeout
  // Nobody reads the pipe any more: more signals than it holds (64 KiB) are dropped, and the
  // handler returns each time.
  int failed = 0;
  for (int i = 0; i < 70'000; ++i) failed += std::raise(SIGINT) != 0 ? 1 : 0;
  CHECK(failed == 0);
  CHECK(stop.IsSet());
}

}  // namespace
}  // namespace xpu
