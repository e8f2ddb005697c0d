// A mutex, a scoped lock and a condition variable that clang's thread-safety analysis
// understands (base/thread_annotations.h): members marked GUARDED_BY(mu_) are then read and
// written only under MutexLock lock(mu_), and a function marked REQUIRES(mu_) is called only with
// mu_ held, or the clang build fails.
//
//   Mutex mu_;
//   CondVar changed_;
//   std::deque<Item> queue_ GUARDED_BY(mu_);
//
//   Item Pop() EXCLUDES(mu_) {
//     MutexLock lock(mu_);
//     changed_.Wait(mu_, [this]() REQUIRES(mu_) { return !queue_.empty(); });
//     ...
//   }
//
// A predicate passed to CondVar runs with the mutex held: mark the lambda REQUIRES(mu) so that
// its body is checked (and so that it may read what the mutex guards).
//
// Mutex is std::mutex underneath: not recursive, not movable. All three are thread-safe in the
// sense of their std counterparts.
#ifndef XPU_BASE_MUTEX_H_
#define XPU_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "base/thread_annotations.h"

namespace xpu {

class CAPABILITY("mutex") Mutex {
 public:
  constexpr Mutex() noexcept = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // True, and held, if the mutex was free.
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the mutex is held where it cannot see it (a callback run under the lock).
  // Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction. Unlock() and Lock() let go of it and take it again
// within the scope; the destructor unlocks only if held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (locked_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_.Unlock();
    locked_ = false;
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    locked_ = true;
  }

 private:
  Mutex& mu_;
  bool locked_ = true;
};

// std::condition_variable for a Mutex. Every wait is called with the mutex held, lets go of it
// while blocked and holds it again on return; wake-ups may be spurious, so the forms without a
// predicate belong in a loop that checks the condition. Notify from any thread, lock held or not.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

  void Wait(Mutex& mu) REQUIRES(mu) {
    Adopted held(mu);
    cv_.wait(held.lock);
  }
  // Returns std::cv_status::timeout once `deadline` has passed.
  template <class C, class D>
  std::cv_status WaitUntil(Mutex& mu, const std::chrono::time_point<C, D>& deadline) REQUIRES(mu) {
    Adopted held(mu);
    return cv_.wait_until(held.lock, deadline);
  }
  template <class R, class P>
  std::cv_status WaitFor(Mutex& mu, const std::chrono::duration<R, P>& timeout) REQUIRES(mu) {
    Adopted held(mu);
    return cv_.wait_for(held.lock, timeout);
  }

  // Until pred() is true.
  // NO_THREAD_SAFETY_ANALYSIS: the analysis cannot tie the predicate's REQUIRES(mu_) to `mu`;
  // the caller is checked to hold `mu`, and the predicate's body to need nothing more.
  template <class Pred>
  void Wait(Mutex& mu, Pred pred) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    Adopted held(mu);
    cv_.wait(held.lock, std::move(pred));
  }
  // pred() at the end: false if `deadline` passed with it still false. (NO_THREAD_SAFETY_ANALYSIS
  // as for Wait.)
  template <class C, class D, class Pred>
  bool WaitUntil(Mutex& mu, const std::chrono::time_point<C, D>& deadline, Pred pred)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    Adopted held(mu);
    return cv_.wait_until(held.lock, deadline, std::move(pred));
  }
  template <class R, class P, class Pred>
  bool WaitFor(Mutex& mu, const std::chrono::duration<R, P>& timeout, Pred pred)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    Adopted held(mu);
    return cv_.wait_for(held.lock, timeout, std::move(pred));
  }

 private:
  // A std::unique_lock over the caller's held mutex for the duration of one wait, which leaves it
  // held on return, normal or by exception (std::condition_variable locks it again before an
  // exception leaves a wait).
  struct Adopted {
    explicit Adopted(Mutex& mu) : lock(mu.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    Adopted(const Adopted&) = delete;
    Adopted& operator=(const Adopted&) = delete;
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace xpu

#endif  // XPU_BASE_MUTEX_H_
