// The names of partition devices, shared by the controller, which publishes them, and the kubelet
// plugin, which creates the partition a claim was allocated (docs/partitions.md).
//
// A partition device of parent `<device>` is "<device>-<profile label>-<n>": n is the first slot
// of a MIG placement, or the instance number of a placement-less profile (vNPU, vHCU).
#ifndef XPU_API_PARTITIONS_H_
#define XPU_API_PARTITIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/node_inventory.h"
#include "topology/partitions.h"

namespace xpu::api {

// "1g.18gb" -> "1g-18gb", "vir05_1c_16g" -> "vir05-1c-16g": a profile name as part of a DNS
// label; empty when nothing of it is usable.
std::string ProfileLabel(std::string_view profile);

// "<parent>-<profile label>-<n>".
std::string PartitionDeviceName(std::string_view parent, std::string_view profile, int64_t n);

// The profile of `partitioning` named `name`, or nullptr.
const PartitionProfile* FindProfile(const InventoryPartitioning& partitioning,
                                    std::string_view name);

// How many instances of a placement-less profile fit the parent's capacity (at most
// max_instances where set, else at most 64).
int64_t InstancesThatFit(const PartitionProfile& profile,
                         const std::map<std::string, int64_t>& capacity);

// What a partition device name stands for on this node's inventory.
struct PartitionTarget {
  const InventoryDevice* parent = nullptr;
  const PartitionProfile* profile = nullptr;
  std::optional<int64_t> placement;  // MIG: the first slot
  int64_t instance = 0;              // placement-less: the instance number
  // The partition that exists there now, if any (the inventory's view).
  const InventoryPartition* existing = nullptr;
};

// The target of `name` among the devices whose partitioning is enabled: a legal placement of a
// profile, or an instance number below what fits. Nullopt for any other name.
std::optional<PartitionTarget> ResolvePartitionDevice(const NodeInventory& inventory,
                                                      std::string_view name);

// The partitioning in the placement solver's terms (topology/partitions.h).
topology::PartitionableDevice PartitionModel(const InventoryPartitioning& partitioning);

// What the partitions that exist now take of the device, in the solver's terms. Partitions of
// unknown profiles take nothing.
topology::PartitionUse ExistingUse(const InventoryPartitioning& partitioning);

}  // namespace xpu::api

#endif  // XPU_API_PARTITIONS_H_
