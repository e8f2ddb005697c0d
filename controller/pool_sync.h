// Writes one pool's ResourceSlices to match what is desired, with the upstream publishing rules
// (dra-api.md §6):
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
// Writes go through a SliceWriter (the Kubernetes client in production) and are reported to
// `observe` (verb, result) for the metrics. Every written object is also handed back in the
// result so the caller's cache can hold it until its informer catches up (a mutation cache:
// without it a second sync before the watch event arrives would create duplicates).
#ifndef XPU_CONTROLLER_POOL_SYNC_H_
#define XPU_CONTROLLER_POOL_SYNC_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/client/client.h"
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
  bool dropped_taints = false;    // the server dropped device taints
  bool dropped_counters = false;  // the server dropped sharedCounters / consumesCounters
  std::vector<SlicePtr> written;  // created and updated slices, as the server returned them
  std::vector<std::string> deleted_names;
  int64_t generation = 0;  // of the pool after the sync
  bool Changed() const { return created + updated + deleted > 0; }
};

// The result label of a write: ok, conflict (409 Conflict), not_found, exists (409
// AlreadyExists), error.
std::string_view WriteResult(const Status& status);

// "verb" is create, update or delete; "result" as WriteResult says.
using WriteObserver = std::function<void(std::string_view verb, std::string_view result)>;

// `existing`: every slice of this driver whose pool is `pool_name` (any generation). `desired`:
// nullopt withdraws the pool. `can_write` is asked before each write; when it says no (the
// leader lost its lease) the sync stops with kCancelled.
struct SyncOptions {
  bool bump_on_change = false;
  WriteObserver observe;
  std::function<bool()> can_write;
};
PoolSyncResult SyncPool(api::client::Client& client, std::string_view driver,
                        const std::string& pool_name, const std::optional<DesiredPool>& desired,
                        const NodeFacts& node, const std::vector<SlicePtr>& existing,
                        const SyncOptions& options = {});

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_POOL_SYNC_H_
