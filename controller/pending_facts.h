// What /autoscaler/pending (controller/autoscaler.h) reads of a node, kept small and shared, and
// the judgment of the pending claims over those facts.
//
// A node's facts are its server model's part (PendingModel: the compiled topology and, per
// device, only what the DeviceClasses look at: name, vendor, model, memory, family and the
// precision flags) and its own part (PendingNode: which devices are healthy, as a mask). Nodes
// whose model parts are equal share one copy (PendingModels interns them by content), so 10,000
// nodes of a few server models hold a few models and 10,000 masks, and no decoded inventory.
//
// JudgePendingClaims gives what PendingClaims gives over decoded inventories, the same reports in
// the same words, but judges each distinct node state (model, healthy, held) once per distinct
// request alternative instead of every claim against every node. Pure; PendingModels is not
// thread-safe (the caller locks), the models it hands out are immutable.
#ifndef XPU_CONTROLLER_PENDING_FACTS_H_
#define XPU_CONTROLLER_PENDING_FACTS_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "controller/autoscaler.h"
#include "controller/config.h"
#include "controller/node_groups.h"
#include "topology/model.h"

namespace xpu::controller {

// The part of a node's inventory shared by the nodes of one server model.
struct PendingModel {
  std::string content;  // the key equal models share by; empty: not shared
  // Set when the inventory projects onto a topology that builds; else why not.
  std::optional<topology::Node> topology;
  std::string topology_error;
  // The inventory's devices, in order, with only the fields DeviceInClass reads (health aside).
  std::vector<api::InventoryDevice> devices;
  std::vector<int> ids;  // each device's topology id, -1 when it has none

  // The topology id of a device by name; nullopt without a topology or such a device.
  std::optional<int> IdOf(std::string_view device) const;
};

// One node's facts: its model's, and which of its devices (topology ids) are healthy.
struct PendingNode {
  std::shared_ptr<const PendingModel> model;  // null: no usable inventory (not counted)
  topology::DeviceSet healthy;
};

// Interns models by content. Not thread-safe.
class PendingModels {
 public:
  // The facts of `inventory`, its model shared with earlier nodes of equal models.
  PendingNode Of(const api::NodeInventory& inventory);
  // Forgets models no node holds any more.
  void Prune();
  size_t size() const { return by_content_.size(); }

 private:
  std::map<std::string, std::weak_ptr<const PendingModel>> by_content_;
};

// A live node as the judgment sees it.
struct PendingNodeInput {
  PendingNode facts;
  topology::DeviceSet allocated;  // topology ids of the devices claims hold
};

// The topology ids of `devices` (names) on `model`; unknown names are left out.
template <typename Names>
topology::DeviceSet DeviceIds(const PendingModel& model, const Names& devices) {
  topology::DeviceSet out;
  for (const std::string& d : devices) {
    if (std::optional<int> id = model.IdOf(d)) out.Add(*id);
  }
  return out;
}

// CannotServe (autoscaler.h) over facts: why the node cannot serve `alternative`, nullopt when it
// can (or the class is not one this config generates).
std::optional<std::string> CannotServe(const PendingModel& model, topology::DeviceSet healthy,
                                       topology::DeviceSet allocated,
                                       const ClaimAlternative& alternative, const Config& config,
                                       std::string_view driver);

// PendingClaims (autoscaler.h) over the live nodes' facts: the claims of this driver no live node
// serves, each judged against every node group.
std::vector<PendingReport> JudgePendingClaims(const std::vector<PendingClaimInput>& claims,
                                              const std::vector<PendingNodeInput>& nodes,
                                              const std::vector<NodeGroupProfile>& groups,
                                              const Config& config, std::string_view driver);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_PENDING_FACTS_H_
