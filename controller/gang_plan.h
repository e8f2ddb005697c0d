// Gang placement, computed without I/O: from an AcceleratorGang, the live nodes (labels,
// inventory, the devices claims hold, which gang holds them) and the config, the gang's next
// status. The controller (controller/gangs.h) writes that status first: the status is the
// reservation, one write that either lands whole or not at all, so no partial reservation can be
// left behind by a conflict or a crash. Everything else it creates (the gang device, the shared
// claim, the per-pod template) is derived from the status and re-made on every sync.
//
// Placement (docs/gangs.md):
//   - candidates: live nodes whose labels match spec.nodeSelector and that no other gang holds;
//   - a node offers the free devices the gang's class admits (healthy, not held by a claim) when
//     its vendor's rules allow a set of devicesPerNode of them (topology::Solve), else nothing;
//   - the fabric tree comes from the nodes' tier labels (controller/fabric_tiers.h) plus a top
//     tier "any"; tiers are ordered by containment (a tier whose every domain lies inside one
//     domain of another sits below it; the default order scaleUpDomain, superpod, leaf, spine
//     breaks ties), a tier whose domains cross the next one's is left out with a note;
//   - topology::PlaceGang picks the lowest tier up to spec.maxTier that fits, best fit inside it;
//   - ranks: nodes in fabric order, each node's devices in the solver's order; the rank table
//     carries each device's collective-network address (the NIC paired with it) and super-pod.
// A placed gang whose member node is no longer live is failed or placed again without it, as
// spec.onNodeFailure says. A gang that does not fit stays Pending with the reason: the most any
// domain offers, and at which tier. Pure and deterministic.
#ifndef XPU_CONTROLLER_GANG_PLAN_H_
#define XPU_CONTROLLER_GANG_PLAN_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/node_inventory.h"
#include "base/status.h"
#include "controller/config.h"
#include "topology/fabric.h"

namespace xpu::controller {

// What one node can give a gang of `k` devices per node: its free devices that the class admits
// (healthy, not held by a claim), when its vendor's rules allow a set of k of them, else 0; and
// the solver's set of k, in its order.
struct GangOffer {
  int free = 0;
  std::vector<std::string> devices;
};
// What gang placement needs of a node's inventory, kept small so that the controller can hold it
// for every node (a decoded inventory is about 40 times larger): the topology description, the
// devices with only the fields classes and health are judged by (name, vendor, model, memory,
// health, family and precision attributes), and the fabric.
struct GangNodeFacts {
  topology::NodeSpec topology;
  std::vector<api::InventoryDevice> devices;
  std::optional<api::InventoryFabric> fabric;
};
// Errors when the inventory does not project onto a topology (the node offers nothing then).
StatusOr<GangNodeFacts> GangFactsOf(const api::NodeInventory& inventory);

GangOffer OfferOf(const GangNodeFacts& facts, const std::set<std::string>& allocated,
                  const Config& config, std::string_view device_class, std::string_view driver,
                  int k);
GangOffer OfferOf(const api::NodeInventory& inventory, const std::set<std::string>& allocated,
                  const Config& config, std::string_view device_class, std::string_view driver,
                  int k);

// One live node as gang placement sees it.
struct GangCandidate {
  std::string name;
  std::string address;  // InternalIP, may be empty
  std::map<std::string, std::string> labels;
  // Not owned. Either the inventory, or the node's offer and its inventory's fabric (the
  // controller caches those, so that a placement over 10,000 nodes decodes none of them).
  const api::NodeInventory* inventory = nullptr;
  std::optional<GangOffer> offer;
  std::optional<api::InventoryFabric> fabric;
  std::set<std::string> allocated;  // devices claims hold
  std::string held_by;              // uid of the gang holding it, or ""
};

// The fabric tree over the candidates.
struct GangFabric {
  topology::Fabric fabric;
  std::vector<std::string> tiers;    // fabric tier index -> name ("leaf", ..., "any" last)
  std::vector<std::string> notes;    // tiers left out, and why
  std::vector<std::string> dropped;  // the names of the tiers left out
};
StatusOr<GangFabric> BuildGangFabric(const std::vector<GangCandidate>& nodes);

struct GangPlanInput {
  const api::AcceleratorGang* gang = nullptr;
  std::vector<GangCandidate> nodes;  // the live nodes, in any order
  // The inventory of a member node (device addresses, super-pod, health), for candidates given
  // without one; may answer null.
  std::function<std::shared_ptr<const api::NodeInventory>(const std::string& node)> inventory_of;
  const Config* config = nullptr;
  std::string driver = "xpu.dra.dev";
  std::string now;  // RFC 3339, for condition transition times
};

struct GangPlan {
  api::AcceleratorGangStatus status;
  // The placement changed from one that was in force (a member node failed): the shared claim,
  // allocated for the old nodes, must be made again.
  bool moved = false;
  std::vector<std::string> notes;
};

GangPlan PlanGang(const GangPlanInput& input);

// "<ns>/<name>".
std::string GangKey(const api::AcceleratorGang& gang);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_GANG_PLAN_H_
