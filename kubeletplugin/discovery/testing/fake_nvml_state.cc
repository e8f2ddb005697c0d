// The fake NVML's state: see fake_nvml_state.h.
#include "kubeletplugin/discovery/testing/fake_nvml_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "kubeletplugin/discovery/testing/fixture_json.h"

namespace xpu::discovery::nvml {
namespace {

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

// The sliceCount of the profile with `profile_id` in a GPU's `mig` member (0 when none).
unsigned SliceCount(const nlohmann::json& mig, unsigned profile_id) {
  for (const nlohmann::json& p : mig.value("profiles", nlohmann::json::array())) {
    if (p.at("id").get<unsigned>() == profile_id) return p.at("sliceCount").get<unsigned>();
  }
  return 0;
}

}  // namespace

State& S() {
  static State state;
  return state;
}

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

namespace {

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

}  // namespace

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

const nvmlDevice_st* Find(State& s, nvmlDevice_t device) REQUIRES(s.mu) {
  for (const auto& d : s.devices) {
    if (d.get() == device) return d.get();
  }
  for (const auto& ci : s.compute_instances) {
    if (&ci->device == device) return &ci->device;
  }
  return nullptr;
}

}  // namespace xpu::discovery::nvml
