// The controller's work queue: the cost of taking a key while every node has a timer set (the
// controller keeps one per node, at its plugin Lease's expiry), at fleet sizes up to 65,000.
// docs/performance.md, "The work queue".
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "controller/work_queue.h"

namespace {

// One Add, Get and Done of a key while `range(0)` other keys wait on timers an hour away.
void BM_TakeWithTimers(benchmark::State& state) {
  xpu::controller::WorkQueue queue;
  const auto timers = static_cast<int>(state.range(0));
  for (int i = 0; i < timers; ++i) {
    queue.AddAfter("pool/node-" + std::to_string(i), std::chrono::hours(1));
  }
  const std::string key = "pool/changed";
  for (auto _ : state) {
    queue.Add(key);
    auto taken = queue.Get(std::chrono::milliseconds(0));
    benchmark::DoNotOptimize(taken);
    queue.Done(key);
  }
  state.counters["timers"] = static_cast<double>(timers);
}
BENCHMARK(BM_TakeWithTimers)->Arg(1'000)->Arg(10'000)->Arg(65'000);

// A change taken while `range(0)` background checks wait: served within a few Gets, whatever
// the backlog (a check taken meanwhile is queued again, so the backlog stays).
void BM_ChangeBehindChecks(benchmark::State& state) {
  xpu::controller::WorkQueue queue;
  const auto checks = static_cast<int>(state.range(0));
  for (int i = 0; i < checks; ++i) queue.AddBackground("pool/node-" + std::to_string(i));
  const std::string key = "pool/changed";
  int64_t gets = 0;
  for (auto _ : state) {
    queue.Add(key);
    while (true) {
      const std::optional<std::string> taken = queue.Get(std::chrono::milliseconds(0));
      ++gets;
      if (!taken) {
        state.SkipWithError("the queue ran dry before the change was served");
        return;
      }
      queue.Done(*taken);
      if (*taken == key) break;
      queue.AddBackground(*taken);
    }
  }
  state.counters["gets_per_change"] =
      static_cast<double>(gets) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ChangeBehindChecks)->Arg(65'000);

}  // namespace

BENCHMARK_MAIN();
