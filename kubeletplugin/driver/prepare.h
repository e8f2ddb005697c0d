// Prepare, the deciding half: from a claim's allocation, the node's inventory and the devices
// other claims hold, ComputePreparedClaim works out the CDI spec to write and the checkpoint
// entry to record. It writes nothing and reads the host only through HostView, so every rule of
// preparing (our results only, groups stand for their members, no device for two claims unless
// shared, opaque config cannot override the driver's variables, a valid spec) is tested as a table
// without a server or a disk. The driver then acts: write the spec, record the entry.
#ifndef XPU_KUBELETPLUGIN_DRIVER_PREPARE_H_
#define XPU_KUBELETPLUGIN_DRIVER_PREPARE_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/node_inventory.h"
#include "api/resource.h"
#include "base/status.h"
#include "kubeletplugin/cdi/cdi.h"
#include "kubeletplugin/cdi/profiles.h"
#include "kubeletplugin/checkpoint/checkpoint.h"
#include "kubeletplugin/driver/service.h"

namespace xpu::plugin {

// What preparing reads of the host besides the inventory.
struct HostView {
  // The host path of a device's own node ("/dev/davinci3"); empty when none is known.
  std::function<std::string(const api::InventoryDevice&)> device_node;
  cdi::HostFiles files;
  // The edits that carry a vendor's user-space driver (driverfiles/driver_files.h): empty edits
  // when they are off for the vendor; an error (a partial install) fails the claim. Unset: none.
  std::function<StatusOr<cdi::ContainerEdits>(const std::string& vendor)> driver_files;
};
// The host as the plugin sees it under `host_root`, read when asked; no driver files.
HostView HostViewUnder(const std::string& host_root);

// A partition device of the claim as it exists on the node (created, or there before), which the
// driver makes sure of before computing: the device the container gets in its place.
struct PartitionDevice {
  // The parent with the partition's identity: its name, the vendor id as `index` (vNPU: the vdev
  // id, which ASCEND_VISIBLE_DEVICES names), the partition's uuid where it has one (MIG).
  api::InventoryDevice device;
  std::string device_node;         // host path of its node: "/dev/vdavinci118"; empty: the parent's
  std::vector<cdi::Mount> mounts;  // besides the parent's (vHCU: its /etc/vdev conf file)
};

struct PrepareInput {
  std::string driver_name;
  std::string node_name;  // the pool of this node's devices
  std::string cdi_kind;   // "k8s.xpu.dra.dev/device"
  ClaimRef ref;
  const api::resource::AllocationResult* allocation = nullptr;  // required
  const api::NodeInventory* inventory = nullptr;                // null: not discovered yet
  // Devices prepared for other claims: device name -> claim uid (NoteTakenDevices).
  std::map<std::string, std::string> taken;
  // The AcceleratorGang whose device ("gang-<name>" in pool "gangs") the claim holds, read by
  // the caller; null when the claim holds none. Its files go under gang_dir/<claim uid>/.
  const api::AcceleratorGang* gang = nullptr;
  std::string gang_dir = "/var/lib/xpu-dra/gangs";
  // Non-empty: write KEP-5304 device metadata files under it (<plugin dir>/dra-device-metadata).
  std::string metadata_dir;
  // The claim's partition devices, by published name (Driver::EnsurePartitions).
  std::map<std::string, PartitionDevice> partitions;
};

// Where a gang member's container finds its files.
inline constexpr std::string_view kGangContainerDir = "/etc/xpu-dra/gang";

// The claim as it is to be prepared. `spec` is empty when none of the allocation's results is
// this driver's on this node (nothing to hand the container; the claim is still recorded).
// record.cdi_spec is the caller's to set once the spec is written.
struct PreparedClaim {
  std::optional<cdi::Spec> spec;
  checkpoint::Claim record;
  // Files to write before the spec (host path -> content): a gang member's rank table and host
  // file, mounted read-only by the spec.
  std::map<std::string, std::string> files;
};

// A gang device hands the container, besides its mounts (rank_table.json: the HCCL rank table,
// layout 1.2 when the ranks name super-pods, else 1.0; hostfile: one line per node), the
// variables RANK_TABLE_FILE, XPU_DRA_HOSTFILE, WORLD_SIZE and RANK_SIZE (devices in the gang),
// NNODES, NODE_RANK (this node's rank), LOCAL_WORLD_SIZE (devices per node), MASTER_ADDR (the
// rank-0 node's address or name) and XPU_DRA_GANG (<ns>/<name>). The gang must be placed with
// this node among its members.
//
// Device metadata (KEP-5304), when metadata_dir is set: per request of the claim, a file
// <metadata_dir>/<ns>_<claim>/<request>/metadata.json (apiVersion
// metadata.resource.k8s.io/v1alpha1, kind DeviceMetadata: the claim's name, namespace and uid,
// and the request's devices with driver, pool and attributes as ResourceSlices write them; a gang
// device carries its node rank, world size and rank table path), mounted read-only by a CDI
// device of its own at /var/run/dra-device-attributes/<claim>/<request>/<driver>-metadata.json;
// the request's devices list that CDI device too.
//
// Errors name the claim ("ResourceClaim ns/name: device npu-9 of request r is not on node n1"):
// kInvalidArgument for what the claim asks that cannot be given, kFailedPrecondition for a
// device another claim holds, kUnavailable while the node's devices are not discovered yet.
StatusOr<PreparedClaim> ComputePreparedClaim(const PrepareInput& in, const HostView& host);

// The inventory's device named `name`; null when there is none.
const api::InventoryDevice* FindInventoryDevice(const api::NodeInventory& inventory,
                                                const std::string& name);

// Adds the devices `claim` holds for itself (not shared; a group's members) to `taken`.
void NoteTakenDevices(const checkpoint::Claim& claim, std::map<std::string, std::string>* taken);

// The instance numbers of the vNPU-style partitions this plugin recorded, pinned in `inventory`:
// discovery numbers a device's partitions per profile in id order, which need not be the
// instance a claim was allocated; a recorded one keeps its instance, and the others take the
// lowest numbers left, so that the published names stay the ones the claims hold.
void PinPartitions(const std::vector<checkpoint::Partition>& records,
                   api::NodeInventory* inventory);

// The kubelet's answer for a recorded claim.
PrepareResult AnswerOf(const checkpoint::Claim& claim);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_PREPARE_H_
