#include "topology/model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <set>
#include <utility>

#include "base/name_list.h"

namespace xpu::topology {
namespace {

constexpr std::array<std::string_view, kLinkTypeCount> kLinkTypeNames = {
    "nvswitch",    "nvlink",      "hccs",   "sio",       "hccs-switch", "xgmi",
    "mlulink",     "metaxlink",   "mtlink", "blink",     "gcu-link",    "xpulink",
    "pcie-switch", "host-bridge", "numa",   "cross-numa"};

constexpr std::array<std::string_view, kGroupKindCount> kGroupKindNames = {
    "hccs-ring",   "hccs-area",   "hiam-module", "nvswitch-board", "link-domain", "card",
    "pcie-switch", "host-bridge", "numa"};

constexpr std::array<std::string_view, kRuleSetKindCount> kRuleSetNames = {
    "any", "ascend910-ring", "ascend910b-box16", "ascend-a3", "nvswitch", "pcie-tree", "ring-sets"};

template <typename Enum, size_t N>
std::optional<Enum> ParseName(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

int64_t ToMbps(double gbps) { return std::llround(gbps * 1000.0); }

std::string Field(std::string_view list, size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "]";
}

}  // namespace

std::string_view LinkTypeName(LinkType type) { return kLinkTypeNames[static_cast<size_t>(type)]; }
std::optional<LinkType> ParseLinkType(std::string_view name) {
  return ParseName<LinkType>(kLinkTypeNames, name);
}
bool IsDerivedPcie(LinkType type) {
  return type == LinkType::kPcieSwitch || type == LinkType::kHostBridge ||
         type == LinkType::kNuma || type == LinkType::kCrossNuma;
}

std::string_view GroupKindName(GroupKind kind) {
  return kGroupKindNames[static_cast<size_t>(kind)];
}
std::optional<GroupKind> ParseGroupKind(std::string_view name) {
  return ParseName<GroupKind>(kGroupKindNames, name);
}

std::string_view RuleSetKindName(RuleSetKind kind) {
  return kRuleSetNames[static_cast<size_t>(kind)];
}
std::optional<RuleSetKind> ParseRuleSetKind(std::string_view name) {
  return ParseName<RuleSetKind>(kRuleSetNames, name);
}

StatusOr<Node> Node::Build(const NodeSpec& spec) {
  Node node;
  RETURN_IF_ERROR(node.Compile(spec));
  return node;
}

std::optional<int> Node::FindDevice(std::string_view name) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

StatusOr<DeviceSet> Node::ParseDeviceList(std::string_view csv) const {
  ASSIGN_OR_RETURN(const std::vector<std::string> names, SplitNameList(csv));
  DeviceSet set;
  for (const std::string& name : names) {
    std::optional<int> id = FindDevice(name);
    if (!id) return NotFoundError("device " + name + " is not on node " + name_);
    set.Add(*id);
  }
  return set;
}

std::vector<std::string> Node::Names(DeviceSet set) const {
  std::vector<std::string> names;
  for (int id : set.Ids()) names.push_back(devices_[static_cast<size_t>(id)].name);
  return names;
}

std::vector<Link> Node::Links() const {
  std::vector<Link> links;
  for (auto [it, end] = boost::edges(graph_); it != end; ++it) {
    const auto& props = graph_[*it];
    links.push_back(Link{graph_[boost::source(*it, graph_)].device,
                         graph_[boost::target(*it, graph_)].device, props.type,
                         props.bandwidth_mbps});
  }
  return links;
}

const std::vector<DeviceSet>& Node::valid_sets(int size) const {
  static const std::vector<DeviceSet> kNone;
  auto it = valid_sets_.find(size);
  return it == valid_sets_.end() ? kNone : it->second;
}

namespace {
namespace model_cc {

// The spec's devices: at least one, at most kMaxDevices, each named, of a kind, with a
// non-negative index and memory, no name twice and no (kind, index) twice.
Status CheckDevices(const std::vector<DeviceSpec>& devices) {
  if (devices.empty()) {
    return InvalidArgumentError("devices: a node needs at least one device");
  }
  if (devices.size() > static_cast<size_t>(kMaxDevices)) {
    return InvalidArgumentError("devices: " + std::to_string(devices.size()) +
                                " devices; at most " + std::to_string(kMaxDevices) + " per node");
  }
  std::set<std::string> names;
  std::set<std::pair<std::string, int>> kind_index;
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceSpec& d = devices[i];
    const std::string f = Field("devices", i);
    if (d.name.empty()) return InvalidArgumentError(f + ".name: must not be empty");
    if (d.kind.empty()) return InvalidArgumentError(f + ".kind: must not be empty");
    if (d.index < 0) return InvalidArgumentError(f + ".index: must not be negative");
    if (d.memory_bytes < 0) return InvalidArgumentError(f + ".memory: must not be negative");
    if (!names.insert(d.name).second) {
      return InvalidArgumentError(f + ".name: duplicate device name " + d.name);
    }
    if (!kind_index.insert({d.kind, d.index}).second) {
      return InvalidArgumentError(f + ".index: duplicate index " + std::to_string(d.index) +
                                  " for kind " + d.kind);
    }
  }
  return OkStatus();
}

// The id of `device` on `node`; an unknown device is an error naming `field`.
StatusOr<int> Lookup(const Node& node, const std::string& field, const std::string& device) {
  std::optional<int> id = node.FindDevice(device);
  if (!id) return InvalidArgumentError(field + ": unknown device " + device);
  return *id;
}

// The ids of a list of distinct devices of `node`; `field` names the list.
StatusOr<std::vector<int>> DistinctIds(const Node& node, const std::string& field,
                                       const std::vector<std::string>& devices) {
  std::vector<int> ids;
  for (size_t j = 0; j < devices.size(); ++j) {
    ASSIGN_OR_RETURN(int id, Lookup(node, field + Field("", j), devices[j]));
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
      return InvalidArgumentError(field + Field("", j) + ": device " + devices[j] +
                                  " listed twice");
    }
    ids.push_back(id);
  }
  return ids;
}

// Adds the spec's links to `graph`, one edge per pair of each link's devices.
Status AddSpecLinks(const Node& node, const std::vector<LinkSpec>& links,
                    internal::DeviceGraph& graph) {
  for (size_t i = 0; i < links.size(); ++i) {
    const LinkSpec& l = links[i];
    const std::string f = Field("links", i);
    if (l.devices.size() < 2) {
      return InvalidArgumentError(f + ".devices: a link needs at least 2 devices");
    }
    if (!(l.bandwidth_gbps > 0) || !std::isfinite(l.bandwidth_gbps)) {
      return InvalidArgumentError(f + ".bandwidthGBps: must be a positive number");
    }
    ASSIGN_OR_RETURN(const std::vector<int> ids, DistinctIds(node, f + ".devices", l.devices));
    for (size_t a = 0; a < ids.size(); ++a) {
      for (size_t b = a + 1; b < ids.size(); ++b) {
        boost::add_edge(static_cast<size_t>(ids[a]), static_cast<size_t>(ids[b]),
                        internal::EdgeProps{l.type, ToMbps(l.bandwidth_gbps)}, graph);
      }
    }
  }
  return OkStatus();
}

// The best link of every ordered pair of `n` devices (row-major; a pair with no link: 0 MB/s,
// cross-NUMA), the fastest overall and the fastest of each device.
struct PairTable {
  std::vector<int64_t> bw;
  std::vector<LinkType> type;
  int64_t max_bw = 0;
  std::vector<int64_t> row_max;
};

PairTable BestPairLinks(const std::vector<Link>& links, size_t n) {
  PairTable t;
  t.bw.assign(n * n, 0);
  t.type.assign(n * n, LinkType::kCrossNuma);
  std::vector<bool> seen(n * n, false);
  for (const Link& l : links) {
    for (auto [x, y] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}}) {
      const size_t k = static_cast<size_t>(x) * n + static_cast<size_t>(y);
      const bool better = !seen[k] || l.bandwidth_mbps > t.bw[k] ||
                          (l.bandwidth_mbps == t.bw[k] && l.type < t.type[k]);
      if (better) {
        t.bw[k] = l.bandwidth_mbps;
        t.type[k] = l.type;
        seen[k] = true;
      }
    }
  }
  t.max_bw = n > 1 ? *std::max_element(t.bw.begin(), t.bw.end()) : 0;
  t.row_max.assign(n, 0);
  for (size_t a = 0; a < n; ++a) {
    t.row_max[a] = *std::max_element(t.bw.begin() + static_cast<long>(a * n),
                                     t.bw.begin() + static_cast<long>((a + 1) * n));
  }
  return t;
}

// The spec's groups: named once each, with members, each member a device of `node` once.
StatusOr<std::vector<Group>> SpecGroups(const Node& node, const std::vector<GroupSpec>& specs) {
  std::vector<Group> groups;
  std::set<std::string> group_names;
  for (size_t i = 0; i < specs.size(); ++i) {
    const GroupSpec& g = specs[i];
    const std::string f = Field("groups", i);
    if (g.name.empty()) return InvalidArgumentError(f + ".name: must not be empty");
    if (!group_names.insert(g.name).second) {
      return InvalidArgumentError(f + ".name: duplicate group " + g.name);
    }
    if (g.members.empty()) return InvalidArgumentError(f + ".members: a group needs members");
    Group group{g.name, g.kind, {}, {}, false};
    ASSIGN_OR_RETURN(group.members, DistinctIds(node, f + ".members", g.members));
    for (int id : group.members) group.mask.Add(id);
    groups.push_back(std::move(group));
  }
  return groups;
}

// The PCIe switch, host bridge and NUMA groups of `devices` (by id) with 2 or more members but
// not all of them, unless `existing` already has a group of the same members.
std::vector<Group> DerivedGroups(const std::vector<DeviceSpec>& devices,
                                 const std::vector<Group>& existing) {
  const size_t n = devices.size();
  std::map<std::pair<GroupKind, std::string>, std::vector<int>> derived;
  for (size_t i = 0; i < n; ++i) {
    const DeviceSpec& d = devices[i];
    if (d.pcie_path.size() >= 3) {
      derived[{GroupKind::kPcieSwitch, d.pcie_path[1]}].push_back(static_cast<int>(i));
    }
    if (!d.pcie_path.empty()) {
      derived[{GroupKind::kHostBridge, d.pcie_path[0]}].push_back(static_cast<int>(i));
    }
    if (d.numa_node >= 0) {
      derived[{GroupKind::kNuma, std::to_string(d.numa_node)}].push_back(static_cast<int>(i));
    }
  }
  std::vector<Group> groups;
  for (GroupKind kind : {GroupKind::kPcieSwitch, GroupKind::kHostBridge, GroupKind::kNuma}) {
    for (const auto& [key, members] : derived) {
      if (key.first != kind || members.size() < 2 || members.size() == n) continue;
      DeviceSet mask = DeviceSet::Of(members);
      // A derived group with the same members as an existing one would count twice.
      auto same = [&](const Group& g) { return g.mask == mask; };
      if (std::any_of(existing.begin(), existing.end(), same) ||
          std::any_of(groups.begin(), groups.end(), same)) {
        continue;
      }
      groups.push_back(
          Group{std::string(GroupKindName(kind)) + "-" + key.second, kind, members, mask, true});
    }
  }
  return groups;
}

}  // namespace model_cc
}  // namespace

Status Node::Compile(const NodeSpec& spec) {
  using namespace model_cc;  // NOLINT(google-build-using-namespace): this file's steps
  if (spec.name.empty()) return InvalidArgumentError("name: must not be empty");
  name_ = spec.name;
  model_ = spec.model;
  rule_set_ = spec.rule_set.kind;
  RETURN_IF_ERROR(CheckDevices(spec.devices));
  devices_ = spec.devices;
  std::sort(devices_.begin(), devices_.end(), [](const DeviceSpec& a, const DeviceSpec& b) {
    return std::tie(a.index, a.name) < std::tie(b.index, b.name);
  });
  const size_t n = devices_.size();
  graph_ = internal::DeviceGraph(n);
  for (size_t i = 0; i < n; ++i) graph_[i].device = static_cast<int>(i);
  RETURN_IF_ERROR(AddSpecLinks(*this, spec.links, graph_));
  DerivePcie(spec.pcie);

  PairTable pairs = BestPairLinks(Links(), n);
  bw_ = std::move(pairs.bw);
  pair_type_ = std::move(pairs.type);
  max_bw_ = pairs.max_bw;
  row_max_ = std::move(pairs.row_max);

  // Groups from the spec, then derived PCIe / NUMA groups.
  ASSIGN_OR_RETURN(groups_, SpecGroups(*this, spec.groups));
  for (Group& g : DerivedGroups(devices_, groups_)) groups_.push_back(std::move(g));

  RETURN_IF_ERROR(CheckRuleSet(spec.rule_set));
  ComputeClasses();
  return OkStatus();
}

void Node::DerivePcie(const PcieBandwidths& pcie) {
  const int n = size();
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const DeviceSpec& x = devices_[static_cast<size_t>(a)];
      const DeviceSpec& y = devices_[static_cast<size_t>(b)];
      const bool numa_known = x.numa_node >= 0 && y.numa_node >= 0;
      std::optional<std::pair<LinkType, double>> rel;
      if (numa_known && x.numa_node != y.numa_node) {
        rel = {LinkType::kCrossNuma, pcie.cross_numa};
      } else if (!x.pcie_path.empty() && !y.pcie_path.empty()) {
        size_t common = 0;
        while (common < x.pcie_path.size() && common < y.pcie_path.size() &&
               x.pcie_path[common] == y.pcie_path[common]) {
          ++common;
        }
        if (common >= 2) {
          rel = {LinkType::kPcieSwitch, pcie.pcie_switch};
        } else if (common == 1) {
          rel = {LinkType::kHostBridge, pcie.host_bridge};
        } else {
          rel = {LinkType::kNuma, pcie.numa};
        }
      } else if (numa_known) {
        rel = {LinkType::kNuma, pcie.numa};
      }
      if (rel) {
        boost::add_edge(static_cast<size_t>(a), static_cast<size_t>(b),
                        internal::EdgeProps{rel->first, ToMbps(rel->second)}, graph_);
      }
    }
  }
}

Status Node::CheckRuleSet(const RuleSetSpec& rules) {
  // Groups of `kind` must cover every device exactly once; returns them in device order.
  auto partition = [&](GroupKind kind) -> StatusOr<std::vector<const Group*>> {
    std::vector<const Group*> parts;
    DeviceSet covered;
    for (const Group& g : groups_) {
      if (g.kind != kind) continue;
      if (covered.Intersects(g.mask)) {
        return InvalidArgumentError("ruleSet: " + std::string(RuleSetKindName(rule_set_)) +
                                    " needs " + std::string(GroupKindName(kind)) +
                                    " groups that do not overlap; " + g.name + " overlaps another");
      }
      covered = covered | g.mask;
      parts.push_back(&g);
    }
    if (covered != All()) {
      return InvalidArgumentError(
          "ruleSet: " + std::string(RuleSetKindName(rule_set_)) + " needs " +
          std::string(GroupKindName(kind)) + " groups covering every device; " +
          devices_[static_cast<size_t>((All() - covered).First())].name + " is in none");
    }
    std::sort(parts.begin(), parts.end(),
              [](const Group* a, const Group* b) { return a->mask.First() < b->mask.First(); });
    return parts;
  };
  switch (rule_set_) {
    case RuleSetKind::kAscend910Ring: {
      ASSIGN_OR_RETURN(auto rings, partition(GroupKind::kHccsRing));
      (void)rings;
      break;
    }
    case RuleSetKind::kAscendA3: {
      ASSIGN_OR_RETURN(auto modules, partition(GroupKind::kHiamModule));
      std::vector<DeviceSet> units;
      for (const Group* g : modules) units.push_back(g->mask);
      modules_ = MakeUnits(std::move(units));
      break;
    }
    case RuleSetKind::kAscend910BBox16: {
      ASSIGN_OR_RETURN(auto areas, partition(GroupKind::kHccsArea));
      if (areas.size() != 2 || areas[0]->members.size() != areas[1]->members.size()) {
        return InvalidArgumentError(
            "ruleSet: ascend910b-box16 needs two hccs-area groups of equal size");
      }
      std::vector<DeviceSet> units;
      for (size_t p = 0; p < areas[0]->members.size(); ++p) {
        units.push_back(DeviceSet::Of({areas[0]->members[p], areas[1]->members[p]}));
      }
      positions_ = MakeUnits(std::move(units));
      break;
    }
    case RuleSetKind::kRingSets: {
      for (const auto& [set_size, sets] : rules.valid_sets) {
        const std::string f = "ruleSet.validSets[" + std::to_string(set_size) + "]";
        if (set_size < 1 || set_size > size()) {
          return InvalidArgumentError(f + ": size must be 1.." + std::to_string(size()));
        }
        for (size_t i = 0; i < sets.size(); ++i) {
          DeviceSet set;
          for (size_t j = 0; j < sets[i].size(); ++j) {
            std::optional<int> id = FindDevice(sets[i][j]);
            if (!id) {
              return InvalidArgumentError(f + Field("", i) + Field("", j) + ": unknown device " +
                                          sets[i][j]);
            }
            set.Add(*id);
          }
          if (set.size() != set_size) {
            return InvalidArgumentError(f + Field("", i) + ": has " + std::to_string(set.size()) +
                                        " distinct devices, want " + std::to_string(set_size));
          }
          valid_sets_[set_size].push_back(set);
        }
      }
      break;
    }
    case RuleSetKind::kAny:
    case RuleSetKind::kNvSwitch:
    case RuleSetKind::kPcieTree:
      break;
  }
  return OkStatus();
}

bool Node::SwapIsAutomorphism(const std::vector<int>& perm) const {
  const int n = size();
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const size_t from = Idx(a, b);
      const size_t to = Idx(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
      if (bw_[from] != bw_[to] || pair_type_[from] != pair_type_[to]) return false;
    }
  }
  for (const Group& g : groups_) {
    DeviceSet image;
    for (int m : g.members) image.Add(perm[static_cast<size_t>(m)]);
    if (image != g.mask) return false;
  }
  return true;
}

namespace {
// Joins each item to the first earlier class representative it is equivalent to.
std::vector<int> Classify(int count, const std::function<bool(int, int)>& equivalent) {
  std::vector<int> cls(static_cast<size_t>(count), -1);
  std::vector<int> reps;
  for (int i = 0; i < count; ++i) {
    for (size_t c = 0; c < reps.size(); ++c) {
      if (equivalent(reps[c], i)) {
        cls[static_cast<size_t>(i)] = static_cast<int>(c);
        break;
      }
    }
    if (cls[static_cast<size_t>(i)] < 0) {
      cls[static_cast<size_t>(i)] = static_cast<int>(reps.size());
      reps.push_back(i);
    }
  }
  return cls;
}
}  // namespace

Node::UnitSystem Node::MakeUnits(std::vector<DeviceSet> units) const {
  std::sort(units.begin(), units.end(),
            [](DeviceSet a, DeviceSet b) { return a.First() < b.First(); });
  UnitSystem sys;
  sys.unit_class = Classify(static_cast<int>(units.size()), [&](int u, int v) {
    std::vector<int> a = units[static_cast<size_t>(u)].Ids();
    std::vector<int> b = units[static_cast<size_t>(v)].Ids();
    if (a.size() != b.size()) return false;
    std::vector<int> perm(static_cast<size_t>(size()));
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = 0; i < a.size(); ++i) {
      std::swap(perm[static_cast<size_t>(a[i])], perm[static_cast<size_t>(b[i])]);
    }
    return SwapIsAutomorphism(perm);
  });
  sys.units = std::move(units);
  return sys;
}

void Node::ComputeClasses() {
  std::vector<DeviceSet> singles;
  for (int i = 0; i < size(); ++i) singles.push_back(DeviceSet::Of({i}));
  singles_ = MakeUnits(std::move(singles));
  if (rule_set_ == RuleSetKind::kRingSets) {
    // The listed sets name devices: no two devices are interchangeable.
    std::iota(singles_.unit_class.begin(), singles_.unit_class.end(), 0);
  }
}

}  // namespace xpu::topology
