#include "topology/fabric.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"

namespace xpu::topology {
namespace {

// leaves of `per_leaf` nodes, spines of `leaves_per_spine` leaves, one superpod over all.
FabricSpec Tree(int spines, int leaves_per_spine, int per_leaf) {
  FabricSpec spec;
  spec.tiers = {{"leaf", 400}, {"spine", 200}, {"superpod", 100}};
  spec.domains.push_back({"pod", 2, ""});
  int node = 0;
  for (int s = 0; s < spines; ++s) {
    const std::string spine = "spine-" + std::to_string(s);
    spec.domains.push_back({spine, 1, "pod"});
    for (int l = 0; l < leaves_per_spine; ++l) {
      const std::string leaf = "leaf-" + std::to_string(s) + "-" + std::to_string(l);
      spec.domains.push_back({leaf, 0, spine});
      for (int n = 0; n < per_leaf; ++n) {
        spec.nodes.push_back({"node-" + std::to_string(node++), leaf});
      }
    }
  }
  return spec;
}

Fabric Build(const FabricSpec& spec) {
  StatusOr<Fabric> f = Fabric::Build(spec);
  INFO(f.status().ToString());
  REQUIRE_OK(f);
  return *std::move(f);
}

std::set<std::string> Names(const Fabric& f, const std::vector<int>& nodes) {
  std::set<std::string> out;
  for (int n : nodes) out.insert(f.node_name(n));
  return out;
}

TEST_CASE("a gang that fits one leaf stays in the leaf with the fewest free devices") {
  const Fabric f = Build(Tree(2, 2, 4));  // 16 nodes, leaves of 4
  std::vector<int> free(16, 8);
  free[4] = 4;  // leaf-0-1 is fuller (less free) but still has 3 nodes with 8
  const GangResult r = PlaceGang(f, free, 3, 8, 2);
  REQUIRE(r.feasible);
  CHECK(f.tier(r.tier).name == "leaf");
  CHECK(f.domain_name(r.domain) == "leaf-0-1");
  CHECK(Names(f, r.nodes) == std::set<std::string>{"node-5", "node-6", "node-7"});
  CHECK(r.free_devices_left == 4 + 8 * 3 - 24);
}

TEST_CASE("a gang larger than a leaf takes whole leaves, then the tightest leaf, in one spine") {
  const Fabric f = Build(Tree(2, 3, 4));  // spines of 12 nodes
  std::vector<int> free(24, 8);
  free[0] = 0;  // leaf-0-0 has 3 eligible nodes
  free[1] = 0;  // now 2
  const GangResult r = PlaceGang(f, free, 6, 8, 2);
  REQUIRE(r.feasible);
  CHECK(f.tier(r.tier).name == "spine");
  CHECK(f.domain_name(r.domain) == "spine-0");  // fewer free devices than spine-1
  // Whole leaf-0-1 (4), then the tightest leaf that holds the remaining 2: leaf-0-0.
  CHECK(Names(f, r.nodes) ==
        std::set<std::string>{"node-2", "node-3", "node-4", "node-5", "node-6", "node-7"});
  // Rank order follows the fabric: leaf-0-0's nodes first.
  CHECK(f.node_name(r.nodes.front()) == "node-2");
}

TEST_CASE("the highest tier allowed is respected, with a reason") {
  const Fabric f = Build(Tree(2, 2, 4));
  const std::vector<int> free(16, 8);
  const GangResult r = PlaceGang(f, free, 5, 8, 0);
  CHECK_FALSE(r.feasible);
  CHECK(r.reason ==
        "no domain up to tier leaf has 5 nodes with 8 free devices (the most any has is 4)");
  CHECK(PlaceGang(f, free, 5, 8, 1).feasible);
  CHECK_FALSE(PlaceGang(f, free, 17, 8, 2).feasible);
  CHECK_FALSE(PlaceGang(f, free, 2, 9, 2).feasible);
  CHECK_FALSE(PlaceGang(f, free, 0, 8, 2).feasible);
  CHECK_FALSE(PlaceGang(f, free, 2, 8, 3).feasible);
}

TEST_CASE("fabric specs are validated") {
  FabricSpec spec = Tree(1, 1, 1);
  spec.domains.push_back({"leaf-x", 0, "nowhere"});
  CHECK(Fabric::Build(spec).status().message() == "domains[3].parent: unknown domain nowhere");
  spec = Tree(1, 1, 1);
  spec.domains.push_back({"pod", 2, ""});
  CHECK(Fabric::Build(spec).status().message() == "domains[3].name: duplicate domain pod");
  spec = Tree(1, 1, 1);
  spec.domains.push_back({"odd", 1, "leaf-0-0"});
  CHECK(Fabric::Build(spec).status().message() ==
        "domains[3].parent: leaf-0-0 is not in a higher tier than odd");
  spec = Tree(1, 1, 1);
  spec.nodes.push_back({"node-9", "leaf-9"});
  CHECK(Fabric::Build(spec).status().message() == "nodes[1].domain: unknown domain leaf-9");
  spec.tiers.clear();
  CHECK_FALSE(Fabric::Build(spec).ok());
  spec = Tree(1, 1, 1);
  spec.tiers[1].name = "leaf";
  CHECK(Fabric::Build(spec).status().message() == "tiers[1].name: duplicate tier leaf");
  spec.tiers[1] = {"", 0};
  CHECK(Fabric::Build(spec).status().message() == "tiers[1].name: must not be empty");
  spec.tiers[1] = {"spine", -1};
  CHECK(Fabric::Build(spec).status().message() ==
        "tiers[1].bandwidthGBps: must be a non-negative number");
}

TEST_CASE("ranks follow the tree, whatever order the spec lists domains in") {
  FabricSpec spec;
  spec.tiers = {{"leaf", 0}, {"spine", 0}};
  spec.domains = {{"spine-a", 1, ""}, {"spine-b", 1, ""}};
  // Leaves of the two spines interleaved in the listing.
  for (int l = 0; l < 4; ++l) {
    spec.domains.push_back({"leaf-" + std::to_string(l), 0, l % 2 == 0 ? "spine-a" : "spine-b"});
  }
  for (int n = 0; n < 8; ++n) {
    spec.nodes.push_back({"n" + std::to_string(n), "leaf-" + std::to_string(n / 2)});
  }
  const Fabric f = Build(spec);
  FabricSpec wide = spec;
  wide.tiers.push_back({"pod", 0});
  wide.domains.insert(wide.domains.begin(), {"pod", 2, ""});
  wide.domains[1].parent = "pod";
  wide.domains[2].parent = "pod";
  const Fabric g = Build(wide);
  const GangResult r = PlaceGang(g, std::vector<int>(8, 8), 8, 8, 2);
  REQUIRE(r.feasible);
  std::vector<std::string> order;
  for (int n : r.nodes) order.push_back(g.node_name(n));
  // spine-a's leaves (leaf-0, leaf-2) first, then spine-b's.
  CHECK(order == std::vector<std::string>{"n0", "n1", "n4", "n5", "n2", "n3", "n6", "n7"});
  const GangResult one = PlaceGang(f, std::vector<int>(8, 8), 1, 8, 1);
  REQUIRE(one.feasible);
  CHECK(PlaceGang(f, std::vector<int>(8, 0), 1, 8, 1).reason ==
        "no domain up to tier spine has 1 node with 8 free devices (the most any has is 0)");
}

TEST_CASE("gang placement properties on random fabrics") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const Fabric f = Build(Tree(1 + static_cast<int>(rng() % 3), 1 + static_cast<int>(rng() % 4),
                                1 + static_cast<int>(rng() % 5)));
    std::vector<int> free(static_cast<size_t>(f.node_count()));
    for (int& x : free) x = static_cast<int>(rng() % 9);
    const int k = 1 + static_cast<int>(rng() % 8);
    const int m = 1 + static_cast<int>(rng() % 6);
    const GangResult r = PlaceGang(f, free, m, k, 2);
    // Eligible nodes per domain, counted independently.
    std::vector<int> eligible(static_cast<size_t>(f.domain_count()), 0);
    std::vector<int64_t> free_sum(static_cast<size_t>(f.domain_count()), 0);
    for (int n = 0; n < f.node_count(); ++n) {
      for (int t = 0; t < f.tier_count(); ++t) {
        const int d = f.NodeDomain(n, t);
        if (d < 0) continue;
        free_sum[static_cast<size_t>(d)] += free[static_cast<size_t>(n)];
        if (free[static_cast<size_t>(n)] >= k) ++eligible[static_cast<size_t>(d)];
      }
    }
    int lowest_tier = -1;
    for (int t = 0; t < f.tier_count() && lowest_tier < 0; ++t) {
      for (int d = 0; d < f.domain_count(); ++d) {
        if (f.domain_tier(d) == t && eligible[static_cast<size_t>(d)] >= m) lowest_tier = t;
      }
    }
    INFO("trial " << trial);
    REQUIRE(r.feasible == (lowest_tier >= 0));
    if (!r.feasible) continue;
    CHECK(r.tier == lowest_tier);
    REQUIRE(r.nodes.size() == static_cast<size_t>(m));
    CHECK(std::set<int>(r.nodes.begin(), r.nodes.end()).size() == r.nodes.size());
    for (int n : r.nodes) {
      CHECK(free[static_cast<size_t>(n)] >= k);
      CHECK(f.NodeDomain(n, r.tier) == r.domain);
    }
    for (int d = 0; d < f.domain_count(); ++d) {
      if (f.domain_tier(d) == r.tier && eligible[static_cast<size_t>(d)] >= m) {
        CHECK(free_sum[static_cast<size_t>(r.domain)] <= free_sum[static_cast<size_t>(d)]);
      }
    }
  }
}

}  // namespace
}  // namespace xpu::topology
