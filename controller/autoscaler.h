// What the cluster autoscaler needs from the controller, computed from its caches (pure):
//  - the pending claims of this driver that no live node can satisfy, each with the configured
//    node groups (controller/node_groups.h) that could, and why ("/autoscaler/pending" on the
//    metrics port);
//  - where a live node's pool differs from its node group's template, so a stale template is
//    caught (metric xpu_dra_controller_node_group_drift and an Event on the Node).
//
// Judging a claim: a request (each of its firstAvailable alternatives) names a DeviceClass and a
// count (or All). Only classes this controller generates are judged, from the same fields their
// CEL is made from (DeviceInClass): a claim with a class of another driver or an admin's own CEL
// is left out, since only the scheduler can evaluate that. A node can serve an alternative when
// it has that many free (unallocated, healthy) devices of the class that the vendor's rules allow
// as one set (topology::Solve). Each request is judged alone: two requests of one claim that each
// fit a node but not together are not told apart.
#ifndef XPU_CONTROLLER_AUTOSCALER_H_
#define XPU_CONTROLLER_AUTOSCALER_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "controller/config.h"
#include "controller/node_groups.h"
#include "controller/slices.h"

namespace xpu::controller {

struct ClaimAlternative {
  std::string name;  // the subrequest's name; empty for a plain request
  std::string device_class;
  int64_t count = 1;  // ExactCount
  bool all = false;   // allocationMode All: at least one device
  friend bool operator==(const ClaimAlternative&, const ClaimAlternative&) = default;
};

struct ClaimDemand {
  std::string request;
  std::vector<ClaimAlternative> alternatives;  // one for a plain request
  friend bool operator==(const ClaimDemand&, const ClaimDemand&) = default;
};

// An unallocated claim, as the controller keeps it.
struct PendingClaimInput {
  std::string ns;
  std::string name;
  std::string created;  // creationTimestamp
  std::vector<ClaimDemand> demands;
};

// Why `inventory` (with `allocated` devices held) cannot serve `alternative`; nullopt when it
// can. nullopt also for a class this config does not generate (see ClassIsOurs).
std::optional<std::string> CannotServe(const api::NodeInventory& inventory,
                                       const std::set<std::string>& allocated,
                                       const ClaimAlternative& alternative, const Config& config,
                                       std::string_view driver);

// Whether every alternative of every request names a class this config generates.
bool ClassesAreOurs(const PendingClaimInput& claim, const Config& config, std::string_view driver);

struct GroupVerdict {
  std::string group;
  bool fits = false;
  std::string reason;  // what a new node would offer, or why it would not do
};

struct PendingReport {
  std::string ns;
  std::string name;
  std::string created;
  std::string reason;                // why no live node serves it
  std::vector<GroupVerdict> groups;  // every configured group
};

// Walks live nodes one at a time (`next` yields each node's inventory and held devices, false
// when done), so that only one decoded inventory is alive at a time, keeping each node's facts
// (controller/pending_facts.h); claims some node can serve drop out. What is left is reported
// against every node group. The controller judges from facts it keeps between requests instead
// (JudgePendingClaims over controller/pending_cache.h).
struct LiveNode {
  std::string name;
  std::shared_ptr<const api::NodeInventory> inventory;
  std::set<std::string> allocated;
};
std::vector<PendingReport> PendingClaims(const std::vector<PendingClaimInput>& claims,
                                         const std::function<bool(LiveNode*)>& next,
                                         const std::vector<NodeGroupProfile>& groups,
                                         const Config& config, std::string_view driver);

// {"pending": [{"namespace", "name", "created", "reason", "nodeGroups": [{"name", "fits",
// "reason"}]}], "nodeGroups": [names]}
nlohmann::json PendingJson(const std::vector<PendingReport>& reports,
                           const std::vector<NodeGroupProfile>& groups);

// How a live node's pool differs from its group's template pool: devices missing or extra, and
// per device the attributes and capacities whose values differ, leaving out the values only a
// node knows (TemplateBindings) and the gang attribute. Empty: no drift. At most `limit` lines.
std::vector<std::string> TemplateDrift(const DesiredPool& live, const DesiredPool& tmpl,
                                       size_t limit = 8);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_AUTOSCALER_H_
