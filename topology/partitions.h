// Where a partition goes: the parent device and the placement that keep the largest partition
// profiles still possible (NVIDIA MIG placements, Ascend vNPU templates, Hygon vHCU sizes).
//
// A partitionable device has memory slots (MIG: 8 on H100/H200) and capacity counters
// ("compute", "aicore", "vhcus", ...). A profile spans `slots` consecutive slots from one of its
// legal first slots (MIG), or none (vNPU, vHCU: counted by units only), and takes `units` of the
// capacity counters. Placing one partition costs what it takes away from every profile: for each
// profile, largest first, how many partitions of it the device could take before and after.
// The cheapest place wins, compared lexicographically (losing a 7g.141gb weighs more than any
// number of 1g.18gb); then a device already in part use over an untouched one, so that untouched
// devices stay whole; then the fullest device; then the lower device; then the highest placement.
//
// The controller publishes partition devices in this order so that the stock allocator, which
// takes the first device that fits, follows it (controller/partitions.h); the placement lab
// takes PlacePartition's answer directly (lab/replay.h, policy "solver").
#ifndef XPU_TOPOLOGY_PARTITIONS_H_
#define XPU_TOPOLOGY_PARTITIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace xpu::topology {

struct PartitionShape {
  std::string name;                      // the vendor's profile name: "1g.18gb", "vir02"
  int64_t slots = 0;                     // memory slots one placement spans; 0: none
  std::vector<int64_t> placements;       // legal first slots; empty: counted by units only
  std::map<std::string, int64_t> units;  // capacity counter -> units taken
  int64_t max_instances = 0;             // without placements: at most this many (0: no limit)
};

struct PartitionableDevice {
  int64_t slots = 0;                        // memory slots (at most 64)
  std::map<std::string, int64_t> capacity;  // counter -> the device's total
  std::vector<PartitionShape> profiles;
};

// Slots [first, first + span) as a mask.
uint64_t SlotSpan(int64_t first, int64_t span);

// What a device has given out.
struct PartitionUse {
  bool whole = false;                        // held as a whole device
  uint64_t slots = 0;                        // slots taken
  std::map<std::string, int64_t> units;      // counter -> units taken
  std::map<std::string, int64_t> instances;  // profile -> partitions of it held
  bool empty() const { return !whole && slots == 0 && instances.empty(); }
  // Takes (or gives back) one partition of `shape` at `placement` (nullopt: unit-counted).
  void Take(const PartitionShape& shape, std::optional<int64_t> placement);
  void Give(const PartitionShape& shape, std::optional<int64_t> placement);
  friend bool operator==(const PartitionUse&, const PartitionUse&) = default;
};

// The profile named `name`, or nullptr.
const PartitionShape* FindShape(const PartitionableDevice& device, std::string_view name);

// Whether one more partition of `shape` fits at `placement` (a legal first slot; nullopt for a
// profile without placements): the device is not held whole, the slots are free, the units and
// the instance limit allow it.
bool PartitionFits(const PartitionableDevice& device, const PartitionUse& use,
                   const PartitionShape& shape, std::optional<int64_t> placement);

// For each profile, largest first (slots, then total units; ties in profile order), how many
// more partitions of it `use` leaves possible: free legal placements, or instances by units.
std::vector<int> StillPossible(const PartitionableDevice& device, const PartitionUse& use);

// The share of the device still free: of its slots, or of its scarcest capacity counter.
double FreeShare(const PartitionableDevice& device, const PartitionUse& use);

// What placing one partition costs there; smaller is better.
struct PartitionCost {
  std::vector<int> lost;   // per profile, as StillPossible orders them: partitions lost
  bool untouched = false;  // the device had nothing given out
  double free_share = 0;   // before placing; fuller first
  friend bool operator<(const PartitionCost& a, const PartitionCost& b) {
    return std::tie(a.lost, a.untouched, a.free_share) <
           std::tie(b.lost, b.untouched, b.free_share);
  }
  friend bool operator==(const PartitionCost&, const PartitionCost&) = default;
};

// The cost of one partition of `shape` at `placement` (nullopt: without placements); nullopt
// when it does not fit there.
std::optional<PartitionCost> CostOf(const PartitionableDevice& device, const PartitionUse& use,
                                    const PartitionShape& shape, std::optional<int64_t> placement);

struct PartitionPlace {
  size_t device = 0;                 // index into the devices asked about
  std::optional<int64_t> placement;  // the first slot; nullopt without placements
  PartitionCost cost;
};

// The best place for one partition of the profile named `profile` among `devices` (uses[i] is
// what devices[i] has given out): the cheapest cost, then the lower device, then the highest
// placement. nullopt when it fits nowhere (or no device has the profile).
std::optional<PartitionPlace> PlacePartition(const std::vector<const PartitionableDevice*>& devices,
                                             const std::vector<PartitionUse>& uses,
                                             std::string_view profile);

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_PARTITIONS_H_
