// Single-node solve: every bundled 8- and 16-device model, every allowed count. Each iteration
// solves the next of 64 pre-drawn free sets, so the figure is a mean over varied states.
#include <benchmark/benchmark.h>

#include "bench/bench_support.h"
#include "topology/solver.h"

namespace xpu::bench {
namespace {

void RegisterAll() {
  static const std::vector<SolveCase> cases = SolveCases(64);
  for (const SolveCase& c : cases) {
    const std::string name =
        "Solve/" + c.model + "/n" + std::to_string(c.node.size()) + "/k" + std::to_string(c.count);
    benchmark::RegisterBenchmark(name.c_str(), [&c](benchmark::State& state) {
      size_t i = 0;
      for (auto _ : state) {
        benchmark::DoNotOptimize(topology::Solve(c.node, c.free_sets[i], c.count));
        i = (i + 1) % c.free_sets.size();
      }
    });
  }
}

}  // namespace
}  // namespace xpu::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  xpu::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
