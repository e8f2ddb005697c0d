#include "base/mutex.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <latch>
#include <thread>
#include <vector>

namespace xpu {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

// What the tests share between threads, annotated as the product code is.
struct Shared {
  Mutex mu;
  CondVar cv;
  bool ready GUARDED_BY(mu) = false;
  int count GUARDED_BY(mu) = 0;
};

// Whether another thread finds `mu` free (takes it and lets it go at once).
bool FreeToAnotherThread(Mutex& mu) {
  bool got = false;
  std::thread([&] {
    if (mu.TryLock()) {
      got = true;
      mu.Unlock();
    }
  }).join();
  return got;
}

TEST_CASE("a held mutex keeps other threads out until it is unlocked") {
  Shared s;
  std::atomic<bool> tried_free{true};
  std::atomic<bool> entered{false};
  std::latch about_to_lock(1);
  s.mu.Lock();
  std::thread other([&] {
    if (s.mu.TryLock()) {
      s.mu.Unlock();
    } else {
      tried_free = false;
    }
    about_to_lock.count_down();  // from here on it blocks in Lock until the test unlocks
    MutexLock lock(s.mu);
    entered = true;
  });
  about_to_lock.wait();
  CHECK_FALSE(tried_free);  // its TryLock found the mutex held
  CHECK_FALSE(entered);     // and it has not got past Lock, although it has reached it
  CHECK_FALSE(FreeToAnotherThread(s.mu));
  s.mu.Unlock();
  other.join();
  CHECK(entered);
}

TEST_CASE("TryLock fails while another thread holds the mutex and succeeds once it is free") {
  Shared s;
  {
    MutexLock lock(s.mu);
    CHECK_FALSE(FreeToAnotherThread(s.mu));
  }
  CHECK(FreeToAnotherThread(s.mu));
}

TEST_CASE("MutexLock lets go of the mutex on Unlock and at scope end, and takes it on Lock") {
  Shared s;
  {
    MutexLock lock(s.mu);
    CHECK_FALSE(FreeToAnotherThread(s.mu));
    lock.Unlock();
    CHECK(FreeToAnotherThread(s.mu));
    lock.Lock();
    CHECK_FALSE(FreeToAnotherThread(s.mu));
  }
  CHECK(FreeToAnotherThread(s.mu));
  {
    MutexLock lock(s.mu);
    lock.Unlock();
  }  // unlocked already: the destructor leaves it alone
  CHECK(FreeToAnotherThread(s.mu));
}

TEST_CASE("increments under the lock from many threads are none of them lost") {
  Shared s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10'000; ++i) {
        MutexLock lock(s.mu);
        ++s.count;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MutexLock lock(s.mu);
  CHECK(s.count == 40'000);
}

TEST_CASE("a wait with a predicate returns once another thread makes it true and notifies") {
  Shared s;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    MutexLock lock(s.mu);
    s.count = 1;  // waiting: it lets go of the mutex only inside Wait
    s.cv.NotifyAll();
    s.cv.Wait(s.mu, [&]() REQUIRES(s.mu) { return s.ready; });
    done = s.ready;  // Catch2's CHECK is for the test's own thread
  });
  {
    // Taking the mutex with count 1 means the waiter is inside Wait.
    MutexLock lock(s.mu);
    s.cv.Wait(s.mu, [&]() REQUIRES(s.mu) { return s.count == 1; });
    CHECK_FALSE(done);
    s.ready = true;
  }
  s.cv.NotifyAll();
  waiter.join();
  CHECK(done);
}

TEST_CASE("a plain wait wakes on NotifyOne") {
  Shared s;
  std::thread waiter([&] {
    MutexLock lock(s.mu);
    while (!s.ready) s.cv.Wait(s.mu);  // spurious wake-ups loop
    ++s.count;
  });
  {
    MutexLock lock(s.mu);
    s.ready = true;
  }
  s.cv.NotifyOne();
  waiter.join();
  MutexLock lock(s.mu);
  CHECK(s.count == 1);
}

TEST_CASE("timed waits time out when nothing notifies") {
  Shared s;
  MutexLock lock(s.mu);
  const steady_clock::time_point t0 = steady_clock::now();

  SECTION("WaitFor with a predicate returns false after the timeout") {
    CHECK_FALSE(s.cv.WaitFor(s.mu, milliseconds(30), [&]() REQUIRES(s.mu) { return s.ready; }));
    CHECK(steady_clock::now() - t0 >= milliseconds(30));
  }
  SECTION("WaitUntil with a predicate returns false at the deadline") {
    const steady_clock::time_point deadline = t0 + milliseconds(30);
    CHECK_FALSE(s.cv.WaitUntil(s.mu, deadline, [&]() REQUIRES(s.mu) { return s.ready; }));
    CHECK(steady_clock::now() >= deadline);
  }
  SECTION("WaitUntil without a predicate reports a timeout at the deadline") {
    const steady_clock::time_point deadline = t0 + milliseconds(30);
    std::cv_status status = std::cv_status::no_timeout;
    while (status == std::cv_status::no_timeout) status = s.cv.WaitUntil(s.mu, deadline);
    CHECK(steady_clock::now() >= deadline);
  }
  SECTION("WaitFor without a predicate reports a timeout") {
    std::cv_status status = std::cv_status::no_timeout;
    while (status == std::cv_status::no_timeout) status = s.cv.WaitFor(s.mu, milliseconds(10));
    CHECK(steady_clock::now() - t0 >= milliseconds(10));
  }
  // Whatever the wait, the mutex is held again afterwards.
  CHECK_FALSE(FreeToAnotherThread(s.mu));
}

TEST_CASE("a timed wait with a predicate returns true when notified before the deadline") {
  Shared s;
  std::thread notifier([&] {
    {
      // Taking the mutex with count 1 means the test's thread is inside WaitFor.
      MutexLock lock(s.mu);
      s.cv.Wait(s.mu, [&]() REQUIRES(s.mu) { return s.count == 1; });
      s.ready = true;
    }
    s.cv.NotifyAll();
  });
  bool woke = false;
  {
    MutexLock lock(s.mu);
    s.count = 1;  // waiting: the mutex is let go only inside WaitFor
    s.cv.NotifyAll();
    woke = s.cv.WaitFor(s.mu, seconds(30), [&]() REQUIRES(s.mu) { return s.ready; });
  }
  notifier.join();
  CHECK(woke);
}

TEST_CASE("the mutex is free while a thread waits, so the notifier can take it") {
  Shared s;
  std::atomic<bool> waiting{false};
  std::thread waiter([&] {
    MutexLock lock(s.mu);
    waiting = true;
    s.cv.Wait(s.mu, [&]() REQUIRES(s.mu) { return s.ready; });
  });
  while (!waiting) std::this_thread::yield();
  {
    MutexLock lock(s.mu);  // would block forever if the waiter kept it
    s.ready = true;
  }
  s.cv.NotifyAll();
  waiter.join();
}

}  // namespace
}  // namespace xpu
