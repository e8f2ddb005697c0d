// xpuctl plan and xpuctl groups: the solver on a node description.
#include "topology/solver.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

using nlohmann::json;

json GBps(int64_t mbps) { return static_cast<double>(mbps) / 1000.0; }

}  // namespace

StatusOr<int> RunPlan(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  ASSIGN_OR_RETURN(const int count, PositiveIntFlag(flags, "count"));
  ASSIGN_OR_RETURN(const topology::Node node, LoadNode(flags));
  ASSIGN_OR_RETURN(const topology::DeviceSet allocated, DevicesFlag(flags, "allocated", node));

  const topology::SolveResult result = topology::Solve(node, node.All() - allocated, count);
  if (!result.feasible) {
    PrintDocument({{"feasible", false}, {"reason", result.reason}}, format, out);
    return kExitInfeasible;
  }
  const topology::Score& score = result.score;
  PrintDocument({{"devices", node.Names(result.devices)},
                 {"feasible", true},
                 {"node", node.name()},
                 {"score",
                  {{"bottleneckGBps", score.bottleneck_mbps == topology::kNoPairs
                                          ? json(nullptr)
                                          : GBps(score.bottleneck_mbps)},
                   {"totalGBps", GBps(score.total_mbps)},
                   {"preference", score.preference},
                   {"fragmentation", score.fragmentation}}}},
                format, out);
  return kExitOk;
}

StatusOr<int> RunGroups(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  ASSIGN_OR_RETURN(const int size, PositiveIntFlag(flags, "size"));
  ASSIGN_OR_RETURN(const topology::Node node, LoadNode(flags));
  json groups = json::array();
  for (topology::DeviceSet group : topology::AlignedGroups(node, size)) {
    groups.push_back(node.Names(group));
  }
  PrintDocument({{"size", size}, {"groups", std::move(groups)}}, format, out);
  return kExitOk;
}

}  // namespace xpu::cli::internal
