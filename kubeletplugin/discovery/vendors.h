// Which PCI functions are accelerators, and what each model is: the vendor and model tables of
// docs/reference/hardware.md (cited as "docs/reference/hardware.md §x"). A function is an
// accelerator when both its vendor id and its PCI class match (NVSwitch bridges are NVIDIA
// functions of class 0x0680, not GPUs). Values hardware.md does not give are marked "assumed" in
// vendors.cc.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_VENDORS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_VENDORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xpu::discovery {

// Binary byte units, as vendor libraries and the model table count memory.
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kGiB = int64_t{1} << 30;

struct AcceleratorModel {
  uint16_t device_id = 0;
  std::string_view model;    // "Ascend910B", "H200"
  std::string_view family;   // "ascend910b", "hopper"
  int64_t memory_bytes = 0;  // per device (die); 0: unknown
  bool bf16 = false;
  bool fp16 = false;
  bool fp8 = false;
  bool int8 = false;
};

// How the device node of one accelerator is named.
enum class DevNode {
  kIndexed,    // dev_node_format with the device index: "dev/davinci%d"
  kDrmRender,  // the render node under the function's drm/ directory: "dev/dri/renderD128"
};

struct VendorInfo {
  uint16_t vendor_id = 0;
  std::string_view vendor;         // "huawei"
  std::string_view kind;           // device name prefix: "npu"
  std::vector<uint16_t> classes;   // PCI class >> 8 (class and subclass): 0x0302, 0x1200
  bool known_models_only = false;  // AMD: only the Instinct ids of the table
  std::vector<AcceleratorModel> models;
  DevNode dev_node = DevNode::kIndexed;
  std::string_view dev_node_format;  // kIndexed: printf format with one %d
};

const std::vector<VendorInfo>& Vendors();

// The vendor entry a PCI function belongs to as an accelerator, or nullptr.
const VendorInfo* AcceleratorVendor(uint16_t vendor_id, uint16_t device_id, uint32_t pci_class);

// The model entry of `device_id`; a generic entry ("<vendor>-<id>") when the table lacks it.
AcceleratorModel ModelOf(const VendorInfo& vendor, uint16_t device_id);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_VENDORS_H_
