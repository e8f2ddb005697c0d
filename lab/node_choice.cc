#include "lab/node_choice.h"

#include <algorithm>
#include <utility>

#include "base/enum_names.h"
#include "lab/kube_score.h"

namespace xpu::lab {
namespace {
namespace node_choice_cc {

constexpr std::string_view kSchedulerNames[] = {"kube", "order"};
static_assert(NamesCover(kSchedulerNames, Scheduler::kOrder));

}  // namespace node_choice_cc
}  // namespace

std::string_view SchedulerName(Scheduler scheduler) {
  return NameAt(node_choice_cc::kSchedulerNames, scheduler).value_or("kube");
}

std::optional<Scheduler> ParseScheduler(std::string_view name) {
  return ValueNamed<Scheduler>(node_choice_cc::kSchedulerNames, name);
}

KubeNodeSearch::KubeNodeSearch(int nodes, uint64_t seed)
    : nodes_(nodes), to_find_(NumFeasibleNodesToFind(nodes)), rng_(seed) {}

StatusOr<std::optional<int>> KubeNodeSearch::Schedule(const Filter& filter,
                                                      const std::vector<int>* only) {
  if (nodes_ == 0) return std::optional<int>();
  // The nodes to ask, in the search's order: from next_start_ round the fleet.
  std::vector<int> order;
  if (only != nullptr) {
    order = *only;
    const auto first = std::lower_bound(order.begin(), order.end(), next_start_);
    std::rotate(order.begin(), first, order.end());
  }
  const int asked = only != nullptr ? static_cast<int>(order.size()) : nodes_;
  std::vector<int> feasible;
  std::vector<NodeScoreInput> inputs;
  // Upstream sets nextStartNodeIndex from the nodes processed: all of them, unless the search
  // stopped at the to_find_-th feasible node.
  int visited = nodes_;
  for (int i = 0; i < asked; ++i) {
    const int node = only != nullptr ? order[static_cast<size_t>(i)] : (next_start_ + i) % nodes_;
    ASSIGN_OR_RETURN(const std::optional<int64_t> raw, filter(node));
    if (!raw.has_value()) continue;
    feasible.push_back(node);
    NodeScoreInput input;
    input.prioritized_raw = *raw;
    inputs.push_back(std::move(input));
    if (static_cast<int>(feasible.size()) == to_find_) {
      visited = (node - next_start_ + nodes_) % nodes_ + 1;
      break;
    }
  }
  next_start_ = (next_start_ + visited) % nodes_;
  if (feasible.empty()) return std::optional<int>();
  // A single feasible node is bound without scoring; SelectHost then draws nothing either.
  const std::vector<int64_t> totals = KubeScores(inputs, KubeScoreOptions{});
  return std::optional<int>(feasible[SelectHost(totals, rng_)]);
}

}  // namespace xpu::lab
