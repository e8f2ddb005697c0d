// The driver's partitions (docs/partitions.md): vNPUs, MIG instances and vHCUs made sure of at
// prepare, released at unprepare, reconciled with the devices at start, and the fallback layout
// (--partition-layout) made at start.
//
// The records live in the driver's checkpoint beside its claims and are written with them (one
// file, one write), so the PartitionManager works on the driver's checkpoint and saves through the
// driver; it has no lock of its own: the driver calls it under its lock, and it is not
// thread-safe otherwise. Every create is recorded first (the intent, with the vendor id it will
// get where known), so a partition that no record names is never ours and is never destroyed.
#ifndef XPU_KUBELETPLUGIN_DRIVER_PARTITIONS_H_
#define XPU_KUBELETPLUGIN_DRIVER_PARTITIONS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "api/partitions.h"
#include "api/resource.h"
#include "base/status.h"
#include "kubeletplugin/checkpoint/checkpoint.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/prepare.h"
#include "kubeletplugin/driver/service.h"

namespace xpu::plugin {

// The latest inventory of the node (discovery runs elsewhere).
using InventoryFn = std::function<std::shared_ptr<const api::NodeInventory>()>;
using LogFn = std::function<void(const std::string&)>;

// One entry of a fallback layout: `count` partitions of `profile` per device.
struct PartitionLayoutEntry {
  std::string profile;
  int count = 0;
  friend bool operator==(const PartitionLayoutEntry&, const PartitionLayoutEntry&) = default;
};

// "vir05_1c_16g*4,1g.18gb" (a missing count is 1): the entries, or an error naming `flag` and
// the entry.
StatusOr<std::vector<PartitionLayoutEntry>> ParsePartitionLayout(std::string_view text,
                                                                 std::string_view flag);

// What the vendor calls did (DriverStats counts them).
struct PartitionStats {
  uint64_t created = 0;
  uint64_t destroyed = 0;
  uint64_t errors = 0;  // failed vendor creates and destroys
};

class PartitionManager {
 public:
  // Writes the whole checkpoint (the records included); called after every record change.
  using SaveFn = std::function<Status()>;

  // `checkpoint` (its `partitions` are the records, its `claims` tell the prepared claims) and
  // the functions must outlive the manager. Partition devices of results for `driver_name` in
  // the pool `node_name` are this node's.
  PartitionManager(std::string driver_name, std::string node_name,
                   checkpoint::Checkpoint* checkpoint, SaveFn save, InventoryFn inventory,
                   LogFn log);

  // The backend that creates partitions of its kind (one per kind; a second replaces the first).
  void AddBackend(std::shared_ptr<discovery::PartitionBackend> backend);

  // The claim's partition devices in `allocation`: one recorded for the claim is used as
  // recorded; one that exists on the device and is nobody's is recorded as static and handed
  // over; otherwise it is created, its intent recorded first. A partition held by another claim,
  // or one that cannot be created, is an error (the partitions made before it stay recorded:
  // the caller releases them with ReleaseFor).
  StatusOr<std::map<std::string, PartitionDevice>> EnsureFor(
      const ClaimRef& ref, const api::resource::AllocationResult& allocation,
      const api::NodeInventory& inventory);
  // Destroys (or forgets, if static) the partitions recorded for `uid`; the first error (those
  // not released stay recorded, to be tried again).
  Status ReleaseFor(const std::string& uid);
  // At start, before the claims' specs are written: each record checked against its device. A
  // create that crashed, a destroy that did not finish, or a record of a claim not prepared is
  // undone; a prepared claim's partition that is gone (a reboot) is made again with the same id
  // (its new uuid or conf file written into the claim's recorded spec). Records are left as
  // they are where the device cannot be asked; the caller saves.
  Status Reconcile();
  // Partitions recorded for claims that are not prepared (a prepare that failed and whose
  // rollback could not destroy them) released again; errors are logged.
  void ReleaseLeftovers();
  // The fallback layout: on every partitionable device whose profiles include an entry's, the
  // partitions missing for `count` of that profile are made, as node configuration: no record,
  // handed out as static ones, never destroyed here. Idempotent (what exists counts). MIG
  // instances go to the first free legal placement. Returns how many were made; what a device
  // refuses is logged and the rest goes on.
  int ApplyLayout(const std::vector<PartitionLayoutEntry>& layout);

  const PartitionStats& stats() const { return stats_; }

 private:
  discovery::PartitionBackend* BackendFor(const std::string& kind) const;
  // EnsureFor for one result naming the partition `name` (resolved to `t`); `device` names it in
  // errors.
  StatusOr<PartitionDevice> EnsureOne(const ClaimRef& ref, const std::string& device,
                                      const std::string& name, const api::PartitionTarget& t,
                                      const api::NodeInventory& inventory);
  // The existing partition `e` of `parent` recorded as static for the claim.
  StatusOr<PartitionDevice> HandOver(const ClaimRef& ref, const std::string& device,
                                     const std::string& name, const api::InventoryDevice& parent,
                                     const api::InventoryPartition& e);
  // The partition `t` created through `backend` (the parent holds `live` now, asked at most
  // once), its intent recorded before the vendor call.
  class LiveOnce;
  StatusOr<PartitionDevice> Create(const ClaimRef& ref, const std::string& device,
                                   const std::string& name, const api::PartitionTarget& t,
                                   const api::NodeInventory& inventory,
                                   discovery::PartitionBackend& backend, LiveOnce& live);
  // Reconcile's step for a prepared claim's record that is gone: made again with the same id.
  void Recreate(checkpoint::Partition& p, discovery::PartitionBackend& backend,
                const api::InventoryDevice& parent);
  // ApplyLayout on one device; the vendor ids taken go into `used_ids`.
  int ApplyLayoutOn(const api::InventoryDevice& d, const std::vector<PartitionLayoutEntry>& layout,
                    std::set<int64_t>* used_ids);
  // A recreated partition's new identity (a MIG uuid, a vHCU's conf file): `from` replaced by
  // `to` in claim `uid`'s recorded CDI spec (written out by the driver's start, as every recorded
  // spec is).
  void ReplaceInSpec(const std::string& uid, const std::string& from, const std::string& to);

  const std::string driver_name_;
  const std::string node_name_;
  checkpoint::Checkpoint* const checkpoint_;
  const SaveFn save_;
  const InventoryFn inventory_;
  const LogFn log_;
  std::map<std::string, std::shared_ptr<discovery::PartitionBackend>> backends_;  // by kind
  PartitionStats stats_;
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_PARTITIONS_H_
