// Creating and destroying partitions through a vendor library (docs/partitions.md): the kubelet
// plugin's side of dynamic partitions. One backend per partition kind; each call is synchronous
// and names the vendor call that failed. Ascend vNPUs go through DCMI (dcmi_create_vdevice,
// dcmi_set_destroy_vdevice, and VDEV_MNG to list what exists); MIG instances through NVML (a GPU
// instance at a placement with one compute instance spanning it); Hygon vHCUs through DMI
// (dmiCreateVDevices, dmiDestroySingleVDevice).
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_PARTITION_BACKEND_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_PARTITION_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace xpu::discovery {

// The parent device, as the inventory knows it.
struct PartitionParent {
  std::string name;         // "npu-1", for messages
  std::string pci_address;  // "0000:13:00.0"; empty when unknown
  int64_t index = 0;        // the vendor's physical index (davinci<N>)
};

// A partition on a device now.
struct LivePartition {
  std::string profile;  // the template or profile it was made from
  int64_t id = -1;      // vNPU: the vdev id (/dev/vdavinci<id>); MIG: the GPU instance id
  std::optional<int64_t> placement;  // MIG: the first slot
  std::string uuid;                  // MIG: its compute instance's MIG device, "MIG-..."
  friend bool operator==(const LivePartition&, const LivePartition&) = default;
};

class PartitionBackend {
 public:
  virtual ~PartitionBackend() = default;
  virtual std::string kind() const = 0;  // "vnpu"
  // What exists on `parent` now.
  virtual StatusOr<std::vector<LivePartition>> List(const PartitionParent& parent) = 0;
  // Creates a partition of `profile`: with vendor id `id` where the vendor lets the caller pick
  // it (vNPU), at `placement` where it has placements (MIG). kUnavailable when the device's
  // resources are busy (the caller may retry), kInvalidArgument for a profile or id it refuses.
  virtual StatusOr<LivePartition> Create(const PartitionParent& parent, const std::string& profile,
                                         int64_t id, std::optional<int64_t> placement) = 0;
  // Destroys the partition with vendor id `id`; NotFound when there is none.
  virtual Status Destroy(const PartitionParent& parent, int64_t id) = 0;
};

// DCMI's vNPUs, from libdcmi.so in `lib_dirs` (then the loader's path). An error when the library
// cannot be loaded or lacks dcmi_create_vdevice / dcmi_set_destroy_vdevice.
StatusOr<std::unique_ptr<PartitionBackend>> OpenDcmiPartitions(
    const std::vector<std::string>& lib_dirs);

// NVML's MIG instances, from libnvidia-ml.so.1 in `lib_dirs` (then the loader's path): List gives
// the GPU instances (profile named as the inventory names it, id = GPU instance id, placement =
// first slot, uuid = its MIG device); Create makes a GPU instance of the profile at the placement
// (the id is ignored: NVML picks it) and one compute instance spanning it; Destroy takes the
// compute instances, then the GPU instance. FailedPrecondition when MIG mode is off (node
// configuration, never switched here). An error when the library cannot be loaded or lacks the
// MIG calls.
StatusOr<std::unique_ptr<PartitionBackend>> OpenNvmlPartitions(
    const std::vector<std::string>& lib_dirs);

// Hygon DMI's vHCUs, from libhydmi.so in `lib_dirs` (then the loader's path): a parent is DMI's
// device of the parent's index. List gives the device's vHCUs (profile = their size as
// VhcuProfileName spells it, id = the vdev id); Create makes one of the profile's size (the id is
// ignored: DMI picks it, and the new vHCU is told apart from those there before); Destroy takes
// one by vdev id. An error when the library cannot be loaded, lacks the vHCU calls, or the node
// has no vHCUs (dmiGetMaxVDeviceCount).
StatusOr<std::unique_ptr<PartitionBackend>> OpenHydmiPartitions(
    const std::vector<std::string>& lib_dirs);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_PARTITION_BACKEND_H_
