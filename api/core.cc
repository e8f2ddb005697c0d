// Codecs of core/v1 Node and coordination.k8s.io/v1 Lease.
#include "api/core.h"

#include "api/codec/codec.h"
#include "api/internal/meta_codec.h"

namespace xpu::api::core {

using nlohmann::json;

namespace {

constexpr std::string_view kLeaseApiVersion = "coordination.k8s.io/v1";

}  // namespace

template <typename V, codec::FieldsOf<Taint> S>
void VisitFields(V& v, S& self) {
  v.Required("key", self.key);
  v.Optional("value", self.value);
  v.Required("effect", self.effect);
  v.Optional("timeAdded", self.time_added);
}

template <typename V, codec::FieldsOf<NodeSpec> S>
void VisitFields(V& v, S& self) {
  v.Optional("providerID", self.provider_id);
  v.Optional("unschedulable", self.unschedulable);
  v.Optional("taints", self.taints);
}

template <typename V, codec::FieldsOf<NodeSystemInfo> S>
void VisitFields(V& v, S& self) {
  v.Optional("machineID", self.machine_id);
  v.Optional("bootID", self.boot_id);
  v.Optional("kernelVersion", self.kernel_version);
  v.Optional("osImage", self.os_image);
  v.Optional("containerRuntimeVersion", self.container_runtime_version);
  v.Optional("kubeletVersion", self.kubelet_version);
  v.Optional("operatingSystem", self.operating_system);
  v.Optional("architecture", self.architecture);
}

template <typename V, codec::FieldsOf<NodeCondition> S>
void VisitFields(V& v, S& self) {
  v.Required("type", self.type);
  v.Required("status", self.status);
  v.Optional("reason", self.reason);
  v.Optional("message", self.message);
  v.Optional("lastHeartbeatTime", self.last_heartbeat_time);
  v.Optional("lastTransitionTime", self.last_transition_time);
}

template <typename V, codec::FieldsOf<NodeStatus> S>
void VisitFields(V& v, S& self) {
  v.Optional("capacity", self.capacity);
  v.Optional("allocatable", self.allocatable);
  v.Optional("conditions", self.conditions);
  v.Optional("nodeInfo", self.node_info);
}

template <typename V, codec::FieldsOf<Node> S>
void VisitFields(V& v, S& self) {
  v.Optional("spec", self.spec);
  v.Optional("status", self.status);
}

template <typename V, codec::FieldsOf<LeaseSpec> S>
void VisitFields(V& v, S& self) {
  v.Optional("holderIdentity", self.holder_identity);
  v.Optional("leaseDurationSeconds", self.lease_duration_seconds);
  v.Optional("acquireTime", self.acquire_time);
  v.Optional("renewTime", self.renew_time);
  v.Optional("leaseTransitions", self.lease_transitions);
  v.Optional("strategy", self.strategy);
  v.Optional("preferredHolder", self.preferred_holder);
}

template <typename V, codec::FieldsOf<Lease> S>
void VisitFields(V& v, S& self) {
  v.Always("spec", self.spec);
}

std::string Node::ReadyStatus() const {
  for (const NodeCondition& c : status.conditions) {
    if (c.type == "Ready") return c.status;
  }
  return "";
}

json ToJson(const Node& node) { return internal::WriteObject(node, "v1", "Node"); }

json ToJson(const Lease& lease) { return internal::WriteObject(lease, kLeaseApiVersion, "Lease"); }

}  // namespace xpu::api::core

namespace xpu::api {

template <>
StatusOr<core::Node> FromJson<core::Node>(const nlohmann::json& json) {
  return internal::ReadObject<core::Node>(json, "v1", "Node");
}

template <>
StatusOr<core::Lease> FromJson<core::Lease>(const nlohmann::json& json) {
  return internal::ReadObject<core::Lease>(json, core::kLeaseApiVersion, "Lease");
}

}  // namespace xpu::api
