// The node side of the DRA driver: prepares and unprepares allocated ResourceClaims for the
// kubelet (NodeService) and reports device health (HealthSource). gRPC-free: the edge in
// kubeletplugin/grpc/ calls it.
//
// Prepare, per claim: GET the ResourceClaim (claims of a batch are fetched concurrently), check
// the uid and the allocation, then compute (prepare.h: ComputePreparedClaim takes the results of
// this driver and this node's pool and builds the container edits from the vendor profile and the
// claim's opaque config, class configs then claim configs, later wins), write the claim's CDI
// spec and then record the claim in the checkpoint. Compute, then act: a crash between the two
// leaves a spec without an entry, which the next start removes; the kubelet, which got no answer,
// asks again. A claim already in the checkpoint gets its recorded answer (its spec rewritten if it
// went missing). A device never goes to two claims unless both results carry a share id or admin
// access.
//
// Unprepare works from the checkpoint alone (the claim may be gone from the API): remove the
// spec, then the entry; an unknown uid succeeds.
//
// A call is bounded by its caller (CallBounds): no lookup (a GET, a LIST page, a gang's GET) is
// started once the caller went away or less than a reserve (a fifth of the call's time, 0.5 to
// 5 s) is left, whatever the earlier lookups answered, and no claim is written once half of that
// reserve is left; the claims not reached answer with a retryable error. So a batch larger than
// the API's rate allows answers in time with what it did, and an abandoned call stops early and
// frees the next one. A namespace with many claims in one batch (claim_lookup.h) is read with one
// paged LIST instead of a GET per claim (and many claims spread over small namespaces with one
// LIST of all namespaces): a claim a complete list lacks answers "not found" at once, so 10,000
// claims that do not exist cost a few requests, not 10,000 rate-limited GETs, and the batch's
// real claims are prepared within the kubelet's deadline. A LIST the API refuses (RBAC without
// `list`, an error) or one that would cost more requests than the GETs falls back to the GETs.
//
// Partitions (docs/partitions.md; partitions.h, which the driver calls under its lock). A result
// naming a partition device (a vNPU, a MIG instance) is made sure of before computing: one recorded
// for the claim is used as recorded; one that exists on the device and is nobody's (static) is
// recorded and handed over as it is; otherwise the partition is created through the kind's
// PartitionBackend, the intent recorded in the checkpoint first (with the vendor id it will get),
// completed after the vendor call. A failed create is rolled back and the claim fails with the
// vendor's error. Unprepare destroys what it created (marked Destroying first) and forgets what was
// static.
//
// Start reconciles the disk with the checkpoint before anything is served: a corrupt checkpoint
// is a data-loss error (the plugin refuses to run rather than forget claims); a new boot id, or a
// spec that went missing, gets the recorded specs rewritten; our specs without an entry are
// removed; entries whose claim no longer exists in the API (or has another uid) are unprepared.
// Partition records are checked against the devices first: a create that crashed before or
// after the vendor call is undone (destroyed if it happened), as is one whose claim was not yet
// recorded; a Destroying one is finished; a prepared claim's partition that is gone (a reboot)
// is created again with the same id, so its CDI spec stays right. A partition on a device that
// no record names is someone else's (created before the plugin, or by an operator) and is never
// destroyed: the intent is recorded before every create, so none of ours can lack a record.
#ifndef XPU_KUBELETPLUGIN_DRIVER_DRIVER_H_
#define XPU_KUBELETPLUGIN_DRIVER_DRIVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/client/client.h"
#include "api/client/objects.h"
#include "api/node_inventory.h"
#include "base/mutex.h"
#include "base/status.h"
#include "kubeletplugin/cdi/cdi.h"
#include "kubeletplugin/checkpoint/checkpoint.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/claim_lookup.h"
#include "kubeletplugin/driver/crash_point.h"
#include "kubeletplugin/driver/health_monitor.h"
#include "kubeletplugin/driver/partitions.h"
#include "kubeletplugin/driver/prepare.h"
#include "kubeletplugin/driver/service.h"
#include "kubeletplugin/driverfiles/driver_files.h"
#include "kubeletplugin/driverfiles/driver_files_cache.h"

namespace xpu::plugin {

struct DriverOptions {
  std::string driver_name = "xpu.dra.dev";
  std::string node_name;  // the pool of this node's devices
  std::string host_root = "/";
  std::string cdi_dir = "/var/run/cdi";
  std::string state_dir = "/var/lib/xpu-dra";
  int fetch_parallelism = 8;  // concurrent claim GETs in one batch
  // KEP-5304 device metadata files, under <plugin_dir>/dra-device-metadata/ (prepare.h).
  bool device_metadata = false;
  std::string plugin_dir = "/var/lib/kubelet/plugins/xpu.dra.dev";
  // Which vendors' specs carry their user-space driver (--cdi-driver-files), and the host path
  // of xpu-cdi-hook their specs name (--cdi-hook-path). docs/kubelet-plugin.md, "Driver files".
  driverfiles::Policy driver_files;
  std::string cdi_hook_path = std::string(driverfiles::kDefaultHookPath);

  Status Validate() const;
};

// What the driver counts; the plugin exports them as metrics.
struct DriverStats {
  uint64_t prepare_ok = 0;
  uint64_t prepare_error = 0;
  uint64_t unprepare_ok = 0;
  uint64_t unprepare_error = 0;
  uint64_t checkpoint_writes = 0;
  uint64_t prepared_claims = 0;
  uint64_t prepared_devices = 0;
  uint64_t partitions_created = 0;
  uint64_t partitions_destroyed = 0;
  uint64_t partition_errors = 0;  // failed vendor creates and destroys
};

// InventoryFn (the latest inventory of the node) and LogFn: partitions.h.

class Driver : public NodeService {
 public:
  using ClaimReader = api::client::ObjectReader<api::resource::ResourceClaim>;
  using GangReader = api::client::ObjectReader<api::AcceleratorGang>;

  // `client` and the functions must outlive the driver.
  Driver(DriverOptions options, api::client::Client* client, InventoryFn inventory, LogFn log);
  // Claims read through `claims` (tests hand it api/client/testing/fake_objects.h).
  // A claim holding a gang device has its AcceleratorGang read through `gangs` (none: such a
  // claim fails with a retryable error). A large batch lists its namespace through `lister`
  // (none: every claim is read with a GET).
  Driver(DriverOptions options, std::shared_ptr<ClaimReader> claims, InventoryFn inventory,
         LogFn log, std::shared_ptr<GangReader> gangs = nullptr,
         std::shared_ptr<ClaimLister> lister = nullptr);

  // The backend that creates partitions of its kind; before Start.
  void AddPartitionBackend(std::shared_ptr<discovery::PartitionBackend> backend) EXCLUDES(mu_);
  // The fallback layout (--partition-layout): on every partitionable device whose profiles
  // include an entry's, the partitions missing for `count` of that profile are made, as node
  // configuration: no claim owns them, they are handed out as static ones and never destroyed
  // here. Idempotent (what exists counts), so a crash midway is finished at the next start. MIG
  // instances go to the first free legal placement. Returns how many were made; what a device
  // refuses is logged and the rest goes on. After Start.
  int ApplyPartitionLayout(const std::vector<PartitionLayoutEntry>& layout) EXCLUDES(mu_);
  // The partition records as last saved (for pinning instance numbers in the published
  // inventory). Takes only a leaf lock, so it may be called under any other.
  std::vector<checkpoint::Partition> PartitionRecords() const EXCLUDES(records_mu_);

  // Reconciles disk, checkpoint and API (see above). Must succeed before Prepare/Unprepare.
  Status Start() EXCLUDES(mu_);
  // Unprepares entries whose claim was deleted from the API or replaced (uid differs); API errors
  // leave the entries for the next pass. First releases partitions left by failed prepares
  // (PartitionManager::ReleaseLeftovers). Called by Start and periodically.
  Status CollectDeletedClaims() EXCLUDES(mu_);

  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims,
                                               const CallBounds& bounds) EXCLUDES(mu_) override;
  std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims,
                                                   const CallBounds& bounds) EXCLUDES(mu_) override;
  // Unbounded calls (tests, tools).
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims) {
    return Prepare(claims, CallBounds{});
  }
  std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims) {
    return Unprepare(claims, CallBounds{});
  }

  DriverStats stats() const EXCLUDES(mu_);
  // The current checkpoint (for tests and xpuctl-style inspection).
  checkpoint::Checkpoint Snapshot() const EXCLUDES(mu_);

 private:
  struct Fetched;
  // Every claim of `todo` read (listed or GET) and checked, while `bounds` leave `reserve`;
  // never with mu_ held.
  std::vector<Fetched> FetchAll(const std::vector<const ClaimRef*>& todo, const CallBounds& bounds,
                                CallBounds::Clock::duration reserve) EXCLUDES(mu_);
  // The LISTs `todo` is worth (claim_lookup.h: PlanLists): claims found go to `listed`, claims
  // a complete list lacks get their error in `fetched` (and `done`); the others are left to a GET.
  void ListInto(const std::vector<const ClaimRef*>& todo, const CallBounds& bounds,
                CallBounds::Clock::duration reserve, std::vector<Fetched>* fetched,
                std::vector<std::optional<api::resource::ResourceClaim>>* listed,
                std::vector<bool>* done) EXCLUDES(mu_);
  // The claim GET, then Check.
  Fetched Fetch(const ClaimRef& ref) EXCLUDES(mu_);
  // What needs only the claim: its uid, its allocation, a gang device's AcceleratorGang (a GET).
  Fetched Check(const ClaimRef& ref, api::resource::ResourceClaim claim) EXCLUDES(mu_);
  PrepareResult PrepareLocked(const ClaimRef& ref, const Fetched& fetched,
                              std::map<std::string, checkpoint::Claim>* batch) REQUIRES(mu_);
  Status SaveLocked() REQUIRES(mu_);
  Status EnsureSpecLocked(const checkpoint::Claim& claim) REQUIRES(mu_);
  // Gang members' files (rank table, host file): <state_dir>/gangs/<claim uid>/.
  std::string GangDir() const { return options_.state_dir + "/gangs"; }
  std::string MetadataDir() const { return options_.plugin_dir + "/dra-device-metadata"; }
  static Status WriteGangFile(const std::string& path, const std::string& content);

  const DriverOptions options_;
  const std::shared_ptr<ClaimReader> claims_;
  const std::shared_ptr<GangReader> gangs_;
  const std::shared_ptr<ClaimLister> lister_;
  const InventoryFn inventory_;
  const LogFn log_;
  cdi::SpecStore specs_;
  // Each vendor's driver files, located once per driver version (shared with host_).
  const std::shared_ptr<driverfiles::DriverFilesCache> driver_files_;
  const HostView host_;
  checkpoint::CheckpointStore store_;

  mutable Mutex mu_;
  bool started_ GUARDED_BY(mu_) = false;
  checkpoint::Checkpoint checkpoint_ GUARDED_BY(mu_);
  // The partitions: their records are checkpoint_.partitions, saved by SaveLocked.
  PartitionManager partitions_ GUARDED_BY(mu_);
  mutable Mutex records_mu_;  // a leaf: taken last, never held while taking another
  std::vector<checkpoint::Partition> saved_records_ GUARDED_BY(records_mu_);
  DriverStats stats_ GUARDED_BY(mu_);
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_DRIVER_H_
