#include "controller/work_queue.h"

#include <algorithm>
#include <utility>

namespace xpu::controller {

WorkQueue::WorkQueue(WorkQueueOptions options) : options_(options) {}

std::chrono::steady_clock::time_point WorkQueue::Now() const {
  return (options_.clock != nullptr ? *options_.clock : RealClock()).Now();
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_) return;
  if (processing_.contains(key)) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) {
    queue_.push_back(key);
    cv_.NotifyOne();
  }
}

void WorkQueue::Add(const std::string& key) {
  MutexLock lock(mu_);
  delayed_.erase(key);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay.count() <= 0) {
    Add(key);
    return;
  }
  MutexLock lock(mu_);
  if (shutdown_ || queued_.contains(key)) return;
  const auto at = Now() + delay;
  auto [it, inserted] = delayed_.emplace(key, at);
  if (!inserted && at < it->second) it->second = at;
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

void WorkQueue::PromoteDueLocked(std::chrono::steady_clock::time_point now) {
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second <= now) {
      const std::string key = it->first;
      it = delayed_.erase(it);
      AddLocked(key);
    } else {
      ++it;
    }
  }
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
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      queued_.erase(key);
      processing_.insert(key);
      return key;
    }
    // Sleep until the next delayed key is due (re-checked at least every 50 ms, which also
    // covers an injected clock), an add, or the timeout.
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    if (!delayed_.empty()) {
      auto next = delayed_.begin()->second;
      for (const auto& [k, at] : delayed_) next = std::min(next, at);
      const auto in = next - Now();
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
  if (dirty_.erase(key) > 0) AddLocked(key);
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
  return queue_.size();
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
