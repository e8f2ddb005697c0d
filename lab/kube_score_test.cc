// kube-scheduler's score plugins on cases worked out by hand from the formulas of
// docs/kube-scheduler-scoring.md.
#include "lab/kube_score.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace xpu::lab {
namespace {

using nlohmann::json;

constexpr int64_t kGiB = 1024LL * 1024 * 1024;

NodeScoreInput Raw(int64_t raw) {
  NodeScoreInput n;
  n.prioritized_raw = raw;
  return n;
}

TEST_CASE("DynamicResources normalises to the max, truncating, weighted 2") {
  // Subrequests 0, 2 and 1 chosen: raw 8, 6, 7; 100*6/8 = 75, 100*7/8 = 87.5 -> 87.
  CHECK(KubeScores({Raw(8), Raw(6), Raw(7)}, {}) == std::vector<int64_t>{200, 150, 174});
  // A constant part compresses the spread: 16 and 14 give 100 and 87 (87.5 truncated).
  CHECK(KubeScores({Raw(16), Raw(14)}, {}) == std::vector<int64_t>{200, 174});
  // 100*1/3 = 33.3 -> 33.
  CHECK(KubeScores({Raw(3), Raw(1)}, {}) == std::vector<int64_t>{200, 66});
}

TEST_CASE("DynamicResources scores 0 everywhere when the max is 0, and before 1.37") {
  CHECK(KubeScores({Raw(0), Raw(0), Raw(0)}, {}) == std::vector<int64_t>{0, 0, 0});
  CHECK(KubeScores({}, {}).empty());
  KubeScoreOptions before;
  before.dynamic_resources_score = false;
  CHECK(KubeScores({Raw(8), Raw(6)}, before) == std::vector<int64_t>{0, 0});
}

TEST_CASE("the worked example: DynamicResources against LeastAllocated, best-effort pod") {
  // 64 CPUs and 512 GiB each; A holds 32000m and 256 GiB and can serve tier 0; B and C are empty
  // and serve tiers 2 and 1. The pod requests nothing: 100m and 200 MiB count for Fit, and
  // BalancedAllocation skips it.
  const Resources allocatable{64000, 512 * kGiB};
  NodeScoreInput a = Raw(8);
  a.allocatable = allocatable;
  a.requested = {32000, 256 * kGiB};
  NodeScoreInput b = Raw(6);
  b.allocatable = allocatable;
  NodeScoreInput c = Raw(7);
  c.allocatable = allocatable;
  // Fit: A (64000-32100)*100/64000 = 49 (memory 49 too); B and C 99. The constant plugins
  // (TaintToleration's 300) are not modelled.
  CHECK(KubeScores({a, b, c}, {}) == std::vector<int64_t>{200 + 49, 150 + 99, 174 + 99});
  a.requested = {};
  CHECK(KubeScores({a, b, c}, {}) == std::vector<int64_t>{200 + 99, 150 + 99, 174 + 99});
}

TEST_CASE("BalancedAllocation scores the change in balance at 1.37 and the balance before") {
  // 4 CPUs and 4 GiB, 1 CPU and 1 GiB held; the pod asks for 1 CPU and no memory.
  NodeScoreInput n;
  n.allocatable = {4000, 4 * kGiB};
  n.requested = {1000, kGiB};
  KubeScoreOptions options;
  options.pod_request = {1000, 0};
  // Fit: cpu (4000-2000)*100/4000 = 50; memory with the 200 MiB default: (4 GiB - 1 GiB - 200
  // MiB) * 100 / 4 GiB = 70.1 -> 70; (50 + 70) / 2 = 60.
  // Balanced: with the pod 0.5 and 0.25, std 0.125, 87.5 -> 87; without 0.25 and 0.25, 100.
  // 1.37: 50 + (50 + 87 - 100) / 2 = 50 + 18 = 68.
  CHECK(KubeScores({n}, options) == std::vector<int64_t>{60 + 68});
  options.dynamic_resources_score = false;  // 1.34: the balance with the pod, 87
  CHECK(KubeScores({n}, options) == std::vector<int64_t>{60 + 87});
  // A pod that improves the balance: 1 GiB on a node that holds 2 CPUs and 1 GiB, 4 and 4 GiB.
  // With: 0.5 and 0.5 -> 100; without: 0.5 and 0.25 -> 87; 50 + (50 + 13) / 2 = 81.
  // Fit: cpu (4000 - 2100)*100/4000 = 47 (the 100m default); memory 50; 48.
  n.requested = {2000, kGiB};
  options = {};
  options.pod_request = {0, kGiB};
  CHECK(KubeScores({n}, options) == std::vector<int64_t>{48 + 81});
}

TEST_CASE("the CPU and memory plugins leave out a node whose allocatable is unknown") {
  NodeScoreInput known = Raw(8);
  known.allocatable = {8000, 0};  // memory unknown: cpu alone
  KubeScoreOptions options;
  options.pod_request = {2000, kGiB};
  // Fit: (8000-2000)*100/8000 = 75; Balanced: one fraction, std 0, 100 with and without: 75.
  CHECK(KubeScores({known, Raw(8)}, options) == std::vector<int64_t>{200 + 75 + 75, 200});
  // A request above the allocatable scores 0 for that resource.
  known.requested = {7000, 0};
  CHECK(KubeScores({known}, options)[0] == 200 + 0 + 75);
}

TEST_CASE("percentageOfNodesToScore's adaptive count of feasible nodes to find") {
  CHECK(NumFeasibleNodesToFind(0) == 0);
  CHECK(NumFeasibleNodesToFind(1) == 1);
  CHECK(NumFeasibleNodesToFind(64) == 64);
  CHECK(NumFeasibleNodesToFind(99) == 99);
  CHECK(NumFeasibleNodesToFind(100) == 100);   // 50% of 100 is below the minimum of 100
  CHECK(NumFeasibleNodesToFind(200) == 100);   // 49%: 98
  CHECK(NumFeasibleNodesToFind(500) == 230);   // 46%
  CHECK(NumFeasibleNodesToFind(512) == 235);   // 46% of 512 = 235.52
  CHECK(NumFeasibleNodesToFind(5000) == 500);  // 10%
  CHECK(NumFeasibleNodesToFind(6000) == 300);  // 2%, raised to 5%
  CHECK(NumFeasibleNodesToFind(100000) == 5000);
  CHECK(NumFeasibleNodesToFind(1000, 30) == 300);  // configured
  CHECK(NumFeasibleNodesToFind(1000, 5) == 100);
  CHECK(NumFeasibleNodesToFind(50, 10) == 50);
}

TEST_CASE("SelectHost always takes the single highest total, and draws nothing then") {
  std::mt19937_64 rng(7);
  const std::mt19937_64 before = rng;
  CHECK(SelectHost({5}, rng) == 0);
  CHECK(SelectHost({5, 9, 3}, rng) == 1);
  CHECK(SelectHost({9, 5, 3}, rng) == 0);
  CHECK(SelectHost({3, 5, 9}, rng) == 2);
  CHECK(SelectHost({-1, -2}, rng) == 0);
  CHECK(rng == before);
  // Ties below the max do not matter.
  for (int i = 0; i < 100; ++i) CHECK(SelectHost({4, 4, 7, 4}, rng) == 2);
}

TEST_CASE("SelectHost picks uniformly among the tied highest, reproducibly from the seed") {
  const std::vector<int64_t> totals = {5, 9, 9, 3, 9, 8};
  std::mt19937_64 rng(1);
  std::map<size_t, int> picks;
  constexpr int kDraws = 30000;
  std::vector<size_t> sequence;
  for (int i = 0; i < kDraws; ++i) {
    const size_t pick = SelectHost(totals, rng);
    ++picks[pick];
    if (i < 50) sequence.push_back(pick);
  }
  CHECK(picks.size() == 3);
  for (size_t tied : {1, 2, 4}) {
    INFO(tied);
    // 10000 expected; 5 standard deviations (about 82 each) either way.
    CHECK(picks[tied] > 10000 - 410);
    CHECK(picks[tied] < 10000 + 410);
  }
  std::mt19937_64 again(1);
  for (size_t pick : sequence) CHECK(SelectHost(totals, again) == pick);
  std::mt19937_64 other(2);
  std::vector<size_t> other_sequence;
  for (int i = 0; i < 50; ++i) other_sequence.push_back(SelectHost(totals, other));
  CHECK(other_sequence != sequence);
}

json Spec(const json& requests) { return {{"devices", {{"requests", requests}}}}; }

json FirstAvailable(const std::string& name, const std::vector<std::string>& subrequests) {
  json list = json::array();
  for (const std::string& s : subrequests) {
    list.push_back({{"name", s}, {"deviceClassName", "c"}, {"count", 2}});
  }
  return {{"name", name}, {"firstAvailable", list}};
}

json Exactly(const std::string& name) {
  return {{"name", name}, {"exactly", {{"deviceClassName", "c"}, {"count", 1}}}};
}

TEST_CASE("PrioritizedListRaw adds 8 - i once per firstAvailable request") {
  const json spec = Spec(json::array({FirstAvailable("gpu", {"tier0", "tier1", "tier2"})}));
  CHECK(PrioritizedListRaw(spec, {"gpu/tier0"}) == 8);
  CHECK(PrioritizedListRaw(spec, {"gpu/tier2"}) == 6);
  // Four devices from one subrequest count once.
  CHECK(PrioritizedListRaw(spec, {"gpu/tier1", "gpu/tier1", "gpu/tier1", "gpu/tier1"}) == 7);
  CHECK(PrioritizedListRaw(spec, {}) == 0);
  CHECK(PrioritizedListRaw(spec, {"gpu/other", "tier0", "nic/tier0"}) == 0);
  // Several requests with firstAvailable add up; several subrequests per vendor are just more
  // entries of the list.
  const json two =
      Spec(json::array({FirstAvailable("gpu", {"nvidia-switch", "nvidia-numa", "huawei-ring"}),
                        FirstAvailable("x", {"a", "b", "c", "d", "e", "f", "g", "h"})}));
  CHECK(PrioritizedListRaw(two, {"gpu/huawei-ring", "gpu/huawei-ring", "x/h"}) == 6 + 1);
  CHECK(PrioritizedListRaw(two, {"gpu/nvidia-switch", "x/a"}) == 16);
}

TEST_CASE("PrioritizedListRaw ignores exactly requests and malformed specs") {
  const json spec = Spec(json::array({Exactly("nic"), FirstAvailable("gpu", {"a", "b"})}));
  CHECK(PrioritizedListRaw(spec, {"nic", "gpu/b", "gpu/b"}) == 7);
  CHECK(PrioritizedListRaw(Spec(json::array({Exactly("gpu")})), {"gpu", "gpu"}) == 0);
  CHECK(PrioritizedListRaw(json::object(), {"gpu/a"}) == 0);
  CHECK(PrioritizedListRaw(Spec(json::object()), {"gpu/a"}) == 0);
  CHECK(PrioritizedListRaw(json({{"devices", json::array()}}), {"gpu/a"}) == 0);
}

}  // namespace
}  // namespace xpu::lab
