#include "controller/fabric_tiers.h"

#include "base/enum_names.h"

namespace xpu::controller {

namespace {
namespace fabric_tiers_cc {
constexpr std::string_view kFabricTierNames[] = {"scaleUpDomain", "superpod", "leaf", "spine"};
static_assert(NamesCover(kFabricTierNames, FabricTier::kSpine));
}  // namespace fabric_tiers_cc
}  // namespace

std::string_view FabricTierName(FabricTier tier) {
  return NameAt(fabric_tiers_cc::kFabricTierNames, tier).value_or("");
}

const std::vector<std::string_view>& FabricTierLabels(FabricTier tier) {
  // In FabricTier order.
  static const std::vector<std::string_view> labels[] = {
      {"accelerator.topograph.run/domain", "network.topology.nvidia.com/accelerator",
       "nvidia.com/gpu.clique"},
      {"topology.xpu.dra.dev/superpod"},
      {"topology.xpu.dra.dev/leaf", "fabric.topograph.run/tier-0",
       "network.topology.nvidia.com/leaf", "cloud.google.com/gce-topology-subblock",
       "topology.k8s.aws/network-node-layer-3"},
      {"topology.xpu.dra.dev/spine", "fabric.topograph.run/tier-1",
       "network.topology.nvidia.com/spine", "cloud.google.com/gce-topology-block",
       "topology.k8s.aws/network-node-layer-2"}};
  static_assert(NamesCover(labels, FabricTier::kSpine));
  return labels[static_cast<size_t>(tier)];
}

std::map<FabricTier, std::string> NodeFabricTiers(const std::map<std::string, std::string>& labels,
                                                  const api::InventoryFabric* fabric) {
  std::map<FabricTier, std::string> out;
  for (FabricTier tier : kFabricTiers) {
    for (std::string_view label : FabricTierLabels(tier)) {
      auto it = labels.find(std::string(label));
      if (it != labels.end() && !it->second.empty()) {
        out.emplace(tier, it->second);
        break;
      }
    }
  }
  if (fabric != nullptr) {
    const api::InventoryFabric& f = *fabric;
    if (!f.clique_id.empty()) out.emplace(FabricTier::kScaleUp, f.clique_id);
    if (!f.super_pod_id.empty()) out.emplace(FabricTier::kSuperPod, f.super_pod_id);
    if (!f.leaf.empty()) out.emplace(FabricTier::kLeaf, f.leaf);
    if (!f.spine.empty()) out.emplace(FabricTier::kSpine, f.spine);
  }
  return out;
}

}  // namespace xpu::controller
