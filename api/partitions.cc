#include "api/partitions.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace xpu::api {

std::string ProfileLabel(std::string_view profile) {
  std::string label;
  for (char c : profile) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
    if (keep) {
      label += lower;
    } else if (!label.empty() && label.back() != '-') {
      label += '-';
    }
  }
  while (!label.empty() && label.back() == '-') label.pop_back();
  return label;
}

std::string PartitionDeviceName(std::string_view parent, std::string_view profile, int64_t n) {
  std::string name(parent);
  name.append("-").append(ProfileLabel(profile)).append("-");
  return name.append(std::to_string(n));
}

const PartitionProfile* FindProfile(const InventoryPartitioning& partitioning,
                                    std::string_view name) {
  for (const PartitionProfile& p : partitioning.profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

int64_t InstancesThatFit(const PartitionProfile& profile,
                         const std::map<std::string, int64_t>& capacity) {
  int64_t fit = profile.max_instances > 0 ? profile.max_instances : 64;
  for (const auto& [counter, units] : profile.counters) {
    auto total = capacity.find(counter);
    if (total == capacity.end() || units <= 0) return 0;
    fit = std::min(fit, total->second / units);
  }
  return profile.counters.empty() ? std::min<int64_t>(fit, 1) : fit;
}

std::optional<PartitionTarget> ResolvePartitionDevice(const NodeInventory& inventory,
                                                      std::string_view name) {
  for (const InventoryDevice& d : inventory.status.devices) {
    if (!d.partitioning.has_value() || !d.partitioning->enabled) continue;
    if (!name.starts_with(d.name) || name.size() <= d.name.size() || name[d.name.size()] != '-') {
      continue;
    }
    const InventoryPartitioning& p = *d.partitioning;
    for (const PartitionProfile& profile : p.profiles) {
      const std::string prefix = d.name + "-" + ProfileLabel(profile.name) + "-";
      if (!name.starts_with(prefix)) continue;
      const std::string_view digits = name.substr(prefix.size());
      int64_t n = -1;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (ec != std::errc() || end != digits.data() + digits.size() || n < 0 ||
          std::to_string(n) != digits) {
        continue;
      }
      PartitionTarget t;
      t.parent = &d;
      t.profile = &profile;
      if (!profile.placements.empty()) {
        if (std::find(profile.placements.begin(), profile.placements.end(), n) ==
            profile.placements.end()) {
          continue;
        }
        t.placement = n;
      } else if (n >= InstancesThatFit(profile, p.capacity)) {
        continue;
      } else {
        t.instance = n;
      }
      for (const InventoryPartition& part : p.partitions) {
        if (part.profile != profile.name) continue;
        const bool here = t.placement ? part.placement == t.placement
                                      : !part.placement.has_value() && part.instance == n;
        if (here) t.existing = &part;
      }
      return t;
    }
  }
  return std::nullopt;
}

topology::PartitionableDevice PartitionModel(const InventoryPartitioning& partitioning) {
  topology::PartitionableDevice device;
  device.slots = partitioning.slots;
  device.capacity = partitioning.capacity;
  for (const PartitionProfile& profile : partitioning.profiles) {
    device.profiles.push_back(
        {profile.name, profile.slots, profile.placements, profile.counters, profile.max_instances});
  }
  return device;
}

topology::PartitionUse ExistingUse(const InventoryPartitioning& partitioning) {
  const topology::PartitionableDevice device = PartitionModel(partitioning);
  topology::PartitionUse use;
  for (const InventoryPartition& part : partitioning.partitions) {
    const topology::PartitionShape* shape = topology::FindShape(device, part.profile);
    if (shape != nullptr) {
      use.Take(*shape, shape->placements.empty() ? std::nullopt : part.placement);
    }
  }
  return use;
}

}  // namespace xpu::api
