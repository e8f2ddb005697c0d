#include "base/stop.h"

namespace xpu {

bool StopFlag::Set() {
  bool was = false;
  {
    // Set under the mutex: a waiter between its check and its wait cannot miss the wake-up.
    MutexLock lock(mu_);
    was = set_.exchange(true);
  }
  changed_.NotifyAll();
  return !was;
}

bool StopFlag::WaitFor(std::chrono::nanoseconds d) const {
  if (IsSet() || d <= std::chrono::nanoseconds::zero()) return IsSet();
  MutexLock lock(mu_);
  return changed_.WaitFor(mu_, d, [this]() REQUIRES(mu_) { return set_.load(); });
}

}  // namespace xpu
