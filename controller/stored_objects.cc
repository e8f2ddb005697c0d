#include "controller/stored_objects.h"

#include <utility>

#include "api/core.h"

namespace xpu::controller {

std::string CompactJson(const nlohmann::json& object) {
  if (!object.contains("metadata") || !object["metadata"].contains("managedFields")) {
    return object.dump();
  }
  nlohmann::json copy = object;
  copy["metadata"].erase("managedFields");
  return copy.dump();
}

StatusOr<api::NodeInventory> DecodeInventory(const StoredInventory& stored) {
  return api::FromJson<api::NodeInventory>(
      nlohmann::json::parse(stored.json.Text(), nullptr, false));
}

std::shared_ptr<const api::NodeInventory> DecodedInventoryOrNull(const StoredInventory* stored) {
  if (stored == nullptr) return nullptr;
  auto parsed = DecodeInventory(*stored);
  if (!parsed.ok()) return nullptr;
  return std::make_shared<const api::NodeInventory>(std::move(parsed).value());
}

StatusOr<std::shared_ptr<const api::resource::ResourceSlice>> DecodeSlice(
    const StoredSlice& stored) {
  nlohmann::json j = nlohmann::json::parse(stored.json.Text(), nullptr, false);
  if (j.is_discarded()) return InternalError("decode stored slice " + stored.name);
  ASSIGN_OR_RETURN(api::resource::ResourceSlice slice,
                   api::FromJson<api::resource::ResourceSlice>(j));
  return std::make_shared<const api::resource::ResourceSlice>(std::move(slice));
}

}  // namespace xpu::controller

namespace xpu::api {
namespace {
namespace stored_objects_cc {

// The first InternalIP among the node's status.addresses, or "".
std::string InternalAddress(const nlohmann::json& json) {
  const auto status = json.find("status");
  if (status == json.end() || !status->is_object()) return "";
  const auto addresses = status->find("addresses");
  if (addresses == status->end() || !addresses->is_array()) return "";
  for (const nlohmann::json& a : *addresses) {
    if (a.is_object() && a.value("type", nlohmann::json()) == "InternalIP" &&
        a.contains("address") && a["address"].is_string()) {
      return a["address"].get<std::string>();
    }
  }
  return "";
}

controller::ClaimAlternative Alternative(std::string name, std::string device_class,
                                         const std::string& mode, int64_t count) {
  return controller::ClaimAlternative{.name = std::move(name),
                                      .device_class = std::move(device_class),
                                      .count = count == 0 ? 1 : count,
                                      .all = mode == "All"};
}

// What an unallocated claim asks for, for /autoscaler/pending.
controller::PendingClaimInput PendingOf(const resource::ResourceClaim& claim) {
  controller::PendingClaimInput pending;
  pending.ns = claim.metadata.namespace_name;
  pending.name = claim.metadata.name;
  pending.created = claim.metadata.creation_timestamp;
  for (const resource::DeviceRequest& r : claim.spec.devices.requests) {
    controller::ClaimDemand demand;
    demand.request = r.name;
    if (r.exactly) {
      demand.alternatives.push_back(Alternative("", r.exactly->device_class_name,
                                                r.exactly->allocation_mode, r.exactly->count));
    }
    for (const resource::DeviceSubRequest& sub : r.first_available) {
      demand.alternatives.push_back(
          Alternative(sub.name, sub.device_class_name, sub.allocation_mode, sub.count));
    }
    pending.demands.push_back(std::move(demand));
  }
  return pending;
}

}  // namespace stored_objects_cc
}  // namespace

using controller::StoredClaim;
using controller::StoredInventory;
using controller::StoredNode;
using controller::StoredSlice;

template <>
StatusOr<StoredInventory> FromJson<StoredInventory>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(NodeInventory inventory, FromJson<NodeInventory>(json));
  return StoredInventory{inventory.metadata.name, inventory.metadata.resource_version,
                         controller::PackedJson(controller::CompactJson(json))};
}

template <>
StatusOr<StoredSlice> FromJson<StoredSlice>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(resource::ResourceSlice slice, FromJson<resource::ResourceSlice>(json));
  return StoredSlice{slice.metadata.name, slice.metadata.resource_version, slice.spec.pool.name,
                     controller::PackedJson(controller::CompactJson(json))};
}

template <>
StatusOr<StoredNode> FromJson<StoredNode>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(core::Node node, FromJson<core::Node>(json));
  return StoredNode{node.metadata.name, node.metadata.uid, node.metadata.labels,
                    stored_objects_cc::InternalAddress(json)};
}

template <>
StatusOr<StoredClaim> FromJson<StoredClaim>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(resource::ResourceClaim claim, FromJson<resource::ResourceClaim>(json));
  StoredClaim out{claim.metadata.uid, {}};
  if (claim.status.allocation) {
    for (const auto& r : claim.status.allocation->devices.results) {
      out.devices.push_back({.driver = r.driver, .pool = r.pool, .device = r.device});
    }
    return out;
  }
  out.pending = stored_objects_cc::PendingOf(claim);
  return out;
}

}  // namespace xpu::api
