// One pool's sync (a node's ResourceSlices) as gather -> decide -> apply:
//   - gather (Controller::GatherPoolInputs): what the pool's slices follow from, read from the
//     informers and under the controller's lock once: liveness (the node's inventory, Node and
//     fresh plugin Lease), the versions and facts the pool is built from, and the slices the
//     watch shows;
//   - decide (DecidePool, pure): skip when the inputs equal those of the last sync that wrote
//     nothing (this is what makes the periodic re-check at each Lease expiry cheap), withdraw
//     the pool when the node is not live, publish it otherwise;
//   - apply (Controller::ApplyPool): build the pool (controller/slices.h), write the difference
//     (controller/pool_sync.h), remember the inputs, and fall back when the server drops fields.
// The Controller's steps are defined in pool_reconciler.cc; this header holds the pure part.
#ifndef XPU_CONTROLLER_POOL_RECONCILER_H_
#define XPU_CONTROLLER_POOL_RECONCILER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "controller/config.h"
#include "controller/pool_sync.h"
#include "controller/slices.h"
#include "controller/stored_objects.h"

namespace xpu::controller {

// Everything a pool's desired slices and their writes follow from. Two syncs with equal inputs
// (and no write of the controller's own in flight) would do the same: the second does nothing.
struct PoolInputs {
  // The node's inventory, Node and plugin Lease exist, and the Lease is fresh.
  bool live = false;
  std::string inventory_version;  // "" without an inventory
  // The node as its slices name it: name, uid and labels ("" and none without a Node) and the
  // uid of the gang holding it.
  NodeFacts node;
  uint64_t config_generation = 0;
  // The driver, the server's version and the fields it keeps (taints, counters, partitionType).
  PublishOptions publish;
  std::set<std::string> allocated;  // devices claims hold on the node
  // The pool's slices as the watch shows them: name and resourceVersion, by name.
  std::vector<std::pair<std::string, std::string>> slices;
  // Writes of the controller's own the watch has not shown yet (the mutation cache is not
  // empty): the slices above do not describe the pool, and the inputs are not remembered.
  bool writes_in_flight = false;
  friend bool operator==(const PoolInputs&, const PoolInputs&) = default;
};

enum class PoolAction {
  kSkip,      // nothing changed since the last sync: do nothing
  kWithdraw,  // not live: delete the pool's slices
  kPublish,   // live: build the pool and write the difference
};

struct PoolDecision {
  PoolAction action = PoolAction::kSkip;
  // The inputs may be remembered after a sync that writes nothing (no writes in flight).
  bool remember = false;
  // The owner of the slices (name and uid only), for the writes.
  NodeFacts owner;
  // kPublish: the node and the options BuildPool builds with.
  NodeFacts node;
  PublishOptions publish;
};

// `last`: the inputs of the pool's last sync that wrote nothing, if remembered. Pure.
PoolDecision DecidePool(const PoolInputs& inputs, const std::optional<PoolInputs>& last);

// The inputs `in` will be once the watch shows a sync's writes: the written slices at the
// versions the server answered, the deleted ones gone. Remembered after a sync that wrote, so
// that the sync its own watch events start (when one arrives before the write's answer, the
// slice cache cannot tell it is an echo) is a skip, not a rebuild of the pool. Pure.
PoolInputs InputsAfterWrites(const PoolInputs& in, const PoolSyncResult& result);

// What the gather step read: the inputs, and the objects the apply step needs.
struct PoolGathered {
  PoolInputs inputs;
  std::optional<PoolInputs> last;
  std::shared_ptr<const StoredInventory> inventory;  // null when absent
  std::shared_ptr<const Config> config;
  // Live: when the plugin Lease expires (the pool is checked again then).
  std::optional<std::chrono::system_clock::time_point> lease_expires;
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_POOL_RECONCILER_H_
