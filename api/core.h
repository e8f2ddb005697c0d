// The core/v1 Node (the parts the driver uses) and coordination.k8s.io/v1 Lease, with the same
// codec conventions as api/meta.h: FromJson<T> names the JSON path of the first problem, ToJson
// writes upstream member names, and members this code does not know are kept in `unknown` and
// written back (null while nothing is unknown). Timestamps (Time and MicroTime) stay in their wire
// spelling. Value types, thread-compatible.
#ifndef XPU_API_CORE_H_
#define XPU_API_CORE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/meta.h"
#include "api/spec_status_object.h"
#include "base/status.h"

namespace xpu::api::core {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
  std::optional<std::string> time_added;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const Taint&, const Taint&) = default;
};

struct NodeSpec {
  std::string provider_id;  // "providerID"
  bool unschedulable = false;
  std::vector<Taint> taints;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

struct NodeSystemInfo {
  std::string machine_id;  // "machineID"
  std::string boot_id;     // "bootID"
  std::string kernel_version;
  std::string os_image;
  std::string container_runtime_version;
  std::string kubelet_version;
  std::string operating_system;
  std::string architecture;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const NodeSystemInfo&, const NodeSystemInfo&) = default;
};

struct NodeCondition {
  std::string type;    // Ready, MemoryPressure, ...
  std::string status;  // True, False, Unknown
  std::string reason;
  std::string message;
  std::string last_heartbeat_time;
  std::string last_transition_time;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const NodeCondition&, const NodeCondition&) = default;
};

struct NodeStatus {
  std::map<std::string, std::string> capacity;     // quantities as sent
  std::map<std::string, std::string> allocatable;  // quantities as sent
  std::vector<NodeCondition> conditions;
  NodeSystemInfo node_info;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const NodeStatus&, const NodeStatus&) = default;
};

// Equality is the envelope's (SpecStatusObject's operator==).
struct Node : SpecStatusObject<NodeSpec, NodeStatus> {
  // The Ready condition's status ("True", "False", "Unknown"), or "" when absent.
  std::string ReadyStatus() const;
};

struct LeaseSpec {
  std::optional<std::string> holder_identity;
  std::optional<int64_t> lease_duration_seconds;
  std::optional<std::string> acquire_time;  // MicroTime, RFC 3339 with microseconds
  std::optional<std::string> renew_time;
  std::optional<int64_t> lease_transitions;
  std::optional<std::string> strategy;          // coordinated leader election (1.33+)
  std::optional<std::string> preferred_holder;  // coordinated leader election (1.33+)
  nlohmann::json unknown = nullptr;
  friend bool operator==(const LeaseSpec&, const LeaseSpec&) = default;
};

struct Lease {
  ObjectMeta metadata;
  LeaseSpec spec;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const Lease&, const Lease&) = default;
};

nlohmann::json ToJson(const Node& node);
nlohmann::json ToJson(const Lease& lease);

}  // namespace xpu::api::core

namespace xpu::api {

template <>
StatusOr<core::Node> FromJson<core::Node>(const nlohmann::json& json);
template <>
StatusOr<core::Lease> FromJson<core::Lease>(const nlohmann::json& json);

}  // namespace xpu::api

#endif  // XPU_API_CORE_H_
