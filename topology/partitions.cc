#include "topology/partitions.h"

#include <algorithm>
#include <tuple>

namespace xpu::topology {
namespace {

int64_t TotalUnits(const PartitionShape& shape) {
  int64_t total = 0;
  for (const auto& [counter, units] : shape.units) total += units;
  return total;
}

// The profiles, largest first: slots, then total units; ties in profile order.
std::vector<const PartitionShape*> LargestFirst(const PartitionableDevice& device) {
  std::vector<const PartitionShape*> out;
  for (const PartitionShape& shape : device.profiles) out.push_back(&shape);
  std::stable_sort(out.begin(), out.end(), [](const PartitionShape* a, const PartitionShape* b) {
    return std::make_tuple(a->slots, TotalUnits(*a)) > std::make_tuple(b->slots, TotalUnits(*b));
  });
  return out;
}

bool UnitsFit(const PartitionableDevice& device, const PartitionUse& use,
              const PartitionShape& shape) {
  for (const auto& [counter, units] : shape.units) {
    auto total = device.capacity.find(counter);
    if (total == device.capacity.end()) return false;
    auto used = use.units.find(counter);
    if ((used == use.units.end() ? 0 : used->second) + units > total->second) return false;
  }
  return true;
}

int64_t Held(const PartitionUse& use, const std::string& profile) {
  auto it = use.instances.find(profile);
  return it == use.instances.end() ? 0 : it->second;
}

// How many more partitions of a profile without placements fit.
int64_t InstancesLeft(const PartitionableDevice& device, const PartitionUse& use,
                      const PartitionShape& shape) {
  int64_t left = shape.max_instances > 0 ? shape.max_instances - Held(use, shape.name) : 64;
  if (shape.units.empty()) left = std::min<int64_t>(left, 1 - Held(use, shape.name));
  for (const auto& [counter, units] : shape.units) {
    auto total = device.capacity.find(counter);
    if (total == device.capacity.end() || units <= 0) return 0;
    auto used = use.units.find(counter);
    left = std::min(left, (total->second - (used == use.units.end() ? 0 : used->second)) / units);
  }
  return std::max<int64_t>(left, 0);
}

}  // namespace

uint64_t SlotSpan(int64_t first, int64_t span) {
  if (span <= 0 || first < 0 || first >= 64) return 0;
  const uint64_t ones = span >= 64 ? ~uint64_t{0} : (uint64_t{1} << span) - 1;
  return ones << first;
}

void PartitionUse::Take(const PartitionShape& shape, std::optional<int64_t> placement) {
  if (placement.has_value()) slots |= SlotSpan(*placement, shape.slots);
  for (const auto& [counter, n] : shape.units) units[counter] += n;
  ++instances[shape.name];
}

void PartitionUse::Give(const PartitionShape& shape, std::optional<int64_t> placement) {
  if (placement.has_value()) slots &= ~SlotSpan(*placement, shape.slots);
  for (const auto& [counter, n] : shape.units) {
    if ((units[counter] -= n) <= 0) units.erase(counter);
  }
  if (--instances[shape.name] <= 0) instances.erase(shape.name);
}

const PartitionShape* FindShape(const PartitionableDevice& device, std::string_view name) {
  for (const PartitionShape& shape : device.profiles) {
    if (shape.name == name) return &shape;
  }
  return nullptr;
}

bool PartitionFits(const PartitionableDevice& device, const PartitionUse& use,
                   const PartitionShape& shape, std::optional<int64_t> placement) {
  if (use.whole || placement.has_value() == shape.placements.empty()) return false;
  if (!placement.has_value()) return InstancesLeft(device, use, shape) > 0;
  if (std::find(shape.placements.begin(), shape.placements.end(), *placement) ==
      shape.placements.end()) {
    return false;
  }
  const uint64_t span = SlotSpan(*placement, shape.slots);
  if (span == 0 || *placement + shape.slots > device.slots) return false;
  return (use.slots & span) == 0 && UnitsFit(device, use, shape);
}

std::vector<int> StillPossible(const PartitionableDevice& device, const PartitionUse& use) {
  std::vector<int> out;
  for (const PartitionShape* shape : LargestFirst(device)) {
    if (use.whole) {
      out.push_back(0);
    } else if (shape->placements.empty()) {
      out.push_back(static_cast<int>(InstancesLeft(device, use, *shape)));
    } else {
      int free = 0;
      for (int64_t first : shape->placements) {
        free += PartitionFits(device, use, *shape, first) ? 1 : 0;
      }
      out.push_back(free);
    }
  }
  return out;
}

double FreeShare(const PartitionableDevice& device, const PartitionUse& use) {
  if (use.whole) return 0;
  if (device.slots > 0) {
    int free = 0;
    for (int64_t slot = 0; slot < device.slots && slot < 64; ++slot) {
      free += (use.slots >> slot & 1) == 0 ? 1 : 0;
    }
    return static_cast<double>(free) / static_cast<double>(device.slots);
  }
  double share = 1;
  for (const auto& [counter, total] : device.capacity) {
    if (total <= 0) continue;
    auto used = use.units.find(counter);
    const int64_t left = total - (used == use.units.end() ? 0 : used->second);
    share = std::min(share, static_cast<double>(left) / static_cast<double>(total));
  }
  return share;
}

std::optional<PartitionCost> CostOf(const PartitionableDevice& device, const PartitionUse& use,
                                    const PartitionShape& shape, std::optional<int64_t> placement) {
  if (!PartitionFits(device, use, shape, placement)) return std::nullopt;
  PartitionCost cost;
  cost.lost = StillPossible(device, use);
  PartitionUse after = use;
  after.Take(shape, placement);
  const std::vector<int> left = StillPossible(device, after);
  for (size_t k = 0; k < cost.lost.size(); ++k) cost.lost[k] -= left[k];
  cost.untouched = use.empty();
  cost.free_share = FreeShare(device, use);
  return cost;
}

std::optional<PartitionPlace> PlacePartition(const std::vector<const PartitionableDevice*>& devices,
                                             const std::vector<PartitionUse>& uses,
                                             std::string_view profile) {
  std::optional<PartitionPlace> best;
  auto consider = [&best](size_t device, std::optional<int64_t> placement,
                          std::optional<PartitionCost> cost) {
    if (!cost.has_value()) return;
    // Cheaper, then (devices are visited in order) the highest placement on the same device.
    if (!best.has_value() || *cost < best->cost ||
        (*cost == best->cost && best->device == device && placement > best->placement)) {
      best = PartitionPlace{device, placement, *std::move(cost)};
    }
  };
  for (size_t i = 0; i < devices.size() && i < uses.size(); ++i) {
    const PartitionShape* shape = FindShape(*devices[i], profile);
    if (shape == nullptr) continue;
    if (shape->placements.empty()) {
      consider(i, std::nullopt, CostOf(*devices[i], uses[i], *shape, std::nullopt));
      continue;
    }
    for (int64_t first : shape->placements) {
      consider(i, first, CostOf(*devices[i], uses[i], *shape, first));
    }
  }
  return best;
}

}  // namespace xpu::topology
