// What the stages of Discover (discovery.cc) and the merges of the vendor libraries' facts
// (merge.cc) share while they assemble a NodeInventory: each accelerator found with its device
// under construction, the problems met on the way (each kind becomes a condition), and the
// builders of inventory values. Internal to kubeletplugin/discovery.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_ASSEMBLY_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_ASSEMBLY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/node_inventory.h"
#include "kubeletplugin/discovery/pci.h"
#include "kubeletplugin/discovery/vendors.h"

namespace xpu::discovery::internal {

// One accelerator while the inventory is assembled.
struct Found {
  const VendorInfo* vendor = nullptr;
  AcceleratorModel model;
  const PciFunction* pci = nullptr;
  api::InventoryDevice device;
};

// Problems that end up in conditions, by condition type.
struct Problems {
  std::vector<std::string> files;         // HostFiles
  std::vector<std::string> device_nodes;  // DeviceNodes
  std::vector<std::string> libraries;     // VendorLibrary: "nvml: ..."
  std::string library_reason;
  std::vector<std::string> links;    // LinksDegraded: "gpu-5: NVLink 7 down (17 of 18 active)"
  std::vector<std::string> network;  // NetworkUnhealthy: "npu-4: RoCE network unreachable"
};

// A memory size as a Kubernetes quantity: "80Gi", "512Mi", or bytes.
inline std::string Quantity(int64_t bytes) {
  if (bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "Gi";
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "Mi";
  return std::to_string(bytes);
}

// Device attributes of each kind.
inline api::InventoryAttribute StringAttr(std::string v) {
  api::InventoryAttribute a;
  a.string_value = std::move(v);
  return a;
}
inline api::InventoryAttribute IntAttr(int64_t v) {
  api::InventoryAttribute a;
  a.int_value = v;
  return a;
}
inline api::InventoryAttribute BoolAttr(bool v) {
  api::InventoryAttribute a;
  a.bool_value = v;
  return a;
}
inline api::InventoryAttribute VersionAttr(std::string v) {
  api::InventoryAttribute a;
  a.version = std::move(v);
  return a;
}

}  // namespace xpu::discovery::internal

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_ASSEMBLY_H_
