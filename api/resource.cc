// The codecs of the resource.k8s.io objects (one field list per struct) and the version names.
#include "api/resource.h"

#include <array>

#include "api/codec/codec.h"
#include "api/internal/meta_codec.h"

namespace xpu::api::resource {

using codec::Field;
using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 3> kApiVersions = {
    "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"};

}  // namespace

std::string_view ApiVersionOf(ResourceVersion version) {
  return kApiVersions.at(static_cast<size_t>(version));
}

std::optional<ResourceVersion> ParseApiVersion(std::string_view api_version) {
  for (size_t i = 0; i < kApiVersions.size(); ++i) {
    if (kApiVersions[i] == api_version) return static_cast<ResourceVersion>(i);
  }
  return std::nullopt;
}

// ---- Shared by DeviceClass and ResourceClaim ----

template <typename V, codec::FieldsOf<CelDeviceSelector> S>
void VisitFields(V& v, S& self) {
  v.Required("expression", self.expression);
}

template <typename V, codec::FieldsOf<DeviceSelector> S>
void VisitFields(V& v, S& self) {
  v.Optional("cel", self.cel);
}

template <typename V, codec::FieldsOf<OpaqueDeviceConfiguration> S>
void VisitFields(V& v, S& self) {
  v.Required("driver", self.driver);
  v.Required("parameters", self.parameters, codec::kJsonObject);
}

template <typename V, codec::FieldsOf<DeviceToleration> S>
void VisitFields(V& v, S& self) {
  v.Optional("key", self.key);
  v.Optional("operator", self.operator_name);
  v.Optional("value", self.value);
  v.Optional("effect", self.effect);
  v.Optional("tolerationSeconds", self.toleration_seconds);
}

template <typename V, codec::FieldsOf<CapacityRequirements> S>
void VisitFields(V& v, S& self) {
  v.Optional("requests", self.requests);
}

// ---- ResourceSlice and DeviceClass ----

template <typename V, codec::FieldsOf<DeviceAttribute> S>
void VisitFields(V& v, S& self) {
  v.Optional("int", self.int_value);
  v.Optional("bool", self.bool_value);
  v.Optional("string", self.string_value);
  v.Optional("version", self.version);
}

template <typename V, codec::FieldsOf<DeviceCapacity> S>
void VisitFields(V& v, S& self) {
  v.Required("value", self.value);
  v.Optional("requestPolicy", self.request_policy, codec::kJsonObject);
}

template <typename V, codec::FieldsOf<Counter> S>
void VisitFields(V& v, S& self) {
  v.Required("value", self.value);
}

template <typename V, codec::FieldsOf<DeviceCounterConsumption> S>
void VisitFields(V& v, S& self) {
  v.Required("counterSet", self.counter_set);
  v.Required("counters", self.counters);
}

template <typename V, codec::FieldsOf<DeviceTaint> S>
void VisitFields(V& v, S& self) {
  v.Required("key", self.key);
  v.Optional("value", self.value);
  v.Required("effect", self.effect);
  v.Optional("timeAdded", self.time_added);
}

template <typename V, codec::FieldsOf<Device> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name);
  v.Optional("attributes", self.attributes);
  v.Optional("capacity", self.capacity);
  v.Optional("consumesCounters", self.consumes_counters);
  v.Optional("nodeName", self.node_name);
  v.Optional("nodeSelector", self.node_selector, codec::kJsonObject);
  v.Optional("allNodes", self.all_nodes);
  v.Optional("taints", self.taints);
  v.Optional("bindsToNode", self.binds_to_node);
  v.Optional("bindingConditions", self.binding_conditions);
  v.Optional("bindingFailureConditions", self.binding_failure_conditions);
  v.Optional("allowMultipleAllocations", self.allow_multiple_allocations);
}

template <typename V, codec::FieldsOf<CounterSet> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name);
  v.Required("counters", self.counters);
}

template <typename V, codec::FieldsOf<ResourcePool> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name);
  v.Required("generation", self.generation);
  v.Required("resourceSliceCount", self.resource_slice_count);
}

template <typename V, codec::FieldsOf<ResourceSliceSpec> S>
void VisitFields(V& v, S& self) {
  v.Required("driver", self.driver);
  v.Required("pool", self.pool);
  v.Optional("nodeName", self.node_name);
  v.Optional("nodeSelector", self.node_selector, codec::kJsonObject);
  v.Optional("allNodes", self.all_nodes);
  v.Optional("perDeviceNodeSelection", self.per_device_node_selection);
  v.Optional("devices", self.devices);  // see Write(ResourceSliceSpec)
  v.Optional("sharedCounters", self.shared_counters);
  v.Optional("partitionTypeAttribute", self.partition_type_attribute);
}

template <typename V, codec::FieldsOf<ResourceSlice> S>
void VisitFields(V& v, S& self) {
  v.Required("spec", self.spec);
}

template <typename V, codec::FieldsOf<DeviceClassConfiguration> S>
void VisitFields(V& v, S& self) {
  v.Optional("opaque", self.opaque);
}

template <typename V, codec::FieldsOf<DeviceClassSpec> S>
void VisitFields(V& v, S& self) {
  v.Optional("selectors", self.selectors);
  v.Optional("config", self.config);
  v.Optional("extendedResourceName", self.extended_resource_name);
}

template <typename V, codec::FieldsOf<DeviceClass> S>
void VisitFields(V& v, S& self) {
  v.Required("spec", self.spec);
}

// Not in the unnamed namespace: the generic helpers of api/codec/codec.h find these by
// argument-dependent lookup.
Status Read(const Field& f, DeviceAttribute* out) {
  RETURN_IF_ERROR(codec::ReadFields(f, out));
  const int set =
      static_cast<int>(out->int_value.has_value()) + static_cast<int>(out->bool_value.has_value()) +
      static_cast<int>(out->string_value.has_value()) + static_cast<int>(out->version.has_value());
  // No known value but an unknown member: a kind of value added by a newer server.
  if (set > 1 || (set == 0 && out->unknown.empty())) {
    return f.Error("expected exactly one of int, bool, string, version");
  }
  return OkStatus();
}

json Write(const ResourceSliceSpec& spec) {
  json out = codec::WriteFields(spec);
  // No omitempty upstream in 1.34: an empty pool still sends `devices: []`. A slice of shared
  // counters alone leaves `devices` out: from 1.35 the API server counts a present `devices`,
  // even `[]`, as set, and allows only one of the two.
  if (spec.devices.empty() && spec.shared_counters.empty()) out["devices"] = json::array();
  return out;
}

// ---- ResourceClaim and ResourceClaimTemplate ----

template <typename V, codec::FieldsOf<ExactDeviceRequest> S>
void VisitFields(V& v, S& self) {
  v.Required("deviceClassName", self.device_class_name);
  v.Optional("selectors", self.selectors);
  v.Optional("allocationMode", self.allocation_mode);
  v.Optional("count", self.count);
  v.Optional("adminAccess", self.admin_access);
  v.Optional("tolerations", self.tolerations);
  v.Optional("capacity", self.capacity);
}

template <typename V, codec::FieldsOf<DeviceSubRequest> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name);
  v.Required("deviceClassName", self.device_class_name);
  v.Optional("selectors", self.selectors);
  v.Optional("allocationMode", self.allocation_mode);
  v.Optional("count", self.count);
  v.Optional("tolerations", self.tolerations);
  v.Optional("capacity", self.capacity);
}

template <typename V, codec::FieldsOf<DeviceRequest> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name);
  v.Optional("exactly", self.exactly);
  v.Optional("firstAvailable", self.first_available);
}

template <typename V, codec::FieldsOf<DeviceConstraint> S>
void VisitFields(V& v, S& self) {
  v.Optional("requests", self.requests);
  v.Optional("matchAttribute", self.match_attribute);
  v.Optional("distinctAttribute", self.distinct_attribute);
}

template <typename V, codec::FieldsOf<DeviceClaimConfiguration> S>
void VisitFields(V& v, S& self) {
  v.Optional("requests", self.requests);
  v.Optional("opaque", self.opaque);
}

template <typename V, codec::FieldsOf<DeviceClaim> S>
void VisitFields(V& v, S& self) {
  v.Optional("requests", self.requests);
  v.Optional("constraints", self.constraints);
  v.Optional("config", self.config);
}

template <typename V, codec::FieldsOf<ResourceClaimSpec> S>
void VisitFields(V& v, S& self) {
  v.Always("devices", self.devices);
}

template <typename V, codec::FieldsOf<DeviceRequestAllocationResult> S>
void VisitFields(V& v, S& self) {
  v.Required("request", self.request);
  v.Required("driver", self.driver);
  v.Required("pool", self.pool);
  v.Required("device", self.device);
  v.Optional("adminAccess", self.admin_access);
  v.Optional("tolerations", self.tolerations);
  v.Optional("bindingConditions", self.binding_conditions);
  v.Optional("bindingFailureConditions", self.binding_failure_conditions);
  v.Optional("shareID", self.share_id);
  v.Optional("consumedCapacity", self.consumed_capacity);
}

template <typename V, codec::FieldsOf<DeviceAllocationConfiguration> S>
void VisitFields(V& v, S& self) {
  v.Required("source", self.source);
  v.Optional("requests", self.requests);
  v.Optional("opaque", self.opaque);
}

template <typename V, codec::FieldsOf<DeviceAllocationResult> S>
void VisitFields(V& v, S& self) {
  v.Optional("results", self.results);
  v.Optional("config", self.config);
}

template <typename V, codec::FieldsOf<AllocationResult> S>
void VisitFields(V& v, S& self) {
  v.Always("devices", self.devices);
  v.Optional("nodeSelector", self.node_selector, codec::kJsonObject);
  v.Optional("allocationTimestamp", self.allocation_timestamp);
}

template <typename V, codec::FieldsOf<ResourceClaimConsumerReference> S>
void VisitFields(V& v, S& self) {
  v.Optional("apiGroup", self.api_group);
  v.Required("resource", self.resource);
  v.Required("name", self.name);
  v.Required("uid", self.uid);
}

template <typename V, codec::FieldsOf<NetworkDeviceData> S>
void VisitFields(V& v, S& self) {
  v.Optional("interfaceName", self.interface_name);
  v.Optional("ips", self.ips);
  v.Optional("hardwareAddress", self.hardware_address);
}

template <typename V, codec::FieldsOf<AllocatedDeviceStatus> S>
void VisitFields(V& v, S& self) {
  v.Required("driver", self.driver);
  v.Required("pool", self.pool);
  v.Required("device", self.device);
  v.Optional("shareID", self.share_id);
  v.Optional("conditions", self.conditions);
  v.Optional("data", self.data, codec::kJsonObject);
  v.Optional("networkData", self.network_data);
}

template <typename V, codec::FieldsOf<ResourceClaimStatus> S>
void VisitFields(V& v, S& self) {
  v.Optional("allocation", self.allocation);
  v.Optional("reservedFor", self.reserved_for);
  v.Optional("devices", self.devices);
}

template <typename V, codec::FieldsOf<ResourceClaim> S>
void VisitFields(V& v, S& self) {
  v.Required("spec", self.spec);
  // A client never sends status with a create.
  v.Optional("status", self.status);
}

template <typename V, codec::FieldsOf<ResourceClaimTemplateSpec> S>
void VisitFields(V& v, S& self) {
  v.Optional("metadata", self.metadata);
  v.Required("spec", self.spec);
}

template <typename V, codec::FieldsOf<ResourceClaimTemplate> S>
void VisitFields(V& v, S& self) {
  v.Required("spec", self.spec);
}

json ToJson(const ResourceSlice& slice) {
  return internal::WriteObject(slice, kApiVersionV1, "ResourceSlice");
}

json ToJson(const DeviceClass& device_class) {
  return internal::WriteObject(device_class, kApiVersionV1, "DeviceClass");
}

json ToJson(const ResourceClaim& claim) {
  return internal::WriteObject(claim, kApiVersionV1, "ResourceClaim");
}

json ToJson(const ResourceClaimTemplate& claim_template) {
  return internal::WriteObject(claim_template, kApiVersionV1, "ResourceClaimTemplate");
}

}  // namespace xpu::api::resource

namespace xpu::api {

template <>
StatusOr<resource::ResourceSlice> FromJson<resource::ResourceSlice>(const nlohmann::json& json) {
  return internal::ReadObject<resource::ResourceSlice>(json, resource::kApiVersionV1,
                                                       "ResourceSlice");
}

template <>
StatusOr<resource::DeviceClass> FromJson<resource::DeviceClass>(const nlohmann::json& json) {
  return internal::ReadObject<resource::DeviceClass>(json, resource::kApiVersionV1, "DeviceClass");
}

template <>
StatusOr<resource::ResourceClaim> FromJson<resource::ResourceClaim>(const nlohmann::json& json) {
  return internal::ReadObject<resource::ResourceClaim>(json, resource::kApiVersionV1,
                                                       "ResourceClaim");
}

template <>
StatusOr<resource::ResourceClaimTemplate> FromJson<resource::ResourceClaimTemplate>(
    const nlohmann::json& json) {
  return internal::ReadObject<resource::ResourceClaimTemplate>(json, resource::kApiVersionV1,
                                                               "ResourceClaimTemplate");
}

}  // namespace xpu::api
