// The fabric tiers a node sits in, read from its Node labels (ours, topograph's, NVIDIA's network
// topology and GPU clique labels, the cloud conventions), else from its inventory's fabric. One
// table serves the slices' attributes (controller/slices.h: fabricDomain, leaf, spine) and gang
// placement (controller/gang_plan.h: the fabric tree). Pure.
#ifndef XPU_CONTROLLER_FABRIC_TIERS_H_
#define XPU_CONTROLLER_FABRIC_TIERS_H_

#include <array>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"

namespace xpu::controller {

// In their default order, lowest first (api::GangTierNames without "any").
enum class FabricTier { kScaleUp, kSuperPod, kLeaf, kSpine };
inline constexpr FabricTier kFabricTiers[] = {FabricTier::kScaleUp, FabricTier::kSuperPod,
                                              FabricTier::kLeaf, FabricTier::kSpine};

// "scaleUpDomain", "superpod", "leaf", "spine".
std::string_view FabricTierName(FabricTier tier);

// The Node labels that name the tier's domain, in order of preference.
const std::vector<std::string_view>& FabricTierLabels(FabricTier tier);

// The node's domain in each tier it has one in: the first label present (non-empty), else the
// inventory's fabric (clique id; super-pod id; leaf; spine).
std::map<FabricTier, std::string> NodeFabricTiers(const std::map<std::string, std::string>& labels,
                                                  const api::InventoryFabric* fabric);

// The same as views into `labels` and `fabric`, indexed by FabricTier (empty: no domain in that
// tier), without allocating: for callers that read every node of a fleet (gang placement).
using FabricTierViews = std::array<std::string_view, std::size(kFabricTiers)>;
FabricTierViews NodeFabricTierViews(const std::map<std::string, std::string>& labels,
                                    const api::InventoryFabric* fabric);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_FABRIC_TIERS_H_
