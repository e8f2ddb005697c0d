// The single-node topology model: devices, typed links with bandwidth, vendor groups and the
// allocation rule set of the server family.
//
// A NodeSpec is a plain description (what a topology file or a NodeInventory says). Node::Build
// validates it and compiles it into an immutable Node on Boost.Graph, with the pairwise
// bandwidth matrix and the symmetry classes the solver needs. A Node is immutable after Build and
// safe to share between threads. Pure: no I/O, clock, logging or JSON.
#ifndef XPU_TOPOLOGY_MODEL_H_
#define XPU_TOPOLOGY_MODEL_H_

#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "topology/device_set.h"
#include "topology/internal/graph.h"

namespace xpu::topology {

// How two devices are connected. The first group are direct device links; the PCIe relations
// (kPcieSwitch .. kCrossNuma) are derived from PCIe paths and NUMA nodes by Node::Build, in the
// order nvidia-smi uses (PIX/PXB, PHB, NODE, SYS).
enum class LinkType {
  kNvSwitch,    // through an NVSwitch board (all pairs equal)
  kNvLink,      // direct NVLink
  kHccs,        // Huawei HCCS
  kSio,         // A3 die-to-die inside a HiAM module
  kHccsSwitch,  // A3 HCCS through the on-board switch
  kXgmi,        // AMD / Hygon Infinity Fabric
  kMluLink,     // Cambricon MLU-Link
  kMetaxLink,
  kMtLink,      // Moore Threads
  kBlink,       // Biren
  kGcuLink,     // Enflame GCU-LARE
  kXpuLink,     // Kunlunxin
  kPcieSwitch,  // derived: share a PCIe switch below the root complex
  kHostBridge,  // derived: share a PCIe root complex (host bridge)
  kNuma,        // derived: different host bridges, same NUMA node
  kCrossNuma,   // derived: different NUMA nodes (QPI/UPI/xGMI between CPUs)
};
inline constexpr int kLinkTypeCount = 16;

// Wire name, e.g. "nvswitch", "hccs-switch", "cross-numa".
std::string_view LinkTypeName(LinkType type);
std::optional<LinkType> ParseLinkType(std::string_view name);
bool IsDerivedPcie(LinkType type);

// Vendor groups. The rule sets refer to groups by kind.
enum class GroupKind {
  kHccsRing,       // Ascend 910: ring of 4
  kHccsArea,       // Ascend 910B Box16: area of 8
  kHiamModule,     // Ascend A3: module of 2 dies
  kNvSwitchBoard,  // NVIDIA baseboard
  kLinkDomain,     // any other scale-up domain (MLU-Link board, xGMI hive, ...)
  kCard,           // devices on one physical card
  kPcieSwitch,     // derived
  kHostBridge,     // derived
  kNuma,           // derived
};
inline constexpr int kGroupKindCount = 9;
std::string_view GroupKindName(GroupKind kind);
std::optional<GroupKind> ParseGroupKind(std::string_view name);

// Allocation rules of a server family (docs/reference/hardware.md §1.1, §1.3, §3).
enum class RuleSetKind {
  kAny,              // any count 1..n (910B x8, xGMI boards, generic)
  kAscend910Ring,    // counts 1,2,4,8; <=4 inside one HCCS ring; published ring preference
  kAscend910BBox16,  // 1-8 in one area; 10/12/14 split evenly at equal positions; 16 whole
  kAscendA3,         // 1, or even counts made of whole HiAM modules
  kNvSwitch,         // any count, all pairs equal
  kPcieTree,         // any count; prefer same switch, then host bridge, then NUMA (by bandwidth)
  kRingSets,         // only the listed device sets (Cambricon / Kunlun style)
};
inline constexpr int kRuleSetKindCount = 7;
std::string_view RuleSetKindName(RuleSetKind kind);
std::optional<RuleSetKind> ParseRuleSetKind(std::string_view name);

struct DeviceSpec {
  std::string name;  // "<kind>-<index>", e.g. "npu-3"
  std::string kind;  // "npu", "gpu", "dcu", "mlu", "gcu", "xpu", ...
  int index = 0;     // vendor's physical index
  int64_t memory_bytes = 0;
  int numa_node = -1;  // -1: unknown
  // PCIe path from the root complex down to the device, e.g.
  // {"pci0000:17", "0000:17:00.0", "0000:18:00.0", "0000:19:00.0"}; empty: unknown.
  std::vector<std::string> pcie_path;
};

// A link between two devices, or between every pair of a mesh.
struct LinkSpec {
  LinkType type = LinkType::kPcieSwitch;
  double bandwidth_gbps = 0;         // GB/s, one direction
  std::vector<std::string> devices;  // 2 names: one link; more: every pair (full mesh)
};

struct GroupSpec {
  std::string name;
  GroupKind kind = GroupKind::kLinkDomain;
  std::vector<std::string> members;  // ordered: position in the group matters (Box16 areas)
};

struct RuleSetSpec {
  RuleSetKind kind = RuleSetKind::kAny;
  // kRingSets only: size -> the allowed device sets of that size. A size not listed is not
  // allowed, except 1, which is always allowed.
  std::map<int, std::vector<std::vector<std::string>>> valid_sets;
};

// Bandwidths (GB/s) given to the derived PCIe relations when a spec does not say otherwise.
// Model values for ranking, not measurements: Gen4 x16 through a switch, through the root
// complex, across host bridges, across sockets.
struct PcieBandwidths {
  double pcie_switch = 32;
  double host_bridge = 24;
  double numa = 16;
  double cross_numa = 10;
};

struct NodeSpec {
  std::string name;
  std::string model;  // server model, free text
  RuleSetSpec rule_set;
  std::vector<DeviceSpec> devices;
  std::vector<LinkSpec> links;
  std::vector<GroupSpec> groups;
  PcieBandwidths pcie;
};

inline constexpr int kMaxDevices = DeviceSet::kCapacity;

// A link as stored in the graph (also the derived PCIe relations).
struct Link {
  int a = 0;
  int b = 0;
  LinkType type = LinkType::kPcieSwitch;
  int64_t bandwidth_mbps = 0;
};

struct Group {
  std::string name;
  GroupKind kind = GroupKind::kLinkDomain;
  std::vector<int> members;  // device ids in the spec's order
  DeviceSet mask;
  bool derived = false;  // built from PCIe paths / NUMA, not from the spec
};

class Node {
 public:
  // Validates and compiles. Errors name the field, e.g. "devices[3].name: duplicate name gpu-1".
  static StatusOr<Node> Build(const NodeSpec& spec);

  const std::string& name() const { return name_; }
  const std::string& model() const { return model_; }
  RuleSetKind rule_set() const { return rule_set_; }

  // Devices sorted by (index, name): the id of a device is its position here, so lower id
  // means lower vendor index.
  int size() const { return static_cast<int>(devices_.size()); }
  const std::vector<DeviceSpec>& devices() const { return devices_; }
  const DeviceSpec& device(int id) const { return devices_[static_cast<size_t>(id)]; }
  std::optional<int> FindDevice(std::string_view name) const;
  DeviceSet All() const { return DeviceSet::FirstN(size()); }

  // Parses "a,b,c" device names into a set ("" is the empty set); unknown, empty and repeated
  // names are errors naming the name.
  StatusOr<DeviceSet> ParseDeviceList(std::string_view csv) const;
  std::vector<std::string> Names(DeviceSet set) const;

  // Best bandwidth between two distinct devices (MB/s; 0 when they are not connected at all),
  // and the type of that link.
  int64_t PairBandwidth(int a, int b) const { return bw_[Idx(a, b)]; }
  LinkType PairLinkType(int a, int b) const { return pair_type_[Idx(a, b)]; }
  int64_t MaxPairBandwidth() const { return max_bw_; }
  // Fastest link of one device to any other.
  int64_t MaxPairBandwidth(int id) const { return row_max_[static_cast<size_t>(id)]; }

  // Every link, direct and derived, as stored in the Boost graph.
  std::vector<Link> Links() const;
  const std::vector<Group>& groups() const { return groups_; }
  const std::vector<DeviceSet>& valid_sets(int size) const;

  const internal::DeviceGraph& graph() const { return graph_; }

  // Units the solver picks whole, with symmetry classes: two units share a class when swapping
  // them (member by member) maps every pair bandwidth, link type and group onto itself, so any
  // set using one scores like the same set using the other. Units are sorted by lowest member.
  struct UnitSystem {
    std::vector<DeviceSet> units;
    std::vector<int> unit_class;
  };
  // Single devices (for ring-sets every device is its own class: the listed sets name devices).
  const UnitSystem& singles() const { return singles_; }
  // A3: the HiAM modules. Empty for other rule sets.
  const UnitSystem& modules() const { return modules_; }
  // Box16: position pairs {area0[p], area1[p]}. Empty for other rule sets.
  const UnitSystem& positions() const { return positions_; }

 private:
  size_t Idx(int a, int b) const {
    return static_cast<size_t>(a) * devices_.size() + static_cast<size_t>(b);
  }
  Status Compile(const NodeSpec& spec);
  void DerivePcie(const PcieBandwidths& pcie);
  Status CheckRuleSet(const RuleSetSpec& rules);
  void ComputeClasses();
  UnitSystem MakeUnits(std::vector<DeviceSet> units) const;
  bool SwapIsAutomorphism(const std::vector<int>& perm) const;

  std::string name_;
  std::string model_;
  RuleSetKind rule_set_ = RuleSetKind::kAny;
  std::vector<DeviceSpec> devices_;
  internal::DeviceGraph graph_;
  std::vector<int64_t> bw_;
  std::vector<LinkType> pair_type_;
  int64_t max_bw_ = 0;
  std::vector<int64_t> row_max_;
  std::vector<Group> groups_;
  std::map<int, std::vector<DeviceSet>> valid_sets_;
  UnitSystem singles_;
  UnitSystem modules_;
  UnitSystem positions_;
};

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_MODEL_H_
