// Hardware discovery: everything one node has to offer, as a NodeInventory.
//
// Discover reads the host under `host_root` (sysfs PCI functions and their PCIe ancestry, /dev
// nodes, the boot id, vendor version files, /etc/hccn.conf, the KFD topology, NICs), asks the
// vendor libraries (NVML, DCMI through vendor_libs.h) where their devices are present, and fills
// in links, groups and the rule set from the published server models where no library reports
// them. Each device's `sources` and each link's and group's `source` say where a fact came from.
//
// Problems with the host are not errors: an unreadable or garbage file, a missing device node or
// a vendor library that does not load becomes a condition of the inventory (the message names the
// file or library) and every other device still appears. A device without its /dev node is
// reported Unhealthy (it cannot be handed to a container) with a DeviceNodes condition. Only bad
// options fail. The result passes api::ValidateNodeInventory. Thread-compatible; no exception
// escapes.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_DISCOVERY_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_DISCOVERY_H_

#include <functional>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/status.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

struct DiscoveryOptions {
  std::string host_root = "/";
  // Directories searched first for libnvidia-ml.so.1 and libdcmi.so.
  std::vector<std::string> vendor_lib_dirs;
  // metadata.name; empty: etc/hostname under the host root, else "localhost".
  std::string node_name;
  // lastTransitionTime of the conditions (RFC 3339); empty: the current time. Tests and golden
  // files set it so that output is byte-stable.
  std::string now;
  // False: do not call the vendor libraries at all (no VendorLibrary condition either).
  bool probe_vendor_libraries = true;
  // The vendor-library seam; empty: ProbeNvml / ProbeDcmi. Tests give canned facts.
  std::function<NvmlFacts(const std::vector<std::string>&)> probe_nvml;
  std::function<DcmiFacts(const std::vector<std::string>&)> probe_dcmi;

  // The host root is an existing directory, the node name a DNS subdomain when set.
  Status Validate() const;
};

StatusOr<api::NodeInventory> Discover(const DiscoveryOptions& options);

// status.health from the devices' health (Healthy, Degraded, Unhealthy) and the healthy count in
// the Ready condition's message, as Discover sets them: for a caller that changed a device's
// health afterwards (the plugin's XID watcher).
void SetNodeHealth(api::NodeInventoryStatus& status);

// The host path of the device's own node as containers see /dev ("/dev/davinci3",
// "/dev/nvidia0", "/dev/dri/renderD130"), named as Discover names it: indexed vendors from the
// device's index, DRM vendors from the render node under the PCI function's drm/ directory in
// sysfs under `host_root`. "" for an unknown vendor or a DRM device without a render node. Does
// not check that the node exists (Discover reports a missing one as Unhealthy).
std::string DeviceNodePath(const std::string& host_root, const api::InventoryDevice& d);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_DISCOVERY_H_
