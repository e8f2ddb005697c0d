// Gang placement on fabrics of 1,000 / 10,000 / 100,000 nodes (3 tiers): a gang that fits a
// leaf, one that needs a spine, one that needs a superpod.
#include <benchmark/benchmark.h>

#include <map>

#include "bench/bench_support.h"

namespace xpu::bench {
namespace {

const GangCase& CaseFor(int nodes) {
  static std::map<int, GangCase> cases;
  auto it = cases.find(nodes);
  if (it == cases.end()) it = cases.emplace(nodes, MakeGangCase(nodes)).first;
  return it->second;
}

void BM_PlaceGang(benchmark::State& state) {
  const GangCase& c = CaseFor(static_cast<int>(state.range(0)));
  const int gang_nodes = static_cast<int>(state.range(1));
  for (auto _ : state) {
    benchmark::DoNotOptimize(topology::PlaceGang(c.fabric, c.free, gang_nodes, 4, 2));
  }
  state.SetComplexityN(state.range(0));
}

BENCHMARK(BM_PlaceGang)
    ->ArgNames({"nodes", "gang"})
    ->ArgsProduct({{1000, 10000, 100000}, {8, 64, 512}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace xpu::bench

BENCHMARK_MAIN();
