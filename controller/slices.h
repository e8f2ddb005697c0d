// What the controller publishes for one node: the ResourceSlice specs of its pool, computed from
// the node's NodeInventory, the Node's labels, the config and the devices claims hold. Pure: the
// same inputs give the same slices, so `xpuctl slices` prints exactly what the controller writes.
//
// Devices (docs/architecture.md "Attribute vocabulary"): the inventory's attributes (the
// vendor-neutral vocabulary, versions as semver, resource.kubernetes.io/pcieRoot and pciBusID),
// capacity `memory`, `scaleUpDomain` on every device (the inventory's; else the device's scale-up
// group; else its component of scale-up links; else "node": PCIe only), `module` where the
// inventory has one, `pcieSwitch` where the inventory's pciePath has one (its second entry: the
// first bridge below the root complex, which the topology model treats as the device's PCIe switch;
// a claim keeps a set under one switch with a matchAttribute on it), and the fabric tiers
// `fabricDomain`, `leaf`, `spine` from the Node's labels
// (topology.xpu.dra.dev/{superpod,leaf,spine}, then topograph's accelerator.topograph.run/domain
// and fabric.topograph.run/tier-{0,1}, network.topology.nvidia.com/{accelerator,leaf,spine},
// nvidia.com/gpu.clique, cloud.google.com/gce-topology-{subblock,block},
// topology.k8s.aws/network-node-layer-{3,2}) or else the inventory's fabric. At most 32
// attributes + capacities per device: vendor-specific (domain-qualified, not
// resource.kubernetes.io) attributes are dropped first, and each drop is a note.
//
// Taints: xpu.dra.dev/unhealthy (the config's effect) on a device whose health is not Healthy or
// whose scale-up links are down, xpu.dra.dev/unsupported (NoSchedule) on a device outside the
// support matrix; value = the reason, cut to a label value. Without taint support (the server
// drops them) such devices are left out of the slices instead, with a note.
//
// attributes mode: devices ordered so that first fit lands on the solver's preference: the
// device the solver picks for one, then for each larger count the devices it adds to the prefix
// (topology::Solve with the prefix required; counts the rule set forbids are skipped), allocated
// devices last. groups mode: the single devices (groupSize 1) and, for each configured size, the
// node's aligned groups (api::GroupDevices names) with attribute groupSize, the attributes all
// members share, capacity memory per member; every device consumes counters of one counter set
// "<kind>-members" holding one counter per member device (value 1). 1.34 shape: the counter set
// in the same slice as its devices (one slice, at most 128 devices); 1.35+: the counter set in a
// slice of its own, devices in slices of at most 64. Nodes with mixed device kinds, or whose
// groups do not fit those limits, fall back to attributes mode with a note.
//
// Slices are split at the served version's device limit (128; 64 with taints or counters from
// 1.35). A node without devices gets one empty slice: "empty pool" is not "no pool".
#ifndef XPU_CONTROLLER_SLICES_H_
#define XPU_CONTROLLER_SLICES_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "api/resource.h"
#include "api/validation.h"
#include "base/status.h"
#include "controller/config.h"

namespace xpu::controller {

inline constexpr std::string_view kUnhealthyTaint = "xpu.dra.dev/unhealthy";
inline constexpr std::string_view kUnsupportedTaint = "xpu.dra.dev/unsupported";

// What the controller knows of a node besides its inventory.
struct NodeFacts {
  std::string name;
  std::string uid;  // for the owner reference
  std::map<std::string, std::string> labels;
  std::string gang = {};  // uid of the AcceleratorGang holding the node: attribute `gang`
  friend bool operator==(const NodeFacts&, const NodeFacts&) = default;
};

// The device attribute naming a counter-consuming device's partition type (PublishOptions).
inline constexpr std::string_view kPartitionTypeAttribute = "partitionType";

struct PublishOptions {
  std::string driver = "xpu.dra.dev";
  api::KubeVersion version = api::KubeVersion::k1_35;  // shapes and limits
  bool taints = true;                                  // false: the server drops device taints
  bool counters = true;  // false: the server drops counters; groups mode falls back
  // 1.37 and later: every device that consumes counters gets the string attribute
  // `partitionType` (its profile, or "whole"), and its slice names it in partitionTypeAttribute.
  // False where the server drops the field (the alpha gate DRAPartitionableDevicesType is off).
  bool partition_type = false;
  friend bool operator==(const PublishOptions&, const PublishOptions&) = default;
};

struct DesiredPool {
  std::string name;  // the node name
  // In publishing order. pool.name is set; pool.generation and resourceSliceCount are left 0
  // (the pool sync sets them); nodeName is set; no metadata.
  std::vector<api::resource::ResourceSliceSpec> slices;
  PublishMode mode = PublishMode::kAttributes;  // the mode used, after any fallback
  std::vector<std::string> notes;               // what was left out or adjusted, and why
  std::map<std::string, int> tainted;           // taint key -> devices carrying it
  int devices = 0;                              // devices published, groups included
};

// The attribute naming the PCIe switch a device sits below, and its value: pciePath[1] when the
// path has at least 3 entries (root complex, switch, device), as topology::Node groups them;
// empty otherwise.
inline constexpr std::string_view kPcieSwitchAttribute = "pcieSwitch";
std::string DevicePcieSwitch(const api::InventoryDevice& device);

// Each device's scale-up domain, by device name: the inventory's scaleUpDomain attribute, else
// its scale-up group, else its component of direct links, else "node" (the published value).
std::map<std::string, std::string> DeviceScaleUpDomains(const api::NodeInventory& inventory);

// `allocated`: device names of this pool that claims hold (attributes mode orders by them).
// Errors only for an inventory that cannot be projected (names the field).
StatusOr<DesiredPool> BuildPool(const api::NodeInventory& inventory, const NodeFacts& node,
                                const Config& config, const PublishOptions& options,
                                const std::set<std::string>& allocated = {});

// The objects as the controller creates them: generateName "<node>-<driver>-", the Node as
// controlling owner (apiVersion v1, kind Node, name, uid, controller true), pool generation and
// resourceSliceCount set.
std::vector<api::resource::ResourceSlice> SliceObjects(const DesiredPool& pool,
                                                       const NodeFacts& node,
                                                       std::string_view driver, int64_t generation);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_SLICES_H_
