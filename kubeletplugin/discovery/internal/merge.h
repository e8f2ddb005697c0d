// The vendor libraries' facts merged into the inventory Discover assembles from sysfs
// (merge.cc): NVML's for NVIDIA GPUs, DCMI's for Ascend NPUs, Hygon DMI's vHCUs. Devices are
// matched by PCI address (or by index where the library gives none); what a library reports
// replaces the sysfs and server-model facts, with `sources` saying so, and its complaints become
// problems. Internal to kubeletplugin/discovery.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_MERGE_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_MERGE_H_

#include <optional>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "kubeletplugin/discovery/internal/assembly.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery::internal {

// NVML's MIG facts in the inventory's model (docs/partitions.md):
//  - a profile per GPU instance profile: its name, memory (memorySizeMB), counters
//    {compute: slices}, slots (the placements' size) and placements (their first slots), in order
//    of slices, slots and memory;
//  - a media-extension variant ("+me", "-me", "+me.all", "+gfx") whose base profile takes the
//    same slices and slots is left out: its instances sit where the base's do, so they are listed
//    under the base's name;
//  - capacity {compute: the most slices a profile takes}, slots: the end of the last placement;
//  - the GPU instances that exist, by first slot.
// With MIG mode off NVML gives no profiles: `enabled` false and nothing else, the device is served
// whole. Nullopt, with the reason in `error`, when the result fails the inventory's validation
// (a GPU instance of a profile NVML did not list, overlapping instances): partitions published
// from a view that disagrees with itself could take slots that are in use.
std::optional<api::InventoryPartitioning> MigPartitioning(const NvmlMig& mig, std::string* error);

// NVML's facts on the NVIDIA devices found (matched by PCI address): UUID, memory, NUMA node,
// health (an unhealthy GPU or a critical XID), MIG, NVLinks down (LinksDegraded, and the NVSwitch
// links' bandwidth scaled down), the fabric clique; the driver and CUDA versions.
void MergeNvml(const NvmlFacts& nvml, std::vector<Found>& found, api::NodeInventoryStatus& status,
               Problems& problems);

// DCMI's facts on the Ascend devices found (matched by PCI address, else by physical id): model,
// memory, health, device IP, firmware, RoCE network health, HCCS health (its links down), vNPUs;
// DCMI's HCCS/SIO topology replaces the links of those types; the driver version.
void MergeDcmi(const DcmiFacts& dcmi, std::vector<Found>& found, api::NodeInventoryStatus& status,
               Problems& problems);

// Hygon DMI's vHCUs: the partitioning of each DCU, matched by index (DMI gives no PCI address).
// A node without the library says nothing (it is needed for vHCUs alone); one that fails says so.
void MergeHydmi(const HydmiFacts& hydmi, std::vector<Found>& found, Problems& problems);

}  // namespace xpu::discovery::internal

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_MERGE_H_
