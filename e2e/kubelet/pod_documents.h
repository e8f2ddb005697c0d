// The pure part of xpu-node-agent's pod handling (node_agent.h): the claim names of a pod, claim
// readiness, the prepare record kept on disk, unprepare reference counting, and the pod status and
// Event documents the agent writes. Free functions over JSON and API structs, tested without a
// server (node_agent_test.cc).
#ifndef XPU_E2E_KUBELET_POD_DOCUMENTS_H_
#define XPU_E2E_KUBELET_POD_DOCUMENTS_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/resource.h"
#include "base/status.h"
#include "e2e/kubelet/kubelet_stand_in.h"

namespace xpu::e2e {

// JSON access that never throws, for documents of any shape: the member `key` of an object
// (nullptr when absent or when `object` is not an object) ...
const nlohmann::json* Member(const nlohmann::json& object, const char* key);
// ... the string member `key` ("" when absent or of another type) ...
std::string StringAt(const nlohmann::json& object, const char* key);
// ... and an object's metadata (an empty object when absent).
const nlohmann::json& Metadata(const nlohmann::json& object);

// One spec.resourceClaims[] entry of a pod and the ResourceClaim it stands for.
struct PodClaimRef {
  std::string entry;  // spec.resourceClaims[].name
  std::string claim;  // the ResourceClaim's name, in the pod's namespace
  friend bool operator==(const PodClaimRef&, const PodClaimRef&) = default;
};

// The claims a pod needs, in spec order: resourceClaimName, or for resourceClaimTemplateName the
// name in status.resourceClaimStatuses[] with the same name. A status entry without
// resourceClaimName means no claim was needed, and the entry is left out (as upstream).
// kUnavailable while a template's claim is not in the status yet (retry); kInvalidArgument for a
// malformed pod: an entry with neither or both names, duplicate entry names, a status entry
// naming no spec entry.
StatusOr<std::vector<PodClaimRef>> PodClaims(const nlohmann::json& pod);

// OK when `claim` is allocated and reserved for the pod `pod_uid`; kUnavailable with the reason
// otherwise (the kubelet retries).
Status ClaimReadyFor(const api::resource::ResourceClaim& claim, const std::string& pod_uid);
// The drivers of the claim's allocation results, sorted, without duplicates.
std::vector<std::string> ClaimDrivers(const api::resource::ResourceClaim& claim);

// What was prepared for one claim of a pod.
struct ClaimRecord {
  std::string name;
  std::string uid;
  std::vector<std::string> drivers;    // whose plugins prepared it (to unprepare after a restart)
  std::vector<KubeletDevice> devices;  // share_id is not recorded
  friend bool operator==(const ClaimRecord&, const ClaimRecord&) = default;
};

// The record of a prepared pod, <state-dir>/pods/<namespace>_<name>.json:
//   {"pod", "namespace", "uid", "claims": [{"name", "uid", "drivers",
//    "devices": [{"requestNames", "poolName", "deviceName", "cdiDeviceIds"}]}]}
// Read and written by the codec of api/codec (field lists in pod_documents.cc); an unknown
// member is an error, as in the project's other files.
struct PodRecord {
  std::string pod;
  std::string ns;
  std::string uid;
  std::vector<ClaimRecord> claims;
  friend bool operator==(const PodRecord&, const PodRecord&) = default;

  std::string Key() const { return ns + "/" + pod; }
};

nlohmann::json ToJson(const PodRecord& record);
// kInvalidArgument naming the JSON path of the first bad member.
StatusOr<PodRecord> PodRecordFromJson(const nlohmann::json& object);
// <state_dir>/pods/<namespace>_<name>.json (namespaces and names cannot hold '_').
std::string PodRecordPath(const std::string& state_dir, const std::string& ns,
                          const std::string& name);

// The claims of `leaving` (by uid) that no pod in `others` uses, in `leaving`'s order. `others`
// may include `leaving` itself (matched by pod uid and skipped).
std::vector<ClaimRecord> ClaimsToUnprepare(const PodRecord& leaving,
                                           const std::vector<PodRecord>& others);

// The pod's status once its resources are prepared, from its current status (qosClass,
// resourceClaimStatuses and other members are kept): phase Running, conditions
// PodReadyToStartContainers, Initialized, Ready, ContainersReady and PodScheduled True (other
// conditions kept), hostIP/hostIPs, startTime, a running, ready containerStatuses entry per
// container (init containers: completed, or running when restartPolicy is Always). Times already
// set are kept. Tolerates any JSON: missing or mistyped members are skipped.
nlohmann::json RunningPodStatus(const nlohmann::json& pod,
                                std::chrono::system_clock::time_point now,
                                const std::string& host_ip);

// A core/v1 Warning Event about a pod (namespace, name and uid from `pod`).
nlohmann::json PodEvent(const nlohmann::json& pod, const std::string& reason,
                        const std::string& message, const std::string& node_name,
                        std::chrono::system_clock::time_point now);

}  // namespace xpu::e2e

#endif  // XPU_E2E_KUBELET_POD_DOCUMENTS_H_
