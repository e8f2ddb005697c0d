// kube-scheduler's score plugins, as docs/kube-scheduler-scoring.md reads them in the pinned
// sources. Integer arithmetic is int64 and truncates where Go's does; BalancedAllocation computes
// its fractions in double in Go's order and truncates once, so that totals agree to the point.
#include "lab/kube_score.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace xpu::lab {
namespace {
namespace kube_score_cc {

// resourceapi.FirstAvailableDeviceRequestMaxSize: the raw score of subrequest i is 8 - i.
constexpr int64_t kFirstAvailableMaxSize = 8;
constexpr int64_t kMaxNodeScore = 100;
// The plugin weights of the default profile (pkg/scheduler/apis/config/v1/default_plugins.go).
constexpr int64_t kDynamicResourcesWeight = 2;
constexpr int64_t kFitWeight = 1;
constexpr int64_t kBalancedWeight = 1;
// The "nonzero" request of a container without one (pkg/scheduler/util/pod_resources.go).
constexpr int64_t kDefaultMilliCpu = 100;
constexpr int64_t kDefaultMemory = 200LL * 1024 * 1024;
// minFeasibleNodesToFind and minFeasibleNodesPercentageToFind (pkg/scheduler/schedule_one.go).
constexpr int kMinFeasibleNodes = 100;
constexpr int kMinFeasiblePercentage = 5;

// helper.DefaultNormalizeScore(100, reverse=false): 100 * raw / max, all 0 when max is 0.
std::vector<int64_t> NormalizeToMax(const std::vector<int64_t>& raw) {
  int64_t max = 0;
  for (int64_t r : raw) max = std::max(max, r);
  std::vector<int64_t> out(raw.size(), 0);
  if (max == 0) return out;
  for (size_t i = 0; i < raw.size(); ++i) out[i] = kMaxNodeScore * raw[i] / max;
  return out;
}

// leastRequestedScore, per resource.
int64_t LeastRequested(int64_t requested, int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return (capacity - requested) * kMaxNodeScore / capacity;
}

// NodeResourcesFit with LeastAllocated over cpu and memory, weight 1 each; a resource the node
// does not report (allocatable 0) adds neither score nor weight.
int64_t LeastAllocated(const NodeScoreInput& node, const Resources& pod) {
  const int64_t pod_cpu = pod.cpu_milli != 0 ? pod.cpu_milli : kDefaultMilliCpu;
  const int64_t pod_memory = pod.memory != 0 ? pod.memory : kDefaultMemory;
  int64_t score = 0;
  int64_t weights = 0;
  if (node.allocatable.cpu_milli != 0) {
    score += LeastRequested(node.requested.cpu_milli + pod_cpu, node.allocatable.cpu_milli);
    ++weights;
  }
  if (node.allocatable.memory != 0) {
    score += LeastRequested(node.requested.memory + pod_memory, node.allocatable.memory);
    ++weights;
  }
  return weights == 0 ? 0 : score / weights;
}

// balancedResourceScore: 100 x (1 - the spread of the used fractions), truncated once.
int64_t BalanceOf(const Resources& used, const Resources& allocatable) {
  std::vector<double> fractions;
  for (const auto& [u, a] : {std::pair{used.cpu_milli, allocatable.cpu_milli},
                             std::pair{used.memory, allocatable.memory}}) {
    if (a == 0) continue;
    fractions.push_back(std::min(static_cast<double>(u) / static_cast<double>(a), 1.0));
  }
  double spread = 0;
  if (fractions.size() == 2) spread = std::abs((fractions[0] - fractions[1]) / 2);
  return static_cast<int64_t>((1 - spread) * static_cast<double>(kMaxNodeScore));
}

// NodeResourcesBalancedAllocation over the pod's real request (no nonzero defaults): at 1.37 the
// change in balance the pod makes, 50..100 (75 when it changes nothing); before, the balance
// with the pod.
int64_t Balanced(const NodeScoreInput& node, const Resources& pod, bool since_1_37) {
  const Resources with{node.requested.cpu_milli + pod.cpu_milli,
                       node.requested.memory + pod.memory};
  const int64_t with_pod = BalanceOf(with, node.allocatable);
  if (!since_1_37) return with_pod;
  const int64_t without_pod = BalanceOf(node.requested, node.allocatable);
  return kMaxNodeScore / 2 + (kMaxNodeScore / 2 + with_pod - without_pod) / 2;
}

bool Known(const Resources& r) { return r.cpu_milli != 0 || r.memory != 0; }

}  // namespace kube_score_cc
}  // namespace

int64_t PrioritizedListRaw(const nlohmann::json& claim_spec,
                           const std::vector<std::string>& result_requests) {
  // computeScore collects the subrequest references as a set: a request that got several
  // devices counts once.
  const std::set<std::string> allocated(result_requests.begin(), result_requests.end());
  const auto devices = claim_spec.find("devices");
  if (devices == claim_spec.end() || !devices->is_object()) return 0;
  const auto requests = devices->find("requests");
  if (requests == devices->end() || !requests->is_array()) return 0;
  int64_t score = 0;
  for (const nlohmann::json& request : *requests) {
    const auto alternatives = request.find("firstAvailable");
    if (request.contains("exactly") || alternatives == request.end() || !alternatives->is_array()) {
      continue;
    }
    const std::string name = request.value("name", "");
    for (size_t i = 0; i < alternatives->size(); ++i) {
      const std::string ref = name + "/" + (*alternatives)[i].value("name", "");
      if (allocated.contains(ref)) {
        score += kube_score_cc::kFirstAvailableMaxSize - static_cast<int64_t>(i);
      }
    }
  }
  return score;
}

std::vector<int64_t> KubeScores(const std::vector<NodeScoreInput>& nodes,
                                const KubeScoreOptions& options) {
  using namespace kube_score_cc;  // NOLINT(google-build-using-namespace): this file's helpers
  std::vector<int64_t> totals(nodes.size(), 0);
  if (options.dynamic_resources_score) {
    std::vector<int64_t> raw;
    raw.reserve(nodes.size());
    for (const NodeScoreInput& n : nodes) raw.push_back(n.prioritized_raw);
    const std::vector<int64_t> normalized = NormalizeToMax(raw);
    for (size_t i = 0; i < nodes.size(); ++i) totals[i] += kDynamicResourcesWeight * normalized[i];
  }
  // BalancedAllocation's PreScore skips a best-effort pod for the whole cycle.
  const bool balanced = Known(options.pod_request);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeScoreInput& n = nodes[i];
    if (!Known(n.allocatable)) continue;
    totals[i] += kFitWeight * LeastAllocated(n, options.pod_request);
    if (balanced) {
      totals[i] +=
          kBalancedWeight * Balanced(n, options.pod_request, options.dynamic_resources_score);
    }
  }
  return totals;
}

int NumFeasibleNodesToFind(int nodes, int percentage) {
  using kube_score_cc::kMinFeasibleNodes;
  if (nodes < kMinFeasibleNodes) return nodes;
  if (percentage == 0) {
    percentage = std::max(50 - nodes / 125, kube_score_cc::kMinFeasiblePercentage);
  }
  // int32 in Go: nodes (at most kMaxFleetNodes) x 100 does not overflow.
  return std::max(nodes * percentage / 100, kMinFeasibleNodes);
}

size_t SelectHost(const std::vector<int64_t>& totals, std::mt19937_64& rng) {
  size_t pick = 0;
  uint64_t tied = 1;
  for (size_t i = 1; i < totals.size(); ++i) {
    if (totals[i] > totals[pick]) {
      pick = i;
      tied = 1;
    } else if (totals[i] == totals[pick]) {
      ++tied;
      // rand.Intn(tied) == 0, drawn without modulo bias and without std:: distributions, whose
      // output differs between standard libraries: the same seed gives the same pick everywhere.
      const uint64_t limit = -tied % tied;  // 2^64 mod tied: draws below it would bias
      uint64_t draw = rng();
      while (draw < limit) draw = rng();
      if (draw % tied == 0) pick = i;
    }
  }
  return pick;
}

}  // namespace xpu::lab
