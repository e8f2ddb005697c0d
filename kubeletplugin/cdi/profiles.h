// Vendor profiles: what a container needs to use a set of devices of one vendor (hardware.md:
// device files, control nodes, visibility environment variables, driver mounts). Pure: the
// caller resolves each device's node from discovery; the profile adds the vendor's shared
// nodes and variables.
#ifndef XPU_KUBELETPLUGIN_CDI_PROFILES_H_
#define XPU_KUBELETPLUGIN_CDI_PROFILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kubeletplugin/cdi/cdi.h"

namespace xpu::cdi {

// One device of a claim, as discovery knows it.
struct DeviceFacts {
  std::string name;    // "npu-3"
  std::string vendor;  // "huawei", "nvidia", "hygon", "cambricon", "metax", "biren", "enflame",
                       // "mthreads", "amd"
  std::string kind;    // "npu", "gpu", ...
  int64_t index = 0;   // the vendor's physical index (davinci<N>, nvidia<N>, ...)
  std::string uuid;    // NVIDIA "GPU-..." when known
  std::string pci_address;
  std::string device_node;  // host path of its own node: "/dev/davinci3", "/dev/dri/renderD130"
};

// The edits for each device (its own nodes) and for the claim as a whole (control nodes,
// visibility variables listing the claim's devices in index order). Devices of different vendors
// in one claim each get their vendor's shared edits.
struct ClaimEdits {
  std::vector<ContainerEdits> per_device;  // parallel to the input
  ContainerEdits common;
};

// `host_root` is where the host's /dev is seen by the plugin ("/" on a node, a fixture in tests):
// optional control nodes are only added when they exist under it.
ClaimEdits EditsForClaim(const std::vector<DeviceFacts>& devices, const std::string& host_root);

}  // namespace xpu::cdi

#endif  // XPU_KUBELETPLUGIN_CDI_PROFILES_H_
