// What the controller writes for one AcceleratorGang, computed (PlanGangSync) and then written
// (ApplyGangSync) through the typed seams (api/client/objects.h): the real API in production,
// FakeObjects in tests.
//
// For a gang (controller/gang_plan.h decides its status):
//   1. the status, when it changed: the reservation, written first and alone (a conflict leaves
//      nothing else written; the next sync starts again from fresh data);
//   2. while placed, the gang device: a ResourceSlice "xpu-dra-gang.<ns>.<name>" in pool
//      "gangs" holding one device "gang-<name>" (attributes gang = the gang's uid, gangNodes, and
//      the fabric id of the tier that holds it), whose node selector lists the chosen nodes
//      Gangs never share a node, so each node sees at most
//      one slice of the pool: each slice is a whole pool (resourceSliceCount 1), and a new or
//      moved one takes a generation above every slice of the pool, so a stale one left on a node
//      never wins (docs/reference/dra-api.md §6). The selector is matchExpressions
//      kubernetes.io/hostname In
//      [...] (the label every kubelet sets; the node name where a Node lacks it): matchFields
//      metadata.name takes only one value. Not placed: no slice;
//   3. the shared ResourceClaim "<name>-gang" asking for that device (DeviceClass
//      gang.<driver>, selector gang == uid), which every member pod references: its allocation
//      carries the node selector, so the scheduler puts members only on the chosen nodes. When
//      the gang moved (a member node failed) the claim, allocated for the old nodes, is deleted
//      and made again once gone;
//   4. the per-pod ResourceClaimTemplate "<name>-member": devicesPerNode devices of the gang's
//      class on a node the gang holds (selector gang == uid: the controller publishes that
//      attribute on the member nodes' devices), in one scale-up domain when the chosen sets are
//      (matchAttribute scaleUpDomain); in groups mode one group device of that size.
// Claims and templates carry the gang as controlling owner, so garbage collection removes them;
// the slice (cluster-scoped: a namespaced owner is not allowed) and, when no garbage collector
// runs, the claim and template too, are deleted by the controller when the gang is gone.
#ifndef XPU_CONTROLLER_GANGS_H_
#define XPU_CONTROLLER_GANGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/client/objects.h"
#include "api/resource.h"
#include "base/status.h"
#include "controller/config.h"

namespace xpu::controller {

inline constexpr std::string_view kGangPool = api::kGangPoolName;
inline constexpr std::string_view kGangSlicePrefix = "xpu-dra-gang.";

// "xpu-dra-gang.<ns>.<name>", and back (nullopt for another name).
std::string GangSliceName(std::string_view ns, std::string_view name);
std::optional<api::client::ObjectKey> GangOfSlice(std::string_view slice_name);
std::string GangClaimName(std::string_view gang);     // "<gang>-gang"
std::string GangTemplateName(std::string_view gang);  // "<gang>-member"

struct GangObjectOptions {
  std::string driver = "xpu.dra.dev";
  PublishMode mode = PublishMode::kAttributes;
  // Every chosen node's set lies in one scale-up domain: the template asks for that.
  bool scale_up_aligned = true;
  // Node name -> its kubernetes.io/hostname label, for the gang device's node selector.
  std::map<std::string, std::string> hostnames;
};

// The objects of a placed gang.
api::resource::ResourceSlice GangSlice(const api::AcceleratorGang& gang,
                                       const GangObjectOptions& options, int64_t generation);
api::resource::ResourceClaim GangClaim(const api::AcceleratorGang& gang,
                                       const GangObjectOptions& options);
api::resource::ResourceClaimTemplate GangTemplate(const api::AcceleratorGang& gang,
                                                  const GangObjectOptions& options);

struct GangSyncPlan {
  api::client::ObjectKey gang = api::client::ObjectKey::Cluster("");
  std::optional<api::AcceleratorGang> status;  // the gang with its new status, to write first
  std::optional<api::resource::ResourceSlice> create_slice;
  std::optional<api::resource::ResourceSlice> update_slice;  // with the existing version
  std::vector<std::string> delete_slices;
  std::optional<api::resource::ResourceClaim> claim;  // ensure it exists
  bool recreate_claim = false;                        // delete it first (the gang moved)
  std::optional<api::resource::ResourceClaimTemplate> claim_template;  // ensure, up to date
  bool delete_owned = false;  // the gang is gone: delete its claim and template, if ours
};

// `gang`: the gang as last read (nullopt: deleted) with `next` its planned status; `slices`: the
// existing slices of this gang; `top_generation`: the highest generation among all slices of the
// pool.
GangSyncPlan PlanGangSync(const api::client::ObjectKey& key,
                          const std::optional<api::AcceleratorGang>& gang,
                          const std::optional<api::AcceleratorGangStatus>& next, bool moved,
                          const std::vector<api::resource::ResourceSlice>& slices,
                          int64_t top_generation, const GangObjectOptions& options);

struct GangWriters {
  api::client::Objects<api::AcceleratorGang>* gangs = nullptr;
  api::client::Objects<api::resource::ResourceSlice>* slices = nullptr;
  api::client::Objects<api::resource::ResourceClaim>* claims = nullptr;
  api::client::Objects<api::resource::ResourceClaimTemplate>* templates = nullptr;
};

struct GangSyncResult {
  Status status;                                // OK or the first failed write
  std::optional<api::AcceleratorGang> written;  // the gang as the status write returned it
  // The slices created or updated, as the server returned them, and those deleted: the caller's
  // mutation cache holds them until its watch catches up (else the next sync, right after this
  // one, would not see the new slice and create it again).
  std::vector<api::resource::ResourceSlice> written_slices;
  std::vector<std::string> deleted_slices;
  int writes = 0;
  bool waiting = false;  // a claim being deleted before it is made again: sync again soon
};

GangSyncResult ApplyGangSync(const GangSyncPlan& plan, const GangWriters& writers);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_GANGS_H_
