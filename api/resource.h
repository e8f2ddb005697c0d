// The resource.k8s.io/v1 objects a DRA driver reads and writes (Kubernetes 1.34): ResourceSlice,
// DeviceClass, ResourceClaim and ResourceClaimTemplate, with their JSON codecs, and the
// conversion of their wire form between v1, v1beta2 and v1beta1.
//
// Field names follow the upstream Go types (k8s.io/api resource/v1, see docs/reference/dra-api.md
// §1). Pointer fields are std::optional; strings, lists and maps tagged omitempty upstream are left
// out when empty. Quantities ("80Gi") and timestamps stay in their wire spelling; node selectors,
// opaque parameters, conditions and similar pass through as raw JSON. Each struct keeps the members
// it does not know in `unknown` and writes them back, so that updating an object read from a newer
// API server keeps that server's fields.
//
// `FromJson<T>` reads the v1 form (apiVersion absent or "resource.k8s.io/v1"; convert other
// versions with ConvertResource first) and names the JSON path of the first problem
// ("spec.devices[1].attributes[\"model\"]: expected exactly one of int, bool, string, version").
// It checks shapes, not the API server's validation rules. No exception escapes. Value types,
// thread-compatible.
#ifndef XPU_API_RESOURCE_H_
#define XPU_API_RESOURCE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/meta.h"
#include "base/status.h"

namespace xpu::api::resource {

inline constexpr std::string_view kGroup = "resource.k8s.io";
inline constexpr std::string_view kApiVersionV1 = "resource.k8s.io/v1";

using RawJson = nlohmann::json;
// Members a struct does not know, as a JSON object; written back on output. Null while nothing
// is unknown: no allocation.
using Unknown = nlohmann::json;

// ---- ResourceSlice ----

// Exactly one value is set (a newer server may send a kind this code does not know; it then
// sits in `unknown`).
struct DeviceAttribute {
  static DeviceAttribute Int(int64_t value) { return {value, {}, {}, {}, nullptr}; }
  static DeviceAttribute Bool(bool value) { return {{}, value, {}, {}, nullptr}; }
  static DeviceAttribute String(std::string value) {
    return {{}, {}, std::move(value), {}, nullptr};
  }

  std::optional<int64_t> int_value;         // "int"
  std::optional<bool> bool_value;           // "bool"
  std::optional<std::string> string_value;  // "string"
  std::optional<std::string> version;       // "version", semver 2.0.0
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceAttribute&, const DeviceAttribute&) = default;
};

struct DeviceCapacity {
  std::string value;                      // quantity
  std::optional<RawJson> request_policy;  // CapacityRequestPolicy
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceCapacity&, const DeviceCapacity&) = default;
};

struct Counter {
  std::string value;  // quantity
  Unknown unknown = nullptr;
  friend bool operator==(const Counter&, const Counter&) = default;
};

struct DeviceCounterConsumption {
  std::string counter_set;
  std::map<std::string, Counter> counters;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceCounterConsumption&,
                         const DeviceCounterConsumption&) = default;
};

struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, NoExecute (1.35+: None)
  std::optional<std::string> time_added;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceTaint&, const DeviceTaint&) = default;
};

struct Device {
  std::string name;
  std::map<std::string, DeviceAttribute> attributes;
  std::map<std::string, DeviceCapacity> capacity;
  std::vector<DeviceCounterConsumption> consumes_counters;
  std::optional<std::string> node_name;
  std::optional<RawJson> node_selector;  // core/v1 NodeSelector
  std::optional<bool> all_nodes;
  std::vector<DeviceTaint> taints;
  std::optional<bool> binds_to_node;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<bool> allow_multiple_allocations;
  Unknown unknown = nullptr;
  friend bool operator==(const Device&, const Device&) = default;
};

struct CounterSet {
  std::string name;
  std::map<std::string, Counter> counters;
  Unknown unknown = nullptr;
  friend bool operator==(const CounterSet&, const CounterSet&) = default;
};

struct ResourcePool {
  std::string name;
  int64_t generation = 0;
  int64_t resource_slice_count = 0;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourcePool&, const ResourcePool&) = default;
};

struct ResourceSliceSpec {
  std::string driver;
  ResourcePool pool;
  // Exactly one of the four node selection fields is set.
  std::optional<std::string> node_name;
  std::optional<RawJson> node_selector;  // core/v1 NodeSelector
  std::optional<bool> all_nodes;
  std::optional<bool> per_device_node_selection;
  std::vector<Device> devices;  // always written, `[]` when empty
  std::vector<CounterSet> shared_counters;
  // 1.37 alpha (DRAPartitionableDevicesType): the string attribute naming each counter-consuming
  // device's partition type; dropped by a server with the gate off.
  std::optional<std::string> partition_type_attribute;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceSliceSpec&, const ResourceSliceSpec&) = default;
};

struct ResourceSlice {
  ObjectMeta metadata;
  ResourceSliceSpec spec;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceSlice&, const ResourceSlice&) = default;
};

// ---- Shared by DeviceClass and ResourceClaim ----

struct CelDeviceSelector {
  std::string expression;
  Unknown unknown = nullptr;
  friend bool operator==(const CelDeviceSelector&, const CelDeviceSelector&) = default;
};

struct DeviceSelector {
  std::optional<CelDeviceSelector> cel;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceSelector&, const DeviceSelector&) = default;
};

struct OpaqueDeviceConfiguration {
  std::string driver;
  RawJson parameters = RawJson::object();  // a JSON object, usually with apiVersion and kind
  Unknown unknown = nullptr;
  friend bool operator==(const OpaqueDeviceConfiguration&,
                         const OpaqueDeviceConfiguration&) = default;
};

struct DeviceToleration {
  std::string key;
  std::string operator_name;  // "operator": Equal (default) or Exists
  std::string value;
  std::string effect;
  std::optional<int64_t> toleration_seconds;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceToleration&, const DeviceToleration&) = default;
};

struct CapacityRequirements {
  std::map<std::string, std::string> requests;  // quantities
  Unknown unknown = nullptr;
  friend bool operator==(const CapacityRequirements&, const CapacityRequirements&) = default;
};

// ---- DeviceClass ----

struct DeviceClassConfiguration {
  std::optional<OpaqueDeviceConfiguration> opaque;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceClassConfiguration&,
                         const DeviceClassConfiguration&) = default;
};

struct DeviceClassSpec {
  std::vector<DeviceSelector> selectors;
  std::vector<DeviceClassConfiguration> config;
  std::optional<std::string> extended_resource_name;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceClassSpec&, const DeviceClassSpec&) = default;
};

struct DeviceClass {
  ObjectMeta metadata;
  DeviceClassSpec spec;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceClass&, const DeviceClass&) = default;
};

// ---- ResourceClaim ----

struct ExactDeviceRequest {
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;  // ExactCount (default) or All
  int64_t count = 0;            // 0: unset
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::optional<CapacityRequirements> capacity;
  Unknown unknown = nullptr;
  friend bool operator==(const ExactDeviceRequest&, const ExactDeviceRequest&) = default;
};

struct DeviceSubRequest {
  std::string name;
  std::string device_class_name;
  std::vector<DeviceSelector> selectors;
  std::string allocation_mode;
  int64_t count = 0;
  std::vector<DeviceToleration> tolerations;
  std::optional<CapacityRequirements> capacity;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceSubRequest&, const DeviceSubRequest&) = default;
};

// Exactly one of `exactly` and `first_available` is set.
struct DeviceRequest {
  std::string name;
  std::optional<ExactDeviceRequest> exactly;
  std::vector<DeviceSubRequest> first_available;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceRequest&, const DeviceRequest&) = default;
};

struct DeviceConstraint {
  std::vector<std::string> requests;
  std::optional<std::string> match_attribute;
  std::optional<std::string> distinct_attribute;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceConstraint&, const DeviceConstraint&) = default;
};

struct DeviceClaimConfiguration {
  std::vector<std::string> requests;
  std::optional<OpaqueDeviceConfiguration> opaque;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceClaimConfiguration&,
                         const DeviceClaimConfiguration&) = default;
};

struct DeviceClaim {
  std::vector<DeviceRequest> requests;
  std::vector<DeviceConstraint> constraints;
  std::vector<DeviceClaimConfiguration> config;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceClaim&, const DeviceClaim&) = default;
};

struct ResourceClaimSpec {
  DeviceClaim devices;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceClaimSpec&, const ResourceClaimSpec&) = default;
};

struct DeviceRequestAllocationResult {
  std::string request;  // "<request>" or "<request>/<subrequest>"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<bool> admin_access;
  std::vector<DeviceToleration> tolerations;
  std::vector<std::string> binding_conditions;
  std::vector<std::string> binding_failure_conditions;
  std::optional<std::string> share_id;                   // "shareID"
  std::map<std::string, std::string> consumed_capacity;  // quantities
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceRequestAllocationResult&,
                         const DeviceRequestAllocationResult&) = default;
};

struct DeviceAllocationConfiguration {
  std::string source;  // FromClass or FromClaim
  std::vector<std::string> requests;
  std::optional<OpaqueDeviceConfiguration> opaque;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceAllocationConfiguration&,
                         const DeviceAllocationConfiguration&) = default;
};

struct DeviceAllocationResult {
  std::vector<DeviceRequestAllocationResult> results;
  std::vector<DeviceAllocationConfiguration> config;
  Unknown unknown = nullptr;
  friend bool operator==(const DeviceAllocationResult&, const DeviceAllocationResult&) = default;
};

struct AllocationResult {
  DeviceAllocationResult devices;
  std::optional<RawJson> node_selector;  // core/v1 NodeSelector; unset: everywhere
  std::optional<std::string> allocation_timestamp;
  Unknown unknown = nullptr;
  friend bool operator==(const AllocationResult&, const AllocationResult&) = default;
};

struct ResourceClaimConsumerReference {
  std::string api_group;
  std::string resource;  // e.g. "pods"
  std::string name;
  std::string uid;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceClaimConsumerReference&,
                         const ResourceClaimConsumerReference&) = default;
};

struct NetworkDeviceData {
  std::string interface_name;
  std::vector<std::string> ips;
  std::string hardware_address;
  Unknown unknown = nullptr;
  friend bool operator==(const NetworkDeviceData&, const NetworkDeviceData&) = default;
};

struct AllocatedDeviceStatus {
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;  // "shareID"
  std::vector<RawJson> conditions;      // meta/v1 Condition
  std::optional<RawJson> data;
  std::optional<NetworkDeviceData> network_data;
  Unknown unknown = nullptr;
  friend bool operator==(const AllocatedDeviceStatus&, const AllocatedDeviceStatus&) = default;
};

struct ResourceClaimStatus {
  std::optional<AllocationResult> allocation;
  std::vector<ResourceClaimConsumerReference> reserved_for;
  std::vector<AllocatedDeviceStatus> devices;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceClaimStatus&, const ResourceClaimStatus&) = default;
};

struct ResourceClaim {
  ObjectMeta metadata;
  ResourceClaimSpec spec;
  // Written only when something is set: a client never sends status with a create.
  ResourceClaimStatus status;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceClaim&, const ResourceClaim&) = default;
};

struct ResourceClaimTemplateSpec {
  ObjectMeta metadata;  // labels and annotations for the generated claims
  ResourceClaimSpec spec;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceClaimTemplateSpec&,
                         const ResourceClaimTemplateSpec&) = default;
};

struct ResourceClaimTemplate {
  ObjectMeta metadata;
  ResourceClaimTemplateSpec spec;
  Unknown unknown = nullptr;
  friend bool operator==(const ResourceClaimTemplate&, const ResourceClaimTemplate&) = default;
};

// ToJson writes apiVersion resource.k8s.io/v1 and the kind.
nlohmann::json ToJson(const ResourceSlice& slice);
nlohmann::json ToJson(const DeviceClass& device_class);
nlohmann::json ToJson(const ResourceClaim& claim);
nlohmann::json ToJson(const ResourceClaimTemplate& claim_template);

// ---- Versions ----

enum class ResourceVersion { kV1, kV1beta2, kV1beta1 };

// "resource.k8s.io/v1", ...
std::string_view ApiVersionOf(ResourceVersion version);
// The version of an apiVersion string; nullopt for anything else.
std::optional<ResourceVersion> ParseApiVersion(std::string_view api_version);

// Converts the wire form of a ResourceSlice, DeviceClass, ResourceClaim or ResourceClaimTemplate
// (or a `<Kind>List` of them) from the version its apiVersion names to `to`. v1beta2 has the v1
// layout; v1beta1 keeps device fields under `basic`, has flat requests (no `exactly`) and a
// plain-string nodeName / plain-bool allNodes in a slice spec. Members not known to this code stay
// where they are, so v1 -> v1beta1 -> v1 and v1 -> v1beta2 -> v1 give the original object, except
// that unknown members beside `exactly` in a v1 request come back inside `exactly`.
StatusOr<nlohmann::json> ConvertResource(const nlohmann::json& object, ResourceVersion to);

}  // namespace xpu::api::resource

namespace xpu::api {

template <>
StatusOr<resource::ResourceSlice> FromJson<resource::ResourceSlice>(const nlohmann::json& json);
template <>
StatusOr<resource::DeviceClass> FromJson<resource::DeviceClass>(const nlohmann::json& json);
template <>
StatusOr<resource::ResourceClaim> FromJson<resource::ResourceClaim>(const nlohmann::json& json);
template <>
StatusOr<resource::ResourceClaimTemplate> FromJson<resource::ResourceClaimTemplate>(
    const nlohmann::json& json);

}  // namespace xpu::api

#endif  // XPU_API_RESOURCE_H_
