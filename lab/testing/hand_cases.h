// Tiny fleets and traces whose replay answers are worked out by hand, shared by the unit tests
// (solver policies) and the upstream-tier tests (stock policies).
#ifndef XPU_LAB_TESTING_HAND_CASES_H_
#define XPU_LAB_TESTING_HAND_CASES_H_

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/node_inventory.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "controller/reference_servers.h"
#include "lab/fleet.h"
#include "lab/result.h"
#include "lab/trace.h"

namespace xpu::lab::testing {

inline Fleet HandFleet(std::string_view yaml) {
  auto fleet = ParseFleet(yaml, "");
  REQUIRE_OK(fleet);
  return *std::move(fleet);
}

inline std::vector<Job> HandTrace(std::string_view csv) {
  auto jobs = ParseTrace(csv, "hand.csv");
  REQUIRE_OK(jobs);
  return *std::move(jobs);
}

// A synthetic trace as `options` asks, sized to `fleet` (its devices and nodes; with
// partition_share, its partition offers).
inline std::vector<Job> SyntheticJobs(const Fleet& fleet, SyntheticOptions options) {
  const int max_devices_per_node = options.max_devices_per_node;
  options = SyntheticForFleet(fleet, std::move(options));
  options.max_devices_per_node = max_devices_per_node;
  return SyntheticTrace(options);
}

// Replays twice with `run`; checks that both give the same JSON and the same placements, and
// returns the first.
inline ReplayResult ReplayTwiceAlike(const std::function<ReplayResult()>& run) {
  ReplayResult a = run();
  const ReplayResult b = run();
  CHECK(ToJson(a).dump() == ToJson(b).dump());
  REQUIRE(a.policies.size() == b.policies.size());
  for (size_t i = 0; i < a.policies.size(); ++i) {
    INFO(a.policies[i].policy);
    CHECK(a.policies[i].placement_log == b.policies[i].placement_log);
  }
  return a;
}

// One Atlas 800 9000 (rings npu-0..3 and npu-4..7; 910 rules: 1, 2, 4, 8, at most 4 in one
// ring). Eight single jobs fill the node, ring 0 first; s3 and s7 end at 20 and leave npu-3 and
// npu-7 free, one in each ring; p, a pair, arrives at 20. Every job is placed, only p can wait,
// and every device is busy over the arrival window [0,20] (utilisation 1).
inline constexpr std::string_view kRingTrace =
    "#id,arrival,shape,duration\n"
    "s0,0,1,100\ns1,0,1,100\ns2,0,1,100\ns3,0,1,20\n"
    "s4,0,1,100\ns5,0,1,100\ns6,0,1,100\ns7,0,1,20\n"
    "p,20,2,10\n";

// What a policy makes of kRingTrace: the figures that depend on whether it keeps the rules.
struct RingTraceFigures {
  int64_t rule_violations;
  double stranded_device_seconds;
  double queue_delay_p95;  // p's delay (the other eight start at once: p50 0)
  double makespan;
  std::string_view last_placement;
};

// Rule-keeping: p may not span the rings, so it waits until 100 (delay 80) while 2 devices sit
// free that it fits by count: 160 stranded device-seconds. Makespan 110.
inline constexpr RingTraceFigures kRingTraceRuleKeeping = {0, 160, 80, 110,
                                                           "p @100 atlas800-9000-0:npu-0,npu-1"};

// Index order: p takes npu-3 and npu-7 at 20, across the rings: one rule violation, no best set
// to compare with (the rules allow none), no wait, nothing stranded, makespan 100.
inline constexpr RingTraceFigures kRingTraceIndexOrder = {1, 0, 0, 100,
                                                          "p @20 atlas800-9000-0:npu-3,npu-7"};

inline void CheckRingTrace(const PolicyMetrics& m, const RingTraceFigures& want) {
  CHECK(m.placements == 9);
  CHECK(m.unplaced == 0);
  CHECK(m.rejected == 0);
  CHECK(m.rule_violations == want.rule_violations);
  CHECK(m.below_best_bandwidth == 0);
  CHECK(m.stranded_device_seconds == Approx(want.stranded_device_seconds));
  CHECK(m.queue_delay_p50 == 0);
  CHECK(m.queue_delay_p95 == Approx(want.queue_delay_p95));
  CHECK(m.utilisation == Approx(1.0));
  CHECK(m.makespan == Approx(want.makespan));
  CHECK(m.placement_log.back() == want.last_placement);
}

// Two HGX H200 and jobs that never overlap: every policy places each job on the first node's
// lowest devices (NVSwitch: every set of a count is as good as any other).
inline constexpr std::string_view kAmpleTrace =
    "a,0,1,10\nb,20,2,10\nc,40,4,10\nd,60,8,10\ne,80,3,10\nf,100,8+8,10\ng,120,6,10\n";

// `nodes` HGX H200 whose first `mig_gpus` GPUs are in MIG mode (the H200's profiles:
// 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb), as a NodeInventory file in `dir`.
inline Fleet MigFleet(const xpu::testing::TempDir& dir, int mig_gpus, int nodes) {
  const controller::ReferenceServer* server = controller::FindReferenceServer("hgx-h200");
  REQUIRE(server != nullptr);
  api::NodeInventory inventory = server->inventory;
  inventory.metadata.name = "h200-mig";
  for (int i = 0; i < mig_gpus; ++i) {
    inventory.status.devices.at(static_cast<size_t>(i)).partitioning =
        api::testing::H200MigPartitioning();
  }
  std::ofstream(dir.path() + "/h200-mig.json") << api::ToJson(inventory).dump();
  auto fleet = ParseFleet(
      "nodes: [{inventory: h200-mig.json, count: " + std::to_string(nodes) + "}]\n", dir.path());
  REQUIRE_OK(fleet);
  return *std::move(fleet);
}

// One H200 with MIG on every GPU: a 1g.18gb and a 4g.71gb, then seven 7g.141gb. Kept together
// on gpu-0 (the 1g.18gb at slot 6, the 4g.71gb at 0), they leave seven GPUs whole: every job
// starts at once. A 1g.18gb at slot 0 forces the 4g.71gb onto gpu-1: one 7g.141gb waits until
// the first of the others ends, at 51.
inline constexpr std::string_view kMigTrace =
    "s,0,partition:1g.18gb,100\nm,0,partition:4g.71gb,100\n"
    "w1,1,partition:7g.141gb,50\nw2,1,partition:7g.141gb,50\nw3,1,partition:7g.141gb,50\n"
    "w4,1,partition:7g.141gb,50\nw5,1,partition:7g.141gb,50\nw6,1,partition:7g.141gb,50\n"
    "w7,1,partition:7g.141gb,50\n";

// kMigTrace on its fleet (one H200, MIG on every GPU).
struct MigCase {
  xpu::testing::TempDir dir;
  Fleet fleet = MigFleet(dir, 8, 1);
  std::vector<Job> jobs = HandTrace(kMigTrace);
};

// What a policy makes of kMigTrace: every job placed, none waiting on fragmentation, and these
// lines of the placement log (index, line), with this p95 delay.
inline void CheckMigTrace(const PolicyMetrics& m,
                          const std::vector<std::pair<size_t, std::string_view>>& log,
                          double delay_p95) {
  CHECK(m.placements == 9);
  CHECK(m.partition_placements == 9);
  CHECK(m.unplaced == 0);
  CHECK(m.fragmented_waits == 0);
  CHECK(m.queue_delay_p95 == Approx(delay_p95));
  REQUIRE(m.placement_log.size() == 9);
  for (const auto& [i, line] : log) CHECK(m.placement_log[i] == line);
}

// Packed: the 1g.18gb at slot 6 and the 4g.71gb at 0 of gpu-0; nothing waits.
inline void CheckMigTracePacked(const PolicyMetrics& m) {
  CheckMigTrace(m,
                {{0, "s @0 h200-mig-0:gpu-0-1g-18gb-6"},
                 {1, "m @0 h200-mig-0:gpu-0-4g-71gb-0"},
                 {2, "w1 @1 h200-mig-0:gpu-1-7g-141gb-0"},
                 {8, "w7 @1 h200-mig-0:gpu-7-7g-141gb-0"}},
                0);
}

}  // namespace xpu::lab::testing

#endif  // XPU_LAB_TESTING_HAND_CASES_H_
