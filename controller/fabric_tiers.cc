#include "controller/fabric_tiers.h"

#include <cstdint>
#include <unordered_map>

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

FabricTierViews NodeFabricTierViews(const std::map<std::string, std::string>& labels,
                                    const api::InventoryFabric* fabric) {
  // Every tier label with its tier and its place in that tier's order of preference: a node's
  // few labels are each looked up once, instead of every tier label in the node's map.
  struct Place {
    size_t tier;
    size_t preference;
  };
  static const std::unordered_map<std::string_view, Place> places = [] {
    std::unordered_map<std::string_view, Place> all;
    for (FabricTier tier : kFabricTiers) {
      const std::vector<std::string_view>& names = FabricTierLabels(tier);
      for (size_t i = 0; i < names.size(); ++i) {
        all.emplace(names[i], Place{static_cast<size_t>(tier), i});
      }
    }
    return all;
  }();
  FabricTierViews out;
  std::array<size_t, std::size(kFabricTiers)> best{};
  best.fill(SIZE_MAX);
  for (const auto& [key, value] : labels) {
    if (value.empty()) continue;
    auto it = places.find(key);
    if (it == places.end() || it->second.preference >= best[it->second.tier]) continue;
    best[it->second.tier] = it->second.preference;
    out[it->second.tier] = value;
  }
  if (fabric != nullptr) {
    const api::InventoryFabric& f = *fabric;
    auto fill = [&out](FabricTier tier, const std::string& value) {
      std::string_view& slot = out[static_cast<size_t>(tier)];
      if (slot.empty()) slot = value;
    };
    fill(FabricTier::kScaleUp, f.clique_id);
    fill(FabricTier::kSuperPod, f.super_pod_id);
    fill(FabricTier::kLeaf, f.leaf);
    fill(FabricTier::kSpine, f.spine);
  }
  return out;
}

std::map<FabricTier, std::string> NodeFabricTiers(const std::map<std::string, std::string>& labels,
                                                  const api::InventoryFabric* fabric) {
  std::map<FabricTier, std::string> out;
  const FabricTierViews views = NodeFabricTierViews(labels, fabric);
  for (FabricTier tier : kFabricTiers) {
    const std::string_view value = views[static_cast<size_t>(tier)];
    if (!value.empty()) out.emplace(tier, value);
  }
  return out;
}

}  // namespace xpu::controller
