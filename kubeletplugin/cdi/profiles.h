// Vendor profiles: what a container needs to use a set of devices of one vendor (device files,
// control nodes, visibility environment variables). The vendor's user-space driver is added by
// kubeletplugin/driverfiles/. Pure: the caller resolves each
// device's node from discovery, and says through HostFiles which optional host paths exist; the
// profile adds the vendor's shared nodes and variables.
#ifndef XPU_KUBELETPLUGIN_CDI_PROFILES_H_
#define XPU_KUBELETPLUGIN_CDI_PROFILES_H_

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
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

// The facts of an inventory device whose own node is `device_node` (resolved by the caller).
DeviceFacts FactsOf(const api::InventoryDevice& device, std::string device_node);

// The edits for each device (its own nodes) and for the claim as a whole (control nodes,
// visibility variables listing the claim's devices in index order). Devices of different vendors
// in one claim each get their vendor's shared edits.
struct ClaimEdits {
  std::vector<ContainerEdits> per_device;  // parallel to the input
  ContainerEdits common;
};

// Which of the host's optional nodes and driver files exist: a spec names only those.
struct HostFiles {
  // True when the host path (e.g. "/dev/davinci_manager") exists.
  std::function<bool(std::string_view path)> exists;
  // The sorted names in the host directory `dir` that start with `prefix` (none when no such dir).
  std::function<std::vector<std::string>(std::string_view dir, std::string_view prefix)> names;
};

// The files under `host_root`, where the plugin sees the host's / ("/" on a node, a fixture in
// tests), read when asked.
HostFiles HostFilesUnder(const std::string& host_root);
// Exactly `paths` exist (absolute host paths); names() lists their entries. For tests.
HostFiles FixedHostFiles(std::set<std::string> paths);

ClaimEdits EditsForClaim(const std::vector<DeviceFacts>& devices, const HostFiles& host);
// EditsForClaim(devices, HostFilesUnder(host_root)).
ClaimEdits EditsForClaim(const std::vector<DeviceFacts>& devices, const std::string& host_root);

}  // namespace xpu::cdi

#endif  // XPU_KUBELETPLUGIN_CDI_PROFILES_H_
