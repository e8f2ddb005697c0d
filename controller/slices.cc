#include "controller/slices.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "api/validation.h"
#include "controller/fabric_tiers.h"
#include "controller/partitions.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::controller {
namespace {

using api::resource::Counter;
using api::resource::CounterSet;
using api::resource::Device;
using api::resource::DeviceAttribute;
using api::resource::DeviceCapacity;
using api::resource::DeviceCounterConsumption;
using api::resource::DeviceTaint;
using api::resource::ResourceSliceSpec;

constexpr size_t kMaxAttributeString = 64;
constexpr size_t kMaxLabelValue = 63;
constexpr std::string_view kKubernetesDomain = "resource.kubernetes.io/";

DeviceTaint Taint(std::string_view key, std::string value, std::string effect) {
  DeviceTaint taint;
  taint.key = std::string(key);
  taint.value = std::move(value);
  taint.effect = std::move(effect);
  return taint;
}

Counter One() {
  Counter counter;
  counter.value = "1";
  return counter;
}

bool IsLabelChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
}

// `text` as a label value: other characters become '-', cut to 63, alphanumeric at both ends.
std::string LabelValue(std::string_view text) {
  std::string value;
  for (char c : text) value += IsLabelChar(c) ? c : '-';
  if (value.size() > kMaxLabelValue) value.resize(kMaxLabelValue);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!value.empty() && !alnum(value.back())) value.pop_back();
  size_t start = 0;
  while (start < value.size() && !alnum(value[start])) ++start;
  return value.substr(start);
}

// A vendor-specific attribute: domain-qualified outside resource.kubernetes.io.
bool IsVendorSpecific(std::string_view name) {
  return name.find('/') != std::string_view::npos && !name.starts_with(kKubernetesDomain);
}

bool IsScaleUpGroupKind(std::string_view kind) {
  return kind == "hccs-ring" || kind == "hccs-area" || kind == "nvswitch-board" ||
         kind == "link-domain";
}

bool IsDirectLink(std::string_view type) {
  const std::optional<topology::LinkType> parsed = topology::ParseLinkType(type);
  return !parsed.has_value() || !topology::IsDerivedPcie(*parsed);
}

// The scale-up domain of each device (by inventory position) that has none in the inventory.
std::vector<std::string> ScaleUpDomains(const api::NodeInventory& inventory) {
  const std::vector<api::InventoryDevice>& devices = inventory.status.devices;
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < devices.size(); ++i) position.emplace(devices[i].name, i);
  std::vector<std::string> domains(devices.size());
  for (const api::InventoryGroup& group : inventory.status.groups) {
    if (!IsScaleUpGroupKind(group.kind)) continue;
    for (const std::string& member : group.devices) {
      auto it = position.find(member);
      if (it != position.end() && domains[it->second].empty()) domains[it->second] = group.name;
    }
  }
  // Components over direct links, for the devices still without a domain.
  std::vector<size_t> parent(devices.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&parent](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::vector<bool> linked(devices.size(), false);
  for (const api::InventoryLink& link : inventory.status.links) {
    if (!IsDirectLink(link.type)) continue;
    auto a = position.find(link.a);
    auto b = position.find(link.b);
    if (a == position.end() || b == position.end() || a->second == b->second) continue;
    linked[a->second] = linked[b->second] = true;
    parent[find(a->second)] = find(b->second);
  }
  // Number components by their lowest member (vendor index, then name).
  std::vector<size_t> by_index(devices.size());
  for (size_t i = 0; i < by_index.size(); ++i) by_index[i] = i;
  std::stable_sort(by_index.begin(), by_index.end(), [&devices](size_t a, size_t b) {
    return std::tie(devices[a].index, devices[a].name) <
           std::tie(devices[b].index, devices[b].name);
  });
  std::map<size_t, std::string> component_name;
  for (size_t i : by_index) {
    if (!linked[i]) continue;
    const size_t root = find(i);
    if (!component_name.contains(root)) {
      component_name[root] = "scaleup-" + std::to_string(component_name.size());
    }
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!domains[i].empty()) continue;
    domains[i] = linked[i] ? component_name[find(i)] : "node";
  }
  return domains;
}

// fabricDomain, leaf and spine from the Node's labels, else from the inventory's fabric.
// fabricDomain is the super-pod label, else a scale-up (clique) label; from the inventory, the
// clique id, else the super-pod id.
std::map<std::string, std::string> FabricValues(const api::NodeInventory& inventory,
                                                const NodeFacts& node) {
  std::map<std::string, std::string> values;
  const std::map<FabricTier, std::string> tiers = NodeFabricTiers(node.labels, nullptr);
  for (FabricTier tier : {FabricTier::kSuperPod, FabricTier::kScaleUp}) {
    if (auto it = tiers.find(tier); it != tiers.end()) values.emplace("fabricDomain", it->second);
  }
  if (auto it = tiers.find(FabricTier::kLeaf); it != tiers.end()) {
    values.emplace("leaf", it->second);
  }
  if (auto it = tiers.find(FabricTier::kSpine); it != tiers.end()) {
    values.emplace("spine", it->second);
  }
  if (inventory.status.fabric.has_value()) {
    const api::InventoryFabric& fabric = *inventory.status.fabric;
    const std::string& domain = !fabric.clique_id.empty() ? fabric.clique_id : fabric.super_pod_id;
    if (!domain.empty()) values.emplace("fabricDomain", domain);
    if (!fabric.leaf.empty()) values.emplace("leaf", fabric.leaf);
    if (!fabric.spine.empty()) values.emplace("spine", fabric.spine);
  }
  return values;
}

// A slice whose counter-consuming devices all carry partitionType names it (1.37).
void NamePartitionType(ResourceSliceSpec& spec, const std::string& driver) {
  bool consuming = false;
  for (const Device& d : spec.devices) {
    if (d.consumes_counters.empty()) continue;
    consuming = true;
    if (!d.attributes.contains(std::string(kPartitionTypeAttribute))) return;
  }
  if (consuming) {
    spec.partition_type_attribute = driver + "/" + std::string(kPartitionTypeAttribute);
  }
}

// Drops attributes over the per-device limit: vendor-specific ones first, then names outside
// the vocabulary, then vocabulary names, each from the end of the name order.
void LimitAttributes(Device& device, int limit, std::vector<std::string>& notes) {
  auto total = [&device] {
    return static_cast<int>(device.attributes.size() + device.capacity.size());
  };
  if (total() <= limit) return;
  auto rank = [](const std::string& name) {
    if (IsVendorSpecific(name)) return 0;
    if (name != "groupSize" && !api::VocabularyAttributeType(name).has_value()) return 1;
    return 2;
  };
  std::vector<std::string> order;
  for (int r = 0; r <= 2; ++r) {
    for (auto it = device.attributes.rbegin(); it != device.attributes.rend(); ++it) {
      if (rank(it->first) == r) order.push_back(it->first);
    }
  }
  for (const std::string& name : order) {
    if (total() <= limit) break;
    device.attributes.erase(name);
    notes.push_back("device " + device.name + ": attribute " + name + " left out: more than " +
                    std::to_string(limit) + " attributes and capacities");
  }
}

struct BuiltDevice {
  Device device;
  std::string kind;
  int64_t index = 0;
};

StatusOr<std::vector<BuiltDevice>> BuildDevices(const api::NodeInventory& inventory,
                                                const NodeFacts& node, const Config& config,
                                                std::vector<std::string>& notes) {
  const std::vector<api::InventoryDevice>& devices = inventory.status.devices;
  const std::vector<std::string> domains = ScaleUpDomains(inventory);
  const std::map<std::string, std::string> fabric = FabricValues(inventory, node);
  std::set<std::string> link_down;
  for (const api::InventoryLink& link : inventory.status.links) {
    if (link.state != "down") continue;
    link_down.insert(link.a);
    link_down.insert(link.b);
  }
  std::set<std::string> names;
  std::vector<BuiltDevice> built;
  for (size_t i = 0; i < devices.size(); ++i) {
    const api::InventoryDevice& in = devices[i];
    const std::string field = "status.devices[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(api::ValidateDnsLabel(in.name, field + ".name"));
    if (!names.insert(in.name).second) {
      return InvalidArgumentError(field + ".name: duplicate device name " + in.name);
    }
    BuiltDevice out;
    out.kind = in.kind;
    out.index = in.index;
    Device& d = out.device;
    d.name = in.name;
    for (const auto& [name, value] : in.attributes) {
      DeviceAttribute attribute;
      attribute.int_value = value.int_value;
      attribute.bool_value = value.bool_value;
      attribute.string_value = value.string_value;
      attribute.version = value.version;
      const int set = int{attribute.int_value.has_value()} + int{attribute.bool_value.has_value()} +
                      int{attribute.string_value.has_value()} + int{attribute.version.has_value()};
      if (set != 1) {
        notes.push_back("device " + in.name + ": attribute " + name +
                        " left out: not exactly one value");
        continue;
      }
      d.attributes.emplace(name, std::move(attribute));
    }
    if (!in.uuid.empty() && !d.attributes.contains("uuid")) {
      d.attributes.emplace("uuid", DeviceAttribute::String(in.uuid));
    }
    if (!d.attributes.contains("scaleUpDomain")) {
      d.attributes.emplace("scaleUpDomain", DeviceAttribute::String(domains[i]));
    }
    if (std::string pcie_switch = DevicePcieSwitch(in); !pcie_switch.empty()) {
      d.attributes.emplace(std::string(kPcieSwitchAttribute),
                           DeviceAttribute::String(std::move(pcie_switch)));
    }
    for (const auto& [name, value] : fabric) {
      d.attributes.insert_or_assign(name, DeviceAttribute::String(value));
    }
    if (!node.gang.empty()) {
      d.attributes.insert_or_assign("gang", DeviceAttribute::String(node.gang));
    }
    for (auto it = d.attributes.begin(); it != d.attributes.end();) {
      const DeviceAttribute& a = it->second;
      const std::optional<std::string>& text = a.string_value ? a.string_value : a.version;
      if (text.has_value() && text->size() > kMaxAttributeString) {
        notes.push_back("device " + in.name + ": attribute " + it->first +
                        " left out: value longer than 64 characters");
        it = d.attributes.erase(it);
      } else {
        ++it;
      }
    }
    if (!in.memory.empty()) {
      d.capacity.emplace("memory", DeviceCapacity{in.memory, std::nullopt, nullptr});
    }

    if (in.health != "Healthy") {
      d.taints.push_back(Taint(kUnhealthyTaint,
                               LabelValue(in.health.empty() ? "Unknown" : in.health),
                               config.unhealthy_effect));
    } else if (link_down.contains(in.name)) {
      d.taints.push_back(Taint(kUnhealthyTaint, "LinkDown", config.unhealthy_effect));
    }
    const SupportVerdict verdict = CheckSupport(config, in);
    if (!verdict.supported) {
      std::string value = LabelValue(verdict.reason.substr(0, verdict.reason.find(' ')));
      d.taints.push_back(
          Taint(kUnsupportedTaint, value.empty() ? "Unsupported" : value, "NoSchedule"));
    }
    built.push_back(std::move(out));
  }
  return built;
}

// Attributes-mode order (positions into `devices`): the solver's preference for the free
// devices, then the allocated ones, then the `unpublished` ones (left out by the caller);
// inventory order when the topology does not build.
std::vector<size_t> PreferenceOrder(const api::NodeInventory& inventory,
                                    const std::vector<BuiltDevice>& devices,
                                    const std::set<std::string>& allocated,
                                    const std::set<std::string>& unpublished,
                                    std::vector<std::string>& notes) {
  std::vector<size_t> inventory_order(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) inventory_order[i] = i;
  if (devices.empty()) return inventory_order;
  if (devices.size() > static_cast<size_t>(topology::kMaxDevices)) {
    notes.push_back("device order: inventory order, more than " +
                    std::to_string(topology::kMaxDevices) + " devices for the solver");
    return inventory_order;
  }
  StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(inventory);
  StatusOr<topology::Node> node =
      spec.ok() ? topology::Node::Build(*spec) : StatusOr<topology::Node>(spec.status());
  if (!node.ok()) {
    notes.push_back("device order: inventory order, topology does not build: " +
                    node.status().message());
    return inventory_order;
  }
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < devices.size(); ++i) position.emplace(devices[i].device.name, i);
  topology::DeviceSet free;
  topology::DeviceSet taken;
  for (int id = 0; id < node->size(); ++id) {
    const std::string& name = node->device(id).name;
    if (!position.contains(name) || unpublished.contains(name)) continue;
    (allocated.contains(name) ? taken : free).Add(id);
  }
  std::vector<size_t> order;
  auto append = [&](topology::DeviceSet set) {
    for (int id : set.Ids()) order.push_back(position.at(node->device(id).name));
  };
  topology::DeviceSet prefix;
  for (int k = 1; k <= free.size(); ++k) {
    const topology::SolveResult result = topology::Solve(*node, free, k, prefix);
    if (!result.feasible) continue;
    append(result.devices - prefix);
    prefix = result.devices;
  }
  append(free - prefix);
  append(taken);
  // The unpublished devices, last.
  std::vector<bool> placed(devices.size(), false);
  for (size_t i : order) placed[i] = true;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!placed[i]) order.push_back(i);
  }
  return order;
}

int SliceDeviceLimit(const std::vector<Device>& devices, const api::Limits& limits) {
  for (const Device& d : devices) {
    if (!d.taints.empty() || !d.consumes_counters.empty()) {
      return limits.max_devices_per_slice_with_taints_or_counters;
    }
  }
  return limits.max_devices_per_slice;
}

ResourceSliceSpec EmptySlice(const NodeFacts& node, const PublishOptions& options) {
  ResourceSliceSpec spec;
  spec.driver = options.driver;
  spec.pool.name = node.name;
  spec.node_name = node.name;
  return spec;
}

std::vector<ResourceSliceSpec> Split(std::vector<Device> devices, int limit, const NodeFacts& node,
                                     const PublishOptions& options) {
  std::vector<ResourceSliceSpec> slices;
  for (size_t start = 0; start < devices.size(); start += static_cast<size_t>(limit)) {
    ResourceSliceSpec spec = EmptySlice(node, options);
    const size_t end = std::min(devices.size(), start + static_cast<size_t>(limit));
    spec.devices.assign(std::make_move_iterator(devices.begin() + static_cast<long>(start)),
                        std::make_move_iterator(devices.begin() + static_cast<long>(end)));
    slices.push_back(std::move(spec));
  }
  if (slices.empty()) slices.push_back(EmptySlice(node, options));
  return slices;
}

// The device of a group: the attributes all members share, their memory, the union of their
// taints.
Device GroupDevice(const api::GroupDevice& group,
                   const std::map<std::string, const Device*>& by_name) {
  Device d;
  d.name = group.name;
  const Device& first = *by_name.at(group.members.front());
  d.attributes = first.attributes;
  for (const std::string& member : group.members) {
    const Device& m = *by_name.at(member);
    for (auto it = d.attributes.begin(); it != d.attributes.end();) {
      auto found = m.attributes.find(it->first);
      it = (found == m.attributes.end() || !(found->second == it->second)) ? d.attributes.erase(it)
                                                                           : std::next(it);
    }
    for (const DeviceTaint& taint : m.taints) {
      const bool known = std::any_of(d.taints.begin(), d.taints.end(),
                                     [&taint](const DeviceTaint& t) { return t.key == taint.key; });
      if (!known) d.taints.push_back(taint);
    }
  }
  d.capacity = first.capacity;
  return d;
}

struct GroupsResult {
  std::vector<ResourceSliceSpec> slices;
  int devices = 0;
};

// The groups-mode slices, or nullopt with a note when the node does not fit them.
std::optional<GroupsResult> BuildGroups(const api::NodeInventory& inventory,
                                        const std::vector<Device>& singles, const std::string& kind,
                                        const NodeFacts& node, const Config& config,
                                        const PublishOptions& options,
                                        std::vector<std::string>& notes) {
  StatusOr<std::vector<api::GroupDevice>> groups = api::GroupDevices(inventory);
  if (!groups.ok()) {
    notes.push_back("groups mode: falling back to attributes: " + groups.status().message());
    return std::nullopt;
  }
  const std::string set_name = kind + "-members";
  if (!api::IsDnsLabel(set_name)) {
    notes.push_back("groups mode: falling back to attributes: counter set name " + set_name +
                    " is not a DNS label");
    return std::nullopt;
  }
  const api::Limits limits = api::LimitsFor(options.version);
  std::map<std::string, const Device*> by_name;
  CounterSet counter_set;
  counter_set.name = set_name;
  for (const Device& d : singles) {
    by_name.emplace(d.name, &d);
    counter_set.counters.emplace(d.name, One());
  }
  const int counters = static_cast<int>(counter_set.counters.size());
  std::vector<Device> devices;
  for (const Device& single : singles) {
    Device d = single;
    d.attributes.insert_or_assign("groupSize", DeviceAttribute::Int(1));
    DeviceCounterConsumption consumption;
    consumption.counter_set = set_name;
    consumption.counters.emplace(d.name, One());
    d.consumes_counters.push_back(std::move(consumption));
    LimitAttributes(d, limits.max_attributes_and_capacities_per_device, notes);
    devices.push_back(std::move(d));
  }
  int device_counters = counters;
  for (const api::GroupDevice& group : *groups) {
    if (std::find(config.group_sizes.begin(), config.group_sizes.end(), group.size) ==
        config.group_sizes.end()) {
      continue;
    }
    const bool complete =
        std::all_of(group.members.begin(), group.members.end(),
                    [&by_name](const std::string& m) { return by_name.contains(m); });
    if (!complete || group.members.empty()) {
      notes.push_back("group " + group.name + " left out: a member is not published");
      continue;
    }
    Device d = GroupDevice(group, by_name);
    d.attributes.insert_or_assign("groupSize", DeviceAttribute::Int(group.size));
    DeviceCounterConsumption consumption;
    consumption.counter_set = set_name;
    for (const std::string& m : group.members) {
      consumption.counters.emplace(m, One());
    }
    device_counters += group.size;
    d.consumes_counters.push_back(std::move(consumption));
    LimitAttributes(d, limits.max_attributes_and_capacities_per_device, notes);
    devices.push_back(std::move(d));
  }
  const int count = static_cast<int>(devices.size());
  GroupsResult result;
  result.devices = count;
  if (options.version == api::KubeVersion::k1_34) {
    if (count > limits.max_devices_per_slice || counters > limits.max_shared_counters_per_slice ||
        counters > limits.max_counters_per_device ||
        device_counters > limits.max_device_counters_per_slice) {
      notes.push_back("groups mode: falling back to attributes: " + std::to_string(count) +
                      " devices and " + std::to_string(counters) +
                      " counters do not fit one 1.34 slice");
      return std::nullopt;
    }
    ResourceSliceSpec spec = EmptySlice(node, options);
    spec.shared_counters.push_back(std::move(counter_set));
    spec.devices = std::move(devices);
    result.slices.push_back(std::move(spec));
    return result;
  }
  if (counters > limits.max_counters_per_counter_set ||
      counters > limits.max_counters_per_counter_consumption) {
    notes.push_back("groups mode: falling back to attributes: " + std::to_string(counters) +
                    " counters do not fit one counter set");
    return std::nullopt;
  }
  ResourceSliceSpec counters_slice = EmptySlice(node, options);
  counters_slice.shared_counters.push_back(std::move(counter_set));
  result.slices.push_back(std::move(counters_slice));
  if (!devices.empty()) {
    const int limit = SliceDeviceLimit(devices, limits);
    for (ResourceSliceSpec& spec : Split(std::move(devices), limit, node, options)) {
      result.slices.push_back(std::move(spec));
    }
  }
  return result;
}

// The devices to order around as held: those claims hold, and the members of a held group
// device (groups mode).
std::set<std::string> HeldDevices(const api::NodeInventory& inventory, const Config& config,
                                  const std::set<std::string>& allocated) {
  std::set<std::string> held = allocated;
  if (config.mode != PublishMode::kGroups) return held;
  bool any_group = false;
  for (const std::string& name : allocated) any_group |= name.find("-x") != std::string::npos;
  if (!any_group) return held;
  if (auto groups = api::GroupDevices(inventory); groups.ok()) {
    for (const api::GroupDevice& g : *groups) {
      if (allocated.contains(g.name)) held.insert(g.members.begin(), g.members.end());
    }
  }
  return held;
}

// The built devices in publishing order, held to the attribute limit; a tainted one is left out
// when the server drops taints. `kinds`: the kinds of those kept.
std::vector<Device> OrderedDevices(const api::NodeInventory& inventory,
                                   std::vector<BuiltDevice>& built,
                                   const std::set<std::string>& held, const PublishOptions& options,
                                   const api::Limits& limits, std::vector<std::string>& notes,
                                   std::set<std::string>& kinds) {
  std::set<std::string> unpublished;
  if (!options.taints) {
    for (const BuiltDevice& b : built) {
      if (!b.device.taints.empty()) unpublished.insert(b.device.name);
    }
  }
  const std::vector<size_t> order = PreferenceOrder(inventory, built, held, unpublished, notes);
  std::vector<Device> devices;
  for (size_t i : order) {
    Device& d = built[i].device;
    if (!options.taints && !d.taints.empty()) {
      notes.push_back("device " + d.name + " left out: tainted " + d.taints.front().key +
                      " and the server drops taints");
      continue;
    }
    LimitAttributes(d, limits.max_attributes_and_capacities_per_device, notes);
    kinds.insert(built[i].kind);
    devices.push_back(std::move(d));
  }
  return devices;
}

// Groups mode: the pool's slices of group devices, unless it falls back to attributes (a note
// says why and the pool is left without slices).
void PublishGroups(DesiredPool& pool, const api::NodeInventory& inventory,
                   const std::vector<Device>& devices, const std::set<std::string>& kinds,
                   bool partitionable, const NodeFacts& node, const Config& config,
                   const PublishOptions& options) {
  std::optional<GroupsResult> groups;
  if (partitionable) {
    // Partitioning is enabled on this node's devices, a choice made for the node: its
    // partitions need the single devices and their counters, which groups mode does not keep.
    pool.notes.emplace_back(
        "groups mode: falling back to attributes: partitioning is enabled on the node's devices");
  } else if (!options.counters) {
    pool.notes.emplace_back("groups mode: falling back to attributes: the server drops counters");
  } else if (kinds.size() > 1) {
    pool.notes.emplace_back("groups mode: falling back to attributes: mixed device kinds");
  } else if (!devices.empty()) {
    groups = BuildGroups(inventory, devices, *kinds.begin(), node, config, options, pool.notes);
  }
  if (groups.has_value()) {
    pool.mode = PublishMode::kGroups;
    pool.slices = std::move(groups->slices);
    pool.devices = groups->devices;
  }
}

// The partitions of a partitionable node, as far as the server can carry them.
Partitioned PublishablePartitions(const api::NodeInventory& inventory,
                                  const std::set<std::string>& allocated,
                                  std::vector<Device>& devices, const PublishOptions& options,
                                  std::vector<std::string>& notes) {
  Partitioned parts;
  if (options.version == api::KubeVersion::k1_34) {
    notes.emplace_back("partitions not published: 1.34 cannot carry their counters");
    parts.devices = ExistingPartitionsAsDevices(inventory, devices, notes);
  } else if (!options.counters) {
    notes.emplace_back("partitions not published: the server drops counters");
    parts.devices = ExistingPartitionsAsDevices(inventory, devices, notes);
  } else {
    parts = BuildPartitions(inventory, allocated, devices, notes);
  }
  return parts;
}

// Attributes mode: the single devices (and partitions, with their counter sets) in slices.
void PublishAttributes(DesiredPool& pool, const api::NodeInventory& inventory,
                       std::vector<Device> devices, bool partitionable,
                       const std::set<std::string>& allocated, const NodeFacts& node,
                       const PublishOptions& options, const api::Limits& limits) {
  pool.mode = PublishMode::kAttributes;
  Partitioned parts;
  if (partitionable) {
    parts = PublishablePartitions(inventory, allocated, devices, options, pool.notes);
  }
  // The whole devices were held to the attribute limit above; partition devices, and whole
  // devices that gain partitionType, are held to it here.
  const size_t limited = devices.size();
  for (Device& d : parts.devices) devices.push_back(std::move(d));
  for (size_t i = 0; i < devices.size(); ++i) {
    Device& d = devices[i];
    const bool typed = options.partition_type && !d.consumes_counters.empty();
    if (typed) {
      auto profile = d.attributes.find("profile");
      d.attributes.insert_or_assign(
          std::string(kPartitionTypeAttribute),
          DeviceAttribute::String(profile != d.attributes.end()
                                      ? profile->second.string_value.value_or("whole")
                                      : "whole"));
    }
    if (typed || i >= limited) {
      LimitAttributes(d, limits.max_attributes_and_capacities_per_device, pool.notes);
    }
  }
  pool.devices = static_cast<int>(devices.size());
  // Counter sets in slices of their own (1.35+), at most the limit per slice.
  const auto per_slice = static_cast<size_t>(std::max(1, limits.max_counter_sets_per_slice));
  for (size_t start = 0; start < parts.counter_sets.size(); start += per_slice) {
    ResourceSliceSpec spec = EmptySlice(node, options);
    const size_t end = std::min(parts.counter_sets.size(), start + per_slice);
    spec.shared_counters.assign(parts.counter_sets.begin() + static_cast<long>(start),
                                parts.counter_sets.begin() + static_cast<long>(end));
    pool.slices.push_back(std::move(spec));
  }
  const int limit = SliceDeviceLimit(devices, limits);
  for (ResourceSliceSpec& spec : Split(std::move(devices), limit, node, options)) {
    if (spec.devices.empty() && !pool.slices.empty()) continue;
    if (options.partition_type) NamePartitionType(spec, options.driver);
    pool.slices.push_back(std::move(spec));
  }
}

}  // namespace

std::string DevicePcieSwitch(const api::InventoryDevice& device) {
  return device.pcie_path.size() >= 3 ? device.pcie_path[1] : std::string();
}

std::map<std::string, std::string> DeviceScaleUpDomains(const api::NodeInventory& inventory) {
  const std::vector<std::string> computed = ScaleUpDomains(inventory);
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < inventory.status.devices.size(); ++i) {
    const api::InventoryDevice& d = inventory.status.devices[i];
    auto it = d.attributes.find("scaleUpDomain");
    out[d.name] = it != d.attributes.end() && it->second.string_value ? *it->second.string_value
                                                                      : computed[i];
  }
  return out;
}

StatusOr<DesiredPool> BuildPool(const api::NodeInventory& inventory, const NodeFacts& node,
                                const Config& config, const PublishOptions& options,
                                const std::set<std::string>& allocated) {
  DesiredPool pool;
  pool.name = node.name;
  ASSIGN_OR_RETURN(std::vector<BuiltDevice> built,
                   BuildDevices(inventory, node, config, pool.notes));
  const api::Limits limits = api::LimitsFor(options.version);
  std::set<std::string> kinds;
  std::vector<Device> devices =
      OrderedDevices(inventory, built, HeldDevices(inventory, config, allocated), options, limits,
                     pool.notes, kinds);
  const bool partitionable = std::any_of(
      inventory.status.devices.begin(), inventory.status.devices.end(),
      [](const api::InventoryDevice& d) { return d.partitioning && d.partitioning->enabled; });
  if (config.mode == PublishMode::kGroups) {
    PublishGroups(pool, inventory, devices, kinds, partitionable, node, config, options);
  }
  if (pool.slices.empty()) {
    PublishAttributes(pool, inventory, std::move(devices), partitionable, allocated, node, options,
                      limits);
  }
  for (const ResourceSliceSpec& spec : pool.slices) {
    for (const Device& d : spec.devices) {
      for (const DeviceTaint& taint : d.taints) ++pool.tainted[taint.key];
    }
  }
  return pool;
}

std::vector<api::resource::ResourceSlice> SliceObjects(const DesiredPool& pool,
                                                       const NodeFacts& node,
                                                       std::string_view driver,
                                                       int64_t generation) {
  std::vector<api::resource::ResourceSlice> slices;
  for (const ResourceSliceSpec& spec : pool.slices) {
    api::resource::ResourceSlice slice;
    slice.metadata.generate_name = node.name + "-" + std::string(driver) + "-";
    api::OwnerReference owner;
    owner.api_version = "v1";
    owner.kind = "Node";
    owner.name = node.name;
    owner.uid = node.uid;
    owner.controller = true;
    slice.metadata.owner_references.push_back(std::move(owner));
    slice.spec = spec;
    slice.spec.pool.generation = generation;
    slice.spec.pool.resource_slice_count = static_cast<int64_t>(pool.slices.size());
    slices.push_back(std::move(slice));
  }
  return slices;
}

}  // namespace xpu::controller
