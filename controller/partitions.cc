#include "controller/partitions.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "api/partitions.h"
#include "api/validation.h"
#include "topology/partitions.h"

namespace xpu::controller {
namespace {

using api::resource::Counter;
using api::resource::Device;
using api::resource::DeviceAttribute;

// The parent's attributes a partition keeps: where it sits, not what it is.
constexpr std::string_view kInheritedAttributes[] = {"resource.kubernetes.io/pcieRoot",
                                                     "resource.kubernetes.io/pciBusID",
                                                     "numaNode",
                                                     "scaleUpDomain",
                                                     "driverVersion",
                                                     "firmwareVersion"};

Counter CounterOf(int64_t value) {
  Counter c;
  c.value = std::to_string(value);
  return c;
}

std::string SlotCounter(int64_t slot) { return "slot-" + std::to_string(slot); }

// One partition device of `parent`.
Device PartitionDevice(const Device& parent, const api::InventoryDevice& in,
                       const api::InventoryPartitioning& p, const api::PartitionProfile& profile,
                       std::string name, const std::string& set) {
  Device d;
  d.name = std::move(name);
  for (std::string_view key : kInheritedAttributes) {
    auto it = parent.attributes.find(std::string(key));
    if (it != parent.attributes.end()) d.attributes.emplace(it->first, it->second);
  }
  d.attributes.emplace("partitionKind", DeviceAttribute::String(p.kind));
  d.attributes.emplace("parent", DeviceAttribute::String(parent.name));
  if (!in.uuid.empty()) d.attributes.emplace("parentUUID", DeviceAttribute::String(in.uuid));
  d.attributes.emplace("profile", DeviceAttribute::String(profile.name));
  if (!profile.memory.empty()) {
    d.capacity.emplace("memory",
                       api::resource::DeviceCapacity{profile.memory, std::nullopt, nullptr});
  }
  api::resource::DeviceCounterConsumption consumption;
  consumption.counter_set = set;
  for (const auto& [counter, units] : profile.counters) {
    consumption.counters.emplace(counter, CounterOf(units));
  }
  d.consumes_counters.push_back(std::move(consumption));
  d.taints = parent.taints;
  return d;
}

// A partition that exists now: `existing`, and its uuid where the vendor gives one. What it
// holds is already taken out of the counter set (BuildPartitions), so it consumes nothing.
void MarkExisting(Device& d, const api::InventoryPartition& part) {
  d.consumes_counters.clear();
  d.attributes.emplace("existing", DeviceAttribute::Bool(true));
  if (!part.uuid.empty()) d.attributes.emplace("uuid", DeviceAttribute::String(part.uuid));
}

// The partition devices of one parent, in publishing order.
std::vector<Device> PartitionsOf(const Device& parent, const api::InventoryDevice& in,
                                 const std::string& set, std::vector<std::string>& notes) {
  const api::InventoryPartitioning& p = *in.partitioning;
  // What exists now: by (profile, placement) for MIG, by profile for the others.
  uint64_t occupied = 0;
  std::map<std::pair<std::string, int64_t>, const api::InventoryPartition*> existing_at;
  std::map<std::string, std::vector<const api::InventoryPartition*>> existing_of;
  std::map<std::string, const api::PartitionProfile*> profiles;
  for (const api::PartitionProfile& profile : p.profiles) profiles.emplace(profile.name, &profile);
  for (const api::InventoryPartition& part : p.partitions) {
    auto profile = profiles.find(part.profile);
    if (profile == profiles.end()) continue;
    if (part.placement.has_value()) {
      occupied |= topology::SlotSpan(*part.placement, profile->second->slots);
      existing_at[{part.profile, *part.placement}] = &part;
    } else {
      existing_of[part.profile].push_back(&part);
    }
  }
  std::vector<Device> out;
  for (const api::PartitionProfile& profile : p.profiles) {
    const std::string label = api::ProfileLabel(profile.name);
    const std::string prefix = parent.name + "-" + label + "-";
    if (label.empty() || !api::IsDnsLabel(prefix + "0")) {
      notes.push_back("device " + parent.name + ": profile " + profile.name +
                      " left out: no device name can be made of it");
      continue;
    }
    if (!profile.placements.empty()) {
      std::vector<int64_t> placements = profile.placements;
      std::sort(placements.rbegin(), placements.rend());
      for (int64_t first : placements) {
        const uint64_t mask = topology::SlotSpan(first, profile.slots);
        auto exists = existing_at.find({profile.name, first});
        if (exists == existing_at.end() && (occupied & mask) != 0) continue;
        Device d = PartitionDevice(parent, in, p, profile, prefix + std::to_string(first), set);
        d.attributes.emplace("placement", DeviceAttribute::Int(first));
        for (int64_t slot = first; slot < first + profile.slots; ++slot) {
          d.consumes_counters.front().counters.emplace(SlotCounter(slot), CounterOf(1));
        }
        if (exists != existing_at.end()) MarkExisting(d, *exists->second);
        out.push_back(std::move(d));
      }
      continue;
    }
    const int64_t instances = api::InstancesThatFit(profile, p.capacity);
    const auto& present = existing_of[profile.name];
    for (int64_t n = 0; n < instances; ++n) {
      Device d = PartitionDevice(parent, in, p, profile, prefix + std::to_string(n), set);
      d.attributes.emplace("instance", DeviceAttribute::Int(n));
      auto exists =
          std::find_if(present.begin(), present.end(),
                       [n](const api::InventoryPartition* e) { return e->instance == n; });
      if (exists != present.end()) MarkExisting(d, **exists);
      out.push_back(std::move(d));
    }
  }
  return out;
}

// The publishing order of the partition devices, which a first-fit allocator follows: the
// solver's order (topology/partitions.h) over what the parents have given out (existing
// partitions, and the partition devices or the whole device that claims hold): the cheapest
// place first, then parents in inventory order, then the highest placement or instance. A
// device that does not fit now sorts last.
void OrderPartitions(const api::NodeInventory& inventory, const std::set<std::string>& allocated,
                     std::vector<Device>& parts) {
  struct Parent {
    size_t index = 0;
    topology::PartitionableDevice model;
    topology::PartitionUse use;
  };
  std::map<std::string, Parent> parents;
  for (const api::InventoryDevice& d : inventory.status.devices) {
    if (!d.partitioning || !d.partitioning->enabled) continue;
    Parent& p = parents[d.name];
    p.index = parents.size();
    p.model = api::PartitionModel(*d.partitioning);
    p.use = api::ExistingUse(*d.partitioning);
    p.use.whole = allocated.contains(d.name);
  }
  for (const std::string& name : allocated) {
    const std::optional<api::PartitionTarget> t = api::ResolvePartitionDevice(inventory, name);
    if (!t || t->existing != nullptr) continue;
    Parent& p = parents.at(t->parent->name);
    const topology::PartitionShape* shape = topology::FindShape(p.model, t->profile->name);
    if (shape != nullptr) p.use.Take(*shape, t->placement);
  }
  using Key = std::tuple<bool, topology::PartitionCost, size_t, int64_t>;
  std::vector<std::pair<Key, size_t>> keys;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Device& d = parts[i];
    const Parent& p = parents.at(d.attributes.at("parent").string_value.value_or(""));
    std::optional<int64_t> placement;
    int64_t n = 0;
    if (auto at = d.attributes.find("placement"); at != d.attributes.end()) {
      placement = n = at->second.int_value.value_or(0);
    } else if (auto in = d.attributes.find("instance"); in != d.attributes.end()) {
      n = in->second.int_value.value_or(0);
    }
    const topology::PartitionShape* shape =
        topology::FindShape(p.model, d.attributes.at("profile").string_value.value_or(""));
    std::optional<topology::PartitionCost> cost;
    if (shape != nullptr) cost = topology::CostOf(p.model, p.use, *shape, placement);
    keys.push_back({{!cost.has_value(), cost.value_or(topology::PartitionCost{}), p.index, -n}, i});
  }
  std::stable_sort(keys.begin(), keys.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Device> ordered;
  ordered.reserve(parts.size());
  for (const auto& [key, i] : keys) ordered.push_back(std::move(parts[i]));
  parts = std::move(ordered);
}

}  // namespace

std::vector<Device> ExistingPartitionsAsDevices(const api::NodeInventory& inventory,
                                                std::vector<Device>& devices,
                                                std::vector<std::string>& notes) {
  std::map<std::string, const api::InventoryDevice*> by_name;
  for (const api::InventoryDevice& d : inventory.status.devices) by_name.emplace(d.name, &d);
  std::vector<Device> out;
  for (auto whole = devices.begin(); whole != devices.end();) {
    auto it = by_name.find(whole->name);
    const api::InventoryDevice* in = it == by_name.end() ? nullptr : it->second;
    if (in == nullptr || !in->partitioning || !in->partitioning->enabled ||
        (in->partitioning->fallback != "existing" && in->partitioning->fallback != "layout") ||
        in->partitioning->partitions.empty()) {
      ++whole;
      continue;
    }
    const api::InventoryPartitioning& p = *in->partitioning;
    for (const api::InventoryPartition& part : p.partitions) {
      for (const api::PartitionProfile& profile : p.profiles) {
        if (profile.name != part.profile) continue;
        const int64_t n = part.placement.value_or(part.instance);
        Device d = PartitionDevice(*whole, *in, p, profile,
                                   api::PartitionDeviceName(whole->name, profile.name, n), "");
        d.attributes.emplace(part.placement ? "placement" : "instance", DeviceAttribute::Int(n));
        MarkExisting(d, part);
        out.push_back(std::move(d));
      }
    }
    notes.push_back("device " + whole->name + ": its " + std::to_string(p.partitions.size()) +
                    " partitions served as plain devices, not the device (fallback " + p.fallback +
                    ")");
    whole = devices.erase(whole);
  }
  return out;
}

Partitioned BuildPartitions(const api::NodeInventory& inventory,
                            const std::set<std::string>& allocated, std::vector<Device>& devices,
                            std::vector<std::string>& notes) {
  std::map<std::string, const api::InventoryDevice*> by_name;
  for (const api::InventoryDevice& d : inventory.status.devices) by_name.emplace(d.name, &d);
  Partitioned result;
  for (Device& whole : devices) {
    auto it = by_name.find(whole.name);
    if (it == by_name.end() || !it->second->partitioning.has_value()) continue;
    const api::InventoryDevice& in = *it->second;
    const api::InventoryPartitioning& p = *in.partitioning;
    if (!p.enabled) continue;
    const std::string set = whole.name + "-parts";
    if (!api::IsDnsLabel(set)) {
      notes.push_back("device " + whole.name + ": served whole: counter set name " + set +
                      " is not a DNS label");
      continue;
    }
    // The set holds what the existing partitions leave; the whole device consumes everything,
    // so it cannot be allocated while any partition exists, nor a partition while it is.
    std::map<std::string, int64_t> left = p.capacity;
    uint64_t held_slots = 0;
    for (const api::InventoryPartition& part : p.partitions) {
      const api::PartitionProfile* profile = api::FindProfile(p, part.profile);
      if (profile == nullptr) continue;
      for (const auto& [counter, units] : profile->counters) {
        left[counter] = std::max<int64_t>(0, left[counter] - units);
      }
      if (part.placement.has_value()) {
        held_slots |= topology::SlotSpan(*part.placement, profile->slots);
      }
    }
    api::resource::CounterSet counters;
    counters.name = set;
    api::resource::DeviceCounterConsumption all;
    all.counter_set = set;
    for (int64_t slot = 0; slot < p.slots; ++slot) {
      const bool held = slot < 64 && (held_slots >> slot & 1) != 0;
      counters.counters.emplace(SlotCounter(slot), CounterOf(held ? 0 : 1));
      all.counters.emplace(SlotCounter(slot), CounterOf(1));
    }
    for (const auto& [counter, total] : p.capacity) {
      counters.counters.emplace(counter, CounterOf(left[counter]));
      all.counters.emplace(counter, CounterOf(total));
    }
    if (counters.counters.empty()) {
      notes.push_back("device " + whole.name +
                      ": served whole: its partitioning has no slots or "
                      "capacity to count");
      continue;
    }
    std::vector<Device> parts = PartitionsOf(whole, in, set, notes);
    whole.consumes_counters.push_back(std::move(all));
    result.counter_sets.push_back(std::move(counters));
    for (Device& d : parts) result.devices.push_back(std::move(d));
  }
  OrderPartitions(inventory, allocated, result.devices);
  return result;
}

}  // namespace xpu::controller
