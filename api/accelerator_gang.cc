#include "api/accelerator_gang.h"

#include <map>
#include <set>
#include <utility>

#include "api/codec/codec.h"
#include "api/internal/meta_codec.h"
#include "api/node_inventory.h"
#include "api/openapi_schema.h"
#include "api/validation.h"
#include "topology/model.h"

namespace xpu::api {

namespace {

using internal::ElementPath;
using nlohmann::json;

}  // namespace

const std::vector<std::string>& GangTierNames() {
  static const std::vector<std::string> names = {"scaleUpDomain", "superpod", "leaf", "spine",
                                                 std::string(kGangTierAny)};
  return names;
}

const std::string& GangDeviceClass(const AcceleratorGangSpec& spec) {
  return spec.capability_class.empty() ? spec.device_class_name : spec.capability_class;
}

// ---- Field lists (codec and schema) ----

template <typename V, codec::FieldsOf<AcceleratorGangSpec> S>
void VisitFields(V& v, S& self) {
  v.Required("nodes", self.nodes, "number of nodes", codec::Minimum(1), codec::Maximum(65536));
  v.Required("devicesPerNode", self.devices_per_node, "devices on each node", codec::Minimum(1),
             codec::Maximum(topology::kMaxDevices));
  v.Optional("capabilityClass", self.capability_class,
             "capability class, the name of the DeviceClass generated from it (or deviceClassName)",
             codec::MaxLength(kMaxDnsSubdomainLength));
  v.Optional("deviceClassName", self.device_class_name,
             "a DeviceClass, instead of a capability class",
             codec::MaxLength(kMaxDnsSubdomainLength));
  v.Optional("maxTier", self.max_tier,
             "highest fabric tier the gang may span: scaleUpDomain (or clique), superpod, leaf, "
             "spine, any; absent: any",
             codec::Enum({"scaleUpDomain", "clique", "superpod", "leaf", "spine", "any"}));
  v.Optional("preferredTier", self.preferred_tier,
             "a tier to try first; placement may still go up to maxTier",
             codec::Enum({"scaleUpDomain", "clique", "superpod", "leaf", "spine", "any"}));
  v.Optional("onNodeFailure", self.on_node_failure,
             "when a member node fails: replace (default) places the gang again without it, fail "
             "fails it",
             codec::Enum({"replace", "fail"}));
  v.Optional("nodeSelector", self.node_selector, "only nodes with all these labels are candidates",
             codec::MaxProperties(64), codec::Items(codec::MaxLength(kMaxLabelValueLength)));
}

template <typename V, codec::FieldsOf<GangNode> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name, "node name", codec::MaxLength(kMaxDnsSubdomainLength));
  v.Required("rank", self.rank, "node rank, in fabric order", codec::Minimum(0));
  v.Required("devices", self.devices, "the devices of the gang on this node",
             codec::MaxItems(topology::kMaxDevices), codec::ListSet());
  v.Optional("address", self.address, "the node's InternalIP", codec::MaxLength(45));
}

template <typename V, codec::FieldsOf<GangRank> S>
void VisitFields(V& v, S& self) {
  v.Required("rank", self.rank, "global rank", codec::Minimum(0));
  v.Required("node", self.node, "node name", codec::MaxLength(kMaxDnsSubdomainLength));
  v.Required("device", self.device, "device name on that node",
             codec::MaxLength(kMaxDnsLabelLength));
  v.Optional("ipAddress", self.ip_address, "the device's collective-network address",
             codec::MaxLength(45));
  v.Optional("localRank", self.local_rank, "the device's rank on its node", codec::Minimum(0));
  v.Optional("superPodId", self.super_pod_id, "the Ascend super-pod of the device",
             codec::MaxLength(kMaxDnsSubdomainLength));
}

template <typename V, codec::FieldsOf<AcceleratorGangStatus> S>
void VisitFields(V& v, S& self) {
  v.Optional("phase", self.phase, "Pending until placed; Failed when no placement fits",
             codec::Enum({"Pending", "Placed", "Failed"}));
  v.Optional("nodes", self.nodes, "the chosen nodes", codec::ListMap({"name"}));
  v.Optional("tier", self.tier, "fabric tier holding the gang",
             codec::MaxLength(kMaxDnsLabelLength));
  v.Optional("domain", self.domain, "fabric domain holding the gang",
             codec::MaxLength(kMaxDnsSubdomainLength));
  v.Optional("rankTable", self.rank_table, "one entry per device, in rank order",
             codec::ListMap({"rank"}));
  v.Optional("resourceClaimName", self.resource_claim_name,
             "the shared ResourceClaim the gang's pods reference",
             codec::MaxLength(kMaxDnsSubdomainLength));
  internal::VisitStatusConditions(v, self, "gang");
}

template <typename V, codec::FieldsOf<AcceleratorGang> S>
void VisitFields(V& v, S& self) {
  v.Required("spec", self.spec, "what the gang asks for");
  v.Optional("status", self.status, "where the controller placed the gang");
}

// ---- Codec ----

template <>
StatusOr<AcceleratorGang> FromJson<AcceleratorGang>(const json& json) {
  return internal::ReadObject<AcceleratorGang>(json, kXpuApiVersion, kAcceleratorGangKind);
}

json ToJson(const AcceleratorGang& gang) {
  return internal::WriteObject(gang, kXpuApiVersion, kAcceleratorGangKind);
}

json AcceleratorGangSchema() {
  return internal::ObjectSchema<AcceleratorGang>(
      "AcceleratorGang: nodes x devicesPerNode devices of one capability class, placed together "
      "in the lowest fabric tier that fits.");
}

// ---- Validation ----

namespace {

Status ValidateGangStatus(const AcceleratorGang& gang) {
  const AcceleratorGangStatus& s = gang.status;
  // node name -> its devices
  std::map<std::string, std::set<std::string>> nodes;
  std::set<int64_t> ranks;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const GangNode& n = s.nodes[i];
    const std::string path = ElementPath("status.nodes", i);
    RETURN_IF_ERROR(ValidateNodeName(n.name, path + ".name"));
    if (n.rank >= static_cast<int64_t>(s.nodes.size()) || !ranks.insert(n.rank).second) {
      return InvalidArgumentError(path + ".rank: " + std::to_string(n.rank) +
                                  " is out of range or taken; node ranks are 0.." +
                                  std::to_string(s.nodes.size() - 1) + ", each once");
    }
    std::set<std::string>& devices = nodes[n.name];
    for (size_t j = 0; j < n.devices.size(); ++j) {
      RETURN_IF_ERROR(ValidateDnsLabel(n.devices[j], ElementPath(path + ".devices", j)));
      devices.insert(n.devices[j]);
    }
    if (s.phase == "Placed" &&
        static_cast<int64_t>(n.devices.size()) != gang.spec.devices_per_node) {
      return InvalidArgumentError(path + ".devices: expected " +
                                  std::to_string(gang.spec.devices_per_node) + " devices, got " +
                                  std::to_string(n.devices.size()));
    }
  }
  if (s.phase == "Placed" && static_cast<int64_t>(s.nodes.size()) != gang.spec.nodes) {
    return InvalidArgumentError("status.nodes: expected " + std::to_string(gang.spec.nodes) +
                                " nodes when Placed, got " + std::to_string(s.nodes.size()));
  }
  if (!s.resource_claim_name.empty()) {
    RETURN_IF_ERROR(ValidateDnsSubdomain(s.resource_claim_name, "status.resourceClaimName"));
  }
  ranks.clear();
  std::set<std::pair<std::string, std::string>> used;
  for (size_t i = 0; i < s.rank_table.size(); ++i) {
    const GangRank& r = s.rank_table[i];
    const std::string path = ElementPath("status.rankTable", i);
    if (r.rank >= static_cast<int64_t>(s.rank_table.size()) || !ranks.insert(r.rank).second) {
      return InvalidArgumentError(path + ".rank: " + std::to_string(r.rank) +
                                  " is out of range or taken; ranks are 0.." +
                                  std::to_string(s.rank_table.size() - 1) + ", each once");
    }
    auto node = nodes.find(r.node);
    if (node == nodes.end()) {
      return InvalidArgumentError(path + ".node: \"" + r.node + "\" is not in status.nodes");
    }
    if (node->second.count(r.device) == 0) {
      return InvalidArgumentError(path + ".device: \"" + r.device + "\" is not a device of " +
                                  r.node + " in status.nodes");
    }
    if (!used.insert({r.node, r.device}).second) {
      return InvalidArgumentError(path + ": device " + r.node + "/" + r.device + " has two ranks");
    }
  }
  return internal::CheckConditionTypes(s.conditions, "status.conditions");
}

}  // namespace

Status ValidateAcceleratorGang(const AcceleratorGang& gang) {
  static const json kSchema = AcceleratorGangSchema();
  RETURN_IF_ERROR(ValidateAgainstSchema(ToJson(gang), kSchema));
  if (!gang.metadata.name.empty() || gang.metadata.generate_name.empty()) {
    RETURN_IF_ERROR(ValidateDnsLabel(gang.metadata.name, "metadata.name"));
    if (gang.metadata.name.size() > static_cast<size_t>(kMaxGangNameLength)) {
      return InvalidArgumentError("metadata.name: must be at most " +
                                  std::to_string(kMaxGangNameLength) +
                                  " bytes, so that the device gang-<name> is a DNS label");
    }
  }
  if (!gang.metadata.namespace_name.empty()) {
    RETURN_IF_ERROR(ValidateDnsLabel(gang.metadata.namespace_name, "metadata.namespace"));
  }
  const AcceleratorGangSpec& spec = gang.spec;
  if (spec.capability_class.empty() == spec.device_class_name.empty()) {
    return InvalidArgumentError(
        "spec: exactly one of capabilityClass and deviceClassName must be set");
  }
  if (!spec.capability_class.empty()) {
    RETURN_IF_ERROR(ValidateDnsSubdomain(spec.capability_class, "spec.capabilityClass"));
  } else {
    RETURN_IF_ERROR(ValidateDnsSubdomain(spec.device_class_name, "spec.deviceClassName"));
  }
  for (const auto& [key, value] : spec.node_selector) {
    const std::string path = "spec.nodeSelector[\"" + key + "\"]";
    RETURN_IF_ERROR(ValidateLabelKey(key, path));
    RETURN_IF_ERROR(ValidateLabelValue(value, path));
  }
  return ValidateGangStatus(gang);
}

}  // namespace xpu::api
