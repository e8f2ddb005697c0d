#include "bench/bench_support.h"

#include <random>
#include <utility>

#include "topology/solver.h"
#include "topology/testing/fixtures.h"

namespace xpu::bench {

std::vector<SolveCase> SolveCases(int sets) {
  std::vector<SolveCase> cases;
  std::mt19937_64 rng(42);
  for (const auto& model : topology::testing::BundledModels()) {
    StatusOr<topology::Node> node = topology::Node::Build(model.spec);
    if (!node.ok() || (node->size() != 8 && node->size() != 16)) continue;
    for (int k = 1; k <= node->size(); ++k) {
      if (!topology::Solve(*node, node->All(), k).feasible) continue;  // count not allowed
      SolveCase c{model.name, *node, k, {node->All()}};
      while (static_cast<int>(c.free_sets.size()) < sets) {
        topology::DeviceSet free;
        for (int id = 0; id < node->size(); ++id) {
          if (rng() % 4 != 0) free.Add(id);
        }
        if (free.size() >= k) c.free_sets.push_back(free);
      }
      cases.push_back(std::move(c));
    }
  }
  // The adversarial case: 16 devices with random uneven links, no symmetry to exploit.
  topology::NodeSpec spec;
  spec.name = "random-uneven-16";
  for (int i = 0; i < 16; ++i) {
    spec.devices.push_back({"gpu-" + std::to_string(i), "gpu", i, 0, i / 8, {}});
  }
  const double bandwidths[] = {25, 50, 100, 150, 200};
  for (int a = 0; a < 16; ++a) {
    for (int b = a + 1; b < 16; ++b) {
      if (rng() % 4 == 0) continue;
      spec.links.push_back({topology::LinkType::kNvLink,
                            bandwidths[rng() % 5],
                            {spec.devices[a].name, spec.devices[b].name}});
    }
  }
  const topology::Node uneven = *topology::Node::Build(spec);
  for (int k = 1; k <= 16; ++k) {
    SolveCase c{spec.name, uneven, k, {uneven.All()}};
    while (static_cast<int>(c.free_sets.size()) < sets) {
      topology::DeviceSet free;
      for (int id = 0; id < 16; ++id) {
        if (rng() % 4 != 0) free.Add(id);
      }
      if (free.size() >= k) c.free_sets.push_back(free);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

GangCase MakeGangCase(int nodes) {
  topology::FabricSpec spec;
  spec.tiers = {{"leaf", 400}, {"spine", 200}, {"superpod", 100}};
  constexpr int kPerLeaf = 32;
  constexpr int kLeavesPerSpine = 16;
  constexpr int kSpinesPerPod = 8;
  const int leaves = (nodes + kPerLeaf - 1) / kPerLeaf;
  const int spines = (leaves + kLeavesPerSpine - 1) / kLeavesPerSpine;
  const int pods = (spines + kSpinesPerPod - 1) / kSpinesPerPod;
  for (int p = 0; p < pods; ++p) spec.domains.push_back({"pod-" + std::to_string(p), 2, ""});
  for (int s = 0; s < spines; ++s) {
    spec.domains.push_back(
        {"spine-" + std::to_string(s), 1, "pod-" + std::to_string(s / kSpinesPerPod)});
  }
  for (int l = 0; l < leaves; ++l) {
    spec.domains.push_back(
        {"leaf-" + std::to_string(l), 0, "spine-" + std::to_string(l / kLeavesPerSpine)});
  }
  std::mt19937_64 rng(7);
  GangCase c;
  for (int n = 0; n < nodes; ++n) {
    spec.nodes.push_back({"node-" + std::to_string(n), "leaf-" + std::to_string(n / kPerLeaf)});
    c.free.push_back(static_cast<int>(rng() % 9));
  }
  c.fabric = *topology::Fabric::Build(spec);
  return c;
}

}  // namespace xpu::bench
