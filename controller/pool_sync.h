// Writes one pool's ResourceSlices to match what is desired, with the upstream publishing rules
// (docs/reference/dra-api.md §6):
//   1. a pool no longer desired: delete all its slices;
//   2. generation = the highest pool.generation among its slices; slices of a lower generation
//      are obsolete;
//   3. existing slices are matched to desired ones (one and one: matched; otherwise by the same
//      set of device and counter-set names); unmatched existing slices are obsolete;
//   4. resourceSliceCount = the desired count; the generation is bumped unless no slice is new
//      and at most one matched slice changes, or the caller asks for a bump on any change (the
//      driver asking for a higher generation: the controller does when the node's inventory
//      changed, so consumers see a new generation for new hardware facts);
//   5. obsolete slices are deleted first (preconditions uid + resourceVersion; NotFound is
//      fine), then changed slices are updated (with resourceVersion: a 409 is an kAborted error
//      and the caller retries later with fresh data), then missing ones created;
//   6. nothing is written when nothing changed;
//   7. each answer is compared with what was sent: device taints or counters the server dropped
//      (a feature gate is off) are reported so the caller can fall back instead of looping.
// Taint timeAdded values are kept from the existing slice (the server sets them).
//
// Compute, then act: PlanPoolSync decides every write from the desired pool and the slices that
// exist, without I/O (rules 1-4 and 6); ApplyPoolSync carries a plan out through a SliceWriter
// (rules 5 and 7): the Kubernetes client in production, a recording fake in the tests. Writes
// are reported to `observe` (verb, result) for the metrics. Every written object is also handed
// back in the result so the caller's cache can hold it until its informer catches up (a mutation
// cache: without it a second sync before the watch event arrives would create duplicates).
#ifndef XPU_CONTROLLER_POOL_SYNC_H_
#define XPU_CONTROLLER_POOL_SYNC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/client/client.h"
#include "api/ids.h"
#include "api/resource.h"
#include "base/status.h"
#include "controller/slices.h"

namespace xpu::controller {

using SlicePtr = std::shared_ptr<const api::resource::ResourceSlice>;

struct PoolSyncResult {
  // OK, or the first write that failed (the writes before it stand and are listed below).
  Status status;
  int created = 0;
  int updated = 0;
  int deleted = 0;
  bool dropped_taints = false;          // the server dropped device taints
  bool dropped_counters = false;        // the server dropped sharedCounters / consumesCounters
  bool dropped_partition_type = false;  // the server dropped partitionTypeAttribute (1.37 alpha)
  std::vector<SlicePtr> written;        // created and updated slices, as the server returned them
  std::vector<std::string> deleted_names;
  int64_t generation = 0;  // of the pool after the sync
  bool Changed() const { return created + updated + deleted > 0; }
};

// The result label of a write: ok, conflict (409 Conflict), not_found, exists (409
// AlreadyExists), error.
std::string_view WriteResult(const Status& status);

// "verb" is create, update or delete; "result" as WriteResult says.
using WriteObserver = std::function<void(std::string_view verb, std::string_view result)>;

// The writes of one pool sync, in the order they are made.
struct PoolSyncPlan {
  std::string pool;
  int64_t generation = 0;         // of the pool after the sync
  std::vector<SlicePtr> deletes;  // obsolete slices (deleted with preconditions)
  std::vector<api::resource::ResourceSlice> updates;  // matched slices with their new spec
  std::vector<api::resource::ResourceSlice> creates;  // new slices (generateName, owner Node)
  bool Empty() const { return deletes.empty() && updates.empty() && creates.empty(); }
};

// `existing`: every slice of this driver whose pool is `pool` (any generation). `desired`:
// nullopt withdraws the pool. `bump_on_change`: any change bumps the generation. Pure.
PoolSyncPlan PlanPoolSync(const api::DriverName& driver, const api::PoolName& pool,
                          const std::optional<DesiredPool>& desired, const NodeFacts& node,
                          const std::vector<SlicePtr>& existing, bool bump_on_change = false);

// The narrow interface ApplyPoolSync writes through (cluster-scoped ResourceSlices). Answers are
// the objects the server stored.
class SliceWriter {
 public:
  virtual ~SliceWriter() = default;
  virtual StatusOr<nlohmann::json> Create(const nlohmann::json& slice) = 0;
  virtual StatusOr<nlohmann::json> Update(const nlohmann::json& slice) = 0;
  virtual Status Delete(const std::string& name, const api::client::DeleteOptions& pre) = 0;
};

// The Kubernetes client as a SliceWriter.
class ClientSliceWriter final : public SliceWriter {
 public:
  explicit ClientSliceWriter(api::client::Client& client) : client_(client) {}
  StatusOr<nlohmann::json> Create(const nlohmann::json& slice) override;
  StatusOr<nlohmann::json> Update(const nlohmann::json& slice) override;
  Status Delete(const std::string& name, const api::client::DeleteOptions& pre) override;

 private:
  api::client::Client& client_;
};

// `can_write` is asked before each write; when it says no (the leader lost its lease) the sync
// stops with kCancelled.
struct SyncOptions {
  bool bump_on_change = false;  // for SyncPool's plan
  WriteObserver observe;
  std::function<bool()> can_write;
};

// Makes the plan's writes: deletes (NotFound counts as done), then updates, then creates; stops
// at the first failure, with the writes before it listed in the result.
PoolSyncResult ApplyPoolSync(const PoolSyncPlan& plan, SliceWriter& writer,
                             const SyncOptions& options = {});

// PlanPoolSync, then ApplyPoolSync through the client.
PoolSyncResult SyncPool(api::client::Client& client, const api::DriverName& driver,
                        const api::PoolName& pool, const std::optional<DesiredPool>& desired,
                        const NodeFacts& node, const std::vector<SlicePtr>& existing,
                        const SyncOptions& options = {});

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_POOL_SYNC_H_
