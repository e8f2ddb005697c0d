// The controller's gang placement (PlanGang) over the candidates a reconcile gathers, each with
// its kept offer: a gang of 64 nodes x 8 NPUs within a spine, over 10,000 and 65,000 Atlas 800T
// A2 nodes labelled as gang_measure labels them (leaves of 32, spines of 16 leaves, super-pods of
// 4 spines; a quarter of the nodes with one NPU unhealthy, so 7 free). This is the "placed in"
// half of a placement's time in gang_measure; the other half gathers the candidates.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "controller/config.h"
#include "controller/gang_plan.h"
#include "controller/testing/cluster.h"

namespace xpu::controller {
namespace {

struct PlanCase {
  std::shared_ptr<const api::NodeInventory> inventory;
  std::vector<GangCandidate> nodes;
  Config config = DefaultConfig();
  api::AcceleratorGang gang;
};

std::shared_ptr<const api::NodeInventory> AtlasA2() {
  auto inv = testing::FixtureInventory(XPU_SOURCE_DIR, "atlas800t-a2", "n");
  if (!inv.ok()) {
    std::cerr << "gang_plan_bench: " << inv.status().message() << "\n";
    std::exit(1);
  }
  return std::make_shared<const api::NodeInventory>(*std::move(inv));
}

PlanCase MakeCase(int count) {
  PlanCase c;
  c.inventory = AtlasA2();
  auto facts = GangFactsOf(*c.inventory);
  if (!facts.ok()) {
    std::cerr << "gang_plan_bench: " << facts.status().message() << "\n";
    std::exit(1);
  }
  const GangOffer whole = OfferOf(*facts, {}, c.config, "huawei.xpu.dra.dev", "xpu.dra.dev", 8);
  GangOffer short_one = whole;
  short_one.free = 7;
  c.gang.metadata.namespace_name = "train";
  c.gang.metadata.name = "gang-0";
  c.gang.metadata.uid = "5f0c3b52-8d1e-4a53-9b1e-6a2d3c4b5a60";
  c.gang.spec.nodes = 64;
  c.gang.spec.devices_per_node = 8;
  c.gang.spec.capability_class = "huawei.xpu.dra.dev";
  c.gang.spec.max_tier = "spine";
  for (int i = 0; i < count; ++i) {
    GangCandidate n;
    n.name = "n-" + std::to_string(i);
    const int leaf = i / 32;
    const int spine = leaf / 16;
    n.labels = {{"kubernetes.io/hostname", n.name},
                {"topology.xpu.dra.dev/leaf", "leaf-" + std::to_string(leaf)},
                {"topology.xpu.dra.dev/spine", "spine-" + std::to_string(spine)},
                {"topology.xpu.dra.dev/superpod", "pod-" + std::to_string(spine / 4)}};
    n.offer = i % 4 == 3 ? short_one : whole;
    n.fabric = c.inventory->status.fabric;
    c.nodes.push_back(std::move(n));
  }
  return c;
}

void BM_PlanGang(benchmark::State& state) {
  static std::map<int, PlanCase> cases;
  const int count = static_cast<int>(state.range(0));
  auto it = cases.find(count);
  if (it == cases.end()) it = cases.emplace(count, MakeCase(count)).first;
  const PlanCase& c = it->second;
  GangPlanInput in;
  in.gang = &c.gang;
  in.config = &c.config;
  in.now = "2026-12-06T00:00:00Z";
  in.inventory_of = [&c](const std::string&) { return c.inventory; };
  for (auto _ : state) {
    state.PauseTiming();
    in.nodes = c.nodes;  // a reconcile hands over the candidates it gathered
    state.ResumeTiming();
    GangPlan plan = PlanGang(in);
    if (plan.status.phase != "Placed") state.SkipWithError("the gang was not placed");
    benchmark::DoNotOptimize(plan);
  }
}

BENCHMARK(BM_PlanGang)->ArgName("nodes")->Arg(10000)->Arg(65000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xpu::controller

BENCHMARK_MAIN();
