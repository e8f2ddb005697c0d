// AcceleratorGang (xpu.dra.dev/v1alpha1, namespaced): a request for `nodes` nodes with
// `devicesPerNode` devices each of one capability class, placed together in the lowest fabric
// tier that fits (docs/gangs.md). Users write the spec; the controller places the
// gang with topology::PlaceGang and writes the status: the chosen nodes with their node ranks and
// devices, the tier and domain that hold them, and the rank table (one entry per device, global
// rank order) handed to the pods. Fields are described in docs/node-inventory.md; the CRD is
// generated from the codec's field list (api/crds.h).
//
// Codec as for NodeInventory (api/node_inventory.h): errors name the JSON path, unknown members
// are kept in `unknown`, enumerated values stay strings checked by ValidateAcceleratorGang. Value
// types, thread-compatible; no exception escapes.
#ifndef XPU_API_ACCELERATOR_GANG_H_
#define XPU_API_ACCELERATOR_GANG_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/meta.h"
#include "api/spec_status_object.h"
#include "base/status.h"

namespace xpu::api {

inline constexpr std::string_view kAcceleratorGangKind = "AcceleratorGang";
// The controller publishes the gang as a device named "gang-<name>" (a DNS label), so a gang's
// name is a DNS label of at most 63 - 5 bytes.
inline constexpr int kMaxGangNameLength = 58;
// The pool of gang devices ("gang-<name>", network-attached: their slices select the member nodes).
inline constexpr std::string_view kGangPoolName = "gangs";
inline constexpr std::string_view kGangDevicePrefix = "gang-";

// The fabric tiers a gang may be limited to, lowest first as a default order: a scale-up domain
// (an NVL72 clique, an Ascend super-pod over HCCS; "clique" is another name for it), a super-pod,
// a leaf switch, a spine, anything. The order among the tiers a cluster labels is taken from the
// labels themselves (controller/gang_plan.h): a tier whose domains hold another's sits above it.
inline constexpr std::string_view kGangTierAny = "any";
const std::vector<std::string>& GangTierNames();

struct AcceleratorGangSpec {
  int64_t nodes = 0;             // >= 1
  int64_t devices_per_node = 0;  // 1..64
  // Exactly one of the two: the capability class (the DeviceClass generated from it has its
  // name) or any DeviceClass.
  std::string capability_class;
  std::string device_class_name;
  // The highest tier the gang may span (GangTierNames()). Empty: any tier.
  std::string max_tier;
  // A lower tier to try first; placement still goes up to max_tier when it does not fit.
  std::string preferred_tier;
  // What happens when a member node fails: "replace" (default: placed again, without it) or
  // "fail" (phase Failed).
  std::string on_node_failure;
  // Only nodes with all these labels are candidates.
  std::map<std::string, std::string> node_selector;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const AcceleratorGangSpec&, const AcceleratorGangSpec&) = default;
};

struct GangNode {
  std::string name;  // node name
  int64_t rank = 0;  // node rank, 0..nodes-1, in fabric order
  std::vector<std::string> devices;
  std::string address = {};  // the Node's InternalIP, where it has one (HCCL server_id, NCCL hosts)
  nlohmann::json unknown = nullptr;
  friend bool operator==(const GangNode&, const GangNode&) = default;
};

// One device of the gang in the collective's rank order (HCCL rank table / NCCL ranks).
struct GangRank {
  int64_t rank = 0;  // global rank, 0..nodes*devicesPerNode-1
  std::string node;
  std::string device;
  std::string ip_address;  // the device's collective-network address, where the vendor needs it
  int64_t local_rank = 0;  // the device's rank on its node
  std::string super_pod_id = {};  // Ascend super-pod (HCCL rank table 1.2), where known
  nlohmann::json unknown = nullptr;
  friend bool operator==(const GangRank&, const GangRank&) = default;
};

struct AcceleratorGangStatus {
  std::string phase;  // Pending, Placed, Failed
  std::vector<GangNode> nodes;
  std::string tier;    // name of the fabric tier holding the gang
  std::string domain;  // the fabric domain holding the gang
  std::vector<GangRank> rank_table;
  std::string resource_claim_name;  // the shared ResourceClaim the gang's pods reference
  std::vector<Condition> conditions;
  std::optional<int64_t> observed_generation;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const AcceleratorGangStatus&, const AcceleratorGangStatus&) = default;
};

using AcceleratorGang = SpecStatusObject<AcceleratorGangSpec, AcceleratorGangStatus>;

template <>
StatusOr<AcceleratorGang> FromJson<AcceleratorGang>(const nlohmann::json& json);
// With apiVersion and kind.
nlohmann::json ToJson(const AcceleratorGang& gang);

// The OpenAPI v3 structural schema of the object, generated from the codec's field list.
nlohmann::json AcceleratorGangSchema();

// The DeviceClass the gang's devices come from: capabilityClass, else deviceClassName.
const std::string& GangDeviceClass(const AcceleratorGangSpec& spec);

// Checks the object against its schema, then: the name is a DNS label of at most 58 bytes,
// exactly one of capabilityClass and deviceClassName, each a DNS subdomain, node selector labels
// valid; in status, node names valid and unique, node ranks 0..n-1 each once, each node's devices
// unique DNS labels; when Placed, exactly spec.nodes nodes of spec.devicesPerNode devices; rank
// table ranks 0..N-1 each once, naming a node of status.nodes and one of its devices; condition
// types unique. Errors name the field path.
Status ValidateAcceleratorGang(const AcceleratorGang& gang);

}  // namespace xpu::api

#endif  // XPU_API_ACCELERATOR_GANG_H_
