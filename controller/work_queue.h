// A work queue of string keys in the style of client-go's rate-limited queue: a key is queued
// at most once however often it is added (adds coalesce, which is also the debounce), a key
// being processed is never handed to a second worker (an add while it is processed queues it
// again once Done), keys can be added after a delay, and a failing key backs off exponentially
// per key until Forget.
//
// Two lanes. Add is for a change of the inputs; AddBackground is for a check that likely finds
// nothing to do (the controller's own write coming back, the periodic resync). Background keys
// are served after the normal ones, but one in every kBackgroundEvery while both wait, so a
// change reaches its worker ahead of a backlog of checks and the checks are never starved. An
// Add of a key waiting in the background lane moves it to the normal lane.
//
// Delayed keys are kept by due time, so a Get costs O(log n) however many timers are set (the
// controller keeps one per node, at its Lease's expiry).
//
//   while (auto key = queue.Get()) {
//     if (Sync(*key).ok()) queue.Forget(*key); else queue.AddRateLimited(*key);
//     queue.Done(*key);
//   }
//
// Thread-safe. The clock is injectable (a FakeClock in tests).
#ifndef XPU_CONTROLLER_WORK_QUEUE_H_
#define XPU_CONTROLLER_WORK_QUEUE_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "base/clock.h"
#include "base/mutex.h"

namespace xpu::controller {

struct WorkQueueOptions {
  std::chrono::milliseconds base_delay{100};  // first retry
  std::chrono::milliseconds max_delay{30'000};
  // When keys fall due (delays and backoff); default RealClock(). Get's own timeout is real time.
  const Clock* clock = nullptr;
};

class WorkQueue {
 public:
  // While both lanes wait, every kBackgroundEvery-th Get serves the background lane.
  static constexpr int kBackgroundEvery = 8;

  explicit WorkQueue(WorkQueueOptions options = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key) EXCLUDES(mu_);
  // Adds to the background lane, unless the key waits in the normal lane. Unlike Add, it leaves
  // the key's pending delayed add in place.
  void AddBackground(const std::string& key) EXCLUDES(mu_);
  // Adds at now + delay; an earlier pending delayed add of the same key wins.
  void AddAfter(const std::string& key, std::chrono::milliseconds delay) EXCLUDES(mu_);
  // Adds after the key's backoff: base_delay * 2^failures, at most max_delay.
  void AddRateLimited(const std::string& key) EXCLUDES(mu_);
  // Clears the key's failure count.
  void Forget(const std::string& key) EXCLUDES(mu_);
  int Failures(const std::string& key) const EXCLUDES(mu_);

  // Blocks until a key is ready (returns it, now marked processing) or the queue shuts down
  // (nullopt). `timeout`: give up after it and return nullopt (the queue stays up).
  std::optional<std::string> Get(std::optional<std::chrono::milliseconds> timeout = std::nullopt)
      EXCLUDES(mu_);
  // Marks the key processed; queues it again if it was added meanwhile.
  void Done(const std::string& key) EXCLUDES(mu_);

  // Wakes every Get with nullopt; later adds are ignored.
  void ShutDown() EXCLUDES(mu_);
  bool shutting_down() const EXCLUDES(mu_);

  // Keys ready to be handed out (not counting delayed or processing ones), both lanes.
  size_t Depth() const EXCLUDES(mu_);
  // Of those, the keys in the background lane.
  size_t BackgroundDepth() const EXCLUDES(mu_);
  // Keys waiting for their delay.
  size_t Delayed() const EXCLUDES(mu_);
  // Processing keys.
  size_t Processing() const EXCLUDES(mu_);

 private:
  enum class Lane { kNormal, kBackground };
  using TimePoint = std::chrono::steady_clock::time_point;

  TimePoint Now() const;
  void AddLocked(const std::string& key, Lane lane) REQUIRES(mu_);
  void PromoteDueLocked(TimePoint now) REQUIRES(mu_);
  // Takes the next key to hand out, by the lanes' rule; nullopt when both are empty.
  std::optional<std::string> PopLocked() REQUIRES(mu_);
  void EraseDelayedLocked(const std::string& key) REQUIRES(mu_);

  const WorkQueueOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  std::deque<std::string> background_ GUARDED_BY(mu_);
  std::map<std::string, Lane> queued_ GUARDED_BY(mu_);  // in queue_ or background_
  int normal_streak_ GUARDED_BY(mu_) = 0;  // normal keys served in a row while background waits
  std::set<std::string> processing_ GUARDED_BY(mu_);
  std::map<std::string, Lane> dirty_ GUARDED_BY(mu_);  // added while processing
  std::map<std::string, TimePoint> delayed_ GUARDED_BY(mu_);
  std::set<std::pair<TimePoint, std::string>> due_ GUARDED_BY(mu_);  // delayed_, by due time
  std::map<std::string, int> failures_ GUARDED_BY(mu_);
  bool shutdown_ GUARDED_BY(mu_) = false;
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_WORK_QUEUE_H_
