// A value that threads read and replace whole, under a mutex of its own: for settings that change
// at run time (a test server's feature gates) where a copy per read is cheap.
//
//   Guarded<FeatureGates> gates_;
//   FeatureGates now = gates_.Get();
//   gates_.Set(next);
//   Status s = gates_.Update([&](FeatureGates& g) { return Apply(body, &g); });
//
// Update edits in place under the lock; the edit stands whatever the function returns, so a
// function that can fail edits a copy and assigns it last. Thread-safe.
#ifndef XPU_BASE_GUARDED_H_
#define XPU_BASE_GUARDED_H_

#include <utility>

#include "base/mutex.h"

namespace xpu {

template <typename T>
class Guarded {
 public:
  Guarded() = default;
  explicit Guarded(T value) : value_(std::move(value)) {}
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;

  T Get() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return value_;
  }
  void Set(T value) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    value_ = std::move(value);
  }
  // Calls fn(T&) with the lock held and returns what it returns.
  template <typename F>
  auto Update(F&& fn) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return std::forward<F>(fn)(value_);
  }

 private:
  mutable Mutex mu_;
  T value_ GUARDED_BY(mu_);
};

}  // namespace xpu

#endif  // XPU_BASE_GUARDED_H_
