#include "controller/fabric_tiers.h"

namespace xpu::controller {

std::string_view FabricTierName(FabricTier tier) {
  switch (tier) {
    case FabricTier::kScaleUp:
      return "scaleUpDomain";
    case FabricTier::kSuperPod:
      return "superpod";
    case FabricTier::kLeaf:
      return "leaf";
    case FabricTier::kSpine:
      return "spine";
  }
  return "";
}

const std::vector<std::string_view>& FabricTierLabels(FabricTier tier) {
  static const std::vector<std::string_view> scale_up = {"accelerator.topograph.run/domain",
                                                         "network.topology.nvidia.com/accelerator",
                                                         "nvidia.com/gpu.clique"};
  static const std::vector<std::string_view> super_pod = {"topology.xpu.dra.dev/superpod"};
  static const std::vector<std::string_view> leaf = {
      "topology.xpu.dra.dev/leaf", "fabric.topograph.run/tier-0",
      "network.topology.nvidia.com/leaf", "cloud.google.com/gce-topology-subblock",
      "topology.k8s.aws/network-node-layer-3"};
  static const std::vector<std::string_view> spine = {
      "topology.xpu.dra.dev/spine", "fabric.topograph.run/tier-1",
      "network.topology.nvidia.com/spine", "cloud.google.com/gce-topology-block",
      "topology.k8s.aws/network-node-layer-2"};
  switch (tier) {
    case FabricTier::kScaleUp:
      return scale_up;
    case FabricTier::kSuperPod:
      return super_pod;
    case FabricTier::kLeaf:
      return leaf;
    case FabricTier::kSpine:
      break;
  }
  return spine;
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
