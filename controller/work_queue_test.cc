#include "controller/work_queue.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace xpu::controller {
namespace {

using std::chrono::milliseconds;

TEST_CASE("work queue coalesces adds of a queued key", "[work_queue]") {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  CHECK(q.Depth() == 2);
  CHECK(q.Get(milliseconds(0)) == "a");
  CHECK(q.Get(milliseconds(0)) == "b");
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
}

TEST_CASE("work queue hands a processing key out again only after Done", "[work_queue]") {
  WorkQueue q;
  q.Add("a");
  auto key = q.Get(milliseconds(0));
  REQUIRE(key == "a");
  q.Add("a");  // while processing: remembered, not queued
  CHECK(q.Depth() == 0);
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
  q.Done("a");
  CHECK(q.Depth() == 1);
  CHECK(q.Get(milliseconds(0)) == "a");
  q.Done("a");
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
}

TEST_CASE("work queue delays with an injected clock, earliest delay winning", "[work_queue]") {
  FakeClock clock;
  WorkQueueOptions o;
  o.clock = &clock;
  WorkQueue q(o);
  q.AddAfter("a", milliseconds(10'000));
  q.AddAfter("a", milliseconds(5'000));
  CHECK(q.Delayed() == 1);
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
  clock.Advance(milliseconds(4999));  // at 4999 ms
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
  clock.Advance(milliseconds(1));  // at 5000 ms
  CHECK(q.Get(milliseconds(100)) == "a");
  CHECK(q.Delayed() == 0);
}

TEST_CASE("work queue backs off per key until Forget", "[work_queue]") {
  FakeClock clock;
  WorkQueueOptions o;
  o.base_delay = milliseconds(100);
  o.max_delay = milliseconds(350);
  o.clock = &clock;
  WorkQueue q(o);
  q.AddRateLimited("a");  // 100 ms
  CHECK(q.Failures("a") == 1);
  clock.Advance(milliseconds(99));  // at 99 ms
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
  clock.Advance(milliseconds(1));  // at 100 ms
  REQUIRE(q.Get(milliseconds(100)) == "a");
  q.Done("a");
  q.AddRateLimited("a");             // 200 ms
  clock.Advance(milliseconds(199));  // at 299 ms
  CHECK(q.Get(milliseconds(0)) == std::nullopt);
  clock.Advance(milliseconds(1));  // at 300 ms
  REQUIRE(q.Get(milliseconds(100)) == "a");
  q.Done("a");
  q.AddRateLimited("a");             // 400 ms, capped at 350
  clock.Advance(milliseconds(350));  // at 650 ms
  REQUIRE(q.Get(milliseconds(100)) == "a");
  q.Done("a");
  CHECK(q.Failures("a") == 3);
  q.Forget("a");
  CHECK(q.Failures("a") == 0);
}

TEST_CASE("work queue shutdown wakes a blocked Get", "[work_queue]") {
  WorkQueue q;
  std::atomic<bool> returned{false};
  std::thread t([&] {
    CHECK(q.Get() == std::nullopt);
    returned = true;
  });
  q.ShutDown();
  t.join();
  CHECK(returned);
  q.Add("late");
  CHECK(q.Depth() == 0);
}

TEST_CASE("work queue never gives one key to two workers", "[work_queue]") {
  WorkQueue q;
  std::atomic<int> inside{0};
  std::atomic<int> overlap{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        if (inside.fetch_add(1) != 0) overlap++;
        std::this_thread::yield();
        inside.fetch_sub(1);
        processed++;
        q.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("same");
  while (q.Depth() + q.Processing() > 0) std::this_thread::yield();
  q.ShutDown();
  for (auto& t : workers) t.join();
  CHECK(overlap == 0);
  CHECK(processed >= 1);
}

}  // namespace
}  // namespace xpu::controller
