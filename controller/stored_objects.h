// What the controller keeps of the objects it watches between syncs (its informers' stored
// forms): what its handlers and the liveness check need, and the rest as compact JSON
// (managedFields dropped), deflated (packed_json.h), decoded when a pool is synced. Decoded
// inventories and slices take about three times their JSON, and the JSON about eight times its
// deflated bytes; at 65,000 nodes the inventories and slices are most of the controller's
// memory (docs/performance.md, "Controller"). Each is
// checked by decoding when it arrives (the FromJson specializations below), so a malformed
// object is counted by the informer and left out, as a decoded one would be.
#ifndef XPU_CONTROLLER_STORED_OBJECTS_H_
#define XPU_CONTROLLER_STORED_OBJECTS_H_

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "api/resource.h"
#include "base/status.h"
#include "controller/autoscaler.h"
#include "controller/packed_json.h"

namespace xpu::controller {

// A NodeInventory: its name (the node's), its version (a pool sync's input, and what a gang
// offer was computed from) and the rest as JSON (DecodeInventory).
struct StoredInventory {
  std::string name;
  std::string resource_version;
  PackedJson json;
};
// A ResourceSlice of the driver: what the slice cache indexes it by, and the rest as JSON
// (DecodeSlice).
struct StoredSlice {
  std::string name;
  std::string resource_version;
  std::string pool;
  PackedJson json;
};
// A Node: only what the pool sync (uid, labels) and gang placement (labels, address) read; its
// status (heartbeats) is dropped.
struct StoredNode {
  std::string name;
  std::string uid;
  std::map<std::string, std::string> labels;
  std::string address;  // the first InternalIP, for gang rank tables
};
// One device a claim's allocation holds.
struct AllocatedDevice {
  std::string driver;
  std::string pool;
  std::string device;
  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};
// A ResourceClaim: the devices it holds (any driver's; the controller keeps its own), or what it
// asks for while unallocated.
struct StoredClaim {
  std::string uid;
  std::vector<AllocatedDevice> devices;  // its allocation's results, in order
  // Unallocated claims only (for /autoscaler/pending): where it is and what it asks for.
  std::optional<PendingClaimInput> pending = std::nullopt;
};

// The compact JSON of an object, without metadata.managedFields.
std::string CompactJson(const nlohmann::json& object);

// The stored inventory decoded in full (an error when its JSON is malformed).
StatusOr<api::NodeInventory> DecodeInventory(const StoredInventory& stored);
// The same, shared; null when absent or malformed.
std::shared_ptr<const api::NodeInventory> DecodedInventoryOrNull(const StoredInventory* stored);
// The stored slice decoded in full.
StatusOr<std::shared_ptr<const api::resource::ResourceSlice>> DecodeSlice(
    const StoredSlice& stored);

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

#endif  // XPU_CONTROLLER_STORED_OBJECTS_H_
