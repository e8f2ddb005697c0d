// How the placement lab picks the node of a single-node job under the stock policies:
//  - kube (the default): as kube-scheduler does (lab/kube_score.h). The filter search starts at
//    a rotating index and stops at NumFeasibleNodesToFind(all nodes) nodes on which the real
//    allocator succeeds; each is scored by KubeScores (DynamicResources from the subrequest each
//    allocation used; the CPU and memory plugins have nothing to score, since the lab's nodes and
//    jobs carry no CPU or memory); SelectHost picks, ties at random from a seeded generator; the
//    start index then advances by the nodes the search visited.
//  - order: the first node in `--node-order` on which the policy finds devices.
// The solver policies always use the node order (solver-node its own choice), and gangs and
// partition jobs keep their own placement under either.
#ifndef XPU_LAB_NODE_CHOICE_H_
#define XPU_LAB_NODE_CHOICE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "topology/device_set.h"

namespace xpu::lab {

enum class Scheduler { kKube, kOrder };
std::string_view SchedulerName(Scheduler scheduler);  // "kube", "order"
std::optional<Scheduler> ParseScheduler(std::string_view name);

// A policy's answer for (model, free devices, count): the devices, or none when the count does
// not fit; and the raw DynamicResources score of the allocation (PrioritizedListRaw; 0 for the
// policies that are not the stock allocator).
struct PolicyAnswer {
  std::optional<topology::DeviceSet> set;
  int64_t prioritized_raw = 0;
};

// kube-scheduler's filter search and node pick over a fleet of `nodes` nodes, in fleet order
// (the lab has no zones to interleave). One per replayed policy: the start index and the random
// stream carry over from one job to the next as in one scheduler process.
class KubeNodeSearch {
 public:
  KubeNodeSearch(int nodes, uint64_t seed);

  // DynamicResources' raw score of `node` when it passes Filter, nullopt when it fails.
  using Filter = std::function<StatusOr<std::optional<int64_t>>(int node)>;

  // One scheduling cycle: the node picked, or nullopt when no node passes. `only`, when not
  // null, lists in ascending order the nodes that can pass; every other node is known to fail
  // and is counted as visited without asking `filter` (the search order and the start index come
  // out as if it had been asked).
  StatusOr<std::optional<int>> Schedule(const Filter& filter, const std::vector<int>* only);

  int next_start() const { return next_start_; }

 private:
  int nodes_;
  int to_find_;  // NumFeasibleNodesToFind(nodes_)
  int next_start_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace xpu::lab

#endif  // XPU_LAB_NODE_CHOICE_H_
