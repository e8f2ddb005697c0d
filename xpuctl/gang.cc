// xpuctl gang: multi-node gang placement on a fabric description.
#include <optional>
#include <string>
#include <utility>

#include "topology/fabric.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

using nlohmann::json;

// --highest-tier as a tier index; absent: the top tier.
StatusOr<int> HighestTier(const Flags& flags, const topology::Fabric& fabric) {
  auto it = flags.find("highest-tier");
  if (it == flags.end()) return fabric.tier_count() - 1;
  if (std::optional<int> tier = fabric.FindTier(it->second)) return *tier;
  std::string list;
  for (int t = 0; t < fabric.tier_count(); ++t) {
    list += (t == 0 ? "" : ", ") + fabric.tier(t).name;
  }
  return InvalidArgumentError("--highest-tier: unknown tier \"" + it->second +
                              "\"; expected one of " + list);
}

}  // namespace

StatusOr<int> RunGang(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  ASSIGN_OR_RETURN(const int nodes, PositiveIntFlag(flags, "nodes"));
  ASSIGN_OR_RETURN(const int devices_per_node, PositiveIntFlag(flags, "devices-per-node"));
  ASSIGN_OR_RETURN(const FabricInput input, LoadFabric(flags));
  const topology::Fabric& fabric = input.fabric;
  ASSIGN_OR_RETURN(const int highest_tier, HighestTier(flags, fabric));

  const topology::GangResult result =
      topology::PlaceGang(fabric, input.free_devices, nodes, devices_per_node, highest_tier);
  if (!result.feasible) {
    PrintDocument({{"feasible", false}, {"reason", result.reason}}, format, out);
    return kExitInfeasible;
  }
  json names = json::array();
  json ranks = json::array();
  for (size_t rank = 0; rank < result.nodes.size(); ++rank) {
    const std::string& name = fabric.node_name(result.nodes[rank]);
    names.push_back(name);
    ranks.push_back({{"rank", rank}, {"node", name}});
  }
  PrintDocument({{"feasible", true},
                 {"tier", fabric.tier(result.tier).name},
                 {"domain", fabric.domain_name(result.domain)},
                 {"nodes", std::move(names)},
                 {"ranks", std::move(ranks)},
                 {"freeDevicesLeft", result.free_devices_left}},
                format, out);
  return kExitOk;
}

}  // namespace xpu::cli::internal
