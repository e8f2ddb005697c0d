// The AcceleratorGang side of the controller: a gang's sync (gather the candidate nodes, place
// the gang with PlanGang (controller/gang_plan.h, pure), write what follows from its status with
// PlanGangSync/ApplyGangSync (controller/gangs.h)), the nodes each gang holds, and the caches
// that keep a placement over 10,000 nodes from decoding their inventories:
//   - holdings: node -> uid of the gang holding it, gang key -> its nodes and the
//     resourceVersion that said so (the newer of the watch and our own status writes);
//   - offers: per node, what it offers gangs and the inputs that offer was computed from
//     (inventory version, devices held, class, count, config generation);
//   - facts: per node, the small facts placement needs (GangNodeFacts), noted by each pool sync
//     (which decodes the inventory anyway) with the inventory version they came from; nodes of
//     one server model in one state share one copy (interned by content).
// Each cache has its own mutex. Gangs are synced one at a time (so that two never take the same
// nodes); lock order: the serial mutex, then offers, then facts; holdings is a leaf, and none of
// them is held while the seams (the controller's own lock) are called, but the serial one.
//
// The reconciler reaches the rest of the controller only through GangSeams. Thread-safe.
#ifndef XPU_CONTROLLER_GANG_RECONCILER_H_
#define XPU_CONTROLLER_GANG_RECONCILER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/client/client.h"
#include "api/client/informer.h"
#include "api/client/objects.h"
#include "api/node_inventory.h"
#include "api/resource.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "controller/config.h"
#include "controller/gang_plan.h"
#include "controller/gangs.h"
#include "controller/metrics.h"
#include "controller/pool_sync.h"
#include "controller/stored_objects.h"

namespace xpu::controller {

// What a gang placement reads of the controller, under its lock once.
struct GangClusterView {
  std::shared_ptr<const Config> config;
  uint64_t config_generation = 0;
  std::vector<std::string> live;                           // the live nodes, by name
  std::map<std::string, std::set<std::string>> allocated;  // pool -> devices claims hold
  // False until every node with an inventory has been synced once since the start: until then
  // a node missing from `live` may be live, and a placed gang is not judged (it would fail or
  // move because the controller restarted).
  bool liveness_known = true;
};

// How the gang reconciler reads and acts on the rest of the controller.
struct GangSeams {
  std::function<bool()> can_write;  // the leader may write
  std::function<GangClusterView()> view;
  // The slices of a pool with the controller's own writes not yet watched (the mutation cache),
  // and the writes to remember in it.
  std::function<std::vector<SlicePtr>(const std::string& pool)> existing_slices;
  std::function<void(const PoolSyncResult& writes)> remember_writes;
  std::function<void(const std::string& node)> queue_pool;  // the node's pool, now
  std::function<void(const std::string& key, std::chrono::milliseconds delay)> queue_gang;
};

// The live nodes a gang's placement looks at: all of `live`, but for a placed gang whose members
// are all live (it stays where it is: only its members' health matters) and a failed gang, only
// its members among them. Pure.
std::vector<std::string> NodesToConsider(const api::AcceleratorGang& gang,
                                         const std::vector<std::string>& live);

// The nodes a gang's status says it holds (none unless Placed). Pure.
std::vector<std::string> PlacedNodes(const api::AcceleratorGang& gang);

// The content key by which equal facts are shared (the node's name left out). Pure.
std::string GangFactsContent(const GangNodeFacts& facts);

// The candidates of one placement and what gathering them cost.
struct GangCandidates {
  std::vector<GangCandidate> nodes;
  int computed = 0;  // offers computed now (the rest were cached)
  int decoded = 0;   // of which from an inventory decoded now
};

class GangReconciler {
 public:
  // The informers the controller runs (they must outlive the reconciler).
  struct Informers {
    api::client::TypedInformer<api::AcceleratorGang>* gangs = nullptr;
    api::client::TypedInformer<StoredInventory>* inventories = nullptr;
    api::client::TypedInformer<StoredNode>* nodes = nullptr;
  };
  // `client`, `clock`, `metrics` and `log` must outlive the reconciler.
  GangReconciler(api::client::Client* client, std::string driver, const Clock* clock,
                 Informers informers, GangSeams seams, ControllerMetrics* metrics, Logger* log);
  GangReconciler(const GangReconciler&) = delete;
  GangReconciler& operator=(const GangReconciler&) = delete;

  // Syncs the gang "<ns>/<name>": places it and writes its status and objects, or cleans up
  // after it when it is gone.
  Status Sync(const std::string& key) EXCLUDES(serial_mu_, offers_mu_, facts_mu_, hold_mu_);
  // The gang informer's handler: records the nodes it holds and queues it.
  void OnGang(const std::shared_ptr<const api::AcceleratorGang>& old_gang,
              const std::shared_ptr<const api::AcceleratorGang>& new_gang) EXCLUDES(hold_mu_);
  // Every gang (or only those not placed) again after `delay`: capacity or liveness changed.
  void QueueGangs(std::chrono::milliseconds delay, bool pending_only = false);

  // The uid of the gang holding `node`, or "".
  std::string HolderOf(const std::string& node) const EXCLUDES(hold_mu_);
  // The key of the gang holding `node`, or "".
  std::string GangHolding(const std::string& node) const EXCLUDES(hold_mu_);
  // Keeps what gang placement needs of a node's freshly decoded inventory (at `version`); a node
  // whose inventory does not project onto a topology is forgotten.
  void NoteInventory(const std::string& node, const std::string& version,
                     const api::NodeInventory& inventory) EXCLUDES(facts_mu_);

 private:
  struct Holding {
    std::string uid;
    std::string version;
    std::vector<std::string> nodes;
  };
  struct CachedOffer {
    std::string inputs;
    GangOffer offer;
    std::optional<api::InventoryFabric> fabric;
  };

  // Records where a gang holds nodes (its uid per node) as of resourceVersion `version`; an
  // older version than the one recorded is ignored. Returns the nodes whose holder changed.
  std::set<std::string> HoldNodes(const std::string& key, const std::string& uid,
                                  const std::string& version, const std::vector<std::string>& nodes)
      EXCLUDES(hold_mu_);
  // node -> uid of the gangs holding nodes, but for the gang `uid`.
  std::map<std::string, std::string> HeldByOthers(const std::string& uid) const EXCLUDES(hold_mu_);
  // The gang's next status (placement) and the objects' options it implies.
  GangPlan Place(const std::string& key, const api::AcceleratorGang& gang,
                 const GangClusterView& view, GangObjectOptions& objects)
      EXCLUDES(offers_mu_, facts_mu_, hold_mu_);
  // The live `nodes` as placement sees them, each with its (cached) offer.
  GangCandidates GatherGangCandidates(const api::AcceleratorGang& gang,
                                      const std::vector<std::string>& nodes,
                                      const GangClusterView& view)
      EXCLUDES(offers_mu_, facts_mu_, hold_mu_);
  // Fills `c`'s offer and fabric from the cache, or computes them; false when the node's
  // inventory yields none (it is then no candidate).
  bool OfferFor(GangCandidate& c, const StoredInventory& stored, std::string inputs,
                const Config& config, const std::string& device_class, int k, GangCandidates& out)
      REQUIRES(offers_mu_) EXCLUDES(facts_mu_);
  // The noted facts of `node` when they came from inventory `version`, else null.
  std::shared_ptr<const GangNodeFacts> FactsOf(const std::string& node,
                                               const std::string& version) const
      EXCLUDES(facts_mu_);
  // Drops the offers and facts of nodes that are gone.
  void PruneCaches() EXCLUDES(offers_mu_, facts_mu_);
  // After the writes: the mutation cache, metrics, holdings, the log, a retry when waiting.
  void AfterApply(const std::string& key, bool exists, GangSyncResult& result) EXCLUDES(hold_mu_);

  const std::string driver_;
  const Clock* const clock_;
  const Informers informers_;
  const GangSeams seams_;
  ControllerMetrics* const metrics_;
  Logger* const log_;
  api::client::ApiObjects<api::AcceleratorGang> gang_objects_;
  api::client::ApiObjects<api::resource::ResourceSlice> slice_objects_;
  api::client::ApiObjects<api::resource::ResourceClaim> claim_objects_;
  api::client::ApiObjects<api::resource::ResourceClaimTemplate> template_objects_;

  Mutex serial_mu_;  // one gang sync at a time

  Mutex offers_mu_;
  std::map<std::string, CachedOffer> offers_ GUARDED_BY(offers_mu_);

  mutable Mutex facts_mu_;
  std::map<std::string, std::pair<std::string, std::shared_ptr<const GangNodeFacts>>> facts_
      GUARDED_BY(facts_mu_);
  std::map<std::string, std::weak_ptr<const GangNodeFacts>> shared_facts_ GUARDED_BY(facts_mu_);

  mutable Mutex hold_mu_;
  std::map<std::string, std::string> held_ GUARDED_BY(hold_mu_);
  std::map<std::string, Holding> holdings_ GUARDED_BY(hold_mu_);
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_GANG_RECONCILER_H_
