#include "controller/work_queue.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace xpu::controller {
namespace {

using std::chrono::milliseconds;
using Keys = std::vector<std::string>;

// A queue whose timers run on a FakeClock.
struct ClockedQueue {
  FakeClock clock;
  WorkQueue q{{.clock = &clock}};
};

// Takes every ready key, in order, marking each done.
Keys TakeAll(WorkQueue& q) {
  Keys order;
  while (auto key = q.Get(milliseconds(0))) {
    order.push_back(*key);
    q.Done(*key);
  }
  return order;
}

TEST_CASE("work queue coalesces adds of a queued key", "[work_queue]") {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  CHECK(q.Depth() == 2);
  CHECK(TakeAll(q) == Keys{"a", "b"});
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

TEST_CASE_METHOD(ClockedQueue, "work queue delays with an injected clock, earliest delay winning",
                 "[work_queue]") {
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

TEST_CASE_METHOD(ClockedQueue,
                 "work queue serves delayed keys in due order, whatever order they were added in",
                 "[work_queue]") {
  q.AddAfter("late", milliseconds(3'000));
  q.AddAfter("early", milliseconds(1'000));
  q.AddAfter("middle", milliseconds(2'000));
  q.AddAfter("late", milliseconds(500));  // moved earlier: now the first
  clock.Advance(milliseconds(3'000));
  CHECK(TakeAll(q) == Keys{"late", "early", "middle"});
  CHECK(q.Delayed() == 0);
}

TEST_CASE("work queue serves background keys after normal ones, one in eight while both wait",
          "[work_queue]") {
  WorkQueue q;
  for (int i = 0; i < 3; ++i) q.AddBackground("check-" + std::to_string(i));
  for (int i = 0; i < 10; ++i) q.Add("change-" + std::to_string(i));
  CHECK(q.Depth() == 13);
  CHECK(q.BackgroundDepth() == 3);
  const Keys want = {"change-0", "change-1", "change-2", "change-3", "change-4",
                     "change-5", "change-6", "check-0",  "change-7", "change-8",
                     "change-9", "check-1",  "check-2"};
  CHECK(TakeAll(q) == want);
}

TEST_CASE("work queue moves a waiting background key up when it is added as a change",
          "[work_queue]") {
  WorkQueue q;
  q.AddBackground("a");
  q.AddBackground("b");
  q.Add("b");
  q.AddBackground("b");  // stays in the normal lane
  CHECK(q.Depth() == 2);
  CHECK(q.BackgroundDepth() == 1);
  CHECK(TakeAll(q) == Keys{"b", "a"});
}

TEST_CASE("work queue keeps the lane of a key added while it is processed", "[work_queue]") {
  WorkQueue q;
  q.Add("a");
  REQUIRE(q.Get(milliseconds(0)) == "a");
  q.AddBackground("a");
  q.Done("a");
  CHECK(q.BackgroundDepth() == 1);
  REQUIRE(q.Get(milliseconds(0)) == "a");
  q.AddBackground("a");
  q.Add("a");  // a change beats a check
  q.Done("a");
  CHECK(q.Depth() == 1);
  CHECK(q.BackgroundDepth() == 0);
}

TEST_CASE_METHOD(ClockedQueue,
                 "work queue leaves a delayed add in place for a background add, which it promotes",
                 "[work_queue]") {
  q.AddAfter("a", milliseconds(1'000));
  q.AddBackground("a");
  CHECK(q.Delayed() == 1);
  CHECK(q.BackgroundDepth() == 1);
  clock.Advance(milliseconds(1'000));
  q.Add("b");
  CHECK(q.Get(milliseconds(0)) == "b");  // "a" fell due: now in the normal lane, after "b"
  CHECK(q.BackgroundDepth() == 0);
  CHECK(q.Get(milliseconds(0)) == "a");
  CHECK(q.Delayed() == 0);
}

TEST_CASE("work queue backs off per key until Forget", "[work_queue]") {
  FakeClock clock;
  WorkQueue q({.base_delay = milliseconds(100), .max_delay = milliseconds(350), .clock = &clock});
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
