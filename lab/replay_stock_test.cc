// The stock policies of the placement lab, through the real upstream allocator (upstream tier:
// scripts/build-upstream builds it), on the hand-worked cases of lab/testing/hand_cases.h.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"
#include "lab/replay.h"
#include "lab/stock_allocator.h"
#include "lab/testing/hand_cases.h"

namespace xpu::lab {
namespace {

using testing::HandFleet;
using testing::HandTrace;

ReplayResult RunStock(const Fleet& fleet, const std::vector<Job>& jobs,
                      std::vector<std::string> policies, controller::Config config = {},
                      std::optional<Scheduler> scheduler = std::nullopt) {
  auto binary = FindStockAllocator("");
  REQUIRE_OK(binary);
  ReplayOptions options;
  options.policies = std::move(policies);
  options.stock_allocator = *binary;
  options.record_placements = true;
  options.config = std::move(config);
  if (scheduler.has_value()) options.scheduler = *scheduler;  // else the default
  auto result = Replay(fleet, jobs, options);
  REQUIRE_OK(result);
  return *result;
}

controller::Config Mode(controller::PublishMode mode) {
  controller::Config config = controller::DefaultConfig();
  config.mode = mode;
  return config;
}

TEST_CASE("stock-unordered takes a pair across the 910 rings, stock-xpu waits as the solver does") {
  const Fleet fleet = HandFleet("nodes: [{model: atlas800-9000, count: 1}]\n");
  const auto jobs = HandTrace(testing::kRingTrace);
  for (controller::PublishMode mode :
       {controller::PublishMode::kAttributes, controller::PublishMode::kGroups}) {
    INFO(controller::PublishModeName(mode));
    const ReplayResult r = RunStock(fleet, jobs, {"stock-unordered", "stock-xpu"}, Mode(mode));
    testing::CheckRingTrace(r.policies[0], testing::kRingTraceIndexOrder);
    testing::CheckRingTrace(r.policies[1], testing::kRingTraceRuleKeeping);
  }
}

TEST_CASE("stock-unordered splits four NPUs over the rings, below the best bandwidth") {
  // a holds npu-0; b (4) then gets npu-1..4 in index order: across the rings (a violation),
  // slower than ring 1 (npu-4..7), which the solver and stock-xpu take.
  const Fleet fleet = HandFleet("nodes: [{model: atlas800-9000, count: 1}]\n");
  const auto jobs = HandTrace("a,0,1,100\nb,0,4,100\n");
  const ReplayResult r = RunStock(fleet, jobs, {"stock-unordered", "stock-xpu"});
  const PolicyMetrics& unordered = r.policies[0];
  CHECK(unordered.rule_violations == 1);
  CHECK(unordered.below_best_bandwidth == 1);
  CHECK(unordered.mean_bandwidth_shortfall > 0);
  CHECK(unordered.mean_bandwidth_shortfall < 1);
  CHECK(unordered.placement_log.back() == "b @0 atlas800-9000-0:npu-1,npu-2,npu-3,npu-4");
  const PolicyMetrics& xpu = r.policies[1];
  CHECK(xpu.rule_violations == 0);
  CHECK(xpu.below_best_bandwidth == 0);
  CHECK(xpu.placement_log.back() == "b @0 atlas800-9000-0:npu-4,npu-5,npu-6,npu-7");
}

// "a @0 hgx-h200-1:gpu-0,gpu-1" without the node names: "a @0 :gpu-0,gpu-1".
std::vector<std::string> WithoutNodes(const std::vector<std::string>& log) {
  std::vector<std::string> out;
  for (std::string line : log) {
    for (size_t at = line.find(" hgx-h200-"); at != std::string::npos;
         at = line.find(" hgx-h200-", at + 1)) {
      line.erase(at + 1, line.find(':', at) - at - 1);
    }
    out.push_back(std::move(line));
  }
  return out;
}

TEST_CASE("every policy places the same jobs on the same devices when capacity is ample") {
  const Fleet fleet = HandFleet("nodes: [{model: hgx-h200, count: 2}]\n");
  const auto jobs = HandTrace(testing::kAmpleTrace);
  const std::vector<std::string> all = {"stock-unordered", "stock-xpu", "solver", "solver-node"};
  // In the node order every policy takes the same nodes too.
  const ReplayResult r = RunStock(fleet, jobs, all, {}, Scheduler::kOrder);
  REQUIRE(r.policies.size() == 4);
  CHECK(r.policies[0].placements == static_cast<int64_t>(jobs.size()));
  for (const PolicyMetrics& m : r.policies) {
    INFO(m.policy);
    CHECK(m.placement_log == r.policies[0].placement_log);
    CHECK(m.rule_violations == 0);
    CHECK(m.below_best_bandwidth == 0);
  }
  // kube-scheduler breaks the tie between the two empty nodes at random, the same way for both
  // stock policies (one seed, the same scores); the devices on the node are still the solver's.
  const ReplayResult kube = RunStock(fleet, jobs, all);
  for (const PolicyMetrics& m : kube.policies) {
    INFO(m.policy);
    CHECK(WithoutNodes(m.placement_log) == WithoutNodes(r.policies[0].placement_log));
    CHECK(m.rule_violations == 0);
    CHECK(m.below_best_bandwidth == 0);
  }
  CHECK(kube.policies[0].placement_log == kube.policies[1].placement_log);
}

TEST_CASE("kube is the stock policies' default node choice, and the seed decides its ties") {
  const Fleet fleet = HandFleet("nodes: [{model: hgx-h200, count: 3}]\n");
  const auto jobs = testing::SyntheticJobs(fleet, {.jobs = 200});
  const std::vector<std::string> stock = {"stock-unordered", "stock-xpu"};
  const ReplayResult fallback = RunStock(fleet, jobs, stock);
  const ReplayResult kube = RunStock(fleet, jobs, stock, {}, Scheduler::kKube);
  CHECK(ToJson(fallback).dump() == ToJson(kube).dump());
  CHECK(fallback.scheduler == "kube");
  CHECK(fallback.scheduler_seed == 1);
  for (size_t i = 0; i < stock.size(); ++i) {
    CHECK(fallback.policies[i].placement_log == kube.policies[i].placement_log);
  }
  // Another seed breaks the ties elsewhere.
  auto binary = FindStockAllocator("");
  REQUIRE_OK(binary);
  ReplayOptions options;
  options.policies = stock;
  options.stock_allocator = *binary;
  options.record_placements = true;
  options.seed = 2;
  const auto reseeded = Replay(fleet, jobs, options);
  REQUIRE_OK(reseeded);
  CHECK(reseeded->scheduler_seed == 2);
  CHECK(reseeded->policies[0].placement_log != kube.policies[0].placement_log);
}

TEST_CASE(
    "kube's DynamicResources score sends PCIe pairs and quads to the nodes with the best tier") {
  // render's subrequests for a count go from the tightest tier (one PCIe switch) to the loosest:
  // the scheduler prefers a node where an earlier one fits, so no set is below what another node
  // offered, where first fit in the node order takes the first node that can give the count.
  const Fleet fleet = HandFleet("nodes: [{model: pcie-2numa-8gpu, count: 4}]\n");
  const auto jobs = testing::SyntheticJobs(fleet, {.jobs = 400});
  const ReplayResult kube =
      RunStock(fleet, jobs, {"stock-xpu"}, Mode(controller::PublishMode::kAttributes));
  const ReplayResult order = RunStock(
      fleet, jobs, {"stock-xpu"}, Mode(controller::PublishMode::kAttributes), Scheduler::kOrder);
  CHECK(kube.policies[0].below_vendor_best_bandwidth == 0);
  CHECK(order.policies[0].below_vendor_best_bandwidth > 0);
  CHECK(kube.policies[0].placements == order.policies[0].placements);
}

TEST_CASE("stock policies replay deterministically on a mixed fleet and keep what they promise") {
  const Fleet fleet = HandFleet(
      "nodes: [{model: atlas800-9000, count: 3}, {model: atlas800t-a3, count: 2},"
      " {model: hgx-h200, count: 2}, {model: pcie-2numa-8gpu, count: 2}]\n");
  const auto jobs = testing::SyntheticJobs(fleet, {.jobs = 400, .max_devices_per_node = 16});
  const ReplayResult a = testing::ReplayTwiceAlike([&] {
    return RunStock(fleet, jobs, {"stock-unordered", "stock-xpu", "solver"});
  });
  CHECK(a.policies[1].rule_violations == 0);
  CHECK(a.policies[2].rule_violations == 0);
  CHECK(a.policies[2].below_best_bandwidth == 0);
  CHECK(a.policies[2].below_best_bandwidth <= a.policies[0].below_best_bandwidth);
  const ReplayResult groups =
      RunStock(fleet, jobs, {"stock-xpu"}, Mode(controller::PublishMode::kGroups));
  CHECK(groups.policies[0].rule_violations == 0);
}

TEST_CASE("MIG partitions: the stock allocator follows the published order, as the solver places") {
  const testing::MigCase c;
  const ReplayResult r = testing::ReplayTwiceAlike([&] {
    return RunStock(c.fleet, c.jobs, {"stock-unordered", "stock-xpu", "solver"});
  });
  {
    INFO("stock-xpu: the controller's order");
    testing::CheckMigTracePacked(r.policies[1]);
    CHECK(r.policies[1].placement_log == r.policies[2].placement_log);
  }
  // In index order the 1g.18gb takes slot 0 of gpu-0, which pushes the 4g.71gb onto gpu-1: six
  // GPUs are left whole for seven 7g.141gb, and the last waits until the first of them ends.
  testing::CheckMigTrace(r.policies[0],
                         {{0, "s @0 h200-mig-0:gpu-0-1g-18gb-0"},
                          {1, "m @0 h200-mig-0:gpu-1-4g-71gb-0"},
                          {7, "w6 @1 h200-mig-0:gpu-7-7g-141gb-0"},
                          {8, "w7 @51 h200-mig-0:gpu-2-7g-141gb-0"}},
                         50);
  CHECK(r.policies[0].largest_profile_fits == Approx(6.0 / 8));
}

TEST_CASE("partitions and whole devices under the stock policies: a synthetic mix") {
  const xpu::testing::TempDir dir;
  const Fleet fleet = testing::MigFleet(dir, 4, 2);
  const auto jobs =
      testing::SyntheticJobs(fleet, {.jobs = 300, .load = 0.9, .partition_share = 0.8});
  const ReplayResult r = RunStock(fleet, jobs, {"stock-unordered", "stock-xpu", "solver"});
  for (const PolicyMetrics& m : r.policies) {
    INFO(m.policy);
    CHECK(m.placements + m.unplaced + m.rejected == 300);
    CHECK(m.partition_placements > 150);
    CHECK(m.rule_violations == 0);
  }
}

}  // namespace
}  // namespace xpu::lab
