// Time as the daemons read it, behind one small interface, so that what depends on it (lease
// expiry, backoff, delayed re-checks) is tested by moving a fake clock instead of sleeping.
//
//   Clock& clock = RealClock();          // production: steady_clock and system_clock
//   FakeClock fake;                      // tests: moves only when told
//   fake.Advance(std::chrono::seconds(13));
//
// Now() is monotonic (for durations and deadlines); WallNow() is the calendar time written into
// objects (a Lease's renewTime). Sleep on a FakeClock advances it at once and returns.
#ifndef XPU_BASE_CLOCK_H_
#define XPU_BASE_CLOCK_H_

#include <chrono>

#include "base/mutex.h"
#include "base/stop.h"

namespace xpu {

class Clock {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual SteadyTime Now() const = 0;
  virtual WallTime WallNow() const = 0;
  // Waits `d`, or less once `stop` is set (the real clock wakes at its Set()).
  virtual void Sleep(std::chrono::nanoseconds d, const StopFlag& stop) = 0;
};

// The process's clocks. Thread-safe; lives as long as the process.
Clock& RealClock();

// A clock that moves only by Advance or Sleep. Thread-safe. It starts one hour after the steady
// epoch, so a default-constructed SteadyTime reads as long ago, and at `wall_start` on the
// calendar.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime wall_start = WallTime(std::chrono::seconds(1'767'225'600)));

  SteadyTime Now() const override;
  WallTime WallNow() const override;
  // Advances by `d` and returns at once, stopped or not.
  void Sleep(std::chrono::nanoseconds d, const StopFlag& stop) override;

  void Advance(std::chrono::nanoseconds d);

 private:
  const WallTime wall_start_;
  mutable Mutex mu_;
  std::chrono::nanoseconds elapsed_ GUARDED_BY(mu_){0};
};

// A periodic timer read off a clock, for loops that do several things each on its own period:
//
//   Ticker probe(clock, 30s);                  // first due one period from now
//   Ticker gc(clock, 5min, Ticker::kAtOnce);   // first due at once
//   while (!stop) {
//     if (probe.Due()) Probe();
//     if (gc.Due()) Collect();
//     clock.Sleep(std::min(probe.Left(), gc.Left()), stop);
//   }
//
// Due() is true once the due time has come, and re-arms the timer one period after that call.
// Not thread-safe: one loop owns it.
class Ticker {
 public:
  enum Start { kAfterPeriod, kAtOnce };
  Ticker(const Clock& clock, std::chrono::nanoseconds period, Start start = kAfterPeriod);

  bool Due();
  // Makes the next due time `in` from now (a loop's own schedule after an attempt, e.g. a retry).
  void DueIn(std::chrono::nanoseconds in);
  // How long until it is due (zero when it already is).
  std::chrono::nanoseconds Left() const;

 private:
  const Clock& clock_;
  const std::chrono::nanoseconds period_;
  Clock::SteadyTime next_;
};

}  // namespace xpu

#endif  // XPU_BASE_CLOCK_H_
