// A fake libnvidia-ml.so.1 for tests: the NVML functions ProbeNvml calls, with NVML's signatures
// and return codes, answering from the fixture JSON named by $XPU_FAKE_NVML_JSON
// (e2e/fixtures/hosts/README.md, "fake-vendor/nvml.json"), else from the fixture host root it was
// loaded from (a fixture's usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 links to it). Telemetry
// (temperature, power, utilisation, memory used, volatile ECC counts) comes from each device's
// `telemetry` member; a reading the fixture lacks answers NOT_SUPPORTED. Faults honoured: `init`
// (nvmlInit_v2 fails with that code), `deviceGone` (nvmlDeviceGetHandleByIndex_v2 answers
// GPU_IS_LOST), `unhealthy` (the device's xidEvents are queued when it registers for XID events),
// `linkDown` (nvmlDeviceGetNvLinkState answers DISABLED). A missing variable or unreadable file
// makes nvmlInit_v2 fail with NVML_ERROR_UNKNOWN (999) and a line on stderr. With
// $XPU_FAKE_NVML_DEV_DIR set (in a container: /dev) it enumerates only the GPUs whose node is
// there, as the real NVML does in a container. Built with
// XPU_FAKE_NVML_OLD it lacks the functions newer drivers added (memory v2, NUMA id, fabric info,
// the versioned MIG profile info and the _v2 placements).
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
//
// Faults injected at run time: the control file $XPU_FAKE_NVML_EVENTS, else nvml-events.json next
// to the fixture JSON, is read again whenever it changes (checked on each handle lookup, device
// call and event wait):
//
//   {"events": [{"id": 1, "device": 0, "xid": 79}], "lost": [0]}
//
// Each event (by `id`, once per process) happens when the fake first reads it: it is queued on
// every event set then registered for that device's critical XIDs, as NVML delivers an event to
// the sets registered before it. A `lost` device answers GPU_IS_LOST to
// nvmlDeviceGetHandleByIndex_v2 and to every call on its handle (a GPU that fell off the bus) until
// it leaves the list. No file, no change. nvmlEventSetWait_v2 with a timeout waits for an event up
// to that long (the control file is polled); with 0 it answers at once, as before.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/testing/call_locked.h"
#include "kubeletplugin/discovery/testing/fixture_json.h"

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

namespace {

struct State {
  Mutex mu;
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

State& S() {
  static State state;  // destroyed by dlclose, so nothing leaks across tests
  return state;
}

// $XPU_FAKE_NVML_EVENTS, else nvml-events.json beside the fixture JSON.
std::string ControlPath(const std::string& json_path) {
  const char* env = std::getenv("XPU_FAKE_NVML_EVENTS");
  if (env != nullptr && *env != '\0') return env;
  const size_t slash = json_path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : json_path.substr(0, slash)) +
         "/nvml-events.json";
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

// Reads the control file again when it changed: the lost devices, and the events not raised yet
// queued on the sets registered for their device.
void Refresh(State& s) REQUIRES(s.mu) {
  if (s.control_path.empty()) return;
  struct stat st {};
  if (::stat(s.control_path.c_str(), &st) != 0) {
    if (s.control_stat.st_ino != 0) s.lost.clear();  // removed: every fault cleared
    s.control_stat = {};
    return;
  }
  if (SameFile(st, s.control_stat)) return;
  s.control_stat = st;
  try {
    std::ifstream in(s.control_path);
    const nlohmann::json doc = nlohmann::json::parse(in);
    s.lost = doc.value("lost", std::set<unsigned>{});
    for (const nlohmann::json& e : doc.value("events", nlohmann::json::array())) {
      if (!s.fired.insert(e.at("id").get<uint64_t>()).second) continue;
      const unsigned index = e.at("device").get<unsigned>();
      for (const auto& d : s.devices) {
        if (d->index != index) continue;
        for (nvmlEventSet_st* set : s.sets) {
          if (set->xid_devices.count(index) == 0) continue;
          nvmlEventData_t event{};
          event.device = d.get();
          event.eventType = kEventTypeXidCriticalError;
          event.eventData = e.at("xid").get<unsigned long long>();
          set->queue.push_back(event);
        }
      }
    }
  } catch (const std::exception& e) {  // half written: read again once it changes
    s.control_stat = {};
    std::fprintf(stderr, "fake nvml: %s: %s\n", s.control_path.c_str(), e.what());
  }
}

// The sliceCount of the profile with `profile_id` in a GPU's `mig` member (0 when none).
unsigned SliceCount(const nlohmann::json& mig, unsigned profile_id) {
  for (const nlohmann::json& p : mig.value("profiles", nlohmann::json::array())) {
    if (p.at("id").get<unsigned>() == profile_id) return p.at("sliceCount").get<unsigned>();
  }
  return 0;
}

// A compute instance of `gi` with its MIG device handle.
nvmlComputeInstance_st* AddComputeInstance(State& s, nvmlGpuInstance_st* gi, unsigned id,
                                           unsigned profile_id, unsigned slices,
                                           const std::string& uuid) REQUIRES(s.mu) {
  auto ci = std::make_unique<nvmlComputeInstance_st>();
  ci->gpu_instance = gi;
  ci->id = id;
  ci->profile_id = profile_id;
  ci->slice_count = slices;
  ci->device.index = gi->device->index;
  ci->device.mig = true;
  ci->device.gpu_instance_id = gi->info.id;
  ci->device.json = {{"uuid", uuid}};
  s.compute_instances.push_back(std::move(ci));
  return s.compute_instances.back().get();
}

// The GPU instances and MIG device handles of every device: the state file's list for a device it
// names, else the fixture's `mig` member.
void LoadMig(State& s) REQUIRES(s.mu) {
  s.compute_instances.clear();
  s.gpu_instances.clear();
  const nlohmann::json saved = s.mig_state.value("devices", nlohmann::json::object());
  for (const auto& d : s.devices) {
    auto mig = d->json.find("mig");
    if (mig == d->json.end()) continue;
    const std::string key = std::to_string(d->index);
    const nlohmann::json gis =
        saved.contains(key) ? saved.at(key) : mig->value("gpuInstances", nlohmann::json::array());
    for (const nlohmann::json& g : gis) {
      auto gi = std::make_unique<nvmlGpuInstance_st>();
      gi->device = d.get();
      gi->info.device = d.get();
      gi->info.id = g.at("id").get<unsigned>();
      gi->info.profileId = g.at("profileId").get<unsigned>();
      gi->info.placement.start = g.at("placement").at("start").get<unsigned>();
      gi->info.placement.size = g.at("placement").at("size").get<unsigned>();
      gi->slice_count = SliceCount(*mig, gi->info.profileId);
      s.gpu_instances.push_back(std::move(gi));
      for (const nlohmann::json& ci : g.value("computeInstances", nlohmann::json::array())) {
        const unsigned slices = ci.value("sliceCount", s.gpu_instances.back()->slice_count);
        AddComputeInstance(s, s.gpu_instances.back().get(), ci.at("id").get<unsigned>(),
                           ci.value("profileId", 0U), slices, ci.at("uuid").get<std::string>());
      }
    }
  }
}

// Reads $XPU_FAKE_NVML_STATE again when it changed since it was last read or written (another
// process made or destroyed instances; removed: a reboot), and rebuilds the instances from it.
void SyncMigState(State& s) REQUIRES(s.mu) {
  const char* path = std::getenv("XPU_FAKE_NVML_STATE");
  if (path == nullptr || *path == '\0') return;
  struct stat st {};
  const bool exists = ::stat(path, &st) == 0;
  if (!exists) st = {};
  if (SameFile(st, s.mig_state_stat) && (exists || s.mig_state_stat.st_ino == 0)) return;
  s.mig_state_stat = st;
  s.mig_state = nlohmann::json::object();
  if (exists) {
    try {
      std::ifstream in(path);
      s.mig_state = nlohmann::json::parse(in);
    } catch (const std::exception& e) {  // half written: read again once it changes
      s.mig_state_stat = {};
      std::fprintf(stderr, "fake nvml: %s: %s\n", path, e.what());
    }
  }
  LoadMig(s);
}

// Records device `index`'s instances as they are now, in the state file when there is one.
nvmlReturn_t SaveMig(State& s, unsigned index) REQUIRES(s.mu) {
  nlohmann::json gis = nlohmann::json::array();
  for (const auto& gi : s.gpu_instances) {
    if (gi->device->index != index) continue;
    nlohmann::json cis = nlohmann::json::array();
    for (const auto& ci : s.compute_instances) {
      if (ci->gpu_instance != gi.get()) continue;
      cis.push_back({{"id", ci->id},
                     {"profileId", ci->profile_id},
                     {"sliceCount", ci->slice_count},
                     {"uuid", ci->device.json.at("uuid")}});
    }
    gis.push_back(
        {{"id", gi->info.id},
         {"profileId", gi->info.profileId},
         {"placement", {{"start", gi->info.placement.start}, {"size", gi->info.placement.size}}},
         {"computeInstances", cis}});
  }
  s.mig_state["devices"][std::to_string(index)] = gis;
  const char* path = std::getenv("XPU_FAKE_NVML_STATE");
  if (path == nullptr || *path == '\0') return kSuccess;
  const std::string tmp = std::string(path) + ".tmp";
  {
    std::ofstream out(tmp);
    out << s.mig_state.dump(2) << "\n";
    if (!out) return kErrorUnknown;
  }
  if (std::rename(tmp.c_str(), path) != 0) return kErrorUnknown;
  ::stat(path, &s.mig_state_stat);
  return kSuccess;
}

nvmlReturn_t Load(State& s) REQUIRES(s.mu) {
  // $XPU_FAKE_NVML_JSON, else the fixture of the host root this file was loaded from: a fixture's
  // usr/lib/<arch>/libnvidia-ml.so.1 is a symlink to this library, so a plugin that searches its
  // host root's library folders answers from <host root>/fake-vendor/nvml.json.
  const std::string json_path = xpu::discovery::testing::FixtureJsonPath(
      "XPU_FAKE_NVML_JSON", "nvml.json", reinterpret_cast<void*>(&S));
  const char* path = json_path.c_str();
  if (json_path.empty()) {
    std::fprintf(stderr, "fake nvml: XPU_FAKE_NVML_JSON is not set\n");
    return kErrorUnknown;
  }
  try {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "fake nvml: cannot read %s\n", path);
      return kErrorUnknown;
    }
    nlohmann::json doc = nlohmann::json::parse(in);
    const nlohmann::json& faults = doc.value("faults", nlohmann::json::object());
    if (faults.contains("init") && !faults["init"].is_null()) return faults["init"].get<int>();
    s.doc = std::move(doc);
    s.devices.clear();
    // $XPU_FAKE_NVML_DEV_DIR: only the GPUs whose <dir>/nvidia<minor> exists, numbered from 0 in
    // index order, as NVML enumerates in a container that was given some of the GPUs' nodes.
    const char* dev_dir = std::getenv("XPU_FAKE_NVML_DEV_DIR");
    unsigned visible = 0;
    for (const nlohmann::json& d : s.doc.at("devices")) {
      auto dev = std::make_unique<nvmlDevice_st>();
      dev->index = d.at("index").get<unsigned>();
      dev->json = d;
      if (dev_dir != nullptr && *dev_dir != '\0') {
        const std::string node =
            std::string(dev_dir) + "/nvidia" + std::to_string(d.value("minorNumber", dev->index));
        if (::access(node.c_str(), F_OK) != 0) continue;
        dev->index = visible++;
      }
      s.devices.push_back(std::move(dev));
    }
    s.gone = faults.value("deviceGone", std::set<unsigned>{});
    s.unhealthy = faults.value("unhealthy", std::set<unsigned>{});
    s.links_down.clear();
    for (const nlohmann::json& l : faults.value("linkDown", nlohmann::json::array())) {
      s.links_down.emplace(l.at("device").get<unsigned>(), l.at("link").get<unsigned>());
    }
    s.mig_not_supported = faults.value("migNotSupported", std::set<unsigned>{});
    s.mig_create_busy = faults.value("migCreateBusy", std::set<unsigned>{});
    s.mig_state = nlohmann::json::object();
    s.mig_state_stat = {};
    LoadMig(s);
    SyncMigState(s);
    s.control_path = ControlPath(json_path);
    s.control_stat = {};
    s.lost.clear();
    Refresh(s);
    return kSuccess;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake nvml: %s: %s\n", path, e.what());
    return kErrorUnknown;
  }
}

// The device behind a handle the library gave out (a GPU's or a MIG device's), or nullptr.
const nvmlDevice_st* Find(State& s, nvmlDevice_t device) REQUIRES(s.mu) {
  for (const auto& d : s.devices) {
    if (d.get() == device) return d.get();
  }
  for (const auto& ci : s.compute_instances) {
    if (&ci->device == device) return &ci->device;
  }
  return nullptr;
}

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

nvmlReturn_t CopyString(const std::string& value, char* buf, unsigned int length) {
  if (buf == nullptr) return kErrorInvalidArgument;
  if (value.size() + 1 > length) return kErrorInsufficientSize;
  std::memcpy(buf, value.c_str(), value.size() + 1);
  return kSuccess;
}

unsigned ParseHex(const std::string& text) {
  return static_cast<unsigned>(std::strtoul(text.c_str(), nullptr, 16));
}

void FillPci(const std::string& bus_id, const nlohmann::json& dev, nvmlPciInfo_t* pci) {
  *pci = nvmlPciInfo_t{};
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &slot, &function);
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", domain, bus, slot, function);
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain, bus, slot,
                function);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = slot;
  pci->pciDeviceId = ParseHex(dev.value("pciDeviceId", "0"));
  pci->pciSubSystemId = ParseHex(dev.value("pciSubSystemId", "0"));
}

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

// The NvLink entry `link` of a device: NOT_SUPPORTED without NvLink, INVALID_ARGUMENT past the end.
nvmlReturn_t FindLink(const nvmlDevice_st& d, unsigned link, const nlohmann::json** out) {
  auto links = d.json.find("nvlinks");
  if (links == d.json.end() || !links->is_array() || links->empty()) return kErrorNotSupported;
  for (const nlohmann::json& l : *links) {
    if (l.at("link").get<unsigned>() == link) {
      *out = &l;
      return kSuccess;
    }
  }
  return kErrorInvalidArgument;
}

// The device's "telemetry" member (the fixture's readings), or an empty object.
const nlohmann::json& Telemetry(const nvmlDevice_st& d) {
  static const nlohmann::json kNone = nlohmann::json::object();
  auto it = d.json.find("telemetry");
  return it != d.json.end() && it->is_object() ? *it : kNone;
}

// Total, used and free memory of a device (nvmlMemory_t and nvmlMemory_v2_t alike).
template <typename Memory>
nvmlReturn_t FillMemory(const nvmlDevice_st& d, Memory* mem) {
  if (mem == nullptr) return kErrorInvalidArgument;
  mem->total = d.json.value("memoryTotalBytes", 0ULL);
  mem->used = Telemetry(d).value("memoryUsedBytes", 0ULL);
  mem->free = mem->total - mem->used;
  return kSuccess;
}

// Writes telemetry member `key` to *out; NOT_SUPPORTED when the fixture has no such reading.
template <typename T>
nvmlReturn_t Reading(const nvmlDevice_st& d, const char* key, T* out) {
  if (out == nullptr) return kErrorInvalidArgument;
  auto it = Telemetry(d).find(key);
  if (it == Telemetry(d).end() || !it->is_number()) return kErrorNotSupported;
  *out = it->get<T>();
  return kSuccess;
}

}  // namespace
}  // namespace xpu::discovery::nvml

#define XPU_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace nv = ::xpu::discovery::nvml;
using nv::nvmlDevice_t;
using nv::nvmlReturn_t;

XPU_FAKE_EXPORT nvmlReturn_t nvmlInit_v2() {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) {
    if (nvmlReturn_t rc = nv::Load(s); rc != nv::kSuccess) return rc;
  }
  ++s.init_count;
  return nv::kSuccess;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return nv::kErrorUninitialized;
  if (--s.init_count == 0) {
    s.compute_instances.clear();
    s.gpu_instances.clear();
    s.devices.clear();
    s.doc = nullptr;
  }
  return nv::kSuccess;
}

XPU_FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 7:
      return "Insufficient Size";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 15:
      return "GPU is lost";
    case 25:
      return "Argument version mismatch";
    default:
      return "Unknown Error";
  }
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return nv::kErrorUninitialized;
  return nv::CopyString(s.doc.value("driverVersion", ""), version, length);
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  return nv::CopyString(s.doc.value("nvmlVersion", ""), version, length);  // works before init
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (version == nullptr) return nv::kErrorInvalidArgument;
  if (s.init_count == 0) return nv::kErrorUninitialized;
  *version = s.doc.value("cudaDriverVersion", 0);
  return nv::kSuccess;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (count == nullptr) return nv::kErrorInvalidArgument;
  if (s.init_count == 0) return nv::kErrorUninitialized;
  *count = static_cast<unsigned>(s.devices.size());
  return nv::kSuccess;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                           nvmlDevice_t* device) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (device == nullptr) return nv::kErrorInvalidArgument;
  if (s.init_count == 0) return nv::kErrorUninitialized;
  nv::Refresh(s);
  for (const auto& d : s.devices) {
    if (d->index != index) continue;
    if (s.gone.count(index) != 0 || s.lost.count(index) != 0) return nv::kErrorGpuIsLost;
    *device = d.get();
    return nv::kSuccess;
  }
  return nv::kErrorInvalidArgument;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                               unsigned int length) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    return nv::CopyString(d.json.value("name", ""), name, length);
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                               unsigned int length) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    return nv::CopyString(d.json.value("uuid", ""), uuid, length);
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nv::nvmlPciInfo_t* pci) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (pci == nullptr) return nv::kErrorInvalidArgument;
    nv::FillPci(d.json.value("pciBusId", ""), d.json, pci);
    return nv::kSuccess;
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nv::nvmlMemory_t* mem) {
  return nv::WithDevice(
      device, [&](nv::State&, const nv::nvmlDevice_st& d) { return nv::FillMemory(d, mem); });
}

#ifndef XPU_FAKE_NVML_OLD  // not in the R450-era library of the fake_nvml_old target
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                        nv::nvmlMemory_v2_t* mem) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (mem != nullptr && mem->version != nv::kMemoryV2Version) {
      return nv::kErrorArgumentVersionMismatch;
    }
    if (mem != nullptr) mem->reserved = 0;
    return nv::FillMemory(d, mem);
  });
}
#endif

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                                int* minor) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (major == nullptr || minor == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json& cc = d.json.value("cudaComputeCapability", nlohmann::json::object());
    *major = cc.value("major", 0);
    *minor = cc.value("minor", 0);
    return nv::kSuccess;
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (minor == nullptr) return nv::kErrorInvalidArgument;
    *minor = d.json.value("minorNumber", 0U);
    return nv::kSuccess;
  });
}

#ifndef XPU_FAKE_NVML_OLD  // not in the R450-era library of the fake_nvml_old target
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (node == nullptr) return nv::kErrorInvalidArgument;
    auto it = d.json.find("numaNode");
    if (it == d.json.end() || !it->is_number_integer() || it->get<int>() < 0) {
      return nv::kErrorNotSupported;  // what the passthrough H200 answered
    }
    *node = it->get<unsigned>();
    return nv::kSuccess;
  });
}
#endif

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                      nv::nvmlEnableState_t* active) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (active == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* l = nullptr;
    if (nvmlReturn_t rc = nv::FindLink(d, link, &l); rc != nv::kSuccess) return rc;
    bool down = s.links_down.count({d.index, link}) != 0;
    *active = !down && l->value("isActive", false) ? 1 : 0;
    return nv::kSuccess;
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                 unsigned int link,
                                                                 nv::nvmlPciInfo_t* pci) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (pci == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* l = nullptr;
    if (nvmlReturn_t rc = nv::FindLink(d, link, &l); rc != nv::kSuccess) return rc;
    nv::FillPci(l->value("remotePciBusId", ""), nlohmann::json::object(), pci);
    return nv::kSuccess;
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link, nv::nvmlIntNvLinkDeviceType_t* type) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (type == nullptr) return nv::kErrorInvalidArgument;
    const nlohmann::json* l = nullptr;
    if (nvmlReturn_t rc = nv::FindLink(d, link, &l); rc != nv::kSuccess) return rc;
    *type = l->value("remoteDeviceType", 0xFF);
    return nv::kSuccess;
  });
}

#ifndef XPU_FAKE_NVML_OLD  // not in the R450-era library of the fake_nvml_old target
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device,
                                                        nv::nvmlGpuFabricInfo_t* info) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (info == nullptr) return nv::kErrorInvalidArgument;
    auto it = d.json.find("fabric");
    if (it == d.json.end() || it->is_null()) return nv::kErrorNotSupported;
    *info = nv::nvmlGpuFabricInfo_t{};
    std::string hex;
    for (char c : it->value("clusterUuid", "")) {
      if (c != '-') hex += c;
    }
    for (size_t i = 0; i < 16 && 2 * i + 1 < hex.size(); ++i) {
      info->clusterUuid[i] = static_cast<unsigned char>(nv::ParseHex(hex.substr(2 * i, 2)));
    }
    info->status = it->value("status", 0);
    info->cliqueId = it->value("cliqueId", 0U);
    info->state = static_cast<nv::nvmlGpuFabricState_t>(it->value("state", 0));
    return nv::kSuccess;
  });
}
#endif

XPU_FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nv::nvmlEventSet_t* set) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (set == nullptr) return nv::kErrorInvalidArgument;
  if (s.init_count == 0) return nv::kErrorUninitialized;
  *set = new nv::nvmlEventSet_st;
  s.sets.insert(*set);
  return nv::kSuccess;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                      unsigned long long event_types,
                                                      nv::nvmlEventSet_t set) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) REQUIRES(s.mu) {
    if (set == nullptr) return nv::kErrorInvalidArgument;
    if ((event_types & nv::kEventTypeXidCriticalError) != 0) set->xid_devices.insert(d.index);
    if ((event_types & nv::kEventTypeXidCriticalError) == 0 || s.unhealthy.count(d.index) == 0) {
      return nv::kSuccess;
    }
    for (const nlohmann::json& x : d.json.value("xidEvents", nlohmann::json::array())) {
      nv::nvmlEventData_t event{};
      event.device = const_cast<nvmlDevice_t>(&d);
      event.eventType = nv::kEventTypeXidCriticalError;
      event.eventData = x.value("xid", 0ULL);
      set->queue.push_back(event);
    }
    return nv::kSuccess;
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nv::nvmlEventSet_t set, nv::nvmlEventData_t* data,
                                                 unsigned int timeoutms) {
  nv::State& s = nv::S();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  xpu::MutexLock lock(s.mu);
  if (set == nullptr || data == nullptr) return nv::kErrorInvalidArgument;
  while (true) {
    if (s.init_count == 0) return nv::kErrorUninitialized;
    nv::Refresh(s);
    if (!set->queue.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) return nv::kErrorTimeout;
    // Events come only from the control file: poll it, without the lock, until the deadline.
    lock.Unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    lock.Lock();
  }
  *data = set->queue.front();
  set->queue.pop_front();
  return nv::kSuccess;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nv::nvmlEventSet_t set) {
  if (set == nullptr) return nv::kErrorInvalidArgument;
  nv::State& s = nv::S();
  {
    xpu::MutexLock lock(s.mu);
    s.sets.erase(set);
  }
  delete set;
  return nv::kSuccess;
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor,
                                                      unsigned int* celsius) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (sensor != nv::kTemperatureGpu) return nv::kErrorInvalidArgument;
    return nv::Reading(d, "temperatureC", celsius);
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                                     unsigned int* milliwatts) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    return nv::Reading(d, "powerMilliwatts", milliwatts);
  });
}

XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                           nv::nvmlUtilization_t* rates) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (rates == nullptr) return nv::kErrorInvalidArgument;
    if (nvmlReturn_t rc = nv::Reading(d, "utilizationGpuPercent", &rates->gpu);
        rc != nv::kSuccess) {
      return rc;
    }
    rates->memory = nv::Telemetry(d).value("utilizationMemoryPercent", 0U);
    return nv::kSuccess;
  });
}

// Volatile counters from telemetry.eccVolatile.{corrected,uncorrected}; aggregate ones are not
// in the fixtures (NOT_SUPPORTED), nor is anything on a device without eccVolatile (ECC off).
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type,
                                                         int counter_type,
                                                         unsigned long long* count) {
  return nv::WithDevice(device, [&](nv::State&, const nv::nvmlDevice_st& d) {
    if (count == nullptr || error_type < 0 || error_type > 1) return nv::kErrorInvalidArgument;
    auto ecc = nv::Telemetry(d).find("eccVolatile");
    if (counter_type != nv::kVolatileEcc || ecc == nv::Telemetry(d).end()) {
      return nv::kErrorNotSupported;
    }
    *count =
        ecc->value(error_type == nv::kMemoryErrorTypeCorrected ? "corrected" : "uncorrected", 0ULL);
    return nv::kSuccess;
  });
}

// ---- MIG ----

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

// Runs `fn(state, gpu instance)` for a GPU instance handle of an initialised library.
template <typename Fn>
nvmlReturn_t WithGpuInstance(nv::nvmlGpuInstance_t gpu_instance, Fn fn) {
  nv::State& s = nv::S();
  xpu::MutexLock lock(s.mu);
  if (s.init_count == 0) return nv::kErrorUninitialized;
  nv::nvmlGpuInstance_st* gi = nv::FindGpuInstance(s, gpu_instance);
  if (gi == nullptr) return nv::kErrorInvalidArgument;
  nv::Refresh(s);
  if (s.lost.count(gi->device->index) != 0) return nv::kErrorGpuIsLost;
  return nv::CallLocked(s, fn, *gi);
}

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
  return WithGpuInstance(
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
  return WithGpuInstance(gpu_instance, [&](nv::State&, const nv::nvmlGpuInstance_st& gi) {
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
  return WithGpuInstance(gpu_instance, [&](nv::State& s,
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
  return WithGpuInstance(gpu_instance,
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
