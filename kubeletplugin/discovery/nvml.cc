// ProbeNvml: NVML through dlopen. Every call's result is checked; a failing call is recorded on its
// device and the probe moves on, so one broken GPU never hides the others.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/text.h"
#include "kubeletplugin/discovery/internal/call_log.h"
#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/nvml_api.h"
#include "kubeletplugin/discovery/internal/nvml_events.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery {
namespace {

namespace nv = ::xpu::discovery::nvml;

// MIG bounds, each past what any GPU has, guarding a garbage answer: profile indexes tried (18
// defined by NVML 13.3, later drivers may add more), placements of a profile, GPU instances of a
// profile, MIG devices of a GPU.
constexpr unsigned kMaxMigProfileIndex = 64;
constexpr unsigned kMaxMigPlacements = 64;
constexpr unsigned kMaxGpuInstances = 64;
constexpr unsigned kMaxMigDevices = 64;

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

// One device's calls: each failure is appended to `error`; a lost GPU stops the rest.
class DeviceProbe {
 public:
  DeviceProbe(const NvmlApi& api, nv::nvmlDevice_t handle, NvmlDevice* out)
      : api_(api),
        handle_(handle),
        out_(out),
        log_(&out->error, nv::kSuccess, nv::kErrorGpuIsLost, NvmlCallError) {}

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
    if (!lost()) Mig();
  }

  bool lost() const { return log_.gone(); }

  // The MIG facts alone (the partition backend's view of one GPU).
  void ReadMig() { Mig(); }

 private:
  // Records a failure; false when the caller should stop (the call failed). A lost GPU is
  // unhealthy.
  bool Ok(std::string_view fn, nv::nvmlReturn_t rc) {
    if (log_.Ok(fn, rc)) return true;
    if (log_.gone()) out_->healthy = false;
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
    if (!Ok("nvmlDeviceGetMemoryInfo", api_.device_get_memory_info(handle_, &m))) return !lost();
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
    return !lost();
  }

  // Links are probed upwards until the first invalid-argument (no such link) or not-supported
  // (no NVLink at all, or a passthrough GPU), as nvidia-smi does.
  bool Links() {
    if (api_.device_get_nvlink_state == nullptr) return true;
    for (unsigned link = 0; link < nv::kNvLinkMaxLinks; ++link) {
      nv::nvmlEnableState_t state = 0;
      nv::nvmlReturn_t rc = api_.device_get_nvlink_state(handle_, link, &state);
      if (rc == nv::kErrorInvalidArgument || rc == nv::kErrorNotSupported) break;
      if (!Ok("nvmlDeviceGetNvLinkState", rc)) return !lost();
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
          if (lost()) return false;
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
    // The NVIDIA DRA driver's rule (docs/reference/hardware.md §2.4): a clique only once
    // registration completed successfully and the GPU sits in a real cluster.
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
  CallLog<nv::nvmlReturn_t> log_;
};

}  // namespace

void ReadNvmlMig(const NvmlApi& api, nvml::nvmlDevice_t handle, NvmlDevice* out) {
  DeviceProbe(api, handle, out).ReadMig();
}

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

namespace {

// The facts of a loaded NVML: versions and every GPU; the library is shut down afterwards.
void ReadNvmlFacts(const NvmlApi& api, NvmlFacts& facts) {
  LibraryStatus& status = facts.library;
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
  if (count > kNvmlMaxDevices) count = kNvmlMaxDevices;
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
}

}  // namespace

NvmlFacts ProbeNvml(const std::vector<std::string>& lib_dirs) {
  return ProbeLibrary<NvmlFacts, NvmlApi>(lib_dirs, OpenNvml, ReadNvmlFacts);
}

}  // namespace xpu::discovery
