// NodeInventory (xpu.dra.dev/v1alpha1, cluster-scoped, name = node name, owner = the Node): what
// the plugin found on one node — devices, links, groups, NICs, versions, health, the allocation
// rule set and the fabric position — written by the plugin and read by the controller. The
// fields are described in docs/node-inventory.md; the CRD (deploy/crds/) is generated from the
// same field list as the codec (api/crds.h).
//
// Codec: `FromJson<NodeInventory>(json)` names the JSON path of the first problem
// ("status.devices[2].index: expected an integer, got string \"x\""); `ToJson` writes the wire
// names and leaves out unset optional fields. Members this code does not know are kept in
// `unknown` (null while nothing is unknown) and written back. Enumerated values (kinds, health,
// link types) stay strings, checked by ValidateNodeInventory, so that an object from a newer plugin
// still reads.
//
// NodeDescriptionFromInventory projects an inventory onto the topology node description that
// `xpuctl plan` and the solver consume; InventoryFromNodeDescription is its inverse for the
// bundled server models and tests. Value types, thread-compatible; no exception escapes.
#ifndef XPU_API_NODE_INVENTORY_H_
#define XPU_API_NODE_INVENTORY_H_

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
#include "topology/model.h"

namespace xpu::api {

inline constexpr std::string_view kXpuGroup = "xpu.dra.dev";
inline constexpr std::string_view kXpuApiVersion = "xpu.dra.dev/v1alpha1";
inline constexpr std::string_view kNodeInventoryKind = "NodeInventory";

// A device attribute of the docs/architecture.md vocabulary: exactly one value is set.
struct InventoryAttribute {
  std::optional<int64_t> int_value;         // "int"
  std::optional<bool> bool_value;           // "bool"
  std::optional<std::string> string_value;  // "string"
  std::optional<std::string> version;       // "version", semver 2.0.0
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryAttribute&, const InventoryAttribute&) = default;
};

// A partition profile a partitionable device can host: an NVIDIA MIG profile, an Ascend vNPU
// template, a Hygon vHCU size. What it takes of the parent is in `counters` (units of the
// parent's `capacity`) and, for profiles with placements (MIG), `slots` consecutive memory slots
// starting at one of `placements`.
struct PartitionProfile {
  std::string name;                         // vendor's name: "1g.18gb", "vir02", "1/4"
  std::string memory;                       // a quantity: the partition's memory
  std::map<std::string, int64_t> counters;  // counter -> units taken of the parent's capacity
  int64_t slots = 0;                        // MIG: memory slots one placement spans
  std::vector<int64_t> placements;          // MIG: the legal first slots; empty: none (vNPU)
  int64_t max_instances = 0;                // without placements: at most this many at once
  nlohmann::json unknown = nullptr;
  friend bool operator==(const PartitionProfile&, const PartitionProfile&) = default;
};

// A partition that exists on the device now (created before, or by a claim).
struct InventoryPartition {
  std::string profile;               // a profile's name
  std::optional<int64_t> placement;  // MIG: its first slot
  int64_t instance = 0;              // without placements: the instance number
  std::string uuid;                  // "MIG-...", the vNPU's id
  int64_t id = 0;                    // the vendor's id: GPU instance id, vdevice id
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryPartition&, const InventoryPartition&) = default;
};

// How a device can be split. `enabled` false: partitioning is possible but switched off on the
// node (MIG mode off): the device is served whole.
struct InventoryPartitioning {
  std::string kind;                         // one of PartitionKinds(): "mig", "vnpu", "vhcu"
  bool enabled = false;                     // MIG mode on, vNPU or vHCU usable
  int64_t slots = 0;                        // MIG: the memory slots (8 on H100/H200)
  std::map<std::string, int64_t> capacity;  // counter -> the parent's total: "compute", "aicore"
  std::vector<PartitionProfile> profiles;
  std::vector<InventoryPartition> partitions;  // those that exist now
  // Where the server cannot carry partitions (no counters, 1.34): "whole" (the default: the device
  // is served whole), "existing" (the partitions that exist are served as plain devices, and
  // the device is not served whole while any exists), or "layout" (as existing, after the plugin
  // made the partitions of `layout` at start). The node's config sets it.
  std::string fallback;
  std::string layout;  // fallback "layout": the entries of this device, "vir05_1c_16g*4"
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryPartitioning&, const InventoryPartitioning&) = default;
};

struct InventoryDevice {
  std::string name;    // "<kind>-<index>", a DNS label
  std::string vendor;  // "huawei", "nvidia", ...
  std::string model;   // "Ascend910B3", "H200", ...
  std::string kind;    // "npu", "gpu", ...
  int64_t index = 0;   // vendor's physical index
  std::string uuid;
  std::string pci_address;  // "pciAddress": the device's BDF, "0000:19:00.0"
  std::string pcie_root;    // "pcieRoot": "pci0000:17", = pcie_path[0] when both are set
  // "pciePath": root complex, then each bridge's BDF and the device's own.
  std::vector<std::string> pcie_path;
  std::optional<int64_t> numa_node;
  std::string memory;  // a quantity, "64Gi"
  std::string driver_version;
  std::string firmware_version;
  std::string health;  // Healthy, Unhealthy, Unknown
  std::map<std::string, InventoryAttribute> attributes;
  // Where each fact came from: fact ("topology", "memory", "health", ...) -> source.
  std::map<std::string, std::string> sources;
  std::optional<InventoryPartitioning> partitioning;  // partitionable devices only
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryDevice&, const InventoryDevice&) = default;
};

// A direct link between two devices. Types are the topology library's link type names.
struct InventoryLink {
  std::string a;
  std::string b;
  std::string type;  // "hccs", "nvswitch", "nvlink", "sio", "pcie-switch", ...
  double bandwidth_gbps = 0;
  std::string state;   // "up" (default when empty) or "down"
  std::string source;  // how the link was found
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryLink&, const InventoryLink&) = default;
};

struct InventoryGroup {
  std::string name;
  std::string kind;  // topology group kind name: "hccs-ring", "hiam-module", "numa", ...
  std::vector<std::string> devices;  // ordered
  std::string source;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryGroup&, const InventoryGroup&) = default;
};

struct InventoryNic {
  std::string name;  // interface name, "eth0", "ib0"
  std::string type;  // ethernet, roce, infiniband
  std::string pci_address;
  std::string pcie_root;
  std::optional<int64_t> numa_node;
  std::string ip_address;
  std::string paired_device;  // device this NIC serves (Ascend per-NPU RoCE port)
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryNic&, const InventoryNic&) = default;
};

struct ComponentVersion {
  std::string raw;     // as the vendor reports it, "23.0.rc3"
  std::string semver;  // normalised, "23.0.0-rc3"; empty when it cannot be normalised
  nlohmann::json unknown = nullptr;
  friend bool operator==(const ComponentVersion&, const ComponentVersion&) = default;
};

// The node's place in the multi-node fabric; every member optional.
struct InventoryFabric {
  std::string clique_id;     // NVL72 NVLink clique
  std::string cluster_uuid;  // NVL72 cluster UUID
  std::string super_pod_id;  // Ascend super-pod
  std::string rack_id;
  std::string leaf;
  std::string spine;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryFabric&, const InventoryFabric&) = default;
};

// Overrides of the model bandwidths of the derived PCIe relations (topology::PcieBandwidths).
struct InventoryPcieBandwidths {
  std::optional<double> pcie_switch;
  std::optional<double> host_bridge;
  std::optional<double> numa;
  std::optional<double> cross_numa;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const InventoryPcieBandwidths&, const InventoryPcieBandwidths&) = default;
};

// Reserved: the plugin owns the whole object and reports in status.
struct NodeInventorySpec {
  nlohmann::json unknown = nullptr;
  friend bool operator==(const NodeInventorySpec&, const NodeInventorySpec&) = default;
};

struct NodeInventoryStatus {
  std::string server_model;  // free text, "Huawei Atlas 800T A2"
  std::string boot_id;
  std::string rule_set;  // topology rule set name: "ascend910-ring", "nvswitch", "ring-sets", ...
  // ring-sets only: the allowed device sets (any size but 1, which is always allowed).
  std::vector<std::vector<std::string>> valid_sets;
  std::vector<InventoryDevice> devices;
  std::vector<InventoryLink> links;
  std::vector<InventoryGroup> groups;
  std::vector<InventoryNic> nics;
  std::map<std::string, ComponentVersion> versions;        // "driver", "firmware", "cann", "cuda"
  std::optional<InventoryPcieBandwidths> pcie_bandwidths;  // "pcieBandwidthGBps"
  std::optional<InventoryFabric> fabric;
  std::string health;  // Healthy, Degraded, Unhealthy, Unknown
  std::vector<Condition> conditions;
  std::optional<int64_t> observed_generation;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const NodeInventoryStatus&, const NodeInventoryStatus&) = default;
};

using NodeInventory = SpecStatusObject<NodeInventorySpec, NodeInventoryStatus>;

template <>
StatusOr<NodeInventory> FromJson<NodeInventory>(const nlohmann::json& json);
// With apiVersion and kind.
nlohmann::json ToJson(const NodeInventory& inventory);

// The OpenAPI v3 structural schema of the object (openAPIV3Schema of its CRD), generated from
// the codec's field list.
nlohmann::json NodeInventorySchema();

// The type of a bare attribute name of the docs/architecture.md vocabulary ("vendor" ->
// "string", "index" -> "int", "driverVersion" -> "version", "bf16" -> "bool"), or of the two
// resource.kubernetes.io names; nullopt for any other name.
std::optional<std::string_view> VocabularyAttributeType(std::string_view name);

// The fact sources a device's `sources` may name: "sysfs", "nvml", "dcmi", "server-model", ...
const std::vector<std::string>& InventorySources();

// The kinds of `partitioning`, in a fixed order: "mig" (NVIDIA), "vnpu" (Ascend), "vhcu" (Hygon).
const std::vector<std::string>& PartitionKinds();
// The values of InventoryPartitioning::fallback: "whole", "existing".
const std::vector<std::string>& PartitionFallbacks();

// Checks the object against its schema (types, enums, bounds; errors name the JSON path), then
// the rules a schema cannot say: DNS names, unique device/group/NIC names and link pairs, link,
// group, valid-set and NIC references to known devices, memory quantities, attribute names and
// types against the vocabulary, pcieRoot = pciePath[0], semver versions, unique condition types.
Status ValidateNodeInventory(const NodeInventory& inventory);

// The node description the topology library builds a Node from: name = metadata.name, model =
// status.serverModel, the rule set, the devices (memory in bytes, numaNode -1 when unknown), the
// links that are not down (each a pair), the groups of kinds a description may give (the
// derived pcie-switch/host-bridge/numa groups are left out: Node::Build derives them from the
// PCIe paths) and the PCIe bandwidth overrides. Fails, naming the status field, on an unknown
// rule set, link type or group kind, or a bad quantity; cross references are left to
// topology::Node::Build.
StatusOr<topology::NodeSpec> NodeDescriptionFromInventory(const NodeInventory& inventory);

// The inverse for descriptions that have no derived groups: a multi-device link (mesh) becomes
// one link per pair, in (i, j) order. NodeDescriptionFromInventory of the result equals `spec`
// with its meshes expanded that way.
NodeInventory InventoryFromNodeDescription(const topology::NodeSpec& spec);

// A device of the `groups` publishing mode (docs/architecture.md): one aligned group of the node's
// devices (topology::AlignedGroups) offered as a single allocatable device.
struct GroupDevice {
  std::string name;  // "<kind>-x<size>-<n>": n counts from 0 in AlignedGroups order
  int size = 0;
  std::vector<std::string> members;  // device names, in the group's order
  friend bool operator==(const GroupDevice&, const GroupDevice&) = default;
};

// Every group device of the node: the aligned groups of each size from 2 to the device count, for
// nodes whose devices are all of one kind. The controller publishes these names and the plugin
// expands a prepared one into its members, so both must call this. Fails like
// NodeDescriptionFromInventory, or when the projected node does not build.
StatusOr<std::vector<GroupDevice>> GroupDevices(const NodeInventory& inventory);

}  // namespace xpu::api

#endif  // XPU_API_NODE_INVENTORY_H_
