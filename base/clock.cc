#include "base/clock.h"

#include <algorithm>

namespace xpu {
namespace {

constexpr std::chrono::hours kFakeSteadyStart{1};

class SystemClocks final : public Clock {
 public:
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
  void Sleep(std::chrono::nanoseconds d, const StopFlag& stop) override { stop.WaitFor(d); }
};

}  // namespace

Clock& RealClock() {
  static SystemClocks clocks;
  return clocks;
}

FakeClock::FakeClock(WallTime wall_start) : wall_start_(wall_start) {}

Clock::SteadyTime FakeClock::Now() const {
  MutexLock lock(mu_);
  return SteadyTime(kFakeSteadyStart) + elapsed_;
}

Clock::WallTime FakeClock::WallNow() const {
  MutexLock lock(mu_);
  return wall_start_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_);
}

void FakeClock::Sleep(std::chrono::nanoseconds d, const StopFlag& /*stop*/) { Advance(d); }

void FakeClock::Advance(std::chrono::nanoseconds d) {
  MutexLock lock(mu_);
  elapsed_ += std::max(d, std::chrono::nanoseconds::zero());
}

Ticker::Ticker(const Clock& clock, std::chrono::nanoseconds period, Start start)
    : clock_(clock),
      period_(period),
      next_(start == kAtOnce ? clock.Now() : clock.Now() + period) {}

bool Ticker::Due() {
  const Clock::SteadyTime now = clock_.Now();
  if (now < next_) return false;
  next_ = now + period_;
  return true;
}

void Ticker::DueIn(std::chrono::nanoseconds in) { next_ = clock_.Now() + in; }

std::chrono::nanoseconds Ticker::Left() const {
  return std::max<std::chrono::nanoseconds>(next_ - clock_.Now(), std::chrono::nanoseconds::zero());
}

}  // namespace xpu
