#include "api/node_inventory.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "api/codec/codec.h"
#include "api/internal/meta_codec.h"
#include "api/openapi_schema.h"
#include "api/quantity.h"
#include "api/validation.h"
#include "topology/solver.h"

namespace xpu::api {

namespace {

using internal::ElementPath;
using nlohmann::json;

// Patterns shared by the schema and the messages.
constexpr int64_t kMaxInt = 2147483647;
constexpr std::string_view kPciAddressPattern = R"(^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$)";
constexpr std::string_view kPcieRootPattern = "^pci[0-9a-f]{4}:[0-9a-f]{2}$";
constexpr std::string_view kQuantityPattern =
    R"(^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$)";

template <typename E>
std::vector<std::string> EnumNames(std::string_view (*name)(E), int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.emplace_back(name(static_cast<E>(i)));
  return names;
}

std::vector<std::string> LinkTypeNames() {
  return EnumNames(topology::LinkTypeName, topology::kLinkTypeCount);
}
std::vector<std::string> GroupKindNames() {
  return EnumNames(topology::GroupKindName, topology::kGroupKindCount);
}
std::vector<std::string> RuleSetNames() {
  return EnumNames(topology::RuleSetKindName, topology::kRuleSetKindCount);
}

struct VocabularyEntry {
  std::string_view name;
  std::string_view type;
};

// docs/architecture.md "Attribute vocabulary"; memory is a capacity, not an attribute.
constexpr std::array<VocabularyEntry, 23> kVocabulary = {{
    {"vendor", "string"},
    {"family", "string"},
    {"model", "string"},
    {"index", "int"},
    {"uuid", "string"},
    {"driverVersion", "version"},
    {"firmwareVersion", "version"},
    {"toolkitVersion", "version"},
    {"bf16", "bool"},
    {"fp16", "bool"},
    {"fp8", "bool"},
    {"int8", "bool"},
    {"numaNode", "int"},
    {"resource.kubernetes.io/pcieRoot", "string"},
    {"resource.kubernetes.io/pciBusID", "string"},
    {"linkType", "string"},
    {"scaleUpDomain", "string"},
    {"module", "string"},
    {"fabricDomain", "string"},
    {"leaf", "string"},
    {"spine", "string"},
    {"gang", "string"},    // the uid of the AcceleratorGang holding the device's node
    {"gangNodes", "int"},  // on a gang device only: the gang's node count
}};

}  // namespace

// ---- Field lists (codec and schema) ----

template <typename V, codec::FieldsOf<InventoryAttribute> S>
void VisitFields(V& v, S& self) {
  v.Optional("int", self.int_value, "integer value");
  v.Optional("bool", self.bool_value, "boolean value");
  v.Optional("string", self.string_value, "string value, at most 64 bytes", codec::MaxLength(64));
  v.Optional("version", self.version, "semantic version 2.0.0", codec::MaxLength(64));
}

template <typename V, codec::FieldsOf<PartitionProfile> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name, "the vendor's profile name: 1g.18gb, vir02, 1/4",
             codec::MaxLength(32));
  v.Optional("memory", self.memory, "the partition's memory, a quantity",
             codec::Pattern(kQuantityPattern));
  v.Optional("counters", self.counters, "counter -> units taken of the parent's capacity",
             codec::MaxProperties(8));
  v.Optional("slots", self.slots, "MIG: the memory slots one placement spans", codec::Minimum(0),
             codec::Maximum(64));
  v.Optional("placements", self.placements, "MIG: the legal first slots", codec::MaxItems(64),
             codec::ListAtomic());
  v.Optional("maxInstances", self.max_instances, "without placements: at most this many at once",
             codec::Minimum(0), codec::Maximum(64));
}

template <typename V, codec::FieldsOf<InventoryPartition> S>
void VisitFields(V& v, S& self) {
  v.Required("profile", self.profile, "the profile's name", codec::MaxLength(32));
  v.Optional("placement", self.placement, "MIG: its first slot", codec::Minimum(0),
             codec::Maximum(63));
  v.Optional("instance", self.instance, "without placements: the instance number",
             codec::Minimum(0), codec::Maximum(63));
  v.Optional("uuid", self.uuid, "the partition's id: MIG-..., the vNPU's", codec::MaxLength(64));
  v.Optional("id", self.id, "the vendor's id: GPU instance id, vdevice id", codec::Minimum(0),
             codec::Maximum(kMaxInt));
}

template <typename V, codec::FieldsOf<InventoryPartitioning> S>
void VisitFields(V& v, S& self) {
  v.Required("kind", self.kind, "how the device splits", codec::Enum(PartitionKinds()));
  v.Optional("enabled", self.enabled,
             "partitions usable now (MIG mode on); false: the device is served whole");
  v.Optional("slots", self.slots, "MIG: the device's memory slots", codec::Minimum(0),
             codec::Maximum(32));
  v.Optional("capacity", self.capacity, "counter -> the device's total units",
             codec::MaxProperties(8));
  v.Optional("profiles", self.profiles, "the partition profiles the device can host",
             codec::MaxItems(32));
  v.Optional("partitions", self.partitions, "the partitions that exist now", codec::MaxItems(64));
  v.Optional("fallback", self.fallback,
             "where the server cannot carry partitions: whole (the device, the default), "
             "existing (the partitions that exist, as plain devices) or layout (as existing, "
             "after the plugin made the configured layout at start)",
             codec::Enum(PartitionFallbacks()));
  v.Optional("layout", self.layout,
             "fallback layout: the partitions made at start on this device, profile*count, "
             "comma-separated",
             codec::MaxLength(256));
}

template <typename V, codec::FieldsOf<InventoryDevice> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name, "device name, <kind>-<index>", codec::MaxLength(63),
             codec::Pattern(kDnsLabelPattern));
  v.Optional("vendor", self.vendor, "vendor, e.g. huawei, nvidia", codec::MaxLength(64));
  v.Optional("model", self.model, "model, e.g. Ascend910B3, H200", codec::MaxLength(64));
  v.Required("kind", self.kind, "device kind: npu, gpu, dcu, mlu, gcu, xpu, ...",
             codec::MaxLength(63), codec::Pattern(kDnsLabelPattern));
  v.Required("index", self.index, "the vendor's physical index", codec::Minimum(0),
             codec::Maximum(kMaxInt));
  v.Optional("uuid", self.uuid, "the vendor's device id", codec::MaxLength(64));
  v.Optional("pciAddress", self.pci_address, "PCI address (BDF) of the device",
             codec::Pattern(kPciAddressPattern));
  v.Optional("pcieRoot", self.pcie_root, "PCIe root complex, as resource.kubernetes.io/pcieRoot",
             codec::Pattern(kPcieRootPattern));
  v.Optional("pciePath", self.pcie_path,
             "PCIe path: the root complex, then each bridge's BDF and the device's own",
             codec::MaxItems(16), codec::ListAtomic());
  v.Optional("numaNode", self.numa_node, "NUMA node; absent when unknown", codec::Minimum(0),
             codec::Maximum(kMaxInt));
  v.Optional("memory", self.memory, "device memory, a quantity such as 64Gi",
             codec::Pattern(kQuantityPattern));
  v.Optional("driverVersion", self.driver_version, "driver version as reported",
             codec::MaxLength(64));
  v.Optional("firmwareVersion", self.firmware_version, "firmware version as reported",
             codec::MaxLength(64));
  v.Optional("health", self.health, "device health",
             codec::Enum({"Healthy", "Unhealthy", "Unknown"}));
  v.Optional("attributes", self.attributes,
             "device attributes of the driver's vocabulary, as published in ResourceSlices",
             codec::MaxProperties(32));
  v.Optional("sources", self.sources,
             "where each fact came from: fact (topology, memory, health, ...) -> source",
             codec::Items(codec::Enum(InventorySources())));
  v.Optional("partitioning", self.partitioning,
             "partitionable devices: profiles, capacity and the partitions that exist");
}

template <typename V, codec::FieldsOf<InventoryLink> S>
void VisitFields(V& v, S& self) {
  v.Required("a", self.a, "one device of the link", codec::MaxLength(63));
  v.Required("b", self.b, "the other device", codec::MaxLength(63));
  v.Required("type", self.type, "link type", codec::Enum(LinkTypeNames()));
  v.Required("bandwidthGBps", self.bandwidth_gbps, "bandwidth in GB/s, one direction",
             codec::ExclusiveMinimum(0), codec::Maximum(1000000));
  v.Optional("state", self.state, "link state; absent means up", codec::Enum({"up", "down"}));
  v.Optional("source", self.source, "how the link was found", codec::Enum(InventorySources()));
}

template <typename V, codec::FieldsOf<InventoryGroup> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name, "group name, unique in the node", codec::MaxLength(63));
  v.Required("kind", self.kind, "group kind", codec::Enum(GroupKindNames()));
  v.Required("devices", self.devices, "member devices; the order is the position in the group",
             codec::MinItems(1), codec::ListAtomic());
  v.Optional("source", self.source, "how the group was found", codec::Enum(InventorySources()));
}

template <typename V, codec::FieldsOf<InventoryNic> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name, "network interface name", codec::MaxLength(15));
  v.Optional("type", self.type, "interface type", codec::Enum({"ethernet", "roce", "infiniband"}));
  v.Optional("pciAddress", self.pci_address, "PCI address (BDF) of the NIC",
             codec::Pattern(kPciAddressPattern));
  v.Optional("pcieRoot", self.pcie_root, "PCIe root complex of the NIC",
             codec::Pattern(kPcieRootPattern));
  v.Optional("numaNode", self.numa_node, "NUMA node; absent when unknown", codec::Minimum(0),
             codec::Maximum(kMaxInt));
  v.Optional("ipAddress", self.ip_address, "IP address of the interface", codec::MaxLength(45));
  v.Optional("pairedDevice", self.paired_device, "the device this NIC serves",
             codec::MaxLength(63));
}

template <typename V, codec::FieldsOf<ComponentVersion> S>
void VisitFields(V& v, S& self) {
  v.Required("raw", self.raw, "the version as the component reports it", codec::MaxLength(128));
  v.Optional("semver", self.semver, "normalised to semantic version 2.0.0", codec::MaxLength(64));
}

template <typename V, codec::FieldsOf<InventoryFabric> S>
void VisitFields(V& v, S& self) {
  v.Optional("cliqueID", self.clique_id, "NVLink clique id (NVL72)", codec::MaxLength(64));
  v.Optional("clusterUUID", self.cluster_uuid, "NVLink cluster UUID (NVL72)", codec::MaxLength(64));
  v.Optional("superPodID", self.super_pod_id, "super-pod id", codec::MaxLength(64));
  v.Optional("rackID", self.rack_id, "rack id", codec::MaxLength(64));
  v.Optional("leaf", self.leaf, "leaf switch name", codec::MaxLength(64));
  v.Optional("spine", self.spine, "spine switch name", codec::MaxLength(64));
}

template <typename V, codec::FieldsOf<InventoryPcieBandwidths> S>
void VisitFields(V& v, S& self) {
  v.Optional("pcieSwitch", self.pcie_switch, "through a PCIe switch", codec::ExclusiveMinimum(0));
  v.Optional("hostBridge", self.host_bridge, "through the root complex",
             codec::ExclusiveMinimum(0));
  v.Optional("numa", self.numa, "across host bridges of one NUMA node", codec::ExclusiveMinimum(0));
  v.Optional("crossNuma", self.cross_numa, "across NUMA nodes", codec::ExclusiveMinimum(0));
}

template <typename V, codec::FieldsOf<NodeInventorySpec> S>
void VisitFields(V& /*v*/, S& /*self*/) {}

template <typename V, codec::FieldsOf<NodeInventoryStatus> S>
void VisitFields(V& v, S& self) {
  v.Optional("serverModel", self.server_model, "server model, free text", codec::MaxLength(256));
  v.Optional("bootID", self.boot_id, "boot id of the node", codec::MaxLength(64));
  v.Optional("ruleSet", self.rule_set, "allocation rule set of the server family",
             codec::Enum(RuleSetNames()));
  v.Optional("validSets", self.valid_sets, "ring-sets only: the allowed device sets",
             codec::ListAtomic(), codec::Items(codec::MinItems(2)));
  v.Optional("devices", self.devices, "accelerator devices", codec::MaxItems(64),
             codec::ListMap({"name"}));
  v.Optional("links", self.links, "direct links between two devices", codec::ListAtomic());
  v.Optional("groups", self.groups, "vendor groups of devices", codec::ListMap({"name"}));
  v.Optional("nics", self.nics, "network interfaces", codec::ListMap({"name"}));
  v.Optional("versions", self.versions, "component (driver, firmware, cann, cuda, ...) -> version");
  v.Optional("pcieBandwidthGBps", self.pcie_bandwidths,
             "overrides of the model bandwidths of the derived PCIe relations");
  v.Optional("fabric", self.fabric, "position in the multi-node fabric");
  v.Optional("health", self.health, "summary of the devices' health",
             codec::Enum({"Healthy", "Degraded", "Unhealthy", "Unknown"}));
  internal::VisitStatusConditions(v, self, "inventory");
}

template <typename V, codec::FieldsOf<NodeInventory> S>
void VisitFields(V& v, S& self) {
  v.Optional("spec", self.spec, "reserved; the plugin reports in status");
  v.Optional("status", self.status, "what the plugin found on the node");
}

// ---- Codec ----

template <>
StatusOr<NodeInventory> FromJson<NodeInventory>(const json& json) {
  return internal::ReadObject<NodeInventory>(json, kXpuApiVersion, kNodeInventoryKind);
}

json ToJson(const NodeInventory& inventory) {
  return internal::WriteObject(inventory, kXpuApiVersion, kNodeInventoryKind);
}

json NodeInventorySchema() {
  return internal::ObjectSchema<NodeInventory>(
      "NodeInventory: the accelerators, links, NICs and versions the xpu-dra plugin found on one "
      "node (name = node name).");
}

std::optional<std::string_view> VocabularyAttributeType(std::string_view name) {
  for (const VocabularyEntry& e : kVocabulary) {
    if (e.name == name) return e.type;
  }
  return std::nullopt;
}

const std::vector<std::string>& InventorySources() {
  static const std::vector<std::string> kSources = {"sysfs",        "procfs", "kfd",   "nvml",
                                                    "dcmi",         "hccn",   "cndev", "rocm-smi",
                                                    "server-model", "config", "hydmi"};
  return kSources;
}

const std::vector<std::string>& PartitionFallbacks() {
  static const std::vector<std::string> kFallbacks = {"whole", "existing", "layout"};
  return kFallbacks;
}

const std::vector<std::string>& PartitionKinds() {
  static const std::vector<std::string> kKinds = {"mig", "vnpu", "vhcu"};
  return kKinds;
}

// ---- Validation ----

namespace {

Status CheckAttribute(const std::string& name, const InventoryAttribute& attr,
                      const std::string& path) {
  const int set =
      static_cast<int>(attr.int_value.has_value()) + static_cast<int>(attr.bool_value.has_value()) +
      static_cast<int>(attr.string_value.has_value()) + static_cast<int>(attr.version.has_value());
  if (set != 1) {
    return InvalidArgumentError(path + ": expected exactly one of int, bool, string, version");
  }
  RETURN_IF_ERROR(ValidateQualifiedName(name, path));
  std::string_view type = attr.int_value      ? "int"
                          : attr.bool_value   ? "bool"
                          : attr.string_value ? "string"
                                              : "version";
  const bool qualified = name.find('/') != std::string::npos;
  const std::optional<std::string_view> want = VocabularyAttributeType(name);
  if (!want && !qualified) {
    return InvalidArgumentError(path + ": unknown attribute \"" + name +
                                "\"; bare names must be of the xpu-dra vocabulary "
                                "(docs/architecture.md), others need a domain");
  }
  if (want && *want != type) {
    return InvalidArgumentError(path + ": attribute \"" + name + "\" must be a " +
                                std::string(*want) + ", got a " + std::string(type));
  }
  if (attr.version) RETURN_IF_ERROR(ValidateVersionAttribute(*attr.version, path + ".version"));
  if (attr.string_value) {
    RETURN_IF_ERROR(ValidateAttributeString(*attr.string_value, path + ".string"));
  }
  return OkStatus();
}

// "<path>[\"<key>\"]: <what>", built without temporaries.
Status KeyError(const std::string& path, const std::string& key, std::string_view what) {
  std::string message = path;
  message.append("[\"").append(key).append("\"]: ").append(what);
  return InvalidArgumentError(message);
}

// Profiles take only counters the device has, placements fit the slots, and the partitions
// that exist are of known profiles, at legal placements, and do not overlap.
Status CheckPartitioning(const InventoryPartitioning& p, const std::string& path) {
  for (const auto& [counter, total] : p.capacity) {
    RETURN_IF_ERROR(ValidateDnsLabel(counter, path + ".capacity"));
    if (total < 1) {
      return KeyError(path + ".capacity", counter, "must be at least 1");
    }
  }
  std::map<std::string, const PartitionProfile*> profiles;
  for (size_t i = 0; i < p.profiles.size(); ++i) {
    const PartitionProfile& profile = p.profiles[i];
    const std::string at = ElementPath(path + ".profiles", i);
    if (!profiles.emplace(profile.name, &profile).second) {
      return InvalidArgumentError(at + ".name: duplicate profile \"" + profile.name + "\"");
    }
    for (const auto& [counter, units] : profile.counters) {
      auto total = p.capacity.find(counter);
      if (total == p.capacity.end()) {
        return KeyError(at + ".counters", counter, "is not a counter of the device's capacity");
      }
      if (units < 1 || units > total->second) {
        return KeyError(at + ".counters", counter,
                        "must be between 1 and " + std::to_string(total->second));
      }
    }
    if (!profile.placements.empty() && (profile.slots < 1 || p.slots < 1)) {
      return InvalidArgumentError(at +
                                  ".slots: a profile with placements spans at least one of "
                                  "the device's slots");
    }
    for (int64_t first : profile.placements) {
      if (first < 0 || first + profile.slots > p.slots) {
        return InvalidArgumentError(at + ".placements: " + std::to_string(first) + " + " +
                                    std::to_string(profile.slots) + " slots passes the device's " +
                                    std::to_string(p.slots));
      }
    }
  }
  uint64_t used = 0;
  std::map<std::string, int64_t> taken;                 // counter -> units the partitions take
  std::set<std::pair<std::string, int64_t>> instances;  // (profile, instance) without placements
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    const InventoryPartition& part = p.partitions[i];
    const std::string at = ElementPath(path + ".partitions", i);
    auto it = profiles.find(part.profile);
    if (it == profiles.end()) {
      return InvalidArgumentError(at + ".profile: unknown profile \"" + part.profile + "\"");
    }
    const PartitionProfile& profile = *it->second;
    for (const auto& [counter, units] : profile.counters) {
      taken[counter] += units;
      if (taken[counter] > p.capacity.at(counter)) {
        std::string message = at;
        message.append(".profile: the partitions take more ").append(counter);
        message.append(" than the device's capacity of ");
        return InvalidArgumentError(message.append(std::to_string(p.capacity.at(counter))));
      }
    }
    if (profile.placements.empty()) {
      if (part.instance < 0) return InvalidArgumentError(at + ".instance: must be at least 0");
      if (!instances.emplace(part.profile, part.instance).second) {
        std::string message = at;
        message.append(".instance: another partition of profile ").append(profile.name);
        return InvalidArgumentError(
            message.append(" has instance ").append(std::to_string(part.instance)));
      }
      continue;
    }
    if (!part.placement.has_value() ||
        std::find(profile.placements.begin(), profile.placements.end(), *part.placement) ==
            profile.placements.end()) {
      return InvalidArgumentError(at + ".placement: not a placement of profile " + profile.name);
    }
    const uint64_t span = ((uint64_t{1} << profile.slots) - 1) << *part.placement;
    if ((used & span) != 0) {
      return InvalidArgumentError(at + ".placement: overlaps another partition");
    }
    used |= span;
  }
  return OkStatus();
}

Status CheckDevice(const InventoryDevice& d, const std::string& path) {
  RETURN_IF_ERROR(ValidateDnsLabel(d.name, path + ".name"));
  RETURN_IF_ERROR(ValidateDnsLabel(d.kind, path + ".kind"));
  if (!d.memory.empty()) {
    StatusOr<int64_t> bytes = ParseQuantityBytes(d.memory);
    if (!bytes.ok()) return bytes.status().WithContext(path + ".memory");
  }
  if (!d.pcie_root.empty() && !d.pcie_path.empty() && d.pcie_path.front() != d.pcie_root) {
    return InvalidArgumentError(path + ".pcieRoot: \"" + d.pcie_root +
                                "\" differs from pciePath[0] \"" + d.pcie_path.front() + "\"");
  }
  if (!d.uuid.empty()) RETURN_IF_ERROR(ValidateAttributeString(d.uuid, path + ".uuid"));
  for (const auto& [name, attr] : d.attributes) {
    std::string attr_path = path;
    attr_path.append(".attributes[\"").append(name).append("\"]");
    RETURN_IF_ERROR(CheckAttribute(name, attr, attr_path));
  }
  for (const auto& [fact, source] : d.sources) {
    RETURN_IF_ERROR(ValidateCIdentifier(fact, path + ".sources"));
  }
  if (d.partitioning.has_value()) {
    RETURN_IF_ERROR(CheckPartitioning(*d.partitioning, path + ".partitioning"));
  }
  return OkStatus();
}

Status CheckKnown(const std::set<std::string>& devices, const std::string& name,
                  const std::string& path) {
  if (devices.count(name) == 0) {
    return InvalidArgumentError(path + ": unknown device \"" + name + "\"");
  }
  return OkStatus();
}

}  // namespace

Status ValidateNodeInventory(const NodeInventory& inventory) {
  static const json kSchema = NodeInventorySchema();
  RETURN_IF_ERROR(ValidateAgainstSchema(ToJson(inventory), kSchema));
  RETURN_IF_ERROR(ValidateNodeName(inventory.metadata.name, "metadata.name"));
  const NodeInventoryStatus& s = inventory.status;

  std::set<std::string> devices;
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const std::string path = ElementPath("status.devices", i);
    RETURN_IF_ERROR(CheckDevice(s.devices[i], path));
    if (!devices.insert(s.devices[i].name).second) {
      return InvalidArgumentError(path + ".name: duplicate device \"" + s.devices[i].name + "\"");
    }
  }
  std::set<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < s.links.size(); ++i) {
    const InventoryLink& l = s.links[i];
    const std::string path = ElementPath("status.links", i);
    RETURN_IF_ERROR(CheckKnown(devices, l.a, path + ".a"));
    RETURN_IF_ERROR(CheckKnown(devices, l.b, path + ".b"));
    if (l.a == l.b) return InvalidArgumentError(path + ": links a device to itself");
    if (!pairs.insert({l.type + "/" + std::min(l.a, l.b), std::max(l.a, l.b)}).second) {
      return InvalidArgumentError(path + ": duplicate " + l.type + " link " + l.a + " - " + l.b);
    }
  }
  std::set<std::string> names;
  for (size_t i = 0; i < s.groups.size(); ++i) {
    const InventoryGroup& g = s.groups[i];
    const std::string path = ElementPath("status.groups", i);
    if (!names.insert(g.name).second) {
      return InvalidArgumentError(path + ".name: duplicate group \"" + g.name + "\"");
    }
    for (size_t j = 0; j < g.devices.size(); ++j) {
      RETURN_IF_ERROR(CheckKnown(devices, g.devices[j], ElementPath(path + ".devices", j)));
    }
  }
  if (!s.valid_sets.empty() &&
      s.rule_set != topology::RuleSetKindName(topology::RuleSetKind::kRingSets)) {
    return InvalidArgumentError("status.validSets: only allowed with ruleSet ring-sets");
  }
  for (size_t i = 0; i < s.valid_sets.size(); ++i) {
    for (size_t j = 0; j < s.valid_sets[i].size(); ++j) {
      RETURN_IF_ERROR(CheckKnown(devices, s.valid_sets[i][j],
                                 ElementPath(ElementPath("status.validSets", i), j)));
    }
  }
  names.clear();
  for (size_t i = 0; i < s.nics.size(); ++i) {
    const InventoryNic& n = s.nics[i];
    const std::string path = ElementPath("status.nics", i);
    if (!names.insert(n.name).second) {
      return InvalidArgumentError(path + ".name: duplicate NIC \"" + n.name + "\"");
    }
    if (!n.paired_device.empty()) {
      RETURN_IF_ERROR(CheckKnown(devices, n.paired_device, path + ".pairedDevice"));
    }
  }
  for (const auto& [component, version] : s.versions) {
    const std::string path = "status.versions[\"" + component + "\"]";
    RETURN_IF_ERROR(ValidateCIdentifier(component, path));
    if (!version.semver.empty()) {
      RETURN_IF_ERROR(ValidateVersionAttribute(version.semver, path + ".semver"));
    }
  }
  return internal::CheckConditionTypes(s.conditions, "status.conditions");
}

// ---- Projection ----

namespace {

template <typename E>
StatusOr<E> ParseName(std::optional<E> (*parse)(std::string_view), const std::string& text,
                      const std::string& path, std::string_view what) {
  std::optional<E> value = parse(text);
  if (!value) {
    return InvalidArgumentError(path + ": unknown " + std::string(what) + " \"" + text + "\"");
  }
  return *value;
}

bool IsDerivedGroup(topology::GroupKind kind) {
  return kind == topology::GroupKind::kPcieSwitch || kind == topology::GroupKind::kHostBridge ||
         kind == topology::GroupKind::kNuma;
}

}  // namespace

StatusOr<topology::NodeSpec> NodeDescriptionFromInventory(const NodeInventory& inventory) {
  const NodeInventoryStatus& s = inventory.status;
  topology::NodeSpec spec;
  spec.name = inventory.metadata.name;
  spec.model = s.server_model;
  if (s.rule_set.empty()) return InvalidArgumentError("status.ruleSet: missing required field");
  ASSIGN_OR_RETURN(spec.rule_set.kind,
                   ParseName(topology::ParseRuleSetKind, s.rule_set, "status.ruleSet", "rule set"));
  for (const std::vector<std::string>& set : s.valid_sets) {
    spec.rule_set.valid_sets[static_cast<int>(set.size())].push_back(set);
  }
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const InventoryDevice& d = s.devices[i];
    topology::DeviceSpec device;
    device.name = d.name;
    device.kind = d.kind;
    device.index = static_cast<int>(d.index);
    if (!d.memory.empty()) {
      StatusOr<int64_t> bytes = ParseQuantityBytes(d.memory);
      if (!bytes.ok()) {
        return bytes.status().WithContext(ElementPath("status.devices", i) + ".memory");
      }
      device.memory_bytes = *bytes;
    }
    device.numa_node = static_cast<int>(d.numa_node.value_or(-1));
    device.pcie_path = d.pcie_path;
    spec.devices.push_back(std::move(device));
  }
  for (size_t i = 0; i < s.links.size(); ++i) {
    const InventoryLink& l = s.links[i];
    if (l.state == "down") continue;
    topology::LinkSpec link;
    ASSIGN_OR_RETURN(link.type, ParseName(topology::ParseLinkType, l.type,
                                          ElementPath("status.links", i) + ".type", "link type"));
    link.bandwidth_gbps = l.bandwidth_gbps;
    link.devices = {l.a, l.b};
    spec.links.push_back(std::move(link));
  }
  for (size_t i = 0; i < s.groups.size(); ++i) {
    const InventoryGroup& g = s.groups[i];
    ASSIGN_OR_RETURN(const topology::GroupKind kind,
                     ParseName(topology::ParseGroupKind, g.kind,
                               ElementPath("status.groups", i) + ".kind", "group kind"));
    if (IsDerivedGroup(kind)) continue;
    spec.groups.push_back({g.name, kind, g.devices});
  }
  if (s.pcie_bandwidths) {
    const InventoryPcieBandwidths& p = *s.pcie_bandwidths;
    spec.pcie.pcie_switch = p.pcie_switch.value_or(spec.pcie.pcie_switch);
    spec.pcie.host_bridge = p.host_bridge.value_or(spec.pcie.host_bridge);
    spec.pcie.numa = p.numa.value_or(spec.pcie.numa);
    spec.pcie.cross_numa = p.cross_numa.value_or(spec.pcie.cross_numa);
  }
  return spec;
}

NodeInventory InventoryFromNodeDescription(const topology::NodeSpec& spec) {
  NodeInventory inv;
  inv.metadata.name = spec.name;
  NodeInventoryStatus& s = inv.status;
  s.server_model = spec.model;
  s.rule_set = std::string(topology::RuleSetKindName(spec.rule_set.kind));
  for (const auto& [size, sets] : spec.rule_set.valid_sets) {
    s.valid_sets.insert(s.valid_sets.end(), sets.begin(), sets.end());
  }
  for (const topology::DeviceSpec& d : spec.devices) {
    InventoryDevice device;
    device.name = d.name;
    device.kind = d.kind;
    device.index = d.index;
    if (d.memory_bytes > 0) device.memory = FormatQuantityBytes(d.memory_bytes);
    if (d.numa_node >= 0) device.numa_node = d.numa_node;
    device.pcie_path = d.pcie_path;
    if (!d.pcie_path.empty()) device.pcie_root = d.pcie_path.front();
    if (d.pcie_path.size() > 1) device.pci_address = d.pcie_path.back();
    device.sources["topology"] = "server-model";
    s.devices.push_back(std::move(device));
  }
  for (const topology::LinkSpec& l : spec.links) {
    for (size_t i = 0; i < l.devices.size(); ++i) {
      for (size_t j = i + 1; j < l.devices.size(); ++j) {
        InventoryLink link;
        link.a = l.devices[i];
        link.b = l.devices[j];
        link.type = std::string(topology::LinkTypeName(l.type));
        link.bandwidth_gbps = l.bandwidth_gbps;
        link.source = "server-model";
        s.links.push_back(std::move(link));
      }
    }
  }
  for (const topology::GroupSpec& g : spec.groups) {
    s.groups.push_back(
        {g.name, std::string(topology::GroupKindName(g.kind)), g.members, "server-model", nullptr});
  }
  const topology::PcieBandwidths defaults;
  if (spec.pcie.pcie_switch != defaults.pcie_switch ||
      spec.pcie.host_bridge != defaults.host_bridge || spec.pcie.numa != defaults.numa ||
      spec.pcie.cross_numa != defaults.cross_numa) {
    InventoryPcieBandwidths p;
    if (spec.pcie.pcie_switch != defaults.pcie_switch) p.pcie_switch = spec.pcie.pcie_switch;
    if (spec.pcie.host_bridge != defaults.host_bridge) p.host_bridge = spec.pcie.host_bridge;
    if (spec.pcie.numa != defaults.numa) p.numa = spec.pcie.numa;
    if (spec.pcie.cross_numa != defaults.cross_numa) p.cross_numa = spec.pcie.cross_numa;
    s.pcie_bandwidths = p;
  }
  return inv;
}

StatusOr<std::vector<GroupDevice>> GroupDevices(const NodeInventory& inventory) {
  std::vector<GroupDevice> out;
  const auto& devices = inventory.status.devices;
  if (devices.size() < 2) return out;
  for (const InventoryDevice& d : devices) {
    if (d.kind != devices[0].kind) return out;  // mixed kinds: no groups
  }
  ASSIGN_OR_RETURN(const topology::NodeSpec spec, NodeDescriptionFromInventory(inventory));
  StatusOr<topology::Node> node = topology::Node::Build(spec);
  if (!node.ok()) return node.status().WithContext("group devices of " + inventory.metadata.name);
  for (int size = 2; size <= static_cast<int>(devices.size()); ++size) {
    int n = 0;
    for (const topology::DeviceSet set : topology::AlignedGroups(*node, size)) {
      GroupDevice g;
      g.name = devices[0].kind + "-x" + std::to_string(size) + "-" + std::to_string(n++);
      g.size = size;
      g.members = node->Names(set);
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace xpu::api
