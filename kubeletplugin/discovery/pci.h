// The PCI functions of a host, from /sys/bus/pci/devices under a HostRoot: ids, class, NUMA node
// and the place in the PCIe tree (root complex and the bridges above each function).
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_PCI_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_PCI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kubeletplugin/discovery/host_root.h"

namespace xpu::discovery {

struct PciFunction {
  std::string bdf;  // "0000:13:00.0"
  std::string
      sysfs_path;  // resolved, relative to the root: "sys/devices/pci0000:10/.../0000:13:00.0"
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint32_t pci_class = 0;              // 0x120000
  std::optional<int> numa_node;        // absent: -1 in sysfs, or unreadable
  std::string pcie_root;               // "pci0000:10"; empty when the path has no root complex
  std::vector<std::string> pcie_path;  // root, each bridge, the function itself
};

struct PciScan {
  std::vector<PciFunction> functions;  // sorted by BDF
  std::vector<std::string> problems;   // "read /sys/.../numa_node: ..." for the conditions
};

// Reads every function. A function whose ids cannot be read is left out with a problem; a bad
// numa_node leaves numa_node unset with a problem. Never fails as a whole: a host without
// /sys/bus/pci gives no functions.
PciScan ScanPci(const HostRoot& host);

// The parse of a sysfs hex file ("0x19e5\n").
std::optional<uint32_t> ParseHex(std::string_view text);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_PCI_H_
