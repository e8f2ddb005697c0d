#include "topology/solver.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "topology/testing/fixtures.h"

namespace xpu::topology {
namespace {

Node Build(const NodeSpec& spec) {
  StatusOr<Node> node = Node::Build(spec);
  INFO(node.status().ToString());
  REQUIRE_OK(node);
  return *std::move(node);
}

DeviceSet Ids(std::initializer_list<int> ids) { return DeviceSet::Of(std::vector<int>(ids)); }

// Free = every device but `allocated`.
SolveResult SolveWith(const Node& node, std::initializer_list<int> allocated, int count) {
  return Solve(node, node.All() - Ids(allocated), count);
}

std::vector<int> Chosen(const SolveResult& r) {
  INFO(r.reason);
  REQUIRE(r.feasible);
  return r.devices.Ids();
}

TEST_CASE("ascend 910: counts 1, 2, 4, 8 only, at most 4 inside one ring") {
  const Node node = Build(testing::Atlas800_9000());
  CHECK(Chosen(Solve(node, node.All(), 4)) == std::vector<int>{0, 1, 2, 3});
  CHECK(Chosen(Solve(node, node.All(), 8)).size() == 8);
  for (int k : {3, 5, 6, 7}) {
    SolveResult r = Solve(node, node.All(), k);
    CHECK_FALSE(r.feasible);
    CHECK_THAT(r.reason, Catch::Contains("allowed: 1, 2, 4, 8"));
  }
  // 4 free in total, but 2 in each ring: no ring holds 4.
  SolveResult split = SolveWith(node, {0, 1, 4, 5}, 4);
  CHECK_FALSE(split.feasible);
  CHECK_THAT(split.reason, Catch::Contains("no HCCS ring has 4 free devices"));
  // Ring A has 1 in use, so 4 must come from ring B.
  CHECK(Chosen(SolveWith(node, {2}, 4)) == std::vector<int>{4, 5, 6, 7});
}

TEST_CASE("ascend 910: request 1 prefers the ring with 1 free, then 3, then 2, then 4") {
  const Node node = Build(testing::Atlas800_9000());
  // Ring A (0-3) with 1 free, ring B with 3 free: take the lone one.
  CHECK(Chosen(SolveWith(node, {0, 1, 2, 4}, 1)) == std::vector<int>{3});
  // Ring A with 3 free, ring B with 2 free: 3 wins.
  CHECK(Chosen(SolveWith(node, {0, 4, 5}, 1)) == std::vector<int>{1});
  // Ring A with 4 free, ring B with 2 free: 2 wins.
  CHECK(Chosen(SolveWith(node, {4, 5}, 1)) == std::vector<int>{6});
  // Ring A with 4 free, ring B with 3 free: 3 wins, and inside it the NPU whose PCIe switch
  // partner is busy, so the pair 4,5 stays whole.
  CHECK(Chosen(SolveWith(node, {7}, 1)) == std::vector<int>{6});
  // Both rings whole: the lowest index.
  CHECK(Chosen(Solve(node, node.All(), 1)) == std::vector<int>{0});
}

TEST_CASE("ascend 910: request 2 prefers the ring with 2 free, then 4, then 3") {
  const Node node = Build(testing::Atlas800_9000());
  CHECK(Chosen(SolveWith(node, {0, 1}, 2)) == std::vector<int>{2, 3});  // A: 2 free, B: 4 free
  CHECK(Chosen(SolveWith(node, {0, 4, 5, 6}, 2)) == std::vector<int>{2, 3});  // A: 3, B: 1 -> A
  CHECK(Chosen(SolveWith(node, {0}, 2)) == std::vector<int>{4, 5});           // A: 3, B: 4 -> B
}

TEST_CASE("ascend 910B x8: any count 1-8 in the single HCCS domain") {
  const Node node = Build(testing::Atlas800tA2());
  for (int k = 1; k <= 8; ++k) CHECK(Solve(node, node.All(), k).feasible);
  // Equal bandwidth everywhere: keep PCIe/NUMA locality (fullest NUMA first).
  CHECK(Chosen(SolveWith(node, {0, 1, 2}, 1)) == std::vector<int>{3});
  CHECK_FALSE(Solve(node, node.All(), 9).feasible);
}

TEST_CASE("ascend 910B box16: 1-8 in one area, 10/12/14 split evenly at equal positions") {
  const Node node = Build(testing::Atlas200tA2Box16());
  CHECK(Chosen(Solve(node, node.All(), 8)) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(Chosen(Solve(node, node.All(), 10)) == std::vector<int>{0, 1, 2, 3, 4, 8, 9, 10, 11, 12});
  for (int k : {9, 11, 13, 15}) CHECK_FALSE(Solve(node, node.All(), k).feasible);
  CHECK(Chosen(Solve(node, node.All(), 16)).size() == 16);
  // Position 0 busy in area 0 and position 1 busy in area 1: 12 must avoid both positions.
  CHECK(Chosen(SolveWith(node, {0, 9}, 12)) ==
        std::vector<int>{2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15});
  // Only 5 positions free in both areas: 12 is infeasible, with the reason.
  SolveResult r = SolveWith(node, {0, 1, 10}, 12);
  CHECK_FALSE(r.feasible);
  CHECK_THAT(r.reason, Catch::Contains("positions are free in both HCCS areas"));
  // 8 never crosses areas, even when no area has 8 free.
  CHECK_FALSE(SolveWith(node, {0, 8}, 8).feasible);
  // The fuller area is preferred for small requests.
  CHECK(Chosen(SolveWith(node, {8, 9, 10, 11, 12}, 2)) == std::vector<int>{13, 14});
}

TEST_CASE("ascend A3: 1 or even counts of whole HiAM modules") {
  const Node node = Build(testing::Atlas800tA3());
  // The published example: free {0,2,3,4}, request 2 -> the whole module {2,3}.
  const DeviceSet free = Ids({0, 2, 3, 4});
  CHECK(Solve(node, free, 2).devices == Ids({2, 3}));
  // Request 1 takes a die whose partner is busy, so whole modules stay free; of the two lone
  // dies (0 and 4), the one in the fuller NUMA node.
  CHECK(Solve(node, free, 1).devices == Ids({4}));
  CHECK_FALSE(Solve(node, free, 4).feasible);
  for (int k : {3, 5, 15}) CHECK_FALSE(Solve(node, node.All(), k).feasible);
  CHECK(Chosen(Solve(node, node.All(), 4)) == std::vector<int>{0, 1, 2, 3});
  // Even counts never split a module.
  SolveResult six = SolveWith(node, {1, 3, 5}, 6);
  CHECK(Chosen(six) == std::vector<int>{6, 7, 8, 9, 10, 11});
}

TEST_CASE("NVSwitch board: all pairs equal, count 8 takes the board") {
  const Node node = Build(testing::HgxH200());
  CHECK(Chosen(Solve(node, node.All(), 8)) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  const SolveResult two = Solve(node, node.All(), 2);
  CHECK(two.score.bottleneck_mbps == 450000);
  // Ties on bandwidth are broken by fragmentation: the stragglers of NUMA 0 go first, so
  // NUMA 1 and its two PCIe switches stay whole.
  CHECK(Chosen(SolveWith(node, {0, 2}, 2)) == std::vector<int>{1, 3});
  CHECK(Chosen(SolveWith(node, {0}, 2)) == std::vector<int>{2, 3});
}

TEST_CASE("PCIe tree: same switch, then same host bridge, then same NUMA") {
  const Node node = Build(testing::Pcie2Numa8Gpu());
  CHECK(Chosen(Solve(node, node.All(), 2)) == std::vector<int>{0, 1});
  CHECK(Solve(node, node.All(), 2).score.bottleneck_mbps == 32000);
  // Switch (0,1) has one free, (2,3) two: the pair shares a switch.
  CHECK(Chosen(SolveWith(node, {0}, 2)) == std::vector<int>{2, 3});
  // No switch has 2 free in NUMA 0; NUMA 1 still has a whole switch.
  CHECK(Chosen(SolveWith(node, {0, 2}, 2)) == std::vector<int>{4, 5});
  // Only single GPUs per switch left: same host bridge beats crossing NUMA.
  CHECK(Chosen(SolveWith(node, {0, 2, 4, 6}, 2)) == std::vector<int>{1, 3});
  // 4 stays in one NUMA node.
  CHECK(Chosen(Solve(node, node.All(), 4)) == std::vector<int>{0, 1, 2, 3});
  // Request 1: the fullest switch.
  CHECK(Chosen(SolveWith(node, {4}, 1)) == std::vector<int>{5});
}

TEST_CASE("ring sets: only the listed sets") {
  const Node kunlun = Build(testing::Kunlun8());
  CHECK(Chosen(Solve(kunlun, kunlun.All(), 4)) == std::vector<int>{0, 1, 4, 5});
  CHECK(Chosen(SolveWith(kunlun, {0}, 4)) == std::vector<int>{2, 3, 6, 7});
  CHECK_FALSE(SolveWith(kunlun, {0, 2, 3}, 4).feasible);
  CHECK_FALSE(Solve(kunlun, kunlun.All(), 3).feasible);
  const Node mlu = Build(testing::CambriconMlu370X8());
  CHECK(Chosen(Solve(mlu, mlu.All(), 2)) == std::vector<int>{0, 1});
  // Card 0 is half used: a pair takes a whole free card.
  CHECK(Chosen(SolveWith(mlu, {0}, 2)) == std::vector<int>{2, 3});
  // {2,3,4,5} crosses NUMA nodes (10 GB/s); {4,5,6,7} keeps every pair on one root.
  CHECK(Chosen(SolveWith(mlu, {0}, 4)) == std::vector<int>{4, 5, 6, 7});
  CHECK(RuleAllows(mlu, Ids({6, 7, 0, 1})));
  CHECK_FALSE(RuleAllows(mlu, Ids({0, 1, 4, 5})));
}

TEST_CASE("infeasible results carry a reason") {
  const Node node = Build(testing::HgxH200());
  SolveResult r = SolveWith(node, {0, 1, 2, 3, 4, 5}, 3);
  CHECK_FALSE(r.feasible);
  CHECK(r.reason == "node hgx-h200 has 2 free devices, 3 requested");
  CHECK_FALSE(Solve(node, node.All(), 0).feasible);
  CHECK_FALSE(Solve(node, node.All(), -1).feasible);
  CHECK_THAT(Solve(node, node.All() - Ids({1}), 2, Ids({1})).reason,
             Catch::Contains("gpu-1 is not free"));
}

TEST_CASE("required devices are always in the answer") {
  const Node node = Build(testing::Pcie2Numa8Gpu());
  CHECK(Chosen(Solve(node, node.All(), 2, Ids({5}))) == std::vector<int>{4, 5});
  CHECK(Chosen(Solve(node, node.All(), 3, Ids({0, 7}))).size() == 3);
  const Node a3 = Build(testing::Atlas800tA3());
  // Module {4,5} is required; its NUMA neighbour module {6,7} completes it.
  CHECK(Chosen(Solve(a3, a3.All(), 4, Ids({5}))) == std::vector<int>{4, 5, 6, 7});
}

TEST_CASE("equal inputs give equal outputs") {
  for (const auto& model : testing::BundledModels()) {
    const Node a = Build(model.spec);
    const Node b = Build(model.spec);
    for (int k = 1; k <= a.size(); ++k) {
      const SolveResult x = Solve(a, a.All() - Ids({1}), k);
      const SolveResult y = Solve(b, b.All() - Ids({1}), k);
      CHECK(x.feasible == y.feasible);
      CHECK(x.devices == y.devices);
      CHECK(x.score == y.score);
      CHECK(x.reason == y.reason);
    }
  }
}

TEST_CASE("aligned groups are rule-valid, best-bandwidth and buddy style") {
  const Node ring = Build(testing::Atlas800_9000());
  CHECK(AlignedGroups(ring, 2) ==
        std::vector<DeviceSet>{Ids({0, 1}), Ids({2, 3}), Ids({4, 5}), Ids({6, 7})});
  CHECK(AlignedGroups(ring, 4) == std::vector<DeviceSet>{Ids({0, 1, 2, 3}), Ids({4, 5, 6, 7})});
  CHECK(AlignedGroups(ring, 3).empty());
  const Node a3 = Build(testing::Atlas800tA3());
  CHECK(AlignedGroups(a3, 2).size() == 8);
  CHECK(AlignedGroups(a3, 4).size() == 4);
  // Box16 x10: one disjoint group; overlapping ones cover the devices it leaves.
  const Node box = Build(testing::Atlas200tA2Box16());
  const std::vector<DeviceSet> ten = AlignedGroups(box, 10);
  REQUIRE(ten.size() == 4);
  CHECK(ten[0] == Ids({0, 1, 2, 3, 4, 8, 9, 10, 11, 12}));
  DeviceSet covered;
  for (DeviceSet g : ten) {
    CHECK(RuleAllows(box, g));
    covered = covered | g;
  }
  CHECK(covered == box.All());
  // PCIe x2: the four switch pairs; crossing a switch is never published.
  const Node pcie = Build(testing::Pcie2Numa8Gpu());
  CHECK(AlignedGroups(pcie, 2) ==
        std::vector<DeviceSet>{Ids({0, 1}), Ids({2, 3}), Ids({4, 5}), Ids({6, 7})});
}

}  // namespace
}  // namespace xpu::topology
