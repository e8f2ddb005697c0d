// The golden slices of a NodeInventory (e2e/fixtures/slices-expected/): what gen_slice_goldens
// writes and slices_test compares, so that both compute them the same way. Node name =
// metadata.name, node uid kGoldenNodeUid, no labels, the default config but for `mode`,
// Kubernetes 1.35, generation 1.
#ifndef XPU_CONTROLLER_SLICE_GOLDENS_H_
#define XPU_CONTROLLER_SLICE_GOLDENS_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "api/node_inventory.h"
#include "api/resource.h"
#include "base/status.h"
#include "controller/config.h"
#include "controller/slices.h"

namespace xpu::controller {

inline constexpr std::string_view kGoldenNodeUid = "00000000-0000-4000-8000-000000000001";

// {"apiVersion": "v1", "kind": "List", "items": [the slice objects]}.
inline nlohmann::json SliceList(const std::vector<api::resource::ResourceSlice>& slices) {
  nlohmann::json items = nlohmann::json::array();
  for (const api::resource::ResourceSlice& slice : slices) {
    items.push_back(api::resource::ToJson(slice));
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

inline StatusOr<nlohmann::json> GoldenSlices(const api::NodeInventory& inventory,
                                             PublishMode mode) {
  Config config = DefaultConfig();
  config.mode = mode;
  NodeFacts node;
  node.name = inventory.metadata.name;
  node.uid = std::string(kGoldenNodeUid);
  PublishOptions options;
  options.version = api::KubeVersion::k1_35;
  ASSIGN_OR_RETURN(const DesiredPool pool, BuildPool(inventory, node, config, options));
  return SliceList(SliceObjects(pool, node, options.driver, 1));
}

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_SLICE_GOLDENS_H_
