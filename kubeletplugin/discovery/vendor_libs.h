// What the vendor management libraries report, loaded at run time with dlopen (never a link-time
// dependency): NVML (libnvidia-ml.so.1) for NVIDIA GPUs and DCMI (libdcmi.so) for Huawei Ascend
// NPUs. Each probe returns plain facts; the discovery assembles them with what sysfs says into a
// NodeInventory. A library that is missing, too old (a required symbol absent) or failing is not
// an error of the probe: `library.loaded` is false or a per-device `error` is set, with a message
// for the inventory's conditions, and discovery falls back to sysfs and the server-model tables.
// Nothing here throws or aborts, whatever the library does short of crashing itself.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_VENDOR_LIBS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_VENDOR_LIBS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xpu::discovery {

// How loading and initialising one library went.
struct LibraryStatus {
  std::string name;     // "nvml", "dcmi"
  bool loaded = false;  // dlopen and init succeeded
  std::string path;     // the file dlopen found
  std::string error;    // why not, or the first failing call ("nvmlInit_v2: 9 driver not loaded")
  std::vector<std::string> missing_symbols;  // optional functions this version lacks
};

// ---- NVML (docs/reference/hardware.md §2.3, §2.4, §2.6) ----

struct NvmlLink {
  int link = 0;
  bool active = false;            // nvmlDeviceGetNvLinkState
  std::string remote_pci_bus_id;  // nvmlDeviceGetNvLinkRemotePciInfo_v2, "0000:13:00.0" form
  std::string remote_type;        // "gpu", "switch", "ibmnpu", "unknown"
};

// Multi-Instance GPU, as NVML reports it (docs/partitions.md).
struct NvmlMigPlacement {
  unsigned start = 0;  // first memory slice
  unsigned size = 0;   // memory slices spanned
  friend bool operator==(const NvmlMigPlacement&, const NvmlMigPlacement&) = default;
};

// A GPU instance profile (nvmlDeviceGetGpuInstanceProfileInfoV and its possible placements).
struct NvmlMigProfile {
  unsigned profile = 0;         // the NVML_GPU_INSTANCE_PROFILE_* index it was read with
  unsigned id = 0;              // the profile id that placements and GPU instances name
  std::string name;             // as NVML gives it: "MIG 1g.18gb"
  unsigned slice_count = 0;     // GPU (compute) slices
  unsigned instance_count = 0;  // how many fit at once
  uint64_t memory_mib = 0;      // memorySizeMB
  std::vector<NvmlMigPlacement> placements;
};

// A GPU instance that exists (nvmlDeviceGetGpuInstances, nvmlGpuInstanceGetInfo).
struct NvmlGpuInstance {
  unsigned id = 0;          // the GPU instance id
  unsigned profile_id = 0;  // an NvmlMigProfile's `id`
  NvmlMigPlacement placement;
  // The UUID of its first MIG device (one per compute instance), "MIG-..."; empty while it has
  // no compute instance.
  std::string uuid;
};

struct NvmlMig {
  bool enabled = false;          // nvmlDeviceGetMigMode: current mode NVML_DEVICE_MIG_ENABLE
  bool pending_enabled = false;  // ... pending mode, taking effect at the next GPU reset
  // NVML answers profiles only while MIG mode is on (NOT_SUPPORTED otherwise): empty when off.
  std::vector<NvmlMigProfile> profiles;
  std::vector<NvmlGpuInstance> instances;
};

struct NvmlDevice {
  int index = 0;           // NVML index
  int minor_number = -1;   // /dev/nvidia<minor>
  std::string uuid;        // "GPU-..."
  std::string name;        // "NVIDIA H200"
  std::string pci_bus_id;  // normalised to sysfs form: "0000:13:00.0" (NVML gives 00000000:13:00.0)
  uint64_t memory_bytes = 0;
  int cc_major = 0;  // CUDA compute capability
  int cc_minor = 0;
  std::optional<int> numa_node;
  std::vector<NvmlLink> links;  // links NVML reports (NOT_SUPPORTED → empty)
  // GPU fabric (NVL72 clique): state COMPLETED with a cluster UUID and clique id.
  std::string fabric_state;  // "not-supported", "not-started", "in-progress", "completed"
  std::string cluster_uuid;  // canonical UUID text, empty when all zero
  std::optional<uint32_t> clique_id;
  bool healthy = true;
  std::vector<uint64_t> xid_events;  // critical XIDs seen (e.g. 79: fell off the bus)
  // MIG; absent when the GPU has no MIG (nvmlDeviceGetMigMode NOT_SUPPORTED), the library lacks
  // the MIG functions, or a MIG call failed (then `error` says which).
  std::optional<NvmlMig> mig;
  std::string error;  // a call for this device failed: what and why
};

struct NvmlFacts {
  LibraryStatus library;
  std::string driver_version;   // nvmlSystemGetDriverVersion, "580.159.04"
  int cuda_driver_version = 0;  // nvmlSystemGetCudaDriverVersion_v2, 13000 = 13.0
  std::vector<NvmlDevice> devices;
};

// Loads libnvidia-ml.so.1 from `lib_dirs` in order, then the loader's default search path.
NvmlFacts ProbeNvml(const std::vector<std::string>& lib_dirs);

// MIG naming, shared by discovery's inventory and the MIG partition backend:
// A MIG profile's name without NVML's "MIG " prefix: "1g.18gb", "1g.18gb+me".
std::string MigProfileName(std::string_view nvml_name);
// The slots one placement of `profile` spans: its placements' size (NVML gives one per profile).
unsigned MigProfileSlots(const NvmlMigProfile& profile);
// The inventory's profile name of each profile id of `mig`: MigProfileName, except that a
// media-extension variant ("+me", "-me", "+me.all") whose base profile takes the same slices and
// slots goes by its base's name (its instances sit where the base's do).
std::map<unsigned, std::string> MigProfileNames(const NvmlMig& mig);

// ---- DCMI (docs/reference/hardware.md §1.5, §1.6) ----

// A virtual NPU that exists (dcmi_get_device_info VDEV_MNG, GET_VDEV_RESOURCE).
struct DcmiVdevice {
  unsigned id = 0;     // vdev_id: /dev/vdavinci<id>
  unsigned group = 0;  // vfg_id
  std::string name;    // the template it was made from, "vir05_1c_16g"
  double aicore = 0;
  unsigned aicpu = 0;
  uint64_t memory_mb = 0;
  bool in_use = false;  // is_container_used
};

// A chip's virtualisation (GET_TOTAL_RESOURCE): its whole resource and the vdevices on it.
struct DcmiVnpu {
  double aicore = 0;
  unsigned aicpu = 0;
  uint64_t memory_mb = 0;
  std::vector<DcmiVdevice> vdevices;  // by id
};

struct DcmiChip {
  int card_id = 0;
  int device_id = 0;      // within the card (A3: 0 and 1 are the two dies)
  int logic_id = 0;       // logical id (ASCEND_RT_VISIBLE_DEVICES, npu-smi)
  int phy_id = 0;         // physical id: /dev/davinci<phy_id>, ASCEND_VISIBLE_DEVICES
  std::string chip_type;  // "Ascend"
  std::string chip_name;  // "910B3"
  std::string chip_ver;
  int aicore_count = 0;
  std::string pci_bus_id;  // sysfs form "0000:c1:00.0" when the library gives it
  uint64_t hbm_total_mb = 0;
  uint32_t health = 0;    // 0 normal, 1 minor, 2 major, 3 critical, 0xFFFFFFFF absent
  std::string device_ip;  // dcmi_get_device_ip (the per-NPU RoCE address)
  // dcmi_get_device_network_health: "ok", "unreachable", "socket-failure", ... ; empty when the
  // card has no RoCE port (not supported) or the call failed.
  std::string network_health;
  // dcmi_get_device_info(HCCS, GET_STATUS); unset on PCIe cards, which have no HCCS.
  std::optional<bool> hccs_healthy;  // pcs_status == 0 && hdlc_status == 0x3, as npu-smi reads it
  uint32_t hccs_pcs_status = 0;
  uint32_t hccs_hdlc_status = 0;
  // dcmi_get_device_component_static_version: IMU (910) or HILINK (910B, 910_93, 310P).
  std::string firmware_version;
  // Virtual NPUs; absent when the chip or driver has no virtualisation (NOT_SUPPORT) or a
  // VDEV_MNG call failed (then `error` says which).
  std::optional<DcmiVnpu> vnpu;
  std::string error;  // a call for this chip failed: which and the code
};

// Pairwise topology between two chips by logic id, as dcmi_get_topo_info_by_device_id reports.
struct DcmiTopology {
  int a = 0;  // logic ids
  int b = 0;
  std::string type;  // "self", "sys", "phb", "hccs", "pxb", "pix", "sio", "hccs-sw", "ub"
};

struct DcmiFacts {
  LibraryStatus library;
  std::string dcmi_version;
  std::string driver_version;  // as reported, "24.1.rc2"
  std::string product_type;
  std::vector<DcmiChip> chips;
  std::vector<DcmiTopology> topology;  // every ordered pair a < b the library answered
};

// Loads libdcmi.so from `lib_dirs` in order, then the loader's default search path.
DcmiFacts ProbeDcmi(const std::vector<std::string>& lib_dirs);

// ---- Hygon DMI (libhydmi.so in /opt/hyhal/lib): virtual HCUs (docs/partitions.md) ----

// A physical DCU as dmiGetDeviceInfo reports it, by DMI's device index.
struct HydmiDevice {
  int index = 0;
  std::string name;
  int compute_units = 0;
  uint64_t memory_mib = 0;
};

// A vHCU that exists (dmiGetVDeviceInfo).
struct HydmiVdevice {
  int id = 0;      // the vdev id: /etc/vdev/vdev<id>.conf
  int device = 0;  // the physical device's index
  int compute_units = 0;
  uint64_t memory_mib = 0;
  friend bool operator==(const HydmiVdevice&, const HydmiVdevice&) = default;
};

struct HydmiFacts {
  LibraryStatus library;
  int max_vdevices = 0;  // per device (dmiGetMaxVDeviceCount); 0: virtualisation not supported
  std::vector<HydmiDevice> devices;
  std::vector<HydmiVdevice> vdevices;  // by id
};

// Loads libhydmi.so from `lib_dirs` in order, then the loader's default search path.
HydmiFacts ProbeHydmi(const std::vector<std::string>& lib_dirs);

// A vHCU size as a profile name, "20cu.16gb" (memory in whole GiB), "7cu.3000mb" otherwise; and
// back (false for any other name).
std::string VhcuProfileName(int compute_units, uint64_t memory_mib);
bool ParseVhcuProfileName(std::string_view name, int* compute_units, uint64_t* memory_mib);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_VENDOR_LIBS_H_
