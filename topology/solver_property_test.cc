// Solve against a brute-force oracle: every subset of the free devices of the requested size,
// filtered by the rule set, scored by Evaluate, best by (score, lowest indices). Solve's search
// (domains, rule units, symmetry breaking, branch and bound) must find exactly that set.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/sanitizers.h"
#include "topology/solver.h"
#include "topology/testing/fixtures.h"

namespace xpu::topology {
namespace {

struct Oracle {
  bool feasible = false;
  DeviceSet devices;
  Score score;
};

Oracle BruteForce(const Node& node, DeviceSet free, int k, DeviceSet required) {
  Oracle best;
  ForEachSubset(free.Ids(), k, [&](DeviceSet set) {
    if (!required.IsSubsetOf(set) || !RuleAllows(node, set)) return true;
    const Score score = Evaluate(node, free, set);
    if (!best.feasible || score.BetterThan(best.score) ||
        (score == best.score && DeviceSet::LexLess(set, best.devices))) {
      best = Oracle{true, set, score};
    }
    return true;
  });
  return best;
}

int cases_checked = 0;  // reported per test case, so topology/README.md's figure can be checked

void CheckAgainstOracle(const Node& node, DeviceSet free, int k, DeviceSet required) {
  ++cases_checked;
  const SolveResult got = Solve(node, free, k, required);
  const Oracle want = BruteForce(node, free, k, required);
  INFO("node " << node.name() << ", free mask " << free.mask() << ", k " << k << ", required mask "
               << required.mask() << ", reason " << got.reason);
  REQUIRE(got.feasible == want.feasible);
  if (!want.feasible) {
    REQUIRE_FALSE(got.reason.empty());
    return;
  }
  INFO("got mask " << got.devices.mask() << ", want mask " << want.devices.mask());
  REQUIRE(got.devices == want.devices);
  REQUIRE(got.score == want.score);
}

DeviceSet RandomSubset(std::mt19937_64& rng, DeviceSet of, double p) {
  std::bernoulli_distribution keep(p);
  DeviceSet out;
  for (int id : of.Ids()) {
    if (keep(rng)) out.Add(id);
  }
  return out;
}

TEST_CASE("Solve equals the brute-force optimum on random free sets of every bundled model") {
  cases_checked = 0;
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<double> density(0.3, 1.0);
  for (const auto& model : testing::BundledModels()) {
    StatusOr<Node> built = Node::Build(model.spec);
    REQUIRE_OK(built);
    const Node& node = *built;
    int checked = 0;
    // 2,000 random free sets per model (400 under the sanitizers).
    for (int trial = 0; trial < xpu::testing::SizeFor(2000, 400); ++trial) {
      const DeviceSet free = RandomSubset(rng, node.All(), density(rng));
      for (int k = 1; k <= free.size(); ++k) {
        CheckAgainstOracle(node, free, k, DeviceSet());
        ++checked;
      }
      // Now and then with a required device, as AlignedGroups asks.
      if (trial % 8 == 0 && !free.empty()) {
        const DeviceSet required =
            DeviceSet::Of({free.Ids()[rng() % static_cast<size_t>(free.size())]});
        for (int k = 1; k <= free.size(); ++k) CheckAgainstOracle(node, free, k, required);
      }
    }
    INFO(model.name << ": " << checked << " (free set, count) cases");
    CHECK(checked > xpu::testing::SizeFor(2000, 400));
  }
  WARN("bundled models: " << cases_checked << " cases checked against the oracle");
}

// Random nodes with uneven links and groups: the symmetry classes and the bounds must hold
// where the bundled servers are too regular to catch a mistake.
NodeSpec RandomNode(std::mt19937_64& rng, int n, RuleSetKind rules) {
  NodeSpec spec;
  spec.name = "random";
  spec.rule_set.kind = rules;
  const std::vector<double> bandwidths = {20, 50, 50, 100, 200};
  for (int i = 0; i < n; ++i) {
    DeviceSpec d;
    d.name = "gpu-" + std::to_string(i);
    d.kind = "gpu";
    d.index = i;
    d.numa_node = static_cast<int>(rng() % 2);
    d.pcie_path = {"pci0000:0" + std::to_string(d.numa_node),
                   "0000:00:0" + std::to_string(rng() % 3) + ".0",
                   "0000:0" + std::to_string(i) + ":00.0"};
    spec.devices.push_back(d);
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (rng() % 3 == 0) continue;
      spec.links.push_back(LinkSpec{
          LinkType::kNvLink,
          bandwidths[rng() % bandwidths.size()],
          {spec.devices[static_cast<size_t>(a)].name, spec.devices[static_cast<size_t>(b)].name}});
    }
  }
  // A few overlapping groups.
  for (int g = 0; g < 3; ++g) {
    GroupSpec group{"group-" + std::to_string(g), GroupKind::kLinkDomain, {}};
    for (const DeviceSpec& d : spec.devices) {
      if (rng() % 2 == 0) group.members.push_back(d.name);
    }
    if (!group.members.empty()) spec.groups.push_back(group);
  }
  return spec;
}

TEST_CASE("Solve equals the brute-force optimum on random uneven nodes") {
  cases_checked = 0;
  std::mt19937_64 rng(7);
  for (int node_trial = 0; node_trial < 60; ++node_trial) {
    const int n = 4 + static_cast<int>(rng() % 9);  // 4..12 devices
    StatusOr<Node> built = Node::Build(
        RandomNode(rng, n, node_trial % 2 == 0 ? RuleSetKind::kAny : RuleSetKind::kPcieTree));
    REQUIRE_OK(built);
    for (int trial = 0; trial < 20; ++trial) {
      const DeviceSet free = RandomSubset(rng, built->All(), 0.8);
      for (int k = 1; k <= free.size(); ++k) CheckAgainstOracle(*built, free, k, DeviceSet());
    }
  }
  WARN(cases_checked << " cases checked against the oracle");
}

TEST_CASE("Solve equals the brute-force optimum on symmetric random nodes") {
  // Uniform links with a few PCIe switches: large symmetry classes, many ties.
  cases_checked = 0;
  std::mt19937_64 rng(11);
  for (int node_trial = 0; node_trial < 30; ++node_trial) {
    NodeSpec spec;
    spec.name = "symmetric";
    spec.rule_set.kind = RuleSetKind::kNvSwitch;
    const int n = 6 + static_cast<int>(rng() % 7);
    const int per_switch = 1 + static_cast<int>(rng() % 4);
    LinkSpec mesh{LinkType::kNvSwitch, 100, {}};
    for (int i = 0; i < n; ++i) {
      const int sw = i / per_switch;
      spec.devices.push_back(
          DeviceSpec{"gpu-" + std::to_string(i),
                     "gpu",
                     i,
                     0,
                     sw % 2,
                     {"pci0000:0" + std::to_string(sw % 2), "0000:00:0" + std::to_string(sw) + ".0",
                      "0000:1" + std::to_string(i) + ":00.0"}});
      mesh.devices.push_back(spec.devices.back().name);
    }
    spec.links.push_back(mesh);
    StatusOr<Node> built = Node::Build(spec);
    REQUIRE_OK(built);
    for (int trial = 0; trial < 40; ++trial) {
      const DeviceSet free = RandomSubset(rng, built->All(), 0.7);
      for (int k = 1; k <= free.size(); ++k) CheckAgainstOracle(*built, free, k, DeviceSet());
    }
  }
  WARN(cases_checked << " cases checked against the oracle");
}

}  // namespace
}  // namespace xpu::topology
