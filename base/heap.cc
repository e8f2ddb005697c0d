#include "base/heap.h"

#include <malloc.h>

#include <utility>

namespace xpu {

bool UseOneMallocArena() { return ::mallopt(M_ARENA_MAX, 1) == 1; }

bool TrimHeap() { return ::malloc_trim(0) == 1; }

bool TrimDue(bool due, int running, std::chrono::nanoseconds since_last_end,
             std::chrono::nanoseconds quiet) {
  return due && running == 0 && since_last_end >= quiet;
}

HeapTrimmer::HeapTrimmer(Clock& clock, std::chrono::nanoseconds quiet, std::function<void()> trim)
    : clock_(clock), quiet_(quiet), trim_(std::move(trim)), last_end_(clock.Now()) {}

void HeapTrimmer::CallStarted() {
  MutexLock lock(mu_);
  ++running_;
}

void HeapTrimmer::CallEnded() {
  MutexLock lock(mu_);
  --running_;
  due_ = true;
  last_end_ = clock_.Now();
}

bool HeapTrimmer::Poll() {
  {
    MutexLock lock(mu_);
    if (!TrimDue(due_, running_, clock_.Now() - last_end_, quiet_)) return false;
    due_ = false;
  }
  trim_();  // outside the lock: a call may start meanwhile, and trims again after it ends
  return true;
}

}  // namespace xpu
