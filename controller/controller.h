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
#include <tuple>
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
#include "controller/autoscaler.h"
#include "controller/config.h"
#include "controller/gang_plan.h"
#include "controller/gangs.h"
#include "controller/metrics.h"
#include "controller/node_groups.h"
#include "controller/pool_sync.h"
#include "controller/slices.h"
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
  // The resync timer, the mutation cache's expiry and the queue's delays; tests pass a FakeClock.
  Clock* clock = &RealClock();
};

// What the controller keeps of the objects it watches between syncs: what its handlers and the
// liveness check need, and the rest as compact JSON (managedFields dropped), decoded when a pool
// is synced. Decoded inventories and slices take about three times their JSON; at 5,000 nodes
// that is most of the controller's memory. Each is checked by decoding when it arrives, so a
// malformed object is counted by the informer and left out, as a decoded one would be.
struct StoredInventory {
  std::string name;
  std::string resource_version;
  std::string json;
};
struct StoredSlice {
  std::string name;
  std::string resource_version;
  std::string pool;
  std::string json;
};
struct StoredNode {
  std::string name;
  std::string uid;
  std::map<std::string, std::string> labels;
  std::string address;  // the first InternalIP, for gang rank tables
};
struct StoredClaim {
  std::string uid;
  std::vector<std::tuple<std::string, std::string, std::string>> devices;  // driver, pool, device
  // Unallocated claims only (for /autoscaler/pending): where it is and what it asks for.
  std::optional<PendingClaimInput> pending = std::nullopt;
};

// The compact JSON of an object, without metadata.managedFields.
std::string CompactJson(const nlohmann::json& object);

// "xpu-dra-plugin-<node>" -> "<node>"; "" for other names.
std::string NodeOfPluginLease(const std::string& lease_name);

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
  // driver no live node can serve, each with the node groups that could. Decodes the live nodes'
  // inventories one at a time; thread-safe.
  std::string PendingJson();

 private:
  struct Cached {
    SlicePtr slice;  // null: deleted by us
    std::chrono::steady_clock::time_point expires;
  };

  // renewTime + leaseDurationSeconds (the default when unset); nullopt without a renewTime.
  std::optional<std::chrono::system_clock::time_point> LeaseExpiry(
      const api::core::Lease& lease) const;
  void Worker();
  // A terminal sync error (sync_errors.h): logged, counted and an Event, once per key and error.
  void ReportTerminal(const std::string& key, bool classes, const Status& s);
  Status SyncPoolKey(const std::string& node);
  Status SyncClasses();
  // AcceleratorGangs (controller/gangs.h): one at a time, under gang_mu_, so that two gangs
  // never take the same nodes.
  Status SyncGangKey(const std::string& key);
  void OnGang(const std::shared_ptr<const api::AcceleratorGang>& old_gang,
              const std::shared_ptr<const api::AcceleratorGang>& new_gang);
  // Every gang (or only those not placed) again after `delay`: capacity or liveness changed.
  void QueueGangs(std::chrono::milliseconds delay, bool pending_only = false);
  // Records where a gang holds nodes (its uid per node) as of resourceVersion `version`; an
  // older version than the one recorded is ignored. Returns the nodes whose holder changed.
  std::set<std::string> HoldNodes(const std::string& key, const std::string& uid,
                                  const std::string& version, const std::vector<std::string>& nodes)
      REQUIRES(mu_);
  // The node's inventory, decoded now (not kept: 10,000 decoded inventories would be most of the
  // controller's memory); null when absent or malformed.
  std::shared_ptr<const api::NodeInventory> DecodedInventory(const std::string& node);
  std::vector<SlicePtr> ExistingSlices(const std::string& pool);
  void RememberWrites(const PoolSyncResult& result);
  void OnSlice(const std::shared_ptr<const StoredSlice>& old_slice,
               const std::shared_ptr<const StoredSlice>& new_slice);
  void OnClaim(const std::shared_ptr<const StoredClaim>& old_claim,
               const std::shared_ptr<const StoredClaim>& new_claim);
  void Periodic();
  void UpdateGauges();
  // Compares a live node's pool with its node group's template (kNodeGroupLabel): the drift
  // gauge, and an Event when the difference is new.
  void CheckTemplateDrift(const std::string& node, const std::map<std::string, std::string>& labels,
                          const DesiredPool& pool, const Config& config,
                          const PublishOptions& publish);
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
  // DeviceClass writes (class_sync.h).
  std::shared_ptr<api::client::Objects<api::resource::DeviceClass>> class_objects_;
  std::shared_ptr<api::client::Objects<api::AcceleratorGang>> gang_objects_;
  std::shared_ptr<api::client::Objects<api::resource::ResourceSlice>> slice_objects_;
  std::shared_ptr<api::client::Objects<api::resource::ResourceClaim>> claim_objects_;
  std::shared_ptr<api::client::Objects<api::resource::ResourceClaimTemplate>> template_objects_;
  TerminalErrors terminal_;
  Mutex gang_mu_;  // taken before mu_

  std::atomic<bool> taints_ok_{true};
  std::atomic<bool> counters_ok_{true};
  std::atomic<bool> partition_type_ok_{false};  // set from CoreOptions::partition_type
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;

  mutable Mutex mu_;
  std::shared_ptr<const Config> config_ GUARDED_BY(mu_);
  uint64_t config_generation_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::set<std::string>> pool_slices_ GUARDED_BY(mu_);
  std::map<std::string, Cached> written_ GUARDED_BY(mu_);  // the mutation cache
  // Slices whose deletion the watch has shown, until the TTL: a write answer arriving after
  // that must not bring them back into the cache.
  std::map<std::string, std::chrono::steady_clock::time_point> seen_deleted_ GUARDED_BY(mu_);
  std::map<std::string, Cached> unused_placeholder_ GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> claim_devices_
      GUARDED_BY(mu_);
  std::map<std::string, std::multiset<std::string>> allocated_ GUARDED_BY(mu_);
  std::map<std::string, bool> live_ GUARDED_BY(mu_);
  // Node -> "<group>\n<differences>" for nodes of a node group whose pool differs from the
  // template; and each group's template, with the config generation it was built for.
  std::map<std::string, std::pair<std::string, std::string>> drift_ GUARDED_BY(mu_);
  std::map<std::string, std::pair<uint64_t, std::shared_ptr<const DesiredPool>>> templates_
      GUARDED_BY(mu_);
  // The inputs of each pool's last successful sync and the slice versions it left: a sync whose
  // inputs and slices are unchanged (the periodic Lease re-check) does nothing.
  std::map<std::string, std::string> last_sync_ GUARDED_BY(mu_);
  // The inventory resourceVersion each pool was last published from.
  std::map<std::string, std::string> published_inventory_ GUARDED_BY(mu_);
  std::map<std::string, std::map<std::string, int>> tainted_ GUARDED_BY(mu_);
  // Gangs: node -> uid of the gang holding it; gang key -> its nodes and the resourceVersion
  // that said so (the newer of the watch and our own status writes).
  std::map<std::string, std::string> held_ GUARDED_BY(mu_);
  struct Holding {
    std::string uid;
    std::string version;
    std::vector<std::string> nodes;
  };
  std::map<std::string, Holding> holdings_ GUARDED_BY(mu_);
  // Per node, what it offers gangs, and the inputs that offer was computed from (inventory
  // version, devices held, class, count, config): a placement decodes only changed inventories.
  struct CachedOffer {
    std::string inputs;
    GangOffer offer;
    std::optional<api::InventoryFabric> fabric;
  };
  std::map<std::string, CachedOffer> offers_ GUARDED_BY(gang_mu_);
  // Per node, the small facts gang placement needs, kept by each pool sync (which decodes the
  // inventory anyway) with the inventory version they came from.
  std::map<std::string, std::pair<std::string, std::shared_ptr<const GangNodeFacts>>> gang_facts_
      GUARDED_BY(mu_);
  // Nodes of one server model in one state have equal facts: they share one copy (by content).
  std::map<std::string, std::weak_ptr<const GangNodeFacts>> shared_facts_ GUARDED_BY(mu_);
};

}  // namespace xpu::controller

namespace xpu::api {

// The informers' decoders of the stored forms: each decodes the whole object (so a malformed one
// is an error) and keeps the stored part.
template <>
StatusOr<controller::StoredInventory> FromJson<controller::StoredInventory>(
    const nlohmann::json& json);
template <>
StatusOr<controller::StoredSlice> FromJson<controller::StoredSlice>(const nlohmann::json& json);
template <>
StatusOr<controller::StoredNode> FromJson<controller::StoredNode>(const nlohmann::json& json);
template <>
StatusOr<controller::StoredClaim> FromJson<controller::StoredClaim>(const nlohmann::json& json);

}  // namespace xpu::api

#endif  // XPU_CONTROLLER_CONTROLLER_H_
