// Codecs of ResourceSlice and DeviceClass.
#include <utility>

#include "api/internal/codec.h"
#include "api/internal/meta_codec.h"
#include "api/internal/resource_codec.h"
#include "api/resource.h"

namespace xpu::api::resource {

using internal::Field;
using internal::ObjectReader;
using internal::ObjectWriter;
using nlohmann::json;

// Not in the unnamed namespace: the generic helpers of codec.h find these by argument-dependent
// lookup.
Status Read(const Field& f, DeviceAttribute* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("int", &out->int_value));
  RETURN_IF_ERROR(r.Optional("bool", &out->bool_value));
  RETURN_IF_ERROR(r.Optional("string", &out->string_value));
  RETURN_IF_ERROR(r.Optional("version", &out->version));
  out->unknown = r.Unknown();
  const int set =
      static_cast<int>(out->int_value.has_value()) + static_cast<int>(out->bool_value.has_value()) +
      static_cast<int>(out->string_value.has_value()) + static_cast<int>(out->version.has_value());
  // No known value but an unknown member: a kind of value added by a newer server.
  if (set > 1 || (set == 0 && out->unknown.empty())) {
    return f.Error("expected exactly one of int, bool, string, version");
  }
  return OkStatus();
}

json Write(const DeviceAttribute& attribute) {
  ObjectWriter w;
  w.Optional("int", attribute.int_value);
  w.Optional("bool", attribute.bool_value);
  w.Optional("string", attribute.string_value);
  w.Optional("version", attribute.version);
  return std::move(w).Finish(attribute.unknown);
}

Status Read(const Field& f, DeviceCapacity* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("value", &out->value));
  RETURN_IF_ERROR(ReadOptionalObject(r, "requestPolicy", &out->request_policy));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceCapacity& capacity) {
  ObjectWriter w;
  w.Set("value", capacity.value);
  w.Optional("requestPolicy", capacity.request_policy);
  return std::move(w).Finish(capacity.unknown);
}

Status Read(const Field& f, Counter* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("value", &out->value));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const Counter& counter) {
  ObjectWriter w;
  w.Set("value", counter.value);
  return std::move(w).Finish(counter.unknown);
}

Status Read(const Field& f, DeviceCounterConsumption* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("counterSet", &out->counter_set));
  RETURN_IF_ERROR(r.Required("counters", &out->counters));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceCounterConsumption& consumption) {
  ObjectWriter w;
  w.Set("counterSet", consumption.counter_set);
  w.Set("counters", consumption.counters);
  return std::move(w).Finish(consumption.unknown);
}

Status Read(const Field& f, DeviceTaint* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("key", &out->key));
  RETURN_IF_ERROR(r.Optional("value", &out->value));
  RETURN_IF_ERROR(r.Required("effect", &out->effect));
  RETURN_IF_ERROR(r.Optional("timeAdded", &out->time_added));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceTaint& taint) {
  ObjectWriter w;
  w.Set("key", taint.key);
  w.NonEmpty("value", taint.value);
  w.Set("effect", taint.effect);
  w.Optional("timeAdded", taint.time_added);
  return std::move(w).Finish(taint.unknown);
}

Status Read(const Field& f, Device* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Optional("attributes", &out->attributes));
  RETURN_IF_ERROR(r.Optional("capacity", &out->capacity));
  RETURN_IF_ERROR(r.Optional("consumesCounters", &out->consumes_counters));
  RETURN_IF_ERROR(r.Optional("nodeName", &out->node_name));
  RETURN_IF_ERROR(ReadOptionalObject(r, "nodeSelector", &out->node_selector));
  RETURN_IF_ERROR(r.Optional("allNodes", &out->all_nodes));
  RETURN_IF_ERROR(r.Optional("taints", &out->taints));
  RETURN_IF_ERROR(r.Optional("bindsToNode", &out->binds_to_node));
  RETURN_IF_ERROR(r.Optional("bindingConditions", &out->binding_conditions));
  RETURN_IF_ERROR(r.Optional("bindingFailureConditions", &out->binding_failure_conditions));
  RETURN_IF_ERROR(r.Optional("allowMultipleAllocations", &out->allow_multiple_allocations));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const Device& device) {
  ObjectWriter w;
  w.Set("name", device.name);
  w.NonEmpty("attributes", device.attributes);
  w.NonEmpty("capacity", device.capacity);
  w.NonEmpty("consumesCounters", device.consumes_counters);
  w.Optional("nodeName", device.node_name);
  w.Optional("nodeSelector", device.node_selector);
  w.Optional("allNodes", device.all_nodes);
  w.NonEmpty("taints", device.taints);
  w.Optional("bindsToNode", device.binds_to_node);
  w.NonEmpty("bindingConditions", device.binding_conditions);
  w.NonEmpty("bindingFailureConditions", device.binding_failure_conditions);
  w.Optional("allowMultipleAllocations", device.allow_multiple_allocations);
  return std::move(w).Finish(device.unknown);
}

Status Read(const Field& f, CounterSet* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Required("counters", &out->counters));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const CounterSet& set) {
  ObjectWriter w;
  w.Set("name", set.name);
  w.Set("counters", set.counters);
  return std::move(w).Finish(set.unknown);
}

Status Read(const Field& f, ResourcePool* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Required("generation", &out->generation));
  RETURN_IF_ERROR(r.Required("resourceSliceCount", &out->resource_slice_count));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ResourcePool& pool) {
  ObjectWriter w;
  w.Set("name", pool.name);
  w.Set("generation", pool.generation);
  w.Set("resourceSliceCount", pool.resource_slice_count);
  return std::move(w).Finish(pool.unknown);
}

Status Read(const Field& f, ResourceSliceSpec* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("driver", &out->driver));
  RETURN_IF_ERROR(r.Required("pool", &out->pool));
  RETURN_IF_ERROR(r.Optional("nodeName", &out->node_name));
  RETURN_IF_ERROR(ReadOptionalObject(r, "nodeSelector", &out->node_selector));
  RETURN_IF_ERROR(r.Optional("allNodes", &out->all_nodes));
  RETURN_IF_ERROR(r.Optional("perDeviceNodeSelection", &out->per_device_node_selection));
  RETURN_IF_ERROR(r.Optional("devices", &out->devices));
  RETURN_IF_ERROR(r.Optional("sharedCounters", &out->shared_counters));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ResourceSliceSpec& spec) {
  ObjectWriter w;
  w.Set("driver", spec.driver);
  w.Set("pool", spec.pool);
  w.Optional("nodeName", spec.node_name);
  w.Optional("nodeSelector", spec.node_selector);
  w.Optional("allNodes", spec.all_nodes);
  w.Optional("perDeviceNodeSelection", spec.per_device_node_selection);
  // No omitempty upstream in 1.34: an empty pool still sends `devices: []`. A slice of shared
  // counters alone leaves `devices` out: from 1.35 the API server counts a present `devices`,
  // even `[]`, as set, and allows only one of the two.
  if (!spec.devices.empty() || spec.shared_counters.empty()) w.Set("devices", spec.devices);
  w.NonEmpty("sharedCounters", spec.shared_counters);
  return std::move(w).Finish(spec.unknown);
}

Status Read(const Field& f, ResourceSlice* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, kApiVersionV1, "ResourceSlice"));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Required("spec", &out->spec));
  out->unknown = r.Unknown();
  return OkStatus();
}

Status Read(const Field& f, DeviceClassConfiguration* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("opaque", &out->opaque));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceClassConfiguration& config) {
  ObjectWriter w;
  w.Optional("opaque", config.opaque);
  return std::move(w).Finish(config.unknown);
}

Status Read(const Field& f, DeviceClassSpec* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("selectors", &out->selectors));
  RETURN_IF_ERROR(r.Optional("config", &out->config));
  RETURN_IF_ERROR(r.Optional("extendedResourceName", &out->extended_resource_name));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceClassSpec& spec) {
  ObjectWriter w;
  w.NonEmpty("selectors", spec.selectors);
  w.NonEmpty("config", spec.config);
  w.Optional("extendedResourceName", spec.extended_resource_name);
  return std::move(w).Finish(spec.unknown);
}

Status Read(const Field& f, DeviceClass* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, kApiVersionV1, "DeviceClass"));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Required("spec", &out->spec));
  out->unknown = r.Unknown();
  return OkStatus();
}

json ToJson(const ResourceSlice& slice) {
  ObjectWriter w;
  w.Set("apiVersion", std::string(kApiVersionV1));
  w.Set("kind", std::string("ResourceSlice"));
  w.Set("metadata", slice.metadata);
  w.Set("spec", slice.spec);
  return std::move(w).Finish(slice.unknown);
}

json ToJson(const DeviceClass& device_class) {
  ObjectWriter w;
  w.Set("apiVersion", std::string(kApiVersionV1));
  w.Set("kind", std::string("DeviceClass"));
  w.Set("metadata", device_class.metadata);
  w.Set("spec", device_class.spec);
  return std::move(w).Finish(device_class.unknown);
}

}  // namespace xpu::api::resource

namespace xpu::api {

template <>
StatusOr<resource::ResourceSlice> FromJson<resource::ResourceSlice>(const nlohmann::json& json) {
  return internal::ReadRoot<resource::ResourceSlice>(json);
}

template <>
StatusOr<resource::DeviceClass> FromJson<resource::DeviceClass>(const nlohmann::json& json) {
  return internal::ReadRoot<resource::DeviceClass>(json);
}

}  // namespace xpu::api
