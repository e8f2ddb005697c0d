// ProbeNvml: NVML through dlopen. Every call's result is checked; a failing call is recorded on its
// device and the probe moves on, so one broken GPU never hides the others.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/text.h"
#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/internal/partition_backends.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/telemetry.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery {
namespace {

namespace nv = ::xpu::discovery::nvml;

constexpr const char* kNvmlFile = "libnvidia-ml.so.1";
constexpr unsigned kMaxDevices = 1024;  // more than any node has; guards a garbage count
constexpr unsigned kMaxEvents = 4096;   // per probe, in case a library never reports "timeout"
// MIG bounds, each past what any GPU has, guarding a garbage answer: profile indexes tried (18
// defined by NVML 13.3, later drivers may add more), placements of a profile, GPU instances of a
// profile, MIG devices of a GPU.
constexpr unsigned kMaxMigProfileIndex = 64;
constexpr unsigned kMaxMigPlacements = 64;
constexpr unsigned kMaxGpuInstances = 64;
constexpr unsigned kMaxMigDevices = 64;
// XIDs the NVIDIA device plugin treats as application errors, not device faults (hardware.md §2.6).
constexpr unsigned long long kApplicationXids[] = {13, 31, 43, 45, 68, 109};

// nvmlErrorString's text, lower case, for the codes NVML defines.
std::string_view NvmlErrorName(nv::nvmlReturn_t rc) {
  static constexpr std::string_view kNames[] = {
      "success",
      "uninitialized",
      "invalid argument",
      "not supported",
      "insufficient permissions",
      "already initialized",
      "not found",
      "insufficient size",
      "insufficient external power",
      "driver not loaded",
      "timeout",
      "interrupt request issue",
      "nvml shared library not found",
      "function not found",
      "corrupted inforom",
      "gpu is lost",
      "gpu requires restart",
      "the operating system has blocked the request",
      "rm has detected an nvml/rm version mismatch",
      "in use by another client",
      "insufficient memory",
      "no data",
      "vgpu ecc not supported",
      "insufficient resources",
      "frequency not supported",
      "argument version mismatch",
      "deprecated",
      "not ready",
      "gpu not found",
      "invalid state",
  };
  return NameAt(kNames, rc).value_or("unknown error");
}

std::string NvmlCallError(std::string_view fn, nv::nvmlReturn_t rc) {
  std::string out(fn);
  out += ": " + std::to_string(rc) + " ";
  out += NvmlErrorName(rc);
  return out;
}

// NVML spells the domain with 8 hex digits ("00000000:13:00.0"), sysfs with 4, in lower case.
std::string NormaliseBusId(const char* bus_id, size_t cap) {
  std::string raw = BoundedCString(bus_id, cap);
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (std::sscanf(raw.c_str(), "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) return raw;
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, slot, function);
  return out;
}

// Canonical 8-4-4-4-12 text, or empty for the all-zero UUID of a GPU outside any fabric.
std::string FormatUuid(const unsigned char (&uuid)[16]) {
  bool all_zero = true;
  for (unsigned char c : uuid) all_zero = all_zero && c == 0;
  if (all_zero) return "";
  std::string out;
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", uuid[i]);
    out += hex;
  }
  return out;
}

std::string FabricStateName(nv::nvmlGpuFabricState_t state) {
  static constexpr std::string_view kNames[] = {"not-supported", "not-started", "in-progress",
                                                "completed"};
  static_assert(NamesCover(kNames, nv::kFabricStateCompleted));  // nv::kFabricState* in order
  return std::string(NameAt(kNames, state).value_or("unknown"));
}

std::string RemoteTypeName(nv::nvmlIntNvLinkDeviceType_t type) {
  static constexpr std::string_view kNames[] = {"gpu", "ibmnpu", "switch"};
  return std::string(NameAt(kNames, type).value_or("unknown"));
}

struct NvmlApi {
  // Required: present in every driver this project supports (R450+).
  nv::InitFn init = nullptr;
  nv::InitFn shutdown = nullptr;
  nv::SystemGetStringFn system_get_driver_version = nullptr;
  nv::DeviceGetCountFn device_get_count = nullptr;
  nv::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nv::DeviceGetStringFn device_get_name = nullptr;
  nv::DeviceGetStringFn device_get_uuid = nullptr;
  nv::DeviceGetPciInfoFn device_get_pci_info = nullptr;
  nv::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  nv::DeviceGetCudaComputeCapabilityFn device_get_cuda_compute_capability = nullptr;
  nv::DeviceGetUintFn device_get_minor_number = nullptr;
  // Optional: newer drivers, or features some builds leave out.
  nv::SystemGetCudaDriverVersionFn system_get_cuda_driver_version = nullptr;
  nv::DeviceGetMemoryInfoV2Fn device_get_memory_info_v2 = nullptr;
  nv::DeviceGetUintFn device_get_numa_node_id = nullptr;
  nv::DeviceGetNvLinkStateFn device_get_nvlink_state = nullptr;
  nv::DeviceGetNvLinkRemotePciInfoFn device_get_nvlink_remote_pci_info = nullptr;
  nv::DeviceGetNvLinkRemoteDeviceTypeFn device_get_nvlink_remote_device_type = nullptr;
  nv::DeviceGetGpuFabricInfoFn device_get_gpu_fabric_info = nullptr;
  nv::EventSetCreateFn event_set_create = nullptr;
  nv::DeviceRegisterEventsFn device_register_events = nullptr;
  nv::EventSetWaitFn event_set_wait = nullptr;
  nv::EventSetFreeFn event_set_free = nullptr;
  // MIG: used only when all are there (the versioned profile info and the _v2 placements are
  // newer than the first MIG drivers).
  nv::DeviceGetMigModeFn device_get_mig_mode = nullptr;
  nv::DeviceGetGpuInstanceProfileInfoVFn device_get_gpu_instance_profile_info_v = nullptr;
  nv::DeviceGetGpuInstancePossiblePlacementsFn device_get_gpu_instance_possible_placements =
      nullptr;
  nv::DeviceGetGpuInstancesFn device_get_gpu_instances = nullptr;
  nv::GpuInstanceGetInfoFn gpu_instance_get_info = nullptr;
  nv::DeviceGetUintFn device_get_max_mig_device_count = nullptr;
  nv::DeviceGetMigDeviceHandleByIndexFn device_get_mig_device_handle_by_index = nullptr;
  nv::DeviceGetUintFn device_get_gpu_instance_id = nullptr;
  // Creating and destroying MIG instances (the partition backend's Open binds them).
  nv::DeviceCreateGpuInstanceWithPlacementFn device_create_gpu_instance_with_placement{};
  nv::DeviceGetGpuInstanceByIdFn device_get_gpu_instance_by_id{};
  nv::GpuInstanceDestroyFn gpu_instance_destroy{};
  nv::GpuInstanceGetComputeInstanceProfileInfoFn gpu_instance_get_compute_instance_profile_info =
      {};
  nv::GpuInstanceCreateComputeInstanceFn gpu_instance_create_compute_instance{};
  nv::GpuInstanceGetComputeInstancesFn gpu_instance_get_compute_instances{};
  nv::ComputeInstanceDestroyFn compute_instance_destroy{};
  // Telemetry only (BindTelemetry): optional, never part of the discovery probe's status.
  nv::DeviceGetTemperatureFn device_get_temperature = nullptr;
  nv::DeviceGetUintFn device_get_power_usage = nullptr;
  nv::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
  nv::DeviceGetTotalEccErrorsFn device_get_total_ecc_errors = nullptr;

  bool has_mig() const {
    return device_get_mig_mode != nullptr && device_get_gpu_instance_profile_info_v != nullptr &&
           device_get_gpu_instance_possible_placements != nullptr &&
           device_get_gpu_instances != nullptr && gpu_instance_get_info != nullptr &&
           device_get_max_mig_device_count != nullptr &&
           device_get_mig_device_handle_by_index != nullptr &&
           device_get_gpu_instance_id != nullptr;
  }
};

// Binds every symbol; returns the required ones that are missing.
std::vector<std::string> Bind(const DlLibrary& lib, NvmlApi* api,
                              std::vector<std::string>* optional_missing) {
  std::vector<std::string> required_missing;
  auto* req = &required_missing;
  lib.Bind("nvmlInit_v2", &api->init, req);
  lib.Bind("nvmlShutdown", &api->shutdown, req);
  lib.Bind("nvmlSystemGetDriverVersion", &api->system_get_driver_version, req);
  lib.Bind("nvmlDeviceGetCount_v2", &api->device_get_count, req);
  lib.Bind("nvmlDeviceGetHandleByIndex_v2", &api->device_get_handle_by_index, req);
  lib.Bind("nvmlDeviceGetName", &api->device_get_name, req);
  lib.Bind("nvmlDeviceGetUUID", &api->device_get_uuid, req);
  lib.Bind("nvmlDeviceGetPciInfo_v3", &api->device_get_pci_info, req);
  lib.Bind("nvmlDeviceGetMemoryInfo", &api->device_get_memory_info, req);
  lib.Bind("nvmlDeviceGetCudaComputeCapability", &api->device_get_cuda_compute_capability, req);
  lib.Bind("nvmlDeviceGetMinorNumber", &api->device_get_minor_number, req);
  auto* opt = optional_missing;
  lib.Bind("nvmlSystemGetCudaDriverVersion_v2", &api->system_get_cuda_driver_version, opt);
  lib.Bind("nvmlDeviceGetMemoryInfo_v2", &api->device_get_memory_info_v2, opt);
  lib.Bind("nvmlDeviceGetNumaNodeId", &api->device_get_numa_node_id, opt);
  lib.Bind("nvmlDeviceGetNvLinkState", &api->device_get_nvlink_state, opt);
  lib.Bind("nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->device_get_nvlink_remote_pci_info, opt);
  lib.Bind("nvmlDeviceGetNvLinkRemoteDeviceType", &api->device_get_nvlink_remote_device_type, opt);
  lib.Bind("nvmlDeviceGetGpuFabricInfo", &api->device_get_gpu_fabric_info, opt);
  lib.Bind("nvmlEventSetCreate", &api->event_set_create, opt);
  lib.Bind("nvmlDeviceRegisterEvents", &api->device_register_events, opt);
  lib.Bind("nvmlEventSetWait_v2", &api->event_set_wait, opt);
  lib.Bind("nvmlEventSetFree", &api->event_set_free, opt);
  lib.Bind("nvmlDeviceGetMigMode", &api->device_get_mig_mode, opt);
  lib.Bind("nvmlDeviceGetGpuInstanceProfileInfoV", &api->device_get_gpu_instance_profile_info_v,
           opt);
  lib.Bind("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
           &api->device_get_gpu_instance_possible_placements, opt);
  lib.Bind("nvmlDeviceGetGpuInstances", &api->device_get_gpu_instances, opt);
  lib.Bind("nvmlGpuInstanceGetInfo", &api->gpu_instance_get_info, opt);
  lib.Bind("nvmlDeviceGetMaxMigDeviceCount", &api->device_get_max_mig_device_count, opt);
  lib.Bind("nvmlDeviceGetMigDeviceHandleByIndex", &api->device_get_mig_device_handle_by_index, opt);
  lib.Bind("nvmlDeviceGetGpuInstanceId", &api->device_get_gpu_instance_id, opt);
  return required_missing;
}

void BindTelemetry(const DlLibrary& lib, NvmlApi* api, std::vector<std::string>* missing) {
  lib.Bind("nvmlDeviceGetTemperature", &api->device_get_temperature, missing);
  lib.Bind("nvmlDeviceGetPowerUsage", &api->device_get_power_usage, missing);
  lib.Bind("nvmlDeviceGetUtilizationRates", &api->device_get_utilization_rates, missing);
  lib.Bind("nvmlDeviceGetTotalEccErrors", &api->device_get_total_ecc_errors, missing);
}

// One device's calls: each failure is appended to `error`; a lost GPU stops the rest.
class DeviceProbe {
 public:
  DeviceProbe(const NvmlApi& api, nv::nvmlDevice_t handle, NvmlDevice* out)
      : api_(api), handle_(handle), out_(out) {}

  void Run() {
    char buf[nv::kDeviceUuidV2BufferSize] = {};
    if (!Ok("nvmlDeviceGetUUID", api_.device_get_uuid(handle_, buf, sizeof buf))) return;
    out_->uuid = BoundedCString(buf, sizeof buf);
    if (!Ok("nvmlDeviceGetName", api_.device_get_name(handle_, buf, sizeof buf))) return;
    out_->name = BoundedCString(buf, sizeof buf);
    nv::nvmlPciInfo_t pci{};
    if (!Ok("nvmlDeviceGetPciInfo_v3", api_.device_get_pci_info(handle_, &pci))) return;
    out_->pci_bus_id = NormaliseBusId(pci.busId, sizeof pci.busId);
    unsigned minor = 0;
    if (!Ok("nvmlDeviceGetMinorNumber", api_.device_get_minor_number(handle_, &minor))) return;
    out_->minor_number = static_cast<int>(minor);
    int cc_major = 0, cc_minor = 0;
    nv::nvmlReturn_t rc = api_.device_get_cuda_compute_capability(handle_, &cc_major, &cc_minor);
    if (!Ok("nvmlDeviceGetCudaComputeCapability", rc)) return;
    out_->cc_major = cc_major;
    out_->cc_minor = cc_minor;
    if (!Memory() || !Numa() || !Links()) return;
    Fabric();
    if (!lost_) Mig();
  }

  bool lost() const { return lost_; }

  // The MIG facts alone (the partition backend's view of one GPU).
  void ReadMig() { Mig(); }

 private:
  // Records a failure; false when the caller should stop (the call failed).
  bool Ok(std::string_view fn, nv::nvmlReturn_t rc) {
    if (rc == nv::kSuccess) return true;
    if (!out_->error.empty()) out_->error += "; ";
    out_->error += NvmlCallError(fn, rc);
    if (rc == nv::kErrorGpuIsLost) {
      lost_ = true;
      out_->healthy = false;
    }
    return false;
  }

  // _v2 first: its total matches what nvidia-smi shows on R510+; v1 on older drivers.
  bool Memory() {
    if (api_.device_get_memory_info_v2 != nullptr) {
      nv::nvmlMemory_v2_t m{};
      m.version = nv::kMemoryV2Version;
      nv::nvmlReturn_t rc = api_.device_get_memory_info_v2(handle_, &m);
      if (rc == nv::kSuccess) {
        out_->memory_bytes = m.total;
        return true;
      }
      if (rc == nv::kErrorGpuIsLost) return Ok("nvmlDeviceGetMemoryInfo_v2", rc);
    }
    nv::nvmlMemory_t m{};
    if (!Ok("nvmlDeviceGetMemoryInfo", api_.device_get_memory_info(handle_, &m))) return !lost_;
    out_->memory_bytes = m.total;
    return true;
  }

  // "Not supported" is the normal answer in a VM (the H200 record): the node stays unknown.
  bool Numa() {
    if (api_.device_get_numa_node_id == nullptr) return true;
    unsigned node = 0;
    nv::nvmlReturn_t rc = api_.device_get_numa_node_id(handle_, &node);
    if (rc == nv::kSuccess) {
      out_->numa_node = static_cast<int>(node);
    } else if (rc != nv::kErrorNotSupported) {
      Ok("nvmlDeviceGetNumaNodeId", rc);
    }
    return !lost_;
  }

  // Links are probed upwards until the first invalid-argument (no such link) or not-supported
  // (no NVLink at all, or a passthrough GPU), as nvidia-smi does.
  bool Links() {
    if (api_.device_get_nvlink_state == nullptr) return true;
    for (unsigned link = 0; link < nv::kNvLinkMaxLinks; ++link) {
      nv::nvmlEnableState_t state = 0;
      nv::nvmlReturn_t rc = api_.device_get_nvlink_state(handle_, link, &state);
      if (rc == nv::kErrorInvalidArgument || rc == nv::kErrorNotSupported) break;
      if (!Ok("nvmlDeviceGetNvLinkState", rc)) return !lost_;
      NvmlLink l;
      l.link = static_cast<int>(link);
      l.active = state != 0;
      l.remote_type = "unknown";
      if (api_.device_get_nvlink_remote_pci_info != nullptr) {
        nv::nvmlPciInfo_t remote{};
        rc = api_.device_get_nvlink_remote_pci_info(handle_, link, &remote);
        if (rc == nv::kSuccess) {
          l.remote_pci_bus_id = NormaliseBusId(remote.busId, sizeof remote.busId);
        } else if (l.active || rc == nv::kErrorGpuIsLost) {
          // An inactive link has no remote end to report; only an active one's failure counts.
          Ok("nvmlDeviceGetNvLinkRemotePciInfo_v2", rc);
          if (lost_) return false;
        }
      }
      if (api_.device_get_nvlink_remote_device_type != nullptr) {
        nv::nvmlIntNvLinkDeviceType_t type = 0;
        rc = api_.device_get_nvlink_remote_device_type(handle_, link, &type);
        if (rc == nv::kSuccess) l.remote_type = RemoteTypeName(type);
        if (rc == nv::kErrorGpuIsLost) return Ok("nvmlDeviceGetNvLinkRemoteDeviceType", rc);
      }
      out_->links.push_back(std::move(l));
    }
    return true;
  }

  void Fabric() {
    if (api_.device_get_gpu_fabric_info == nullptr) return;
    nv::nvmlGpuFabricInfo_t info{};
    nv::nvmlReturn_t rc = api_.device_get_gpu_fabric_info(handle_, &info);
    if (rc == nv::kErrorNotSupported) {
      out_->fabric_state = FabricStateName(nv::kFabricStateNotSupported);
      return;
    }
    if (!Ok("nvmlDeviceGetGpuFabricInfo", rc)) return;
    out_->fabric_state = FabricStateName(info.state);
    out_->cluster_uuid = FormatUuid(info.clusterUuid);
    // The NVIDIA DRA driver's rule (hardware.md §2.4): a clique only once registration completed
    // successfully and the GPU sits in a real cluster.
    if (info.state == nv::kFabricStateCompleted) {
      if (info.status != nv::kSuccess) {
        Ok("nvmlDeviceGetGpuFabricInfo: fabric status", info.status);
      } else if (!out_->cluster_uuid.empty()) {
        out_->clique_id = info.cliqueId;
      }
    }
  }

  // MIG mode, the profiles with their possible placements, and the GPU instances that exist with
  // their MIG devices' UUIDs, the calls the NVIDIA DRA driver makes (nvml.h "Multi Instance GPU
  // Management"). NOT_SUPPORTED from nvmlDeviceGetMigMode (no MIG on this GPU, a vGPU guest)
  // means no MIG and no error; any other failure is recorded and leaves `mig` unset, since a
  // partial view could offer slots that an instance already holds.
  void Mig() {
    if (!api_.has_mig()) return;
    unsigned current = 0, pending = 0;
    const nv::nvmlReturn_t rc = api_.device_get_mig_mode(handle_, &current, &pending);
    if (rc == nv::kErrorNotSupported || !Ok("nvmlDeviceGetMigMode", rc)) return;
    NvmlMig mig;
    mig.enabled = current == nv::kDeviceMigEnable;
    mig.pending_enabled = pending == nv::kDeviceMigEnable;
    if (!MigProfiles(&mig)) return;
    // nvmlDeviceGetGpuInstances answers NOT_SUPPORTED while MIG mode is off: nothing exists then.
    if (mig.enabled && !(GpuInstances(&mig) && MigDeviceUuids(&mig))) return;
    out_->mig = std::move(mig);
  }

  // Every profile index from 0 up: NOT_SUPPORTED (not on this GPU, or MIG mode off) and
  // INVALID_ARGUMENT (past the profiles this driver knows) skip the index.
  bool MigProfiles(NvmlMig* mig) {
    for (unsigned index = 0; index < kMaxMigProfileIndex; ++index) {
      nv::nvmlGpuInstanceProfileInfo_v2_t info{};
      info.version = nv::kGpuInstanceProfileInfoV2Version;
      nv::nvmlReturn_t rc = api_.device_get_gpu_instance_profile_info_v(handle_, index, &info);
      if (rc == nv::kErrorNotSupported || rc == nv::kErrorInvalidArgument) continue;
      if (!Ok("nvmlDeviceGetGpuInstanceProfileInfoV", rc)) return false;
      NvmlMigProfile profile;
      profile.profile = index;
      profile.id = info.id;
      profile.name = BoundedCString(info.name, sizeof info.name);
      profile.slice_count = info.sliceCount;
      profile.instance_count = info.instanceCount;
      profile.memory_mib = info.memorySizeMB;
      // The count first (placements NULL), then the placements. A profile without placements
      // cannot be placed: left out, as the NVIDIA DRA driver does.
      unsigned count = 0;
      rc = api_.device_get_gpu_instance_possible_placements(handle_, info.id, nullptr, &count);
      if (rc == nv::kErrorNotSupported) continue;
      if (!Ok("nvmlDeviceGetGpuInstancePossiblePlacements_v2", rc)) return false;
      std::vector<nv::nvmlGpuInstancePlacement_t> placements(std::min(count, kMaxMigPlacements));
      count = static_cast<unsigned>(placements.size());
      if (count > 0) {
        rc = api_.device_get_gpu_instance_possible_placements(handle_, info.id, placements.data(),
                                                              &count);
        if (!Ok("nvmlDeviceGetGpuInstancePossiblePlacements_v2", rc)) return false;
      }
      for (unsigned i = 0; i < std::min<size_t>(count, placements.size()); ++i) {
        profile.placements.push_back({placements[i].start, placements[i].size});
      }
      mig->profiles.push_back(std::move(profile));
    }
    return true;
  }

  // The GPU instances of each profile: the buffer holds the profile's instanceCount handles, as
  // nvml.h asks.
  bool GpuInstances(NvmlMig* mig) {
    for (const NvmlMigProfile& profile : mig->profiles) {
      std::vector<nv::nvmlGpuInstance_t> handles(
          std::clamp(profile.instance_count, 1U, kMaxGpuInstances), nullptr);
      auto count = static_cast<unsigned>(handles.size());
      nv::nvmlReturn_t rc =
          api_.device_get_gpu_instances(handle_, profile.id, handles.data(), &count);
      if (!Ok("nvmlDeviceGetGpuInstances", rc)) return false;
      for (unsigned i = 0; i < std::min<size_t>(count, handles.size()); ++i) {
        nv::nvmlGpuInstanceInfo_t info{};
        rc = api_.gpu_instance_get_info(handles[i], &info);
        if (!Ok("nvmlGpuInstanceGetInfo", rc)) return false;
        NvmlGpuInstance gi;
        gi.id = info.id;
        gi.profile_id = info.profileId;
        gi.placement = {info.placement.start, info.placement.size};
        mig->instances.push_back(std::move(gi));
      }
    }
    return true;
  }

  // Each MIG device (a compute instance) by index: its GPU instance id and UUID. A GPU instance
  // with several compute instances takes the first one's UUID; NOT_FOUND is an unused index.
  bool MigDeviceUuids(NvmlMig* mig) {
    unsigned max = 0;
    nv::nvmlReturn_t rc = api_.device_get_max_mig_device_count(handle_, &max);
    if (!Ok("nvmlDeviceGetMaxMigDeviceCount", rc)) return false;
    for (unsigned index = 0; index < std::min(max, kMaxMigDevices); ++index) {
      nv::nvmlDevice_t mig_device = nullptr;
      rc = api_.device_get_mig_device_handle_by_index(handle_, index, &mig_device);
      if (rc == nv::kErrorNotFound) continue;
      if (!Ok("nvmlDeviceGetMigDeviceHandleByIndex", rc)) return false;
      unsigned gi_id = 0;
      rc = api_.device_get_gpu_instance_id(mig_device, &gi_id);
      if (!Ok("nvmlDeviceGetGpuInstanceId", rc)) return false;
      char uuid[nv::kDeviceUuidV2BufferSize] = {};
      rc = api_.device_get_uuid(mig_device, uuid, sizeof uuid);
      if (!Ok("nvmlDeviceGetUUID", rc)) return false;
      for (NvmlGpuInstance& gi : mig->instances) {
        if (gi.id == gi_id && gi.uuid.empty()) gi.uuid = BoundedCString(uuid, sizeof uuid);
      }
    }
    return true;
  }

  const NvmlApi& api_;
  nv::nvmlDevice_t handle_;
  NvmlDevice* out_;
  bool lost_ = false;
};

// An event set registered for critical XIDs: the one drain the discovery probe (what arrives
// while it runs), the telemetry counter (every critical XID) and the health watcher (blocking
// waits) share. Devices are registered under a caller's key (an index into its own list).
// Errors here are not device errors: event watching is best-effort on top of the rest.
class XidEventSet {
 public:
  explicit XidEventSet(const NvmlApi& api) : api_(api) {
    const bool available = api.event_set_create != nullptr &&
                           api.device_register_events != nullptr && api.event_set_wait != nullptr &&
                           api.event_set_free != nullptr;
    if (available && api_.event_set_create(&set_) != nv::kSuccess) set_ = nullptr;
  }
  ~XidEventSet() {
    if (set_ != nullptr) api_.event_set_free(set_);
  }
  XidEventSet(const XidEventSet&) = delete;
  XidEventSet& operator=(const XidEventSet&) = delete;

  // False when the library has no events or the board does not support them (GeForce, some
  // VMs): that device is simply not watched.
  bool Register(nv::nvmlDevice_t handle, size_t key) {
    if (set_ == nullptr) return false;
    if (api_.device_register_events(handle, nv::kEventTypeXidCriticalError, set_) != nv::kSuccess) {
      return false;
    }
    keys_[handle] = key;
    return true;
  }

  // Calls fn(key, xid) for each critical XID queued for a registered device (application XIDs
  // included: the caller decides), waiting up to `first_wait_ms` for the first. Returns the
  // answer that ended the drain: kErrorTimeout once the queue is empty.
  template <typename Fn>
  nv::nvmlReturn_t Drain(unsigned first_wait_ms, Fn fn) {
    if (set_ == nullptr) return nv::kErrorTimeout;
    for (unsigned n = 0; n < kMaxEvents; ++n) {
      nv::nvmlEventData_t event{};
      const nv::nvmlReturn_t rc = api_.event_set_wait(set_, &event, n == 0 ? first_wait_ms : 0);
      if (rc != nv::kSuccess) return rc;
      auto it = keys_.find(event.device);
      if (it == keys_.end() || (event.eventType & nv::kEventTypeXidCriticalError) == 0) continue;
      fn(it->second, static_cast<uint64_t>(event.eventData));
    }
    return nv::kSuccess;  // a library that never says "timeout": the rest waits for next time
  }

 private:
  const NvmlApi& api_;
  nv::nvmlEventSet_t set_ = nullptr;
  std::map<nv::nvmlDevice_t, size_t> keys_;
};

// Loads, binds and initialises the library into `lib` and `api`; sets status.loaded on success.
void OpenNvml(const std::vector<std::string>& lib_dirs, DlLibrary* lib, NvmlApi* api,
              LibraryStatus* status) {
  OpenVendorLibrary(
      "nvml", kNvmlFile, lib_dirs, lib, api, status,
      [](const DlLibrary& l, NvmlApi* a, std::vector<std::string>* missing) {
        return Bind(l, a, missing);
      },
      [](NvmlApi* a) -> std::string {
        const nv::nvmlReturn_t rc = a->init();
        return rc == nv::kSuccess ? "" : NvmlCallError("nvmlInit_v2", rc);
      });
}

// OpenNvml for a library kept open (telemetry, the XID watcher): the telemetry symbols bound too,
// and the number of GPUs (at most kMaxDevices); 0 when the library or the count failed (status
// says why).
unsigned OpenNvmlKept(const std::vector<std::string>& lib_dirs, DlLibrary* lib, NvmlApi* api,
                      LibraryStatus* status) {
  OpenNvml(lib_dirs, lib, api, status);
  if (!status->loaded) return 0;
  BindTelemetry(*lib, api, &status->missing_symbols);
  unsigned count = 0;
  if (nv::nvmlReturn_t rc = api->device_get_count(&count); rc != nv::kSuccess) {
    status->error = NvmlCallError("nvmlDeviceGetCount_v2", rc);
    return 0;
  }
  return std::min(count, kMaxDevices);
}

}  // namespace

std::string MigProfileName(std::string_view nvml_name) {
  std::string_view name = Trim(nvml_name);
  if (name.starts_with("MIG ")) name.remove_prefix(4);
  return std::string(name);
}

unsigned MigProfileSlots(const NvmlMigProfile& profile) {
  unsigned slots = 0;
  for (const NvmlMigPlacement& p : profile.placements) slots = std::max(slots, p.size);
  return slots;
}

std::map<unsigned, std::string> MigProfileNames(const NvmlMig& mig) {
  // A media-extension variant's base: "1g.18gb+me" -> "1g.18gb", "1g.24gb-me" and
  // "1g.24gb+me.all" -> "1g.24gb"; the name itself for any other.
  auto base_of = [](const std::string& name) {
    const size_t gb = name.find("gb");
    if (gb == std::string::npos) return name;
    const size_t end = gb + 2;
    return end < name.size() && (name[end] == '+' || name[end] == '-') ? name.substr(0, end) : name;
  };
  std::map<std::string, const NvmlMigProfile*> by_name;
  for (const NvmlMigProfile& profile : mig.profiles) {
    by_name.emplace(MigProfileName(profile.name), &profile);
  }
  std::map<unsigned, std::string> out;
  for (const NvmlMigProfile& profile : mig.profiles) {
    const std::string name = MigProfileName(profile.name);
    const std::string base = base_of(name);
    auto it = by_name.find(base);
    const bool variant = base != name && it != by_name.end() &&
                         it->second->slice_count == profile.slice_count &&
                         MigProfileSlots(*it->second) == MigProfileSlots(profile);
    out[profile.id] = variant ? base : name;
  }
  return out;
}

NvmlFacts ProbeNvml(const std::vector<std::string>& lib_dirs) {
  NvmlFacts facts;
  LibraryStatus& status = facts.library;
  DlLibrary lib;
  NvmlApi api;
  OpenNvml(lib_dirs, &lib, &api, &status);
  if (!status.loaded) return facts;
  auto library_error = [&](std::string_view fn, nv::nvmlReturn_t rc) {
    if (status.error.empty()) status.error = NvmlCallError(fn, rc);
  };

  char version[nv::kSystemDriverVersionBufferSize] = {};
  if (nv::nvmlReturn_t rc = api.system_get_driver_version(version, sizeof version);
      rc == nv::kSuccess) {
    facts.driver_version = BoundedCString(version, sizeof version);
  } else {
    library_error("nvmlSystemGetDriverVersion", rc);
  }
  if (api.system_get_cuda_driver_version != nullptr) {
    int cuda = 0;
    nv::nvmlReturn_t rc = api.system_get_cuda_driver_version(&cuda);
    if (rc == nv::kSuccess) {
      facts.cuda_driver_version = cuda;
    } else {
      library_error("nvmlSystemGetCudaDriverVersion_v2", rc);
    }
  }

  unsigned count = 0;
  if (nv::nvmlReturn_t rc = api.device_get_count(&count); rc != nv::kSuccess) {
    library_error("nvmlDeviceGetCount_v2", rc);
    count = 0;
  }
  if (count > kMaxDevices) count = kMaxDevices;
  {
    // Handles first, so that XIDs raised while the rest is read are caught.
    XidEventSet watch(api);
    std::vector<nv::nvmlDevice_t> handles(count, nullptr);
    facts.devices.resize(count);
    for (unsigned i = 0; i < count; ++i) {
      NvmlDevice& d = facts.devices[i];
      d.index = static_cast<int>(i);
      nv::nvmlReturn_t rc = api.device_get_handle_by_index(i, &handles[i]);
      if (rc != nv::kSuccess) {
        handles[i] = nullptr;
        d.error = NvmlCallError("nvmlDeviceGetHandleByIndex_v2", rc);
        d.healthy = rc != nv::kErrorGpuIsLost;
        continue;
      }
      watch.Register(handles[i], i);
    }
    for (unsigned i = 0; i < count; ++i) {
      if (handles[i] == nullptr) continue;
      DeviceProbe(api, handles[i], &facts.devices[i]).Run();
    }
    watch.Drain(0, [&facts](size_t i, uint64_t xid) {
      if (IsApplicationXid(xid)) return;
      facts.devices[i].healthy = false;
      facts.devices[i].xid_events.push_back(xid);
    });
  }
  api.shutdown();  // its result changes nothing: the facts are read, the library goes
  return facts;
}

namespace {

// Telemetry from a library kept initialised: handles, identities and the XID event set are set up
// once; each Sample() reads the counters and drains the events queued since the last one.
class NvmlTelemetry final : public TelemetrySource {
 public:
  explicit NvmlTelemetry(const std::vector<std::string>& lib_dirs) {
    const unsigned count = OpenNvmlKept(lib_dirs, &lib_, &api_, &status_);
    if (count == 0) return;
    events_ = std::make_unique<XidEventSet>(api_);
    for (unsigned i = 0; i < count; ++i) {
      Device d;
      if (api_.device_get_handle_by_index(i, &d.handle) != nv::kSuccess) continue;  // lost GPU
      char buf[nv::kDeviceUuidV2BufferSize] = {};
      if (api_.device_get_uuid(d.handle, buf, sizeof buf) == nv::kSuccess) {
        d.uuid = BoundedCString(buf, sizeof buf);
      }
      nv::nvmlPciInfo_t pci{};
      if (api_.device_get_pci_info(d.handle, &pci) != nv::kSuccess) continue;  // cannot be joined
      d.pci_address = NormaliseBusId(pci.busId, sizeof pci.busId);
      d.xid_watched = events_->Register(d.handle, devices_.size());
      devices_.push_back(std::move(d));
    }
  }
  ~NvmlTelemetry() override {
    events_ = nullptr;                    // the set is freed while the library is still initialised
    if (status_.loaded) api_.shutdown();  // NVML counts inits: discovery's own init is unaffected
  }
  NvmlTelemetry(const NvmlTelemetry&) = delete;
  NvmlTelemetry& operator=(const NvmlTelemetry&) = delete;

  const LibraryStatus& status() const override { return status_; }

  std::vector<DeviceTelemetry> Sample() override {
    DrainXids();
    std::vector<DeviceTelemetry> out;
    out.reserve(devices_.size());
    for (const Device& d : devices_) out.push_back(Read(d));
    return out;
  }

 private:
  struct Device {
    nv::nvmlDevice_t handle = nullptr;
    std::string uuid;
    std::string pci_address;
    bool xid_watched = false;
    uint64_t xids = 0;
  };

  void DrainXids() {
    if (events_ != nullptr) events_->Drain(0, [this](size_t i, uint64_t) { ++devices_[i].xids; });
  }

  DeviceTelemetry Read(const Device& d) const {
    DeviceTelemetry t;
    t.pci_address = d.pci_address;
    t.uuid = d.uuid;
    // Not supported (ECC off, a GPU without the sensor) is an answer, not an error.
    auto ok = [&t](std::string_view fn, nv::nvmlReturn_t rc) {
      if (rc != nv::kSuccess && rc != nv::kErrorNotSupported) {
        AddTelemetryError(&t, NvmlCallError(fn, rc));
      }
      return rc == nv::kSuccess;
    };
    if (unsigned celsius = 0;
        api_.device_get_temperature != nullptr &&
        ok("nvmlDeviceGetTemperature",
           api_.device_get_temperature(d.handle, nv::kTemperatureGpu, &celsius))) {
      t.temperature_celsius = celsius;
    }
    if (unsigned milliwatts = 0;
        api_.device_get_power_usage != nullptr &&
        ok("nvmlDeviceGetPowerUsage", api_.device_get_power_usage(d.handle, &milliwatts))) {
      t.power_watts = milliwatts / 1000.0;
    }
    if (nv::nvmlUtilization_t u{};
        api_.device_get_utilization_rates != nullptr &&
        ok("nvmlDeviceGetUtilizationRates", api_.device_get_utilization_rates(d.handle, &u))) {
      t.utilization_ratio = u.gpu / 100.0;
    }
    ReadMemory(d, &t, ok);
    if (api_.device_get_total_ecc_errors != nullptr) {
      for (const auto& [kind, type] : {std::pair{"corrected", nv::kMemoryErrorTypeCorrected},
                                       std::pair{"uncorrected", nv::kMemoryErrorTypeUncorrected}}) {
        unsigned long long count = 0;
        if (ok("nvmlDeviceGetTotalEccErrors",
               api_.device_get_total_ecc_errors(d.handle, type, nv::kVolatileEcc, &count))) {
          t.ecc_errors[kind] = static_cast<double>(count);
        }
      }
    }
    if (d.xid_watched) t.xid_errors = static_cast<double>(d.xids);
    if (api_.device_get_nvlink_state != nullptr) {
      for (unsigned link = 0; link < nv::kNvLinkMaxLinks; ++link) {
        nv::nvmlEnableState_t state = 0;
        nv::nvmlReturn_t rc = api_.device_get_nvlink_state(d.handle, link, &state);
        if (rc == nv::kErrorInvalidArgument || rc == nv::kErrorNotSupported) break;  // no more
        if (!ok("nvmlDeviceGetNvLinkState", rc)) break;
        t.links_up["nvlink" + std::to_string(link)] = state != 0 ? 1 : 0;
      }
    }
    return t;
  }

  // _v2 first (its `used` excludes the driver's reservation, as nvidia-smi shows), then v1.
  template <typename Ok>
  void ReadMemory(const Device& d, DeviceTelemetry* t, Ok& ok) const {
    if (api_.device_get_memory_info_v2 != nullptr) {
      nv::nvmlMemory_v2_t m{};
      m.version = nv::kMemoryV2Version;
      if (ok("nvmlDeviceGetMemoryInfo_v2", api_.device_get_memory_info_v2(d.handle, &m))) {
        t->memory_used_bytes = static_cast<double>(m.used);
        t->memory_total_bytes = static_cast<double>(m.total);
        return;
      }
    }
    nv::nvmlMemory_t m{};
    if (ok("nvmlDeviceGetMemoryInfo", api_.device_get_memory_info(d.handle, &m))) {
      t->memory_used_bytes = static_cast<double>(m.used);
      t->memory_total_bytes = static_cast<double>(m.total);
    }
  }

  LibraryStatus status_;
  DlLibrary lib_;
  NvmlApi api_;
  std::unique_ptr<XidEventSet> events_;  // after api_: it reads it
  std::vector<Device> devices_;
};

}  // namespace

std::unique_ptr<TelemetrySource> OpenNvmlTelemetry(const std::vector<std::string>& lib_dirs) {
  return std::make_unique<NvmlTelemetry>(lib_dirs);
}

bool IsApplicationXid(uint64_t xid) {
  return std::find(std::begin(kApplicationXids), std::end(kApplicationXids), xid) !=
         std::end(kApplicationXids);
}

std::string_view XidDescription(uint64_t xid) {
  // NVIDIA's XID catalogue, the ones a node operator meets (hardware.md §2.6).
  static constexpr std::pair<uint64_t, std::string_view> kKnown[] = {
      {48, "double-bit ECC error"},
      {62, "internal micro-controller halt"},
      {63, "ECC page retirement or row remapping"},
      {64, "ECC page retirement or row remapping failure"},
      {74, "NVLink error"},
      {79, "GPU has fallen off the bus"},
      {92, "high single-bit ECC error rate"},
      {94, "contained ECC error"},
      {95, "uncontained ECC error"},
      {119, "GSP RPC timeout"},
      {120, "GSP error"},
  };
  for (const auto& [known, text] : kKnown) {
    if (known == xid) return text;
  }
  return "";
}

namespace {

// The health watcher's NVML: initialised for as long as the plugin runs, every GPU registered
// for critical XIDs on one set that Wait() blocks on.
class NvmlXidEvents final : public XidEventSource {
 public:
  explicit NvmlXidEvents(const std::vector<std::string>& lib_dirs) {
    const unsigned count = OpenNvmlKept(lib_dirs, &lib_, &api_, &status_);
    if (count == 0) return;
    events_ = std::make_unique<XidEventSet>(api_);
    for (unsigned i = 0; i < count; ++i) {
      nv::nvmlDevice_t handle = nullptr;
      if (api_.device_get_handle_by_index(i, &handle) != nv::kSuccess) continue;  // lost GPU
      std::string pci;
      if (!PciAddress(handle, &pci).ok()) continue;  // cannot be named to the plugin
      Watch(handle, pci);
    }
  }
  ~NvmlXidEvents() override {
    events_ = nullptr;  // the set is freed while the library is still initialised
    if (status_.loaded) api_.shutdown();
  }
  NvmlXidEvents(const NvmlXidEvents&) = delete;
  NvmlXidEvents& operator=(const NvmlXidEvents&) = delete;

  const LibraryStatus& status() const override { return status_; }
  size_t watched() const override { return watched_.size(); }

  StatusOr<std::vector<XidEvent>> Wait(std::chrono::milliseconds timeout) override {
    std::vector<XidEvent> out;
    if (events_ == nullptr) return out;
    const auto ms = static_cast<unsigned>(std::clamp<int64_t>(timeout.count(), 0, 60'000));
    const nv::nvmlReturn_t rc = events_->Drain(ms, [&](size_t key, uint64_t xid) {
      if (!IsApplicationXid(xid)) out.push_back({pci_[key], xid});
    });
    if (rc != nv::kSuccess && rc != nv::kErrorTimeout) {
      return UnavailableError(NvmlCallError("nvmlEventSetWait_v2", rc));
    }
    return out;
  }

  Status Check(const std::string& pci_address) override {
    if (!status_.loaded) return UnavailableError("nvml: " + status_.error);
    unsigned count = 0;
    if (nv::nvmlReturn_t rc = api_.device_get_count(&count); rc != nv::kSuccess) {
      return UnavailableError(NvmlCallError("nvmlDeviceGetCount_v2", rc));
    }
    // A fresh lookup by index each time: after a reset the GPU may sit at another index, and a
    // lost one answers GPU_IS_LOST here, which is what "off the bus" looks like to NVML.
    std::string lost;
    for (unsigned i = 0; i < std::min(count, kMaxDevices); ++i) {
      nv::nvmlDevice_t handle = nullptr;
      if (nv::nvmlReturn_t rc = api_.device_get_handle_by_index(i, &handle); rc != nv::kSuccess) {
        if (lost.empty()) lost = NvmlCallError("nvmlDeviceGetHandleByIndex_v2", rc);
        continue;
      }
      std::string pci;
      if (!PciAddress(handle, &pci).ok() || pci != pci_address) continue;
      char buf[nv::kDeviceUuidV2BufferSize] = {};
      if (nv::nvmlReturn_t rc = api_.device_get_uuid(handle, buf, sizeof buf); rc != nv::kSuccess) {
        return UnavailableError(NvmlCallError("nvmlDeviceGetUUID", rc));
      }
      nv::nvmlMemory_t memory{};
      if (nv::nvmlReturn_t rc = api_.device_get_memory_info(handle, &memory); rc != nv::kSuccess) {
        return UnavailableError(NvmlCallError("nvmlDeviceGetMemoryInfo", rc));
      }
      if (!handles_.contains(handle)) Watch(handle, pci);  // a new handle: watch it too
      return OkStatus();
    }
    return UnavailableError("not on the bus" + (lost.empty() ? "" : " (" + lost + ")"));
  }

 private:
  Status PciAddress(nv::nvmlDevice_t handle, std::string* out) const {
    nv::nvmlPciInfo_t pci{};
    if (nv::nvmlReturn_t rc = api_.device_get_pci_info(handle, &pci); rc != nv::kSuccess) {
      return UnavailableError(NvmlCallError("nvmlDeviceGetPciInfo_v3", rc));
    }
    *out = NormaliseBusId(pci.busId, sizeof pci.busId);
    return OkStatus();
  }

  void Watch(nv::nvmlDevice_t handle, const std::string& pci) {
    if (!events_->Register(handle, pci_.size())) return;
    handles_.insert(handle);
    pci_.push_back(pci);
    watched_.insert(pci);
  }

  LibraryStatus status_;
  DlLibrary lib_;
  NvmlApi api_;
  std::unique_ptr<XidEventSet> events_;  // after api_: it reads it
  std::vector<std::string> pci_;         // by registration key
  std::set<nv::nvmlDevice_t> handles_;   // registered
  std::set<std::string> watched_;        // the GPUs (PCI addresses) with a registered handle
};

}  // namespace

std::unique_ptr<XidEventSource> OpenNvmlXidEvents(const std::vector<std::string>& lib_dirs) {
  return std::make_unique<NvmlXidEvents>(lib_dirs);
}

namespace {

// MIG instances through NVML. The GPUs are enumerated once (handle, PCI address); every call after
// that asks the library as it is. A partition is a GPU instance with one compute instance spanning
// it (the full-size compute instance profile), as nvidia-smi mig -cgi <profile> -C makes.
class NvmlPartitions final : public PartitionBackend {
 public:
  ~NvmlPartitions() override {
    if (status_.loaded) api_.shutdown();
  }

  Status Open(const std::vector<std::string>& lib_dirs) {
    OpenNvml(lib_dirs, &lib_, &api_, &status_);
    if (!status_.loaded) return UnavailableError("nvml: " + status_.error);
    std::vector<std::string> missing;
    lib_.Bind("nvmlDeviceCreateGpuInstanceWithPlacement",
              &api_.device_create_gpu_instance_with_placement, &missing);
    lib_.Bind("nvmlDeviceGetGpuInstanceById", &api_.device_get_gpu_instance_by_id, &missing);
    lib_.Bind("nvmlGpuInstanceDestroy", &api_.gpu_instance_destroy, &missing);
    lib_.Bind("nvmlGpuInstanceGetComputeInstanceProfileInfo",
              &api_.gpu_instance_get_compute_instance_profile_info, &missing);
    lib_.Bind("nvmlGpuInstanceCreateComputeInstance", &api_.gpu_instance_create_compute_instance,
              &missing);
    lib_.Bind("nvmlGpuInstanceGetComputeInstances", &api_.gpu_instance_get_compute_instances,
              &missing);
    lib_.Bind("nvmlComputeInstanceDestroy", &api_.compute_instance_destroy, &missing);
    if (!missing.empty() || !api_.has_mig()) {
      std::string names;
      for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
      return UnavailableError("nvml: " + status_.path + " cannot create MIG instances: it lacks " +
                              (names.empty() ? "the MIG listing calls" : names));
    }
    unsigned count = 0;
    if (nv::nvmlReturn_t rc = api_.device_get_count(&count); rc != nv::kSuccess) {
      return UnavailableError("nvml: " + NvmlCallError("nvmlDeviceGetCount_v2", rc));
    }
    for (unsigned i = 0; i < std::min(count, kMaxDevices); ++i) {
      Gpu gpu;
      gpu.index = i;
      if (api_.device_get_handle_by_index(i, &gpu.handle) != nv::kSuccess) continue;  // lost GPU
      nv::nvmlPciInfo_t pci{};
      if (api_.device_get_pci_info(gpu.handle, &pci) == nv::kSuccess) {
        gpu.pci_address = NormaliseBusId(pci.busId, sizeof pci.busId);
      }
      gpus_.push_back(std::move(gpu));
    }
    return OkStatus();
  }

  std::string kind() const override { return "mig"; }

  StatusOr<std::vector<LivePartition>> List(const PartitionParent& parent) override {
    ASSIGN_OR_RETURN(const Gpu* gpu, GpuOf(parent));
    ASSIGN_OR_RETURN(const NvmlMig mig, ReadMig(*gpu, parent));
    const std::map<unsigned, std::string> names = MigProfileNames(mig);
    std::vector<LivePartition> out;
    for (const NvmlGpuInstance& gi : mig.instances) {
      auto name = names.find(gi.profile_id);
      out.push_back(
          {name != names.end() ? name->second : "profile-" + std::to_string(gi.profile_id), gi.id,
           gi.placement.start, gi.uuid});
    }
    return out;
  }

  StatusOr<LivePartition> Create(const PartitionParent& parent, const std::string& profile,
                                 int64_t /*id*/, std::optional<int64_t> placement) override {
    ASSIGN_OR_RETURN(const Gpu* gpu, GpuOf(parent));
    ASSIGN_OR_RETURN(const NvmlMig mig, ReadMig(*gpu, parent));
    if (!mig.enabled) {
      return FailedPreconditionError(
          "nvml: " + parent.name +
          ": MIG mode is off; MIG mode is node configuration (nvidia-smi -mig 1, or the GPU "
          "operator's MIG manager) and is not switched at prepare");
    }
    const NvmlMigProfile* p = nullptr;
    for (const NvmlMigProfile& candidate : mig.profiles) {
      if (MigProfileName(candidate.name) == profile) p = &candidate;
    }
    if (p == nullptr) {
      return InvalidArgumentError("nvml: " + parent.name + ": no MIG profile \"" + profile + "\"");
    }
    const NvmlMigPlacement* at = nullptr;
    for (const NvmlMigPlacement& candidate : p->placements) {
      if (placement && candidate.start == *placement) at = &candidate;
    }
    if (at == nullptr) {
      return InvalidArgumentError("nvml: " + parent.name + ": MIG profile " + profile +
                                  " has no placement " +
                                  (placement ? std::to_string(*placement) : "(none given)"));
    }
    const std::string call = "nvmlDeviceCreateGpuInstanceWithPlacement(" + profile + " at " +
                             std::to_string(at->start) + ")";
    const nv::nvmlGpuInstancePlacement_t want{at->start, at->size};
    nv::nvmlGpuInstance_t gi = nullptr;
    nv::nvmlReturn_t rc =
        api_.device_create_gpu_instance_with_placement(gpu->handle, p->id, &want, &gi);
    if (rc != nv::kSuccess) return Error(parent, call, rc);
    nv::nvmlGpuInstanceInfo_t info{};
    if (rc = api_.gpu_instance_get_info(gi, &info); rc != nv::kSuccess) {
      return Undo(gi, Error(parent, "nvmlGpuInstanceGetInfo", rc));
    }
    // The compute instance spanning the whole GPU instance: the profile with its slices.
    std::optional<unsigned> ci_profile;
    for (unsigned index = 0; index < nv::kComputeInstanceProfileCount && !ci_profile; ++index) {
      nv::nvmlComputeInstanceProfileInfo_t ci{};
      if (api_.gpu_instance_get_compute_instance_profile_info(
              gi, index, nv::kComputeInstanceEngineProfileShared, &ci) == nv::kSuccess &&
          ci.sliceCount == p->slice_count) {
        ci_profile = ci.id;
      }
    }
    if (!ci_profile) {
      return Undo(gi, InternalError("nvml: " + parent.name + ": GPU instance " + profile +
                                    " has no compute instance profile of " +
                                    std::to_string(p->slice_count) + " slices"));
    }
    nv::nvmlComputeInstance_t ci = nullptr;
    if (rc = api_.gpu_instance_create_compute_instance(gi, *ci_profile, &ci); rc != nv::kSuccess) {
      return Undo(gi, Error(parent, "nvmlGpuInstanceCreateComputeInstance", rc));
    }
    // Its MIG device's UUID, as the listing reads it.
    LivePartition made{profile, info.id, at->start, ""};
    ASSIGN_OR_RETURN(const NvmlMig now, ReadMig(*gpu, parent));
    for (const NvmlGpuInstance& g : now.instances) {
      if (g.id == info.id) made.uuid = g.uuid;
    }
    return made;
  }

  Status Destroy(const PartitionParent& parent, int64_t id) override {
    ASSIGN_OR_RETURN(const Gpu* gpu, GpuOf(parent));
    const std::string what = "GPU instance " + std::to_string(id);
    nv::nvmlGpuInstance_t gi = nullptr;
    nv::nvmlReturn_t rc =
        id < 0 ? nv::kErrorNotFound
               : api_.device_get_gpu_instance_by_id(gpu->handle, static_cast<unsigned>(id), &gi);
    // An id no instance has (NVML answers NOT_FOUND or INVALID_ARGUMENT), or MIG mode off.
    if (rc == nv::kErrorNotFound || rc == nv::kErrorInvalidArgument ||
        rc == nv::kErrorNotSupported) {
      return NotFoundError("nvml: " + parent.name + ": no " + what);
    }
    if (rc != nv::kSuccess) return Error(parent, "nvmlDeviceGetGpuInstanceById(" + what + ")", rc);
    RETURN_IF_ERROR(DestroyComputeInstances(parent, gi));
    rc = api_.gpu_instance_destroy(gi);
    if (rc != nv::kSuccess) return Error(parent, "nvmlGpuInstanceDestroy(" + what + ")", rc);
    return OkStatus();
  }

 private:
  struct Gpu {
    unsigned index = 0;
    nv::nvmlDevice_t handle = nullptr;
    std::string pci_address;
  };

  StatusOr<const Gpu*> GpuOf(const PartitionParent& parent) const {
    for (const Gpu& g : gpus_) {
      const bool by_pci = !parent.pci_address.empty() && g.pci_address == parent.pci_address;
      const bool by_index = (parent.pci_address.empty() || g.pci_address.empty()) &&
                            static_cast<int64_t>(g.index) == parent.index;
      if (by_pci || by_index) return &g;
    }
    return NotFoundError("nvml: no GPU is device " + parent.name);
  }

  // What discovery reads of the GPU's MIG: modes, profiles, GPU instances and their UUIDs.
  StatusOr<NvmlMig> ReadMig(const Gpu& gpu, const PartitionParent& parent) const {
    NvmlDevice d;
    DeviceProbe(api_, gpu.handle, &d).ReadMig();
    if (!d.error.empty()) return UnavailableError("nvml: " + parent.name + ": " + d.error);
    if (!d.mig) return FailedPreconditionError("nvml: " + parent.name + " has no MIG");
    return *std::move(d.mig);
  }

  // Every compute instance of `gi`, of every profile it has.
  Status DestroyComputeInstances(const PartitionParent& parent, nv::nvmlGpuInstance_t gi) const {
    for (unsigned index = 0; index < nv::kComputeInstanceProfileCount; ++index) {
      nv::nvmlComputeInstanceProfileInfo_t profile{};
      if (api_.gpu_instance_get_compute_instance_profile_info(
              gi, index, nv::kComputeInstanceEngineProfileShared, &profile) != nv::kSuccess) {
        continue;  // not on this GPU instance
      }
      std::vector<nv::nvmlComputeInstance_t> cis(std::clamp(profile.instanceCount, 1U, 64U));
      auto count = static_cast<unsigned>(cis.size());
      nv::nvmlReturn_t rc =
          api_.gpu_instance_get_compute_instances(gi, profile.id, cis.data(), &count);
      if (rc != nv::kSuccess) return Error(parent, "nvmlGpuInstanceGetComputeInstances", rc);
      for (unsigned i = 0; i < std::min<size_t>(count, cis.size()); ++i) {
        if (rc = api_.compute_instance_destroy(cis[i]); rc != nv::kSuccess) {
          return Error(parent, "nvmlComputeInstanceDestroy", rc);
        }
      }
    }
    return OkStatus();
  }

  // A half-made partition taken back (its GPU instance destroyed), and `error` returned.
  Status Undo(nv::nvmlGpuInstance_t gi, Status error) const {
    if (api_.gpu_instance_destroy(gi) != nv::kSuccess) {
      return error.WithContext("(its GPU instance could not be destroyed; reconciliation will)");
    }
    return error;
  }

  static Status Error(const PartitionParent& parent, const std::string& call, nv::nvmlReturn_t rc) {
    return internal::PartitionCallError(
        "nvml: " + parent.name + ": " + NvmlCallError(call, rc),
        rc == nv::kErrorInsufficientResources || rc == nv::kErrorInUse);
  }

  std::vector<Gpu> gpus_;  // the GPUs NVML lists, by index
  LibraryStatus status_;
  DlLibrary lib_;
  NvmlApi api_;
};

}  // namespace

StatusOr<std::unique_ptr<PartitionBackend>> OpenNvmlPartitions(
    const std::vector<std::string>& lib_dirs) {
  return internal::OpenPartitionBackend<NvmlPartitions>(lib_dirs);
}

}  // namespace xpu::discovery
