#include "base/clock.h"

#include <catch2/catch.hpp>
#include <thread>

namespace xpu {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("a fake clock moves only when told, steady and wall time together") {
  FakeClock clock;
  const Clock::SteadyTime t0 = clock.Now();
  const Clock::WallTime w0 = clock.WallNow();
  CHECK(clock.Now() == t0);
  CHECK(t0 > Clock::SteadyTime{});  // "never" reads as long ago
  clock.Advance(seconds(13));
  CHECK(clock.Now() - t0 == seconds(13));
  CHECK(clock.WallNow() - w0 == seconds(13));
  clock.Advance(milliseconds(-5));  // time never runs backwards
  CHECK(clock.Now() - t0 == seconds(13));
}

TEST_CASE("sleeping on a fake clock advances it at once, stopped or not") {
  FakeClock clock;
  const Clock::SteadyTime t0 = clock.Now();
  StopFlag stop;
  clock.Sleep(seconds(3600), stop);
  CHECK(clock.Now() - t0 == seconds(3600));
  stop.Set();
  clock.Sleep(seconds(1), stop);
  CHECK(clock.Now() - t0 == seconds(3601));
}

TEST_CASE("the real clock's sleep lasts its time, and ends when the stop is set") {
  Clock& clock = RealClock();
  StopFlag stop;
  const Clock::SteadyTime t1 = clock.Now();
  clock.Sleep(milliseconds(20), stop);
  CHECK(clock.Now() - t1 >= milliseconds(20));
  std::thread stopper([&] { stop.Set(); });
  const Clock::SteadyTime t0 = clock.Now();
  clock.Sleep(seconds(3600), stop);  // woken by the Set, not after the hour
  stopper.join();
  CHECK(clock.Now() - t0 < seconds(60));
  clock.Sleep(seconds(3600), stop);  // already stopped: returns at once
  CHECK(clock.Now() - t0 < seconds(60));
  CHECK(clock.WallNow().time_since_epoch() > seconds(1'700'000'000));  // after 2023: a calendar
}

TEST_CASE("a ticker is due once per period, first after a period or at once") {
  FakeClock clock;
  Ticker later(clock, std::chrono::seconds(10));
  Ticker now(clock, std::chrono::seconds(10), Ticker::kAtOnce);
  CHECK(now.Due());
  CHECK_FALSE(now.Due());  // re-armed for 10 s from the call
  CHECK_FALSE(later.Due());
  CHECK(later.Left() == std::chrono::seconds(10));

  clock.Advance(std::chrono::milliseconds(9'999));
  CHECK_FALSE(later.Due());
  CHECK(later.Left() == std::chrono::milliseconds(1));
  clock.Advance(std::chrono::milliseconds(1));
  CHECK(later.Due());
  CHECK(now.Due());
  CHECK(later.Left() == std::chrono::seconds(10));

  // Late by 25 s: due once, not once per missed period.
  clock.Advance(std::chrono::seconds(35));
  CHECK(later.Left() == std::chrono::nanoseconds::zero());
  CHECK(later.Due());
  CHECK_FALSE(later.Due());
}

TEST_CASE("a ticker can be re-armed on its loop's own schedule") {
  FakeClock clock;
  Ticker retry(clock, std::chrono::minutes(1), Ticker::kAtOnce);
  REQUIRE(retry.Due());
  retry.DueIn(std::chrono::seconds(2));  // the attempt failed: retry sooner than the period
  CHECK(retry.Left() == std::chrono::seconds(2));
  clock.Advance(std::chrono::seconds(2));
  CHECK(retry.Due());
  CHECK(retry.Left() == std::chrono::minutes(1));  // back to the period
  retry.DueIn(std::chrono::seconds(0));
  CHECK(retry.Due());
}

}  // namespace
}  // namespace xpu
