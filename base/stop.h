// A stop request that threads sleep on, instead of polling a flag: Set() wakes every sleeper at
// once, so a loop that waits a minute between rounds still stops without delay, and an idle
// daemon does not wake up only to look at a flag.
//
//   StopFlag stop;
//   std::thread worker([&] {
//     while (!stop.IsSet()) {
//       DoRound();
//       stop.WaitFor(std::chrono::minutes(1));  // returns at once when stop.Set() is called
//     }
//   });
//   stop.Set();
//   worker.join();
//
// Thread-safe. Set() takes a mutex: a signal handler must not call it (StopOnSignals hands the
// signal to a thread that does).
#ifndef XPU_BASE_STOP_H_
#define XPU_BASE_STOP_H_

#include <atomic>
#include <chrono>

#include "base/mutex.h"

namespace xpu {

class StopFlag {
 public:
  StopFlag() = default;
  StopFlag(const StopFlag&) = delete;
  StopFlag& operator=(const StopFlag&) = delete;

  // Sets the flag and wakes every WaitFor. False when it was already set.
  bool Set();
  bool IsSet() const { return set_.load(); }
  // Waits `d`, or less once the flag is set; IsSet() at the end.
  bool WaitFor(std::chrono::nanoseconds d) const;

 private:
  std::atomic<bool> set_{false};
  mutable Mutex mu_;
  mutable CondVar changed_;
};

}  // namespace xpu

#endif  // XPU_BASE_STOP_H_
