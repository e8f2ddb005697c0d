// The placement lab's simulation: a discrete-event replay of a job trace on a fleet, once per
// policy, with the same node choice for every policy but solver-node, so that the comparison
// isolates the choice of devices.
//
// Jobs queue FIFO with backfill: at every arrival and completion the queue is scanned in arrival
// order and every job that can start does (a shape that failed once in a pass is not tried again
// in that pass: nothing is freed during a pass). Under the stock policies a single-node job goes
// where kube-scheduler would put it (Scheduler::kKube, the default; lab/node_choice.h): the real
// allocator decides which nodes pass, and the score plugins and a seeded tie-break pick among
// them. Otherwise (the solver policies, and Scheduler::kOrder) it tries the nodes whose free
// devices cover its count, in the node order (first: fleet order; most-allocated: fewest free
// devices first; least-allocated: most first), and takes the first node on which the policy
// finds devices. A gang (n nodes x k) is placed by the fabric solver (topology::PlaceGang) on
// nodes of one model on which the policy can give k devices, the lowest tier over the models
// winning; the policy then picks each node's devices. A job larger than every node or gang the
// empty fleet could hold is rejected at arrival, for every policy alike.
//
// Policies (the device choice on a node):
//  - stock-unordered: the stock allocator over slices published the way other drivers publish
//    them (devices in index order, attributes index, uuid, model) with the plain claim a user
//    writes (a count of one class);
//  - stock-xpu: the stock allocator over the controller's own slices (controller::BuildPool in
//    the configured mode, re-ordered for the devices allocated, as the controller republishes),
//    with the claims `xpuctl render` writes (controller::Render) for the count;
//  - solver: topology::Solve's set, taken directly: the upper bound on device choice;
//  - solver-node: as solver, and the node too is the solver's: the best set over all nodes
//    (Score::BetterThan), then the least fragmentation left, then fleet order.
// Partition jobs (shape "partition:<profile>", lab/trace.h) go to one partitionable device of a
// node whose model offers the profile (lab/fleet.h), in the same node order; a job no device
// offers is rejected. The policies choose the device and the placement:
//  - stock-unordered: the stock allocator over the controller's partition devices and counters
//    published in index order (parent, profile, placement or instance, ascending), with the claim
//    a user writes: one device of the kind's class (`mig.<driver>`...) whose profile is it;
//  - stock-xpu: the same claim over the controller's slices as it publishes them, in the
//    solver's order for what the node holds;
//  - solver: topology::PlacePartition's place on the node;
//  - solver-node: the cheapest place over all nodes, then the node order.
// A partitionable device is free for whole-device jobs only while it holds no partition, and
// hosts partitions only while no whole-device job holds it. A partition counts as its share of
// a device in utilisation (the largest of its slots and units over the device's).
// The stock policies run the real allocator (lab/stock_allocator.h). Every policy answer (the
// devices, and the subrequests kube's score reads) is a function of (model, free devices, count),
// so answers are memoised; `allocatorCalls` counts the questions actually asked.
#ifndef XPU_LAB_REPLAY_H_
#define XPU_LAB_REPLAY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "controller/config.h"
#include "lab/fleet.h"
#include "lab/node_choice.h"
#include "lab/result.h"
#include "lab/trace.h"

namespace xpu::lab {

enum class NodeOrder { kFirst, kMostAllocated, kLeastAllocated };
std::string_view NodeOrderName(NodeOrder order);
std::optional<NodeOrder> ParseNodeOrder(std::string_view name);

// "stock-unordered", "stock-xpu", "solver", "solver-node".
const std::vector<std::string>& KnownPolicies();
bool IsStockPolicy(std::string_view policy);

struct ReplayOptions {
  std::vector<std::string> policies = {"solver"};
  NodeOrder node_order = NodeOrder::kFirst;  // the solver policies', and the stock ones' in kOrder
  Scheduler scheduler = Scheduler::kKube;    // the stock policies' node choice
  uint64_t seed = 1;                         // kKube's tie-break stream (std::mt19937_64)
  // stock-xpu: the publishing mode and the classes. `capability_class` names the class the
  // rendered claims ask for; empty: a class "replay" over the fleet's vendors (fleet order) is
  // added to the config.
  controller::Config config = controller::DefaultConfig();
  std::string capability_class;
  std::string driver = "xpu.dra.dev";
  std::string stock_allocator;     // the binary; needed by the stock policies
  std::string trace_name;          // for the result's header
  bool record_placements = false;  // fill PolicyMetrics::placement_log
};

// Runs every policy over the trace. Errors: an unknown policy, a stock policy without the
// allocator binary, an allocator that fails, a class that does not exist.
StatusOr<ReplayResult> Replay(const Fleet& fleet, const std::vector<Job>& jobs,
                              const ReplayOptions& options);

}  // namespace xpu::lab

#endif  // XPU_LAB_REPLAY_H_
