// The fake libnvidia-ml.so.1's state, shared by its two files (fake_nvml.cc: the library and its
// device calls; fake_nvml_mig.cc: MIG): the handles' structs, the one State guarded by its `mu`,
// loading the fixture, the run-time control file and the MIG state file, and WithDevice, which
// every device call goes through. Only the nvml* functions are exported (hidden visibility).
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_TESTING_FAKE_NVML_STATE_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_TESTING_FAKE_NVML_STATE_H_

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/testing/call_locked.h"

#define XPU_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace xpu::discovery::nvml {

struct nvmlDevice_st {
  unsigned index = 0;  // a MIG device: its parent's
  nlohmann::json json;
  bool mig = false;  // a MIG device handle (nvmlDeviceGetMigDeviceHandleByIndex)
  unsigned gpu_instance_id = 0;
};

struct nvmlGpuInstance_st {
  const nvmlDevice_st* device = nullptr;  // the parent GPU
  nvmlGpuInstanceInfo_t info{};
  unsigned slice_count = 0;  // its profile's
};

struct nvmlComputeInstance_st {
  nvmlGpuInstance_st* gpu_instance = nullptr;
  unsigned id = 0;
  unsigned profile_id = 0;
  unsigned slice_count = 0;
  nvmlDevice_st device;  // its MIG device handle
};

struct nvmlEventSet_st {
  std::deque<nvmlEventData_t> queue;
  std::set<unsigned> xid_devices;  // indexes registered for critical XIDs
};

using testing::CallLocked;

struct State {
  Mutex mu;
  // When the library was loaded: the energy counters grow from their fixture value since then.
  const std::chrono::steady_clock::time_point loaded_at = std::chrono::steady_clock::now();
  int init_count GUARDED_BY(mu) = 0;
  nlohmann::json doc GUARDED_BY(mu);
  std::vector<std::unique_ptr<nvmlDevice_st>> devices GUARDED_BY(mu);
  std::set<unsigned> gone GUARDED_BY(mu);
  std::set<unsigned> unhealthy GUARDED_BY(mu);
  std::set<std::pair<unsigned, unsigned>> links_down GUARDED_BY(mu);
  std::set<unsigned> mig_not_supported GUARDED_BY(mu);
  std::set<unsigned> mig_create_busy GUARDED_BY(mu);  // faults.migCreateBusy
  // The GPU instances and compute instances (each with its MIG device handle, a parent's in
  // nvmlDeviceGetMigDeviceHandleByIndex order): the fixture's, or the state file's for a device
  // it names.
  std::vector<std::unique_ptr<nvmlGpuInstance_st>> gpu_instances GUARDED_BY(mu);
  std::vector<std::unique_ptr<nvmlComputeInstance_st>> compute_instances GUARDED_BY(mu);
  nlohmann::json mig_state GUARDED_BY(mu) = nlohmann::json::object();  // $XPU_FAKE_NVML_STATE's
  struct stat mig_state_stat GUARDED_BY(mu) = {};                      // as last read or written
  // The run-time control file (see the top of this file) and what was last read from it.
  std::string control_path GUARDED_BY(mu);
  struct stat control_stat GUARDED_BY(mu) = {};
  std::set<unsigned> lost GUARDED_BY(mu);
  std::set<uint64_t> fired GUARDED_BY(mu);  // event ids already raised (kept across inits)
  std::set<nvmlEventSet_st*> sets GUARDED_BY(mu);
};

State& S();  // destroyed by dlclose, so nothing leaks across tests

// nvmlInit_v2's load: the fixture JSON, its faults, the MIG instances and the control file.
nvmlReturn_t Load(State& s) REQUIRES(s.mu);

// Reads the control file again when it changed: the lost devices, and the events not raised yet
// queued on the sets registered for their device.
void Refresh(State& s) REQUIRES(s.mu);

// A compute instance of `gi` with its MIG device handle.
nvmlComputeInstance_st* AddComputeInstance(State& s, nvmlGpuInstance_st* gi, unsigned id,
                                           unsigned profile_id, unsigned slices,
                                           const std::string& uuid) REQUIRES(s.mu);

// Reads $XPU_FAKE_NVML_STATE again when it changed since it was last read or written (another
// process made or destroyed instances; removed: a reboot), and rebuilds the instances from it.
void SyncMigState(State& s) REQUIRES(s.mu);

// Records device `index`'s instances as they are now, in the state file when there is one.
nvmlReturn_t SaveMig(State& s, unsigned index) REQUIRES(s.mu);

// The device behind a handle the library gave out (a GPU's or a MIG device's), or nullptr.
const nvmlDevice_st* Find(State& s, nvmlDevice_t device) REQUIRES(s.mu);

// Runs `fn(state, device json)` for a valid handle of an initialised library.
template <typename Fn>
nvmlReturn_t WithDevice(nvmlDevice_t device, Fn fn) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return kErrorUninitialized;
  SyncMigState(s);
  const nvmlDevice_st* d = Find(s, device);
  if (d == nullptr) return kErrorInvalidArgument;
  Refresh(s);
  if (s.lost.count(d->index) != 0) return kErrorGpuIsLost;
  try {
    return CallLocked(s, fn, *d);
  } catch (const std::exception& e) {  // a malformed fixture: nothing may cross the C boundary
    std::fprintf(stderr, "fake nvml: device %u: %s\n", d->index, e.what());
    return kErrorUnknown;
  }
}

}  // namespace xpu::discovery::nvml

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_TESTING_FAKE_NVML_STATE_H_
