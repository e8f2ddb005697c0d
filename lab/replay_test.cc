// The simulation on tiny fleets and traces whose answers are worked out by hand. The stock
// policies, which need the upstream allocator, are in replay_stock_test.cc (upstream tier).
#include "lab/replay.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "lab/testing/hand_cases.h"

namespace xpu::lab {
namespace {

using testing::HandFleet;
using testing::HandTrace;

ReplayResult Run(const Fleet& fleet, const std::vector<Job>& jobs,
                 std::vector<std::string> policies, NodeOrder order = NodeOrder::kFirst) {
  ReplayOptions options;
  options.policies = std::move(policies);
  options.node_order = order;
  options.record_placements = true;
  auto result = Replay(fleet, jobs, options);
  REQUIRE_OK(result);
  return *result;
}

TEST_CASE("replay on one Atlas 800 9000: a pair across rings waits, and strands two devices") {
  const Fleet fleet = HandFleet("nodes: [{model: atlas800-9000, count: 1}]\n");
  const ReplayResult r = Run(fleet, HandTrace(testing::kRingTrace), {"solver", "solver-node"});
  for (const PolicyMetrics& m : r.policies) {
    INFO(m.policy);
    testing::CheckRingTrace(m, testing::kRingTraceRuleKeeping);
  }
  CHECK(r.policies[0].placement_log == r.policies[1].placement_log);
}

TEST_CASE("replay node order: first and most-allocated pack, least-allocated spreads") {
  const Fleet fleet = HandFleet("nodes: [{model: hgx-h200, count: 2}]\n");
  const auto jobs = HandTrace("a,0,4,100\nb,0,4,100\n");
  const ReplayResult first = Run(fleet, jobs, {"solver"}, NodeOrder::kFirst);
  CHECK(first.policies[0].placement_log ==
        std::vector<std::string>{"a @0 hgx-h200-0:gpu-0,gpu-1,gpu-2,gpu-3",
                                 "b @0 hgx-h200-0:gpu-4,gpu-5,gpu-6,gpu-7"});
  const ReplayResult most = Run(fleet, jobs, {"solver"}, NodeOrder::kMostAllocated);
  CHECK(most.policies[0].placement_log == first.policies[0].placement_log);
  const ReplayResult least = Run(fleet, jobs, {"solver"}, NodeOrder::kLeastAllocated);
  CHECK(least.policies[0].placement_log ==
        std::vector<std::string>{"a @0 hgx-h200-0:gpu-0,gpu-1,gpu-2,gpu-3",
                                 "b @0 hgx-h200-1:gpu-0,gpu-1,gpu-2,gpu-3"});
}

TEST_CASE("replay solver-node takes the node with the better set, the others the first node") {
  const Fleet fleet =
      HandFleet("nodes: [{model: pcie-2numa-8gpu, count: 1}, {model: hgx-h200, count: 1}]\n");
  const ReplayResult r = Run(fleet, HandTrace("a,0,2,100\n"), {"solver", "solver-node"});
  REQUIRE(r.policies[0].placement_log.size() == 1);
  CHECK(r.policies[0].placement_log[0].find("pcie-2numa-8gpu-0:") != std::string::npos);
  CHECK(r.policies[1].placement_log[0].find("hgx-h200-0:") != std::string::npos);
  // What the node choice lost: the best PCIe pair (one switch) against any NVSwitch pair.
  CHECK(r.policies[0].below_fleet_best_bandwidth == 1);
  CHECK(r.policies[1].below_fleet_best_bandwidth == 0);
  CHECK(r.policies[0].below_best_bandwidth == 0);  // the best pair of the PCIe node
  CHECK(r.policies[0].mean_bottleneck_gbps == Approx(32.0));
  CHECK(r.policies[1].mean_bottleneck_gbps == Approx(450.0));
}

TEST_CASE("replay counts a set below the best of the chosen node's vendor apart from the fleet's") {
  // The best PCIe pair (one switch, 32 GB/s) against the other node's best pair: an NVSwitch
  // pair is NVIDIA's too, an A3 pair is another vendor's, which the job's images may not run on.
  const ReplayResult nvidia =
      Run(HandFleet("nodes: [{model: pcie-2numa-8gpu, count: 1}, {model: hgx-h200, count: 1}]\n"),
          HandTrace("a,0,2,100\n"), {"solver", "solver-node"});
  CHECK(nvidia.policies[0].below_fleet_best_bandwidth == 1);
  CHECK(nvidia.policies[0].below_vendor_best_bandwidth == 1);
  CHECK(nvidia.policies[1].below_vendor_best_bandwidth == 0);
  const ReplayResult mixed = Run(
      HandFleet("nodes: [{model: pcie-2numa-8gpu, count: 1}, {model: atlas800t-a3, count: 1}]\n"),
      HandTrace("a,0,2,100\n"), {"solver"});
  CHECK(mixed.policies[0].placement_log[0].find("pcie-2numa-8gpu-0:") != std::string::npos);
  CHECK(mixed.policies[0].below_fleet_best_bandwidth == 1);
  CHECK(mixed.policies[0].below_vendor_best_bandwidth == 0);
  // Single devices have no bottleneck: neither counts them.
  const ReplayResult single =
      Run(HandFleet("nodes: [{model: pcie-2numa-8gpu, count: 1}, {model: hgx-h200, count: 1}]\n"),
          HandTrace("a,0,1,100\n"), {"solver"});
  CHECK(single.policies[0].below_fleet_best_bandwidth == 0);
  CHECK(single.policies[0].below_vendor_best_bandwidth == 0);
  CHECK(ToJson(nvidia)["policies"]["solver"]["belowVendorBestBandwidth"] == 1);
}

TEST_CASE("replay's scheduler choice leaves the solver policies' node order alone") {
  const Fleet fleet =
      HandFleet("nodes: [{model: hgx-h200, count: 2}, {model: pcie-2numa-8gpu, count: 2}]\n");
  const auto jobs = testing::SyntheticJobs(fleet, {.jobs = 300});
  ReplayOptions options;
  options.policies = {"solver", "solver-node"};
  options.record_placements = true;
  auto kube = Replay(fleet, jobs, options);
  options.scheduler = Scheduler::kOrder;
  options.seed = 99;
  auto order = Replay(fleet, jobs, options);
  REQUIRE_OK(kube);
  REQUIRE_OK(order);
  CHECK(ToJson(*kube).dump() == ToJson(*order).dump());
  CHECK(kube->scheduler.empty());  // no stock policy ran: the result names no scheduler
  for (size_t i = 0; i < 2; ++i) {
    CHECK(kube->policies[i].placement_log == order->policies[i].placement_log);
  }
}

TEST_CASE("replay places gangs in the lowest fabric tier and queues the one that does not fit") {
  const Fleet fleet = HandFleet("nodes: [{model: hgx-h200, count: 4}]\nfabric: {leafSize: 2}\n");
  const auto jobs = HandTrace("g1,0,8+8,100\ng2,0,8+8,100\ng3,10,8+8,50\n");
  const PolicyMetrics m = Run(fleet, jobs, {"solver"}).policies[0];
  CHECK(m.placements == 3);
  CHECK(m.gangs == 3);
  CHECK(m.gang_tiers == std::map<std::string, int64_t>{{"leaf", 3}});
  CHECK(m.queue_delay_p95 == Approx(90));  // g3 waits from 10 to 100
  CHECK(m.stranded_device_seconds == 0);   // no node had a free device while g3 waited
  CHECK(m.makespan == Approx(150));
  CHECK(m.placement_log[0] ==
        "g1 @0 hgx-h200-0:" + std::string("gpu-0,gpu-1,gpu-2,gpu-3,gpu-4,"
                                          "gpu-5,gpu-6,gpu-7 hgx-h200-1:gpu-0,"
                                          "gpu-1,gpu-2,gpu-3,gpu-4,gpu-5,"
                                          "gpu-6,gpu-7"));
}

TEST_CASE("replay rejects what no node or gang of the empty fleet holds, and counts the unplaced") {
  const Fleet fleet = HandFleet("nodes: [{model: atlas800-9000, count: 2}]\n");
  // big: 16 devices on one node; wide: 3 nodes of 2; odd: 3 NPUs, which the 910 rules never
  // allow, so the rule-keeping policies never place it while one device is busy from 0 to 100.
  const auto jobs = HandTrace("big,0,16,10\nwide,0,2+2+2,10\nodd,0,3,10\none,0,1,100\n");
  for (const PolicyMetrics& m : Run(fleet, jobs, {"solver", "solver-node"}).policies) {
    INFO(m.policy);
    CHECK(m.rejected == 2);
    CHECK(m.placements == 1);
    CHECK(m.unplaced == 1);
    // odd fitted by count on both nodes (7 and 8 free) from 0 to 100.
    CHECK(m.stranded_device_seconds == Approx(15 * 100));
  }
}

TEST_CASE("replay with ample capacity places the same jobs on the same devices under each policy") {
  const Fleet fleet = HandFleet("nodes: [{model: hgx-h200, count: 2}]\n");
  const auto jobs = HandTrace(testing::kAmpleTrace);
  const ReplayResult r = Run(fleet, jobs, {"solver", "solver-node"});
  CHECK(r.policies[0].placements == static_cast<int64_t>(jobs.size()));
  CHECK(r.policies[0].placement_log == r.policies[1].placement_log);
  CHECK(r.policies[0].queue_delay_p95 == 0);
}

TEST_CASE("replay is deterministic and each policy's figures do not depend on the others") {
  const Fleet fleet = HandFleet(
      "nodes: [{model: atlas800-9000, count: 3}, {model: hgx-h200, count: 2},"
      " {model: pcie-2numa-8gpu, count: 2}]\n");
  const auto jobs = testing::SyntheticJobs(fleet, {.jobs = 600});
  const ReplayResult a = testing::ReplayTwiceAlike([&] {
    return Run(fleet, jobs, {"solver", "solver-node"});
  });
  const ReplayResult alone = Run(fleet, jobs, {"solver-node"});
  CHECK(alone.policies[0].placement_log == a.policies[1].placement_log);
  CHECK(ToJson(alone)["policies"]["solver-node"] == ToJson(a)["policies"]["solver-node"]);
  for (const PolicyMetrics& m : a.policies) {
    CHECK(m.rule_violations == 0);
    CHECK(m.below_best_bandwidth == 0);
    CHECK(m.placements + m.unplaced + m.rejected == 600);
    CHECK(m.utilisation > 0);
    CHECK(m.utilisation <= 1.0);
  }
}

TEST_CASE("replay refuses an unknown policy and a stock policy without the allocator") {
  const Fleet fleet = HandFleet("nodes: [{model: hgx-h200, count: 1}]\n");
  ReplayOptions options;
  options.policies = {"best-fit"};
  auto r = Replay(fleet, HandTrace("a,0,1,1\n"), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        "--policy: unknown policy \"best-fit\"; expected stock-unordered, stock-xpu, solver or "
        "solver-node");
  options.policies = {"stock-xpu"};
  r = Replay(fleet, HandTrace("a,0,1,1\n"), options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("stock allocator") != std::string::npos);
}

TEST_CASE("replay partitions: the solver keeps the large MIG profiles possible") {
  const testing::MigCase c;
  const ReplayResult r = testing::ReplayTwiceAlike([&] {
    return Run(c.fleet, c.jobs, {"solver", "solver-node"});
  });
  for (const PolicyMetrics& m : r.policies) {
    INFO(m.policy);
    testing::CheckMigTracePacked(m);
    // Over the window [0, 1]: 8 GPUs each able to take a 7g.141gb before s and m start at 0,
    // then 7 of 8 until the 7g.141gb start at 1 (the window ends there).
    CHECK(m.largest_profile_fits == Approx(7.0 / 8));
    // Busy: gpu-0 holds 1/7 + 4/7 of its compute from 0 to 1, of 8 devices.
    CHECK(m.utilisation == Approx((5.0 / 7) / 8));
  }
}

TEST_CASE("replay partitions: a whole-device job and partitions exclude each other") {
  const xpu::testing::TempDir dir;
  const Fleet fleet = testing::MigFleet(dir, 1, 1);  // MIG on gpu-0 only
  const auto jobs = HandTrace(
      "p,0,partition:3g.71gb,100\nx,1,8,10\n"
      "q,200,8,100\nr,201,partition:1g.18gb,10\n"
      "u,400,partition:nope,10\n");
  const ReplayResult r = Run(fleet, jobs, {"solver"});
  const PolicyMetrics& m = r.policies[0];
  CHECK(m.rejected == 1);  // no device offers "nope"
  CHECK(m.placements == 4);
  CHECK(m.partition_placements == 2);
  REQUIRE(m.placement_log.size() == 4);
  CHECK(m.placement_log[0] == "p @0 h200-mig-0:gpu-0-3g-71gb-4");
  // x needs all eight GPUs: it waits until the partition ends.
  CHECK(m.placement_log[1].starts_with("x @100 "));
  CHECK(m.placement_log[2].starts_with("q @200 "));
  // r waits until q gives gpu-0 back.
  CHECK(m.placement_log[3] == "r @300 h200-mig-0:gpu-0-1g-18gb-6");
}

TEST_CASE("replay partitions: a wait with the slots free but no legal placement is fragmentation") {
  const xpu::testing::TempDir dir;
  const Fleet fleet = testing::MigFleet(dir, 1, 1);
  // a, b, c at slots 6, 5, 4; b ends at 10; d takes the 3g.71gb at 0; e, a 2g.35gb, then finds
  // slots 5 and 7 and two compute slices free, but no placement (0, 2 and 4 are taken).
  const auto jobs = HandTrace(
      "a,0,partition:1g.18gb,100\nb,0,partition:1g.18gb,10\nc,0,partition:1g.18gb,100\n"
      "d,20,partition:3g.71gb,100\ne,30,partition:2g.35gb,10\n");
  const ReplayResult r = Run(fleet, jobs, {"solver"});
  const PolicyMetrics& m = r.policies[0];
  REQUIRE(m.placement_log.size() == 5);
  CHECK(m.placement_log[0] == "a @0 h200-mig-0:gpu-0-1g-18gb-6");
  CHECK(m.placement_log[1] == "b @0 h200-mig-0:gpu-0-1g-18gb-5");
  CHECK(m.placement_log[2] == "c @0 h200-mig-0:gpu-0-1g-18gb-4");
  CHECK(m.placement_log[3] == "d @20 h200-mig-0:gpu-0-3g-71gb-0");
  CHECK(m.placement_log[4].starts_with("e @100 "));
  CHECK(m.fragmented_waits == 1);
}

TEST_CASE("replay partitions: a synthetic inference mix on MIG and whole GPUs") {
  const xpu::testing::TempDir dir;
  const Fleet fleet = testing::MigFleet(dir, 4, 4);
  const auto jobs =
      testing::SyntheticJobs(fleet, {.jobs = 1500, .load = 0.8, .partition_share = 0.8});
  const ReplayResult r = testing::ReplayTwiceAlike([&] {
    return Run(fleet, jobs, {"solver", "solver-node"});
  });
  for (const PolicyMetrics& m : r.policies) {
    INFO(m.policy);
    CHECK(m.placements + m.unplaced + m.rejected == 1500);
    CHECK(m.rejected == 0);
    CHECK(m.rule_violations == 0);
    CHECK(m.partition_placements > 1000);
    CHECK(m.largest_profile_fits > 0);
    CHECK(m.largest_profile_fits < 1);
  }
  // The text and the JSON say it.
  CHECK(TextTable(r).find("solver-node  partitions: ") != std::string::npos);
  CHECK(ToJson(r)["policies"]["solver"]["partitionPlacements"] ==
        r.policies[0].partition_placements);
}

}  // namespace
}  // namespace xpu::lab
