// A work queue of string keys in the style of client-go's rate-limited queue: a key is queued
// at most once however often it is added (adds coalesce, which is also the debounce), a key
// being processed is never handed to a second worker (an add while it is processed queues it
// again once Done), keys can be added after a delay, and a failing key backs off exponentially
// per key until Forget.
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
  explicit WorkQueue(WorkQueueOptions options = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key) EXCLUDES(mu_);
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

  // Keys ready to be handed out (not counting delayed or processing ones).
  size_t Depth() const EXCLUDES(mu_);
  // Keys waiting for their delay.
  size_t Delayed() const EXCLUDES(mu_);
  // Processing keys.
  size_t Processing() const EXCLUDES(mu_);

 private:
  std::chrono::steady_clock::time_point Now() const;
  void AddLocked(const std::string& key) REQUIRES(mu_);
  void PromoteDueLocked(std::chrono::steady_clock::time_point now) REQUIRES(mu_);

  const WorkQueueOptions options_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::string> queue_ GUARDED_BY(mu_);
  std::set<std::string> queued_ GUARDED_BY(mu_);  // in queue_
  std::set<std::string> processing_ GUARDED_BY(mu_);
  std::set<std::string> dirty_ GUARDED_BY(mu_);  // added while processing
  std::map<std::string, std::chrono::steady_clock::time_point> delayed_ GUARDED_BY(mu_);
  std::map<std::string, int> failures_ GUARDED_BY(mu_);
  bool shutdown_ GUARDED_BY(mu_) = false;
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_WORK_QUEUE_H_
