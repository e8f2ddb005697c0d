// A daemon's heap (docs/performance.md, "Kubelet plugin"). glibc's malloc gives each thread
// that allocates an arena of its own (up to 8 per core) and keeps what a burst freed: with 20
// threads, 14 arenas held 3.6 MB. The plugin keeps one arena, and gives the pages that a burst
// of kubelet calls freed back to the system once the burst is over; the controller trims after
// each gang placement, which builds and frees a view of the whole fleet:
//
//   UseOneMallocArena();                    // first thing in main, before any thread
//   HeapTrimmer trimmer(clock, 200ms);      // the kubelet's calls: CallStarted / CallEnded
//   trimmer.Poll();                         // from a loop that naps: trims when due
#ifndef XPU_BASE_HEAP_H_
#define XPU_BASE_HEAP_H_

#include <chrono>
#include <functional>

#include "base/clock.h"
#include "base/mutex.h"

namespace xpu {

// M_ARENA_MAX = 1: every thread allocates from the main arena. False where malloc refused it.
bool UseOneMallocArena();

// malloc_trim(0): the heap's free pages, wherever they are, given back to the system. True when
// some were.
bool TrimHeap();

// Whether a trim is due: something was freed since the last one (`due`), no call is running,
// and the last one ended at least `quiet` ago.
bool TrimDue(bool due, int running, std::chrono::nanoseconds since_last_end,
             std::chrono::nanoseconds quiet);

// Trims the heap once after start, and once after each burst of calls. Thread-safe.
class HeapTrimmer {
 public:
  explicit HeapTrimmer(
      Clock& clock, std::chrono::nanoseconds quiet,
      std::function<void()> trim = [] { TrimHeap(); });

  void CallStarted();
  void CallEnded();
  // Trims when TrimDue; true when it did.
  bool Poll();

 private:
  Clock& clock_;
  const std::chrono::nanoseconds quiet_;
  const std::function<void()> trim_;
  Mutex mu_;
  bool due_ GUARDED_BY(mu_) = true;  // what the start allocated and freed
  int running_ GUARDED_BY(mu_) = 0;
  Clock::SteadyTime last_end_ GUARDED_BY(mu_);
};

}  // namespace xpu

#endif  // XPU_BASE_HEAP_H_
