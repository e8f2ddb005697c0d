// The controller's core: informers on NodeInventories, plugin Leases, Nodes, ResourceSlices of
// the driver, ResourceClaims and the managed DeviceClasses; a work queue keyed by pool (the node
// name) plus one key for the DeviceClasses; workers that compute each pool's desired slices
// (controller/slices.h) and write the difference (controller/pool_sync.h).
//
// A node's pool is published while its NodeInventory and Node exist and its plugin Lease
// (`xpu-dra-plugin-<node>` in the namespace) is fresh: renewTime + leaseDurationSeconds (15 s
// when unset) is in the future. A timer re-checks the pool when the Lease would expire, so a
// stopped plugin's pool is withdrawn within one lease duration (15 s, before the kubelet's own
// 30 s wipe). Slices deleted by someone else are recreated by the next sync of their pool.
// Claim allocations re-queue their pools after a debounce (attributes mode orders by them).
//
// Writes happen only while `can_write` says so (the leader); a replica that is not the leader
// keeps its caches warm and syncs nothing. Fields the server drops make the controller publish
// without them from then on (taints: tainted devices are left out; counters: attributes mode),
// with a log line, a metric and an Event. Thread-safe.
#ifndef XPU_CONTROLLER_CONTROLLER_H_
#define XPU_CONTROLLER_CONTROLLER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/client/client.h"
#include "api/client/informer.h"
#include "api/client/objects.h"
#include "api/core.h"
#include "api/node_inventory.h"
#include "api/resource.h"
#include "api/validation.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/stop.h"
#include "controller/autoscaler.h"
#include "controller/config.h"
#include "controller/gang_reconciler.h"
#include "controller/metrics.h"
#include "controller/node_groups.h"
#include "controller/pending_cache.h"
#include "controller/pool_reconciler.h"
#include "controller/pool_sync.h"
#include "controller/slice_cache.h"
#include "controller/slices.h"
#include "controller/stored_objects.h"
#include "controller/sync_errors.h"
#include "controller/work_queue.h"

namespace xpu::controller {

struct CoreOptions {
  std::string driver = "xpu.dra.dev";
  std::string ns = "xpu-dra";  // plugin Leases and the controller's Events
  api::KubeVersion version = api::KubeVersion::k1_35;
  // The server is 1.37 or later: name each counter-consuming device's partition type
  // (partitionTypeAttribute), until the server is seen dropping it (its alpha gate off).
  bool partition_type = false;
  int workers = 4;
  std::chrono::milliseconds claim_debounce{1000};
  std::chrono::seconds default_lease_duration{15};  // for a plugin Lease without one
  std::chrono::milliseconds resync{300'000};        // every pool again, as a safety net
  std::string identity;                             // reportingInstance of Events
  // The node-group profiles (--node-groups): /autoscaler/pending and the template drift check.
  std::vector<NodeGroupProfile> node_groups = {};
  // The resync timer, the mutation cache's expiry, the queue's delays and the plugin Leases'
  // expiry (its wall time); tests pass a FakeClock.
  Clock* clock = &RealClock();
};

// "xpu-dra-plugin-<node>" -> "<node>"; "" for other names.
std::string NodeOfPluginLease(const std::string& lease_name);
// "<node>" -> "xpu-dra-plugin-<node>".
std::string PluginLeaseName(const std::string& node);

class Controller {
 public:
  // `client`, `metrics` and `log` must outlive the controller.
  Controller(api::client::Client* client, CoreOptions options, Config config,
             ControllerMetrics* metrics, Logger* log);
  ~Controller();  // Stop()s
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informers and the workers; returns once every informer has listed, or
  // kDeadlineExceeded after `sync_timeout` (the controller keeps trying in the background).
  Status Start(std::chrono::milliseconds sync_timeout = std::chrono::milliseconds(60'000));
  void Stop();
  bool synced() const;

  // Who may write: the leader elector's IsLeader, or always (no election). Set before Start.
  void SetCanWrite(std::function<bool()> can_write);
  // Queues every pool and the DeviceClasses (on becoming leader, on a config change).
  void ResyncAll();
  // Replaces the config in force and resyncs.
  void SetConfig(Config config);
  std::shared_ptr<const Config> config() const;

  // Current state, for tests and /readyz.
  bool taints_supported() const { return taints_ok_; }
  bool counters_supported() const { return counters_ok_; }
  size_t QueueDepth() const { return queue_.Depth() + queue_.Processing(); }
  // A core/v1 Event, written with designated initializers so that its strings cannot be swapped:
  //   RecordEvent({.reason = "SyncFailed", .message = msg, .about_node = node});
  struct Event {
    std::string type = "Warning";  // or "Normal"
    std::string reason;            // UpperCamelCase
    std::string message;
    // The Node it is about (the Event lives in "default"); empty: the controller's leader Lease,
    // in the controller's namespace.
    std::string about_node = {};
  };
  void RecordEvent(const Event& event);

  // The body of /autoscaler/pending (controller/autoscaler.h): the unallocated claims of this
  // driver no live node can serve, each with the node groups that could. Judged from the facts
  // the inventory handlers keep (controller/pending_cache.h), with liveness and holdings as the
  // controller has them: decodes nothing. Thread-safe.
  std::string PendingJson();
  // The node facts /autoscaler/pending reads (for tests and measurements).
  PendingCache::Counts PendingCounts() const { return pending_.counts(); }

 private:
  // renewTime + leaseDurationSeconds (the default when unset); nullopt without a renewTime.
  std::optional<std::chrono::system_clock::time_point> LeaseExpiry(
      const api::core::Lease& lease) const;
  // Past the expiry on the controller's clock, by a margin, so the re-check sees it expired.
  std::chrono::milliseconds UntilExpiry(std::chrono::system_clock::time_point expires) const;
  // Queues the node's pool (after `delay`).
  void QueuePool(const std::string& node,
                 std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  void Worker();
  // A terminal sync error (sync_errors.h): logged, counted and an Event, once per key and error.
  void ReportTerminal(const std::string& key, bool classes, const Status& s);
  Status SyncClasses();

  // The pool sync (pool_reconciler.{h,cc}): gather, decide (DecidePool), apply.
  Status SyncPoolKey(const std::string& node);
  PoolGathered GatherPoolInputs(const std::string& node) EXCLUDES(mu_);
  // The pool to publish; an error when the inventory does not decode, nullopt (logged, an Event)
  // when it does not build: what is published stays.
  StatusOr<std::optional<DesiredPool>> DesiredPoolOf(const PoolGathered& gathered,
                                                     const PoolDecision& decision);
  // Records the node's liveness and taint counts; true when its liveness changed.
  bool NoteLiveness(const std::string& node, bool live, bool has_inventory,
                    const std::optional<DesiredPool>& desired) EXCLUDES(mu_);
  Status ApplyPool(const PoolGathered& gathered, const PoolDecision& decision,
                   const std::optional<DesiredPool>& desired);
  // Fields the server dropped: published without them from now on (a log line, a metric, an
  // Event) and everything resynced.
  void FallBackOnDroppedFields(const std::string& node, const PoolSyncResult& result);
  // Compares a live node's pool with its node group's template (kNodeGroupLabel): the drift
  // gauge, and an Event when the difference is new.
  void CheckTemplateDrift(const std::string& node, const std::map<std::string, std::string>& labels,
                          const DesiredPool& pool, const Config& config,
                          const PublishOptions& publish);

  // What gang placement reads of the controller (GangSeams::view).
  GangClusterView GangView() const EXCLUDES(mu_);
  void OnSlice(const std::shared_ptr<const StoredSlice>& old_slice,
               const std::shared_ptr<const StoredSlice>& new_slice);
  void OnClaim(const std::shared_ptr<const StoredClaim>& old_claim,
               const std::shared_ptr<const StoredClaim>& new_claim);
  void Periodic();
  void UpdateGauges();
  bool CanWrite() const;

  api::client::Client* const client_;
  const CoreOptions options_;
  ControllerMetrics* const metrics_;
  Logger* const log_;
  std::function<bool()> can_write_;

  api::client::TypedInformer<StoredInventory> inventories_;
  api::client::TypedInformer<StoredNode> nodes_;
  api::client::TypedInformer<api::core::Lease> leases_;
  api::client::TypedInformer<StoredSlice> slices_;
  api::client::TypedInformer<StoredClaim> claims_;
  api::client::TypedInformer<api::resource::DeviceClass> classes_;
  api::client::TypedInformer<api::AcceleratorGang> gangs_;
  WorkQueue queue_;
  SliceCache slice_cache_;  // each pool's slices, and our writes the watch has not shown yet
  // DeviceClass writes (class_sync.h).
  std::shared_ptr<api::client::Objects<api::resource::DeviceClass>> class_objects_;
  TerminalErrors terminal_;
  // AcceleratorGangs (gang_reconciler.h): placement, the nodes gangs hold, their caches.
  GangReconciler gang_sync_;
  // Each node's facts for /autoscaler/pending, noted by the inventory handlers.
  PendingCache pending_;

  std::atomic<bool> taints_ok_{true};
  std::atomic<bool> counters_ok_{true};
  std::atomic<bool> partition_type_ok_{false};  // set from CoreOptions::partition_type
  StopFlag stop_;
  std::vector<std::thread> threads_;

  mutable Mutex mu_;
  std::shared_ptr<const Config> config_ GUARDED_BY(mu_);
  uint64_t config_generation_ GUARDED_BY(mu_) = 0;
  // Claim uid -> the (pool, device) pairs of this driver its allocation holds.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> claim_devices_
      GUARDED_BY(mu_);
  std::map<std::string, std::multiset<std::string>> allocated_ GUARDED_BY(mu_);
  std::map<std::string, bool> live_ GUARDED_BY(mu_);
  // The nodes with an inventory whose pool a sync has gathered since the start: once all have,
  // a node missing from live_ is known not to be live (GangView's liveness_known).
  std::set<std::string> judged_ GUARDED_BY(mu_);
  // Node -> "<group>\n<differences>" for nodes of a node group whose pool differs from the
  // template; and each group's template, with the config generation it was built for.
  std::map<std::string, std::pair<std::string, std::string>> drift_ GUARDED_BY(mu_);
  std::map<std::string, std::pair<uint64_t, std::shared_ptr<const DesiredPool>>> templates_
      GUARDED_BY(mu_);
  // The inputs of each pool's last sync that wrote nothing: a sync whose inputs are unchanged
  // (the periodic Lease re-check) does nothing (DecidePool).
  std::map<std::string, PoolInputs> last_sync_ GUARDED_BY(mu_);
  // The inventory resourceVersion each pool was last published from.
  std::map<std::string, std::string> published_inventory_ GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, int>> tainted_ GUARDED_BY(mu_);
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_CONTROLLER_H_
