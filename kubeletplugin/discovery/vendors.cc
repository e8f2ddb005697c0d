#include "kubeletplugin/discovery/vendors.h"

#include <algorithm>

namespace xpu::discovery {
namespace {

constexpr uint16_t kDisplayVga = 0x0300;
constexpr uint16_t k3dController = 0x0302;
constexpr uint16_t kDisplayOther = 0x0380;
constexpr uint16_t kProcessingAccelerator = 0x1200;

}  // namespace

const std::vector<VendorInfo>& Vendors() {
  static const std::vector<VendorInfo> vendors = {
      // docs/reference/hardware.md §0 "Huawei Ascend": 0x19e5; d801 910, d802 910B (A2), d803
      // 910_93 (A3), d500 310P,
      // d100 310; /dev/davinci<phy id> (§1.5). Hi1822 NICs share the vendor id: class 0x0200.
      // Memory and precisions: assumed (public product sheets), DCMI reports HBM when loaded.
      {0x19e5,
       "huawei",
       "npu",
       {kProcessingAccelerator},
       true,
       {{0xd801, "Ascend910", "ascend910", 32 * kGiB, false, true, false, true},
        {0xd802, "Ascend910B", "ascend910b", 64 * kGiB, true, true, false, true},
        {0xd803, "Ascend910C", "ascend910c", 64 * kGiB, true, true, false, true},
        {0xd500, "Ascend310P", "ascend310p", 24 * kGiB, false, true, false, true},
        {0xd100, "Ascend310", "ascend310", 8 * kGiB, false, true, false, true}},
       DevNode::kIndexed,
       "dev/davinci%d"},
      // docs/reference/hardware.md §0 "NVIDIA": 0x10de, /dev/nvidia<minor>; NVSwitch functions are
      // class 0x0680. Device
      // ids and memory: assumed, as scripts/gen-host-fixtures (H200 memory: NVML on a real H200).
      {0x10de,
       "nvidia",
       "gpu",
       {kDisplayVga, k3dController},
       false,
       {{0x2335, "H200", "hopper", 143771 * kMiB, true, true, true, true},
        {0x2331, "H100-PCIe", "hopper", 81559 * kMiB, true, true, true, true},
        {0x2330, "H100-SXM", "hopper", 81559 * kMiB, true, true, true, true},
        {0x26b9, "L40S", "ada", 48 * kGiB, true, true, true, true},
        {0x2941, "GB200", "blackwell", 189471 * kMiB, true, true, true, true}},
       DevNode::kIndexed,
       "dev/nvidia%d"},
      // docs/reference/hardware.md §0 / §3.1 "Hygon DCU": 0x1d94, /dev/kfd + /dev/dri/renderD*;
      // device ids are a GAP
      // (docs/reference/hardware.md §6): any display/accelerator function of the vendor. 0x6320:
      // assumed.
      {0x1d94,
       "hygon",
       "dcu",
       {kDisplayVga, k3dController, kDisplayOther, kProcessingAccelerator},
       false,
       {{0x6320, "DCU-6320", "hygon-dcu", 64 * kGiB, true, true, false, true}},
       DevNode::kDrmRender,
       ""},
      // docs/reference/hardware.md §0 / §3.2 "Cambricon MLU": 0xcabc, /dev/cambricon_dev<N>.
      // 0x0370: assumed.
      {0xcabc,
       "cambricon",
       "mlu",
       {kProcessingAccelerator, kDisplayOther, k3dController},
       false,
       {{0x0370, "MLU370", "mlu370", 24 * kGiB, true, true, false, true}},
       DevNode::kIndexed,
       "dev/cambricon_dev%d"},
      // docs/reference/hardware.md §0 / §3.4 "MetaX": 0x9999 (low confidence in hw), /dev/mxcd +
      // DRM render nodes.
      // 0x4000 = C500: assumed.
      {0x9999,
       "metax",
       "gpu",
       {kDisplayVga, k3dController, kDisplayOther},
       false,
       {{0x4000, "C500", "c500", 64 * kGiB, true, true, false, true}},
       DevNode::kDrmRender,
       ""},
      // docs/reference/hardware.md §0 / §3.3 "Biren": 0x1ee0, /dev/biren/card_<N>.
      {0x1ee0,
       "biren",
       "gpu",
       {kDisplayVga, k3dController, kDisplayOther, kProcessingAccelerator},
       false,
       {},
       DevNode::kIndexed,
       "dev/biren/card_%d"},
      // docs/reference/hardware.md §0 / §3.5 "Enflame GCU": 0x1e36, /dev/gcu<N>. 0xc033 = S60:
      // assumed.
      {0x1e36,
       "enflame",
       "gcu",
       {kProcessingAccelerator, kDisplayOther, k3dController},
       false,
       {{0xc033, "S60", "s60", 48 * kGiB, true, true, false, true}},
       DevNode::kIndexed,
       "dev/gcu%d"},
      // docs/reference/hardware.md §0 "Moore Threads": vendor id is a GAP in hw; 0x1ed5 from the
      // public pci.ids
      // (assumed, unverified). /dev/mtgpu.<N>.
      {0x1ed5,
       "mthreads",
       "gpu",
       {kDisplayVga, k3dController, kDisplayOther},
       false,
       {},
       DevNode::kIndexed,
       "dev/mtgpu.%d"},
      // docs/reference/hardware.md §0 "AMD Instinct" (reference): 0x1002; only the Instinct ids of
      // the table, so that a
      // Radeon display adapter is not taken for an accelerator. Memory: AMD product pages.
      {0x1002,
       "amd",
       "gpu",
       {kDisplayVga, k3dController, kDisplayOther, kProcessingAccelerator},
       true,
       {{0x74a1, "MI300X", "cdna3", 192 * kGiB, true, true, true, true},
        {0x74a2, "MI308X", "cdna3", 128 * kGiB, true, true, true, true},
        {0x74a5, "MI325X", "cdna3", 256 * kGiB, true, true, true, true},
        {0x75a0, "MI350X", "cdna4", 288 * kGiB, true, true, true, true},
        {0x75a3, "MI355X", "cdna4", 288 * kGiB, true, true, true, true}},
       DevNode::kDrmRender,
       ""},
  };
  return vendors;
}

const VendorInfo* AcceleratorVendor(uint16_t vendor_id, uint16_t device_id, uint32_t pci_class) {
  const auto class_subclass = static_cast<uint16_t>(pci_class >> 8);
  for (const VendorInfo& v : Vendors()) {
    if (v.vendor_id != vendor_id) continue;
    if (std::find(v.classes.begin(), v.classes.end(), class_subclass) == v.classes.end()) {
      return nullptr;
    }
    if (v.known_models_only &&
        std::none_of(v.models.begin(), v.models.end(),
                     [&](const AcceleratorModel& m) { return m.device_id == device_id; })) {
      return nullptr;
    }
    return &v;
  }
  return nullptr;
}

AcceleratorModel ModelOf(const VendorInfo& vendor, uint16_t device_id) {
  for (const AcceleratorModel& m : vendor.models) {
    if (m.device_id == device_id) return m;
  }
  AcceleratorModel generic;
  generic.device_id = device_id;
  generic.model = vendor.vendor;
  generic.family = vendor.vendor;
  return generic;
}

}  // namespace xpu::discovery
