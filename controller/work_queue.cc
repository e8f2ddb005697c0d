#include "controller/work_queue.h"

#include <algorithm>
#include <utility>

namespace xpu::controller {

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(options) {}

WorkQueue::TimePoint WorkQueue::Now() const {
  return (options_.clock != nullptr ? *options_.clock : RealClock()).Now();
}

void WorkQueue::AddLocked(const std::string& key, Lane lane) {
  if (shutdown_) return;
  if (processing_.contains(key)) {
    auto [it, inserted] = dirty_.emplace(key, lane);
    if (!inserted && lane == Lane::kNormal) it->second = Lane::kNormal;
    return;
  }
  auto [it, inserted] = queued_.emplace(key, lane);
  if (inserted) {
    (lane == Lane::kNormal ? queue_ : background_).push_back(key);
    cv_.NotifyOne();
  } else if (it->second == Lane::kBackground && lane == Lane::kNormal) {
    // A change of a key waiting behind checks: it moves up (rare, so a linear erase is fine).
    background_.erase(std::find(background_.begin(), background_.end(), key));
    it->second = Lane::kNormal;
    queue_.push_back(key);
  }
}

void WorkQueue::EraseDelayedLocked(const std::string& key) {
  auto it = delayed_.find(key);
  if (it == delayed_.end()) return;
  due_.erase({it->second, key});
  delayed_.erase(it);
}

void WorkQueue::Add(const std::string& key) {
  MutexLock lock(mu_);
  EraseDelayedLocked(key);
  AddLocked(key, Lane::kNormal);
}

void WorkQueue::AddBackground(const std::string& key) {
  MutexLock lock(mu_);
  // A pending delayed add stands too (a Lease's expiry): when it falls due first, it moves the
  // key to the normal lane.
  AddLocked(key, Lane::kBackground);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    Add(key);
    return;
  }
  MutexLock lock(mu_);
  if (shutdown_) return;
  if (auto q = queued_.find(key); q != queued_.end() && q->second == Lane::kNormal) return;
  const TimePoint at = Now() + delay;
  auto [it, inserted] = delayed_.emplace(key, at);
  if (!inserted) {
    if (at >= it->second) return;
    due_.erase({it->second, key});
    it->second = at;
  }
  due_.emplace(at, key);
  cv_.NotifyAll();  // a waiting Get may need to wake earlier
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    MutexLock lock(mu_);
    const int n = failures_[key]++;
    const double factor = n >= 30 ? 1e9 : static_cast<double>(int64_t{1} << n);
    const double ms = std::min(static_cast<double>(options_.max_delay.count()),
                               static_cast<double>(options_.base_delay.count()) * factor);
    delay = std::chrono::milliseconds(static_cast<int64_t>(ms));
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  MutexLock lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked(TimePoint now) {
  while (!due_.empty() && due_.begin()->first <= now) {
    const std::string key = due_.begin()->second;
    due_.erase(due_.begin());
    delayed_.erase(key);
    AddLocked(key, Lane::kNormal);
  }
}

std::optional<std::string> WorkQueue::PopLocked() {
  std::deque<std::string>* lane = nullptr;
  if (background_.empty()) {
    lane = &queue_;
    normal_streak_ = 0;
  } else if (queue_.empty() || normal_streak_ + 1 >= kBackgroundEvery) {
    lane = &background_;
    normal_streak_ = 0;
  } else {
    lane = &queue_;
    ++normal_streak_;
  }
  if (lane->empty()) return std::nullopt;
  std::string key = std::move(lane->front());
  lane->pop_front();
  queued_.erase(key);
  return key;
}

std::optional<std::string> WorkQueue::Get(std::optional<std::chrono::milliseconds> timeout) {
  MutexLock lock(mu_);
  // A far-away deadline stands for "no timeout" (an optional time_point trips GCC 12's
  // -Wmaybe-uninitialized).
  const auto deadline = timeout ? std::chrono::steady_clock::now() + *timeout
                                : std::chrono::steady_clock::time_point::max();
  while (true) {
    if (shutdown_) return std::nullopt;
    PromoteDueLocked(Now());
    if (std::optional<std::string> key = PopLocked()) {
      processing_.insert(*key);
      return key;
    }
    // Sleep until the next delayed key is due, an add, a shutdown or the timeout. An injected
    // clock moves without telling the queue: it is read again every 50 ms.
    const bool injected = options_.clock != nullptr && options_.clock != &RealClock();
    auto wake = injected ? std::chrono::steady_clock::now() + std::chrono::milliseconds(50)
                         : std::chrono::steady_clock::time_point::max();
    if (!due_.empty()) {
      const auto in = due_.begin()->first - Now();
      wake = std::min(wake, std::chrono::steady_clock::now() +
                                std::max(in, std::chrono::steady_clock::duration::zero()));
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    wake = std::min(wake, deadline);
    cv_.WaitUntil(mu_, wake);
  }
}

void WorkQueue::Done(const std::string& key) {
  MutexLock lock(mu_);
  processing_.erase(key);
  if (auto it = dirty_.find(key); it != dirty_.end()) {
    const Lane lane = it->second;
    dirty_.erase(it);
    AddLocked(key, lane);
  }
}

void WorkQueue::ShutDown() {
  MutexLock lock(mu_);
  shutdown_ = true;
  cv_.NotifyAll();
}

bool WorkQueue::shutting_down() const {
  MutexLock lock(mu_);
  return shutdown_;
}

size_t WorkQueue::Depth() const {
  MutexLock lock(mu_);
  return queue_.size() + background_.size();
}

size_t WorkQueue::BackgroundDepth() const {
  MutexLock lock(mu_);
  return background_.size();
}

size_t WorkQueue::Delayed() const {
  MutexLock lock(mu_);
  return delayed_.size();
}

size_t WorkQueue::Processing() const {
  MutexLock lock(mu_);
  return processing_.size();
}

}  // namespace xpu::controller
