#include "base/stop.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

namespace xpu {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

TEST_CASE("a stop flag is set once: Set says whether this call set it") {
  StopFlag stop;
  CHECK_FALSE(stop.IsSet());
  CHECK(stop.Set());
  CHECK(stop.IsSet());
  CHECK_FALSE(stop.Set());  // already set
  CHECK(stop.IsSet());
}

TEST_CASE("a wait on an unset flag lasts its time and reads false") {
  StopFlag stop;
  const Steady::time_point t0 = Steady::now();
  CHECK_FALSE(stop.WaitFor(milliseconds(20)));
  CHECK(Steady::now() - t0 >= milliseconds(20));
  CHECK_FALSE(stop.WaitFor(milliseconds(0)));
  CHECK_FALSE(stop.WaitFor(milliseconds(-5)));
}

TEST_CASE("a set flag ends every wait at once, those begun before the Set and after it") {
  StopFlag stop;
  std::vector<std::thread> sleepers;
  std::atomic<int> woken{0};
  for (int i = 0; i < 4; ++i) {
    sleepers.emplace_back([&] {
      if (stop.WaitFor(hours(1))) ++woken;  // an hour unless the Set wakes it
    });
  }
  const Steady::time_point t0 = Steady::now();
  stop.Set();
  for (std::thread& t : sleepers) t.join();
  CHECK(woken == 4);
  CHECK(Steady::now() - t0 < std::chrono::minutes(1));
  CHECK(stop.WaitFor(hours(1)));  // already set: returns at once
}

}  // namespace
}  // namespace xpu
