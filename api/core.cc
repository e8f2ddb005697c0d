// Codecs of core/v1 Node and coordination.k8s.io/v1 Lease.
#include "api/core.h"

#include <utility>

#include "api/internal/codec.h"
#include "api/internal/meta_codec.h"

namespace xpu::api::core {

using internal::Field;
using internal::ObjectReader;
using internal::ObjectWriter;
using nlohmann::json;

Status Read(const Field& f, Taint* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("key", &out->key));
  RETURN_IF_ERROR(r.Optional("value", &out->value));
  RETURN_IF_ERROR(r.Required("effect", &out->effect));
  RETURN_IF_ERROR(r.Optional("timeAdded", &out->time_added));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const Taint& taint) {
  ObjectWriter w;
  w.Set("key", taint.key);
  w.NonEmpty("value", taint.value);
  w.Set("effect", taint.effect);
  w.Optional("timeAdded", taint.time_added);
  return std::move(w).Finish(taint.unknown);
}

Status Read(const Field& f, NodeSpec* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("providerID", &out->provider_id));
  RETURN_IF_ERROR(r.Optional("unschedulable", &out->unschedulable));
  RETURN_IF_ERROR(r.Optional("taints", &out->taints));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const NodeSpec& spec) {
  ObjectWriter w;
  w.NonEmpty("providerID", spec.provider_id);
  if (spec.unschedulable) w.Set("unschedulable", true);
  w.NonEmpty("taints", spec.taints);
  return std::move(w).Finish(spec.unknown);
}

Status Read(const Field& f, NodeSystemInfo* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("machineID", &out->machine_id));
  RETURN_IF_ERROR(r.Optional("bootID", &out->boot_id));
  RETURN_IF_ERROR(r.Optional("kernelVersion", &out->kernel_version));
  RETURN_IF_ERROR(r.Optional("osImage", &out->os_image));
  RETURN_IF_ERROR(r.Optional("containerRuntimeVersion", &out->container_runtime_version));
  RETURN_IF_ERROR(r.Optional("kubeletVersion", &out->kubelet_version));
  RETURN_IF_ERROR(r.Optional("operatingSystem", &out->operating_system));
  RETURN_IF_ERROR(r.Optional("architecture", &out->architecture));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const NodeSystemInfo& info) {
  ObjectWriter w;
  w.NonEmpty("machineID", info.machine_id);
  w.NonEmpty("bootID", info.boot_id);
  w.NonEmpty("kernelVersion", info.kernel_version);
  w.NonEmpty("osImage", info.os_image);
  w.NonEmpty("containerRuntimeVersion", info.container_runtime_version);
  w.NonEmpty("kubeletVersion", info.kubelet_version);
  w.NonEmpty("operatingSystem", info.operating_system);
  w.NonEmpty("architecture", info.architecture);
  return std::move(w).Finish(info.unknown);
}

Status Read(const Field& f, NodeCondition* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("type", &out->type));
  RETURN_IF_ERROR(r.Required("status", &out->status));
  RETURN_IF_ERROR(r.Optional("reason", &out->reason));
  RETURN_IF_ERROR(r.Optional("message", &out->message));
  RETURN_IF_ERROR(r.Optional("lastHeartbeatTime", &out->last_heartbeat_time));
  RETURN_IF_ERROR(r.Optional("lastTransitionTime", &out->last_transition_time));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const NodeCondition& c) {
  ObjectWriter w;
  w.Set("type", c.type);
  w.Set("status", c.status);
  w.NonEmpty("reason", c.reason);
  w.NonEmpty("message", c.message);
  w.NonEmpty("lastHeartbeatTime", c.last_heartbeat_time);
  w.NonEmpty("lastTransitionTime", c.last_transition_time);
  return std::move(w).Finish(c.unknown);
}

Status Read(const Field& f, NodeStatus* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("capacity", &out->capacity));
  RETURN_IF_ERROR(r.Optional("allocatable", &out->allocatable));
  RETURN_IF_ERROR(r.Optional("conditions", &out->conditions));
  RETURN_IF_ERROR(r.Optional("nodeInfo", &out->node_info));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const NodeStatus& status) {
  ObjectWriter w;
  w.NonEmpty("capacity", status.capacity);
  w.NonEmpty("allocatable", status.allocatable);
  w.NonEmpty("conditions", status.conditions);
  if (status.node_info != NodeSystemInfo{}) w.Set("nodeInfo", status.node_info);
  return std::move(w).Finish(status.unknown);
}

Status Read(const Field& f, Node* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, "v1", "Node"));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Optional("spec", &out->spec));
  RETURN_IF_ERROR(r.Optional("status", &out->status));
  out->unknown = r.Unknown();
  return OkStatus();
}

Status Read(const Field& f, LeaseSpec* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("holderIdentity", &out->holder_identity));
  RETURN_IF_ERROR(r.Optional("leaseDurationSeconds", &out->lease_duration_seconds));
  RETURN_IF_ERROR(r.Optional("acquireTime", &out->acquire_time));
  RETURN_IF_ERROR(r.Optional("renewTime", &out->renew_time));
  RETURN_IF_ERROR(r.Optional("leaseTransitions", &out->lease_transitions));
  RETURN_IF_ERROR(r.Optional("strategy", &out->strategy));
  RETURN_IF_ERROR(r.Optional("preferredHolder", &out->preferred_holder));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const LeaseSpec& spec) {
  ObjectWriter w;
  w.Optional("holderIdentity", spec.holder_identity);
  w.Optional("leaseDurationSeconds", spec.lease_duration_seconds);
  w.Optional("acquireTime", spec.acquire_time);
  w.Optional("renewTime", spec.renew_time);
  w.Optional("leaseTransitions", spec.lease_transitions);
  w.Optional("strategy", spec.strategy);
  w.Optional("preferredHolder", spec.preferred_holder);
  return std::move(w).Finish(spec.unknown);
}

Status Read(const Field& f, Lease* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, "coordination.k8s.io/v1", "Lease"));
  RETURN_IF_ERROR(r.Optional("metadata", &out->metadata));
  RETURN_IF_ERROR(r.Optional("spec", &out->spec));
  out->unknown = r.Unknown();
  return OkStatus();
}

std::string Node::ReadyStatus() const {
  for (const NodeCondition& c : status.conditions) {
    if (c.type == "Ready") return c.status;
  }
  return "";
}

json ToJson(const Node& node) {
  ObjectWriter w;
  w.Set("apiVersion", std::string("v1"));
  w.Set("kind", std::string("Node"));
  w.Set("metadata", node.metadata);
  if (node.spec != NodeSpec{}) w.Set("spec", node.spec);
  if (node.status != NodeStatus{}) w.Set("status", node.status);
  return std::move(w).Finish(node.unknown);
}

json ToJson(const Lease& lease) {
  ObjectWriter w;
  w.Set("apiVersion", std::string("coordination.k8s.io/v1"));
  w.Set("kind", std::string("Lease"));
  w.Set("metadata", lease.metadata);
  w.Set("spec", lease.spec);
  return std::move(w).Finish(lease.unknown);
}

}  // namespace xpu::api::core

namespace xpu::api {

template <>
StatusOr<core::Node> FromJson<core::Node>(const nlohmann::json& json) {
  return internal::ReadRoot<core::Node>(json);
}

template <>
StatusOr<core::Lease> FromJson<core::Lease>(const nlohmann::json& json) {
  return internal::ReadRoot<core::Lease>(json);
}

}  // namespace xpu::api
