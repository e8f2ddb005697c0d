// The fake NVML's MIG calls (the library: fake_nvml.cc; its state: fake_nvml_state.h).
//
// MIG answers from each device's `mig` member: the modes, the profile table (by
// NVML_GPU_INSTANCE_PROFILE_* index, with each profile's id and possible placements) and the GPU
// instances with their compute instances' MIG UUIDs. GPU and compute instances can be created and
// destroyed (nvmlDeviceCreateGpuInstanceWithPlacement, nvmlGpuInstanceCreateComputeInstance,
// nvmlComputeInstanceDestroy, nvmlGpuInstanceDestroy); a changed device's instances are kept in
// $XPU_FAKE_NVML_STATE when set ({"devices": {"<index>": [GPU instances as the fixture writes
// them]}}, read again whenever the file changes, so other processes see them; a test "reboots" the
// node by removing it), else in memory. A create refuses a profile or placement the GPU lacks
// (INVALID_ARGUMENT), MIG mode off (NOT_SUPPORTED), and slots another instance holds or a GPU in
// faults.migCreateBusy (INSUFFICIENT_RESOURCES). Compute instance profiles: one per
// NVML_COMPUTE_INSTANCE_PROFILE_* of 1, 2, 3, 4, 7, 8, 6 slices up to the GPU instance's slices,
// its id the index. A created compute instance gets a random MIG UUID. As NVML does: a device
// without `mig` (or listed in faults.migNotSupported) answers NOT_SUPPORTED to the MIG calls and 0
// to nvmlDeviceGetMaxMigDeviceCount; with MIG mode off, profile info and GPU instances answer
// NOT_SUPPORTED while the possible placements still answer. A MIG device handle (one per compute
// instance) answers nvmlDeviceGetUUID and nvmlDeviceGetGpuInstanceId.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "kubeletplugin/discovery/testing/fake_nvml_state.h"

namespace xpu::discovery::nvml {
namespace {

// A GPU's `mig` member, or nullptr where NVML answers NOT_SUPPORTED: no member, a MIG device
// handle, or faults.migNotSupported.
const nlohmann::json* MigOf(State& s, const nvmlDevice_st& d) REQUIRES(s.mu) {
  if (d.mig || s.mig_not_supported.count(d.index) != 0) return nullptr;
  auto it = d.json.find("mig");
  return it == d.json.end() || !it->is_object() ? nullptr : &*it;
}

bool MigEnabled(const nlohmann::json& mig) {
  return mig.value("currentMode", kDeviceMigDisable) == kDeviceMigEnable;
}

// The profile of `mig` that `key` ("profile": the index, or "id") equals `value`, or nullptr.
const nlohmann::json* MigProfile(const nlohmann::json& mig, const char* key, unsigned value) {
  auto profiles = mig.find("profiles");
  if (profiles == mig.end() || !profiles->is_array()) return nullptr;
  for (const nlohmann::json& p : *profiles) {
    if (p.at(key).get<unsigned>() == value) return &p;
  }
  return nullptr;
}

// nvmlDeviceGetGpuInstanceProfileInfo(V)'s answer: INVALID_ARGUMENT past the profiles NVML
// defines, NOT_SUPPORTED without MIG, with MIG mode off (nvml.h) or for a profile the GPU lacks.
template <typename Info>
nvmlReturn_t FillProfileInfo(State& s, const nvmlDevice_st& d, unsigned profile, Info* info)
    REQUIRES(s.mu) {
  if (info == nullptr || profile >= kGpuInstanceProfileCount) return kErrorInvalidArgument;
  const nlohmann::json* mig = MigOf(s, d);
  if (mig == nullptr || !MigEnabled(*mig)) return kErrorNotSupported;
  const nlohmann::json* p = MigProfile(*mig, "profile", profile);
  if (p == nullptr) return kErrorNotSupported;
  info->id = p->at("id").get<unsigned>();
  info->isP2pSupported = p->value("isP2pSupported", 0U);
  info->sliceCount = p->at("sliceCount").get<unsigned>();
  info->instanceCount = p->at("instanceCount").get<unsigned>();
  info->multiprocessorCount = p->value("multiprocessorCount", 0U);
  info->copyEngineCount = p->value("copyEngineCount", 0U);
  info->decoderCount = p->value("decoderCount", 0U);
  info->encoderCount = p->value("encoderCount", 0U);
  info->jpegCount = p->value("jpegCount", 0U);
  info->ofaCount = p->value("ofaCount", 0U);
  info->memorySizeMB = p->at("memorySizeMB").get<unsigned long long>();
  if constexpr (std::is_same_v<Info, nvmlGpuInstanceProfileInfo_v2_t>) {  // v1 has no name
    const std::string name = p->at("name").get<std::string>();
    const size_t n = std::min(name.size(), sizeof info->name - 1);
    std::memcpy(info->name, name.data(), n);
    info->name[n] = '\0';
  }
  return kSuccess;
}

// The GPU instance behind a handle the library gave out, or nullptr.
nvmlGpuInstance_st* FindGpuInstance(State& s, nvmlGpuInstance_t gi) REQUIRES(s.mu) {
  for (const auto& g : s.gpu_instances) {
    if (g.get() == gi) return g.get();
  }
  return nullptr;
}

// The compute instances of `gi` (of `profile_id`, unless nullopt), in creation order.
std::vector<nvmlComputeInstance_st*> ComputeInstancesOf(State& s, const nvmlGpuInstance_st* gi,
                                                        std::optional<unsigned> profile_id)
    REQUIRES(s.mu) {
  std::vector<nvmlComputeInstance_st*> out;
  for (const auto& ci : s.compute_instances) {
    if (ci->gpu_instance == gi && (!profile_id || ci->profile_id == *profile_id)) {
      out.push_back(ci.get());
    }
  }
  return out;
}

// The MIG device handles of GPU `index`, in nvmlDeviceGetMigDeviceHandleByIndex order.
std::vector<nvmlDevice_st*> MigDevicesOf(State& s, unsigned index) REQUIRES(s.mu) {
  std::vector<nvmlDevice_st*> out;
  for (const auto& ci : s.compute_instances) {
    if (ci->device.index == index) out.push_back(&ci->device);
  }
  return out;
}

// The slices of NVML_COMPUTE_INSTANCE_PROFILE_* index `profile`; 0 for 1_SLICE_REV1 (not on the
// GPUs the fixtures model) and past the count.
unsigned ComputeProfileSlices(unsigned profile) {
  static constexpr unsigned kSlices[] = {1, 2, 3, 4, 7, 8, 6, 0};
  return profile < std::size(kSlices) ? kSlices[profile] : 0;
}

// A MIG UUID in NVML's form, random (a real one is new with every create).
std::string NewMigUuid() {
  std::random_device random;
  char out[48];
  std::snprintf(out, sizeof out, "MIG-%08x-%04x-%04x-%04x-%04x%08x", random(), random() & 0xffff,
                random() & 0xffff, random() & 0xffff, random() & 0xffff, random());
  return out;
}

// Runs `fn(state, gpu instance)` for a GPU instance handle of an initialised library.
template <typename Fn>
nvmlReturn_t WithGpuInstance(nvmlGpuInstance_t gpu_instance, Fn fn) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return kErrorUninitialized;
  nvmlGpuInstance_st* gi = FindGpuInstance(s, gpu_instance);
  if (gi == nullptr) return kErrorInvalidArgument;
  Refresh(s);
  if (s.lost.count(gi->device->index) != 0) return kErrorGpuIsLost;
  return CallLocked(s, fn, *gi);
}

}  // namespace
}  // namespace xpu::discovery::nvml

namespace nv = ::xpu::discovery::nvml;
using nv::nvmlDevice_t;
using nv::nvmlReturn_t;

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                  unsigned int* pending) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (current == nullptr || pending == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    if (mig == nullptr) return nv::kErrorNotSupported;
    *current = mig->value("currentMode", nv::kDeviceMigDisable);
    *pending = mig->value("pendingMode", *current);
    return nv::kSuccess;
  });
}

#ifndef XPU_FAKE_NVML_OLD  // not in the first MIG drivers' library (fake_nvml_old)
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile, nv::nvmlGpuInstanceProfileInfo_v2_t* info) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (info != nullptr && info->version != nv::kGpuInstanceProfileInfoV2Version) {
      return nv::kErrorArgumentVersionMismatch;
    }
    return nv::FillProfileInfo(s, d, profile, info);
  });
}

// placements NULL: *count = how many; else *count in is the buffer's size (INSUFFICIENT_SIZE, with
// the count needed, when short).
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nv::nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (count == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    if (mig == nullptr) return nv::kErrorNotSupported;
    const nlohmann::json* p = nv::MigProfile(*mig, "id", profile_id);
    if (p == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json& all = p->at("placements");
    const auto n = static_cast<unsigned>(all.size());
    if (placements != nullptr && *count < n) {
      *count = n;
      return nv::kErrorInsufficientSize;
    }
    *count = n;
    if (placements == nullptr) return nv::kSuccess;
    for (unsigned i = 0; i < n; ++i) {
      placements[i].start = all[i].at("start").get<unsigned>();
      placements[i].size = all[i].at("size").get<unsigned>();
    }
    return nv::kSuccess;
  });
}
#endif

// *count in is the buffer's size; NOT_SUPPORTED while MIG mode is off.
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profile_id,
                                                       nv::nvmlGpuInstance_t* instances,
                                                       unsigned int* count) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (instances == nullptr || count == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    if (mig == nullptr || !nv::MigEnabled(*mig)) return nv::kErrorNotSupported;
    if (nv::MigProfile(*mig, "id", profile_id) == nullptr) return nv::kErrorInvalidArgument;
    std::vector<nv::nvmlGpuInstance_t> found;
    for (const auto& gi : s.gpu_instances) {
      if (gi->device == &d && gi->info.profileId == profile_id) found.push_back(gi.get());
    }
    if (*count < found.size()) {
      *count = static_cast<unsigned>(found.size());
      return nv::kErrorInsufficientSize;
    }
    *count = static_cast<unsigned>(found.size());
    std::copy(found.begin(), found.end(), instances);
    return nv::kSuccess;
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nv::nvmlGpuInstance_t gpu_instance,
                                                    nv::nvmlGpuInstanceInfo_t* info) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return nv::kErrorUninitialized;
  const nv::nvmlGpuInstance_st* gi = nv::FindGpuInstance(s, gpu_instance);
  if (gi == nullptr || info == nullptr) return nv::kErrorInvalidArgument;
  nv::Refresh(s);
  if (s.lost.count(gi->device->index) != 0) return nv::kErrorGpuIsLost;
  *info = gi->info;
  return nv::kSuccess;
}

// 0 without MIG or with MIG mode off, as nvml.h says; else the fixture's maxMigDeviceCount.
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                            unsigned int* count) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (count == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    *count = mig == nullptr || !nv::MigEnabled(*mig) ? 0 : mig->value("maxMigDeviceCount", 0U);
    return nv::kSuccess;
  });
}

// INVALID_ARGUMENT at or past the maximum; NOT_FOUND at an index no compute instance holds.
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                 unsigned int index,
                                                                 nvmlDevice_t* mig_device) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (mig_device == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    if (mig == nullptr || !nv::MigEnabled(*mig)) return nv::kErrorNotSupported;
    if (index >= mig->value("maxMigDeviceCount", 0U)) return nv::kErrorInvalidArgument;
    const std::vector<nv::nvmlDevice_st*> handles = nv::MigDevicesOf(s, d.index);
    if (index >= handles.size()) return nv::kErrorNotFound;
    *mig_device = handles[index];
    return nv::kSuccess;
  });
}

// Of a MIG device handle; NOT_SUPPORTED on a whole GPU's.
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (id == nullptr) return nv::kErrorInvalidArgument;
    if (!d.mig) return nv::kErrorNotSupported;
    *id = d.gpu_instance_id;
    return nv::kSuccess;
  });
}

// ---- MIG: creating and destroying instances ----

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id, const nv::nvmlGpuInstancePlacement_t* placement,
    nv::nvmlGpuInstance_t* gpu_instance) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (placement == nullptr || gpu_instance == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    if (mig == nullptr || !nv::MigEnabled(*mig)) return nv::kErrorNotSupported;
    const nlohmann::json* p = nv::MigProfile(*mig, "id", profile_id);
    if (p == nullptr) return nv::kErrorInvalidArgument;
    const bool possible = std::any_of(p->at("placements").begin(), p->at("placements").end(),
                                      [&](const nlohmann::json& at) {
                                        return at.at("start").get<unsigned>() == placement->start &&
                                               at.at("size").get<unsigned>() == placement->size;
                                      });
    if (!possible) return nv::kErrorInvalidArgument;
    if (s.mig_create_busy.count(d.index) != 0) return nv::kErrorInsufficientResources;
    std::set<unsigned> ids;
    for (const auto& gi : s.gpu_instances) {
      if (gi->device != &d) continue;
      ids.insert(gi->info.id);
      const nv::nvmlGpuInstancePlacement_t& at = gi->info.placement;
      if (placement->start < at.start + at.size && at.start < placement->start + placement->size) {
        return nv::kErrorInsufficientResources;  // overlaps an instance's slots
      }
    }
    unsigned id = 1;
    while (ids.count(id) != 0) ++id;
    auto gi = std::make_unique<nv::nvmlGpuInstance_st>();
    gi->device = &d;
    gi->info.device = const_cast<nv::nvmlDevice_st*>(&d);
    gi->info.id = id;
    gi->info.profileId = profile_id;
    gi->info.placement = *placement;
    gi->slice_count = p->at("sliceCount").get<unsigned>();
    *gpu_instance = gi.get();
    s.gpu_instances.push_back(std::move(gi));
    return nv::SaveMig(s, d.index);
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                          nv::nvmlGpuInstance_t* gpu_instance) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (gpu_instance == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* mig = nv::MigOf(s, d);
    if (mig == nullptr || !nv::MigEnabled(*mig)) return nv::kErrorNotSupported;
    for (const auto& gi : s.gpu_instances) {
      if (gi->device == &d && gi->info.id == id) {
        *gpu_instance = gi.get();
        return nv::kSuccess;
      }
    }
    return nv::kErrorNotFound;
  });
}

// IN_USE while it has compute instances, as NVML answers.
XPU_FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nv::nvmlGpuInstance_t gpu_instance) {
  return nv::WithGpuInstance(
      gpu_instance, [&](nv::State& s, nv::nvmlGpuInstance_st& gi) REQUIRES(s.mu) {
        if (!nv::ComputeInstancesOf(s, &gi, std::nullopt).empty()) return nv::kErrorInUse;
        const unsigned index = gi.device->index;
        std::erase_if(s.gpu_instances, [&](const auto& g) { return g.get() == &gi; });
        return nv::SaveMig(s, index);
      });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nv::nvmlGpuInstance_t gpu_instance, unsigned int profile, unsigned int eng_profile,
    nv::nvmlComputeInstanceProfileInfo_t* info) {
  return nv::WithGpuInstance(gpu_instance, [&](nv::State&, const nv::nvmlGpuInstance_st& gi) {
    if (info == nullptr || profile >= nv::kComputeInstanceProfileCount ||
        eng_profile != nv::kComputeInstanceEngineProfileShared) {
      return nv::kErrorInvalidArgument;
    }
    const unsigned slices = nv::ComputeProfileSlices(profile);
    if (slices == 0 || slices > gi.slice_count) return nv::kErrorNotSupported;
    *info = nv::nvmlComputeInstanceProfileInfo_t{};
    info->id = profile;
    info->sliceCount = slices;
    info->instanceCount = gi.slice_count / slices;
    return nv::kSuccess;
  });
}

// INSUFFICIENT_RESOURCES when the GPU instance's slices left cannot hold it.
XPU_FAKE_EXPORT nvmlReturn_t
nvmlGpuInstanceCreateComputeInstance(nv::nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                     nv::nvmlComputeInstance_t* compute_instance) {
  return nv::WithGpuInstance(gpu_instance, [&](nv::State& s,
                                               nv::nvmlGpuInstance_st& gi) REQUIRES(s.mu) {
    if (compute_instance == nullptr || profile_id >= nv::kComputeInstanceProfileCount) {
      return nv::kErrorInvalidArgument;
    }
    const unsigned slices = nv::ComputeProfileSlices(profile_id);
    if (slices == 0 || slices > gi.slice_count) return nv::kErrorNotSupported;
    unsigned used = 0;
    std::set<unsigned> ids;
    for (const nv::nvmlComputeInstance_st* ci : nv::ComputeInstancesOf(s, &gi, std::nullopt)) {
      used += ci->slice_count;
      ids.insert(ci->id);
    }
    if (used + slices > gi.slice_count) return nv::kErrorInsufficientResources;
    unsigned id = 0;
    while (ids.count(id) != 0) ++id;
    *compute_instance = nv::AddComputeInstance(s, &gi, id, profile_id, slices, nv::NewMigUuid());
    return nv::SaveMig(s, gi.device->index);
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(
    nv::nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
    nv::nvmlComputeInstance_t* compute_instances, unsigned int* count) {
  return nv::WithGpuInstance(gpu_instance,
                             [&](nv::State& s, const nv::nvmlGpuInstance_st& gi) REQUIRES(s.mu) {
                               if (compute_instances == nullptr || count == nullptr) {
                                 return nv::kErrorInvalidArgument;
                               }
                               const std::vector<nv::nvmlComputeInstance_st*> found =
                                   nv::ComputeInstancesOf(s, &gi, profile_id);
                               if (*count < found.size()) {
                                 *count = static_cast<unsigned>(found.size());
                                 return nv::kErrorInsufficientSize;
                               }
                               *count = static_cast<unsigned>(found.size());
                               std::copy(found.begin(), found.end(), compute_instances);
                               return nv::kSuccess;
                             });
}

XPU_FAKE_EXPORT nvmlReturn_t
nvmlComputeInstanceDestroy(nv::nvmlComputeInstance_t compute_instance) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return nv::kErrorUninitialized;
  auto it = std::find_if(s.compute_instances.begin(), s.compute_instances.end(),
                         [&](const auto& ci) { return ci.get() == compute_instance; });
  if (it == s.compute_instances.end()) return nv::kErrorInvalidArgument;
  const unsigned index = (*it)->device.index;
  s.compute_instances.erase(it);
  return nv::SaveMig(s, index);
}
