// Network interfaces backed by PCI functions (/sys/class/net/<if>/device), their type, and the
// accelerator each one serves: the nearest device by PCIe switch, then root complex, then NUMA
// node, a device not yet paired first.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_NICS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_NICS_H_

#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/pci.h"

namespace xpu::discovery {

// The NICs of the host, sorted by PCI address; virtual interfaces (no device link) are left out.
// Type: class 0x0207 infiniband; class 0x0200 roce for Mellanox and Huawei Hi1822 functions or
// any function with an RDMA device (infiniband/), else ethernet.
std::vector<api::InventoryNic> ScanNics(const HostRoot& host, const PciScan& pci,
                                        std::vector<std::string>& problems);

// Sets pairedDevice of each NIC. `devices` are the accelerators in index order.
void PairNics(std::vector<api::InventoryNic>& nics,
              const std::vector<api::InventoryDevice>& devices, const PciScan& pci);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_NICS_H_
