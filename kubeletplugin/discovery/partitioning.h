// Vendor facts about partitions in the NodeInventory's model (docs/partitions.md): the vNPU
// templates Ascend chips accept, and DCMI's virtual NPUs as an InventoryPartitioning.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_PARTITIONING_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_PARTITIONING_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "api/node_inventory.h"
#include "base/status.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

// A vNPU template: what one virtual NPU made from it takes of the chip.
struct VnpuTemplate {
  std::string_view name;  // "vir05_1c_16g"
  int aicore = 0;
  int aicpu = 0;
  int memory_mib = 0;
};

// The templates of an Ascend chip by its DCMI chip name ("910B3", "310P3"); empty when unknown.
// DCMI has no call that lists them (npu-smi prints them from its own tables), so they are kept
// here.
std::span<const VnpuTemplate> VnpuTemplatesOf(std::string_view chip_name);

// DCMI's virtualisation of one chip in the inventory's model:
//  - capacity {aicore, aicpu, memory-mib}: the chip's whole resource (GET_TOTAL_RESOURCE), each
//    counter only where DCMI gives it;
//  - a profile per template of the chip, taking the counters the capacity has, in template order;
//  - the vdevices that exist, each under its template (by name, else by its resources), numbered
//    per profile in id order. A vdevice of no known template gets a profile of its own, made of
//    its resources, so that what it holds is still counted.
// Nullopt, with the reason in `error`, when the chip's templates are unknown and it has no
// vdevices, or the result fails the inventory's validation.
std::optional<api::InventoryPartitioning> VnpuPartitioning(const DcmiVnpu& vnpu,
                                                           std::string_view chip_name,
                                                           std::string* error);

// DMI's vHCUs of one Hygon DCU in the inventory's model:
//  - capacity {compute-units, memory-mib, vhcus}: the device's compute units and memory, and the
//    most vHCUs it takes (dmiGetMaxVDeviceCount), so no claim gets a fifth;
//  - a profile per size, a quarter, a half and three quarters of the device (units and memory
//    rounded down), each taking one `vhcus`; DMI takes any size, these are the ones offered;
//  - the vHCUs that exist, each under the profile of its size (a size none has gets a profile of
//    its own), numbered per profile in id order.
// Nullopt, with the reason in `error`, when the result fails the inventory's validation (vHCUs
// taking more than the device has).
std::optional<api::InventoryPartitioning> VhcuPartitioning(const HydmiDevice& device,
                                                           int max_vdevices,
                                                           std::span<const HydmiVdevice> vdevices,
                                                           std::string* error);

// The inventory's own rules (api::ValidateNodeInventory) on one partitioning, as if on a device
// of its own.
Status CheckPartitioningAlone(const api::InventoryPartitioning& partitioning);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_PARTITIONING_H_
