// How kube-scheduler ranks the feasible nodes of a pod with ResourceClaims, for the placement
// lab's `--scheduler kube` and for the upstream-scoring test that checks it against the real
// scheduler. The formulas are upstream's (docs/kube-scheduler-scoring.md, read in the pinned
// sources); only the score plugins whose value can differ between the lab's nodes are modelled:
//  - DynamicResources (1.37 and later): each request allocated from `firstAvailable` subrequest
//    i adds 8 - i to the node's raw score; normalised as 100 * raw / max over the feasible
//    nodes (0 everywhere when the max is 0), weighted 2;
//  - NodeResourcesFit, LeastAllocated over cpu and memory (weight 1 each), and
//    NodeResourcesBalancedAllocation, each weighted 1, only when the node's allocatable is known
//    (a pod without a request counts as 100m CPU and 200 MiB, as the scheduler's "nonzero"
//    request does; BalancedAllocation skips a pod with no request at all).
// The feasible nodes scored are those the adaptive percentageOfNodesToScore lets the filter
// search find, from a rotating start; ties are broken at random as selectHost does.
// Pure functions but the seeded random choice.
#ifndef XPU_LAB_KUBE_SCORE_H_
#define XPU_LAB_KUBE_SCORE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace xpu::lab {

// CPU in millicores, memory in bytes.
struct Resources {
  int64_t cpu_milli = 0;
  int64_t memory = 0;
};

// One feasible node, as the score plugins see it.
struct NodeScoreInput {
  std::string node;
  // DynamicResources' raw score: PrioritizedListRaw of the allocation the allocator found here.
  int64_t prioritized_raw = 0;
  // NodeResourcesFit and BalancedAllocation: both zero (unknown) leaves them out.
  Resources allocatable;
  Resources requested;  // the pods already bound, each with its nonzero request
};

// The raw DynamicResources score of one claim's allocation: `claim_spec` is the claim's `spec`
// (resource.k8s.io/v1: devices.requests[] with `exactly` or `firstAvailable`), `result_requests`
// the `request` field of each allocation result ("accelerators/nvidia-switch" for a subrequest).
// Sum over the requests with firstAvailable of 8 - (index of the subrequest allocated), once per
// request however many devices it got.
int64_t PrioritizedListRaw(const nlohmann::json& claim_spec,
                           const std::vector<std::string>& result_requests);

struct KubeScoreOptions {
  // false: before 1.37, DynamicResources has no Score (and BalancedAllocation scores the balance
  // with the pod, 1.34's formula, instead of the change in balance the pod makes).
  bool dynamic_resources_score = true;
  Resources pod_request;  // the incoming pod's request (0: none)
};

// The weighted total of every modelled plugin per node, in input order (0..400 today).
std::vector<int64_t> KubeScores(const std::vector<NodeScoreInput>& nodes,
                                const KubeScoreOptions& options);

// percentageOfNodesToScore's adaptive count (percentage 0) or the configured one: how many
// feasible nodes the filter search stops at, out of `nodes` in the snapshot.
int NumFeasibleNodesToFind(int nodes, int percentage = 0);

// The index of the highest total; among equal totals one at random (reservoir sampling, as
// selectHost does). `totals` must not be empty.
size_t SelectHost(const std::vector<int64_t>& totals, std::mt19937_64& rng);

}  // namespace xpu::lab

#endif  // XPU_LAB_KUBE_SCORE_H_
