// Codecs of ResourceClaim and ResourceClaimTemplate.
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
Status Read(const Field& f, ExactDeviceRequest* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("deviceClassName", &out->device_class_name));
  RETURN_IF_ERROR(r.Optional("selectors", &out->selectors));
  RETURN_IF_ERROR(r.Optional("allocationMode", &out->allocation_mode));
  RETURN_IF_ERROR(r.Optional("count", &out->count));
  RETURN_IF_ERROR(r.Optional("adminAccess", &out->admin_access));
  RETURN_IF_ERROR(r.Optional("tolerations", &out->tolerations));
  RETURN_IF_ERROR(r.Optional("capacity", &out->capacity));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ExactDeviceRequest& request) {
  ObjectWriter w;
  w.Set("deviceClassName", request.device_class_name);
  w.NonEmpty("selectors", request.selectors);
  w.NonEmpty("allocationMode", request.allocation_mode);
  w.NonZero("count", request.count);
  w.Optional("adminAccess", request.admin_access);
  w.NonEmpty("tolerations", request.tolerations);
  w.Optional("capacity", request.capacity);
  return std::move(w).Finish(request.unknown);
}

Status Read(const Field& f, DeviceSubRequest* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Required("deviceClassName", &out->device_class_name));
  RETURN_IF_ERROR(r.Optional("selectors", &out->selectors));
  RETURN_IF_ERROR(r.Optional("allocationMode", &out->allocation_mode));
  RETURN_IF_ERROR(r.Optional("count", &out->count));
  RETURN_IF_ERROR(r.Optional("tolerations", &out->tolerations));
  RETURN_IF_ERROR(r.Optional("capacity", &out->capacity));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceSubRequest& request) {
  ObjectWriter w;
  w.Set("name", request.name);
  w.Set("deviceClassName", request.device_class_name);
  w.NonEmpty("selectors", request.selectors);
  w.NonEmpty("allocationMode", request.allocation_mode);
  w.NonZero("count", request.count);
  w.NonEmpty("tolerations", request.tolerations);
  w.Optional("capacity", request.capacity);
  return std::move(w).Finish(request.unknown);
}

Status Read(const Field& f, DeviceRequest* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Optional("exactly", &out->exactly));
  RETURN_IF_ERROR(r.Optional("firstAvailable", &out->first_available));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceRequest& request) {
  ObjectWriter w;
  w.Set("name", request.name);
  w.Optional("exactly", request.exactly);
  w.NonEmpty("firstAvailable", request.first_available);
  return std::move(w).Finish(request.unknown);
}

Status Read(const Field& f, DeviceConstraint* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("requests", &out->requests));
  RETURN_IF_ERROR(r.Optional("matchAttribute", &out->match_attribute));
  RETURN_IF_ERROR(r.Optional("distinctAttribute", &out->distinct_attribute));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceConstraint& constraint) {
  ObjectWriter w;
  w.NonEmpty("requests", constraint.requests);
  w.Optional("matchAttribute", constraint.match_attribute);
  w.Optional("distinctAttribute", constraint.distinct_attribute);
  return std::move(w).Finish(constraint.unknown);
}

Status Read(const Field& f, DeviceClaimConfiguration* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("requests", &out->requests));
  RETURN_IF_ERROR(r.Optional("opaque", &out->opaque));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceClaimConfiguration& config) {
  ObjectWriter w;
  w.NonEmpty("requests", config.requests);
  w.Optional("opaque", config.opaque);
  return std::move(w).Finish(config.unknown);
}

Status Read(const Field& f, DeviceClaim* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("requests", &out->requests));
  RETURN_IF_ERROR(r.Optional("constraints", &out->constraints));
  RETURN_IF_ERROR(r.Optional("config", &out->config));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceClaim& claim) {
  ObjectWriter w;
  w.NonEmpty("requests", claim.requests);
  w.NonEmpty("constraints", claim.constraints);
  w.NonEmpty("config", claim.config);
  return std::move(w).Finish(claim.unknown);
}

Status Read(const Field& f, ResourceClaimSpec* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("devices", &out->devices));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ResourceClaimSpec& spec) {
  ObjectWriter w;
  w.Set("devices", spec.devices);
  return std::move(w).Finish(spec.unknown);
}

Status Read(const Field& f, DeviceRequestAllocationResult* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("request", &out->request));
  RETURN_IF_ERROR(r.Required("driver", &out->driver));
  RETURN_IF_ERROR(r.Required("pool", &out->pool));
  RETURN_IF_ERROR(r.Required("device", &out->device));
  RETURN_IF_ERROR(r.Optional("adminAccess", &out->admin_access));
  RETURN_IF_ERROR(r.Optional("tolerations", &out->tolerations));
  RETURN_IF_ERROR(r.Optional("bindingConditions", &out->binding_conditions));
  RETURN_IF_ERROR(r.Optional("bindingFailureConditions", &out->binding_failure_conditions));
  RETURN_IF_ERROR(r.Optional("shareID", &out->share_id));
  RETURN_IF_ERROR(r.Optional("consumedCapacity", &out->consumed_capacity));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceRequestAllocationResult& result) {
  ObjectWriter w;
  w.Set("request", result.request);
  w.Set("driver", result.driver);
  w.Set("pool", result.pool);
  w.Set("device", result.device);
  w.Optional("adminAccess", result.admin_access);
  w.NonEmpty("tolerations", result.tolerations);
  w.NonEmpty("bindingConditions", result.binding_conditions);
  w.NonEmpty("bindingFailureConditions", result.binding_failure_conditions);
  w.Optional("shareID", result.share_id);
  w.NonEmpty("consumedCapacity", result.consumed_capacity);
  return std::move(w).Finish(result.unknown);
}

Status Read(const Field& f, DeviceAllocationConfiguration* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("source", &out->source));
  RETURN_IF_ERROR(r.Optional("requests", &out->requests));
  RETURN_IF_ERROR(r.Optional("opaque", &out->opaque));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceAllocationConfiguration& config) {
  ObjectWriter w;
  w.Set("source", config.source);
  w.NonEmpty("requests", config.requests);
  w.Optional("opaque", config.opaque);
  return std::move(w).Finish(config.unknown);
}

Status Read(const Field& f, DeviceAllocationResult* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("results", &out->results));
  RETURN_IF_ERROR(r.Optional("config", &out->config));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceAllocationResult& result) {
  ObjectWriter w;
  w.NonEmpty("results", result.results);
  w.NonEmpty("config", result.config);
  return std::move(w).Finish(result.unknown);
}

Status Read(const Field& f, AllocationResult* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("devices", &out->devices));
  RETURN_IF_ERROR(ReadOptionalObject(r, "nodeSelector", &out->node_selector));
  RETURN_IF_ERROR(r.Optional("allocationTimestamp", &out->allocation_timestamp));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const AllocationResult& allocation) {
  ObjectWriter w;
  w.Set("devices", allocation.devices);
  w.Optional("nodeSelector", allocation.node_selector);
  w.Optional("allocationTimestamp", allocation.allocation_timestamp);
  return std::move(w).Finish(allocation.unknown);
}

Status Read(const Field& f, ResourceClaimConsumerReference* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("apiGroup", &out->api_group));
  RETURN_IF_ERROR(r.Required("resource", &out->resource));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Required("uid", &out->uid));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ResourceClaimConsumerReference& ref) {
  ObjectWriter w;
  w.NonEmpty("apiGroup", ref.api_group);
  w.Set("resource", ref.resource);
  w.Set("name", ref.name);
  w.Set("uid", ref.uid);
  return std::move(w).Finish(ref.unknown);
}

Status Read(const Field& f, NetworkDeviceData* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("interfaceName", &out->interface_name));
  RETURN_IF_ERROR(r.Optional("ips", &out->ips));
  RETURN_IF_ERROR(r.Optional("hardwareAddress", &out->hardware_address));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const NetworkDeviceData& data) {
  ObjectWriter w;
  w.NonEmpty("interfaceName", data.interface_name);
  w.NonEmpty("ips", data.ips);
  w.NonEmpty("hardwareAddress", data.hardware_address);
  return std::move(w).Finish(data.unknown);
}

Status Read(const Field& f, AllocatedDeviceStatus* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("driver", &out->driver));
  RETURN_IF_ERROR(r.Required("pool", &out->pool));
  RETURN_IF_ERROR(r.Required("device", &out->device));
  RETURN_IF_ERROR(r.Optional("shareID", &out->share_id));
  RETURN_IF_ERROR(r.Optional("conditions", &out->conditions));
  RETURN_IF_ERROR(ReadOptionalObject(r, "data", &out->data));
  RETURN_IF_ERROR(r.Optional("networkData", &out->network_data));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const AllocatedDeviceStatus& status) {
  ObjectWriter w;
  w.Set("driver", status.driver);
  w.Set("pool", status.pool);
  w.Set("device", status.device);
  w.Optional("shareID", status.share_id);
  w.NonEmpty("conditions", status.conditions);
  w.Optional("data", status.data);
  w.Optional("networkData", status.network_data);
  return std::move(w).Finish(status.unknown);
}

Status Read(const Field& f, ResourceClaimStatus* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("allocation", &out->allocation));
  RETURN_IF_ERROR(r.Optional("reservedFor", &out->reserved_for));
  RETURN_IF_ERROR(r.Optional("devices", &out->devices));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ResourceClaimStatus& status) {
  ObjectWriter w;
  w.Optional("allocation", status.allocation);
  w.NonEmpty("reservedFor", status.reserved_for);
  w.NonEmpty("devices", status.devices);
  return std::move(w).Finish(status.unknown);
}

Status Read(const Field& f, ResourceClaim* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, kApiVersionV1, "ResourceClaim"));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Required("spec", &out->spec));
  RETURN_IF_ERROR(r.Optional("status", &out->status));
  out->unknown = r.Unknown();
  return OkStatus();
}

Status Read(const Field& f, ResourceClaimTemplateSpec* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Required("spec", &out->spec));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ResourceClaimTemplateSpec& spec) {
  ObjectWriter w;
  if (spec.metadata != ObjectMeta{}) w.Set("metadata", spec.metadata);
  w.Set("spec", spec.spec);
  return std::move(w).Finish(spec.unknown);
}

Status Read(const Field& f, ResourceClaimTemplate* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, kApiVersionV1, "ResourceClaimTemplate"));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Required("spec", &out->spec));
  out->unknown = r.Unknown();
  return OkStatus();
}

json ToJson(const ResourceClaim& claim) {
  ObjectWriter w;
  w.Set("apiVersion", std::string(kApiVersionV1));
  w.Set("kind", std::string("ResourceClaim"));
  w.Set("metadata", claim.metadata);
  w.Set("spec", claim.spec);
  if (claim.status != ResourceClaimStatus{}) w.Set("status", claim.status);
  return std::move(w).Finish(claim.unknown);
}

json ToJson(const ResourceClaimTemplate& claim_template) {
  ObjectWriter w;
  w.Set("apiVersion", std::string(kApiVersionV1));
  w.Set("kind", std::string("ResourceClaimTemplate"));
  w.Set("metadata", claim_template.metadata);
  w.Set("spec", claim_template.spec);
  return std::move(w).Finish(claim_template.unknown);
}

}  // namespace xpu::api::resource

namespace xpu::api {

template <>
StatusOr<resource::ResourceClaim> FromJson<resource::ResourceClaim>(const nlohmann::json& json) {
  return internal::ReadRoot<resource::ResourceClaim>(json);
}

template <>
StatusOr<resource::ResourceClaimTemplate> FromJson<resource::ResourceClaimTemplate>(
    const nlohmann::json& json) {
  return internal::ReadRoot<resource::ResourceClaimTemplate>(json);
}

}  // namespace xpu::api
