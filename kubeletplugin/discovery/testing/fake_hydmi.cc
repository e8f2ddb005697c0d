// A fake libhydmi.so for tests: the DMI calls the vHCU probe and backend make, with DMI's
// signatures and status numbers (internal/hydmi_types.h), answering from the fixture JSON named by
// $XPU_FAKE_HYDMI_JSON, else the fake-vendor/hydmi.json of the host root it was loaded from
// (e2e/fixtures/hosts/README.md); with neither, no device and no vHCUs. The file is read again on
// every call, so a second process sees what the first made:
//   {"maxVDevices": 4,                                   // absent or 0: not supported
//    "devices": [{"name", "computeUnits", "memoryMiB"}], // physical devices, by index
//    "vdevices": [{"id", "device", "computeUnits", "memoryMiB"}],
//    "faults": {"createBusy": [device], "destroyBusy": [vdev id], "createDelayMs": 0}}
// vHCUs made and destroyed through the library are kept in $XPU_FAKE_HYDMI_STATE when set (the
// whole list, {"vdevices": [...]}, which then stands in for the fixture's): a test "reboots" the
// node by removing that file. Without it they live in this process's memory. A create takes the
// lowest free vdev id of the node, refuses a fifth vHCU on a device or more than the device has
// left (out of resources), and a busy device (device busy).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "kubeletplugin/discovery/internal/hydmi_types.h"
#include "kubeletplugin/discovery/testing/fixture_json.h"

namespace hd = ::xpu::discovery::hydmi;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

struct State {
  xpu::Mutex mu;
  std::optional<nlohmann::json> memory_vdevices GUARDED_BY(mu);  // without a state file
};

State& S() {
  static State state;
  return state;
}

std::string JsonPath() {
  return xpu::discovery::testing::FixtureJsonPath("XPU_FAKE_HYDMI_JSON", "hydmi.json",
                                                  reinterpret_cast<void*>(&JsonPath));
}

// The fixture, with "vdevices" as they are now; nullopt (and a line on stderr) when unreadable.
std::optional<nlohmann::json> Load(State& s) REQUIRES(s.mu) {
  const std::string path = JsonPath();
  try {
    // No fixture (a host without Hygon's DMI, or a test that did not set one): a library that
    // sees no device and no virtualisation, so hosts of other vendors are not disturbed.
    if (path.empty()) return nlohmann::json{{"devices", nlohmann::json::array()}};
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "fake hydmi: cannot read %s\n", path.c_str());
      return std::nullopt;
    }
    nlohmann::json doc = nlohmann::json::parse(in);
    if (!doc.contains("vdevices")) doc["vdevices"] = nlohmann::json::array();
    if (const char* state = std::getenv("XPU_FAKE_HYDMI_STATE"); state != nullptr && *state) {
      if (std::ifstream saved(state); saved)
        doc["vdevices"] = nlohmann::json::parse(saved).at("vdevices");
    } else if (s.memory_vdevices) {
      doc["vdevices"] = *s.memory_vdevices;
    }
    return doc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake hydmi: %s: %s\n", path.c_str(), e.what());
    return std::nullopt;
  }
}

int Save(State& s, const nlohmann::json& vdevices) REQUIRES(s.mu) {
  if (const char* state = std::getenv("XPU_FAKE_HYDMI_STATE"); state != nullptr && *state) {
    const std::string tmp = std::string(state) + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << nlohmann::json{{"vdevices", vdevices}}.dump();
      if (!out) return hd::kFileError;
    }
    if (std::rename(tmp.c_str(), state) != 0) return hd::kFileError;
    return hd::kSuccess;
  }
  s.memory_vdevices = vdevices;
  return hd::kSuccess;
}

void Fill(hd::DeviceInfo* info, const std::string& name, int cus, int64_t memory_mib, int device) {
  *info = hd::DeviceInfo{};
  std::snprintf(info->name, sizeof info->name, "%s", name.c_str());
  info->compute_unit_count = cus;
  info->global_mem_size = static_cast<size_t>(memory_mib) * kMiB;
  info->device_id = device;
}

bool Contains(const nlohmann::json& doc, const char* fault, int value) {
  const nlohmann::json faults = doc.value("faults", nlohmann::json::object());
  const std::set<int> values = faults.value(fault, std::set<int>{});
  return values.contains(value);
}

}  // namespace

#define XPU_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

XPU_FAKE_EXPORT int dmiGetDeviceCount(int* count) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  if (count == nullptr) return hd::kInvalidArguments;
  *count = static_cast<int>(doc->value("devices", nlohmann::json::array()).size());
  return hd::kSuccess;
}

XPU_FAKE_EXPORT int dmiGetDeviceInfo(int device_id, hd::DeviceInfo* info) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  const nlohmann::json devices = doc->value("devices", nlohmann::json::array());
  if (info == nullptr || device_id < 0 || device_id >= static_cast<int>(devices.size())) {
    return hd::kInvalidArguments;
  }
  const nlohmann::json& d = devices[static_cast<size_t>(device_id)];
  Fill(info, d.value("name", "DCU"), d.at("computeUnits").get<int>(),
       d.at("memoryMiB").get<int64_t>(), device_id);
  return hd::kSuccess;
}

XPU_FAKE_EXPORT int dmiGetMaxVDeviceCount(int* count) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  const int max = doc->value("maxVDevices", 0);
  if (max <= 0) return hd::kNotSupported;
  if (count == nullptr) return hd::kInvalidArguments;
  *count = max;
  return hd::kSuccess;
}

XPU_FAKE_EXPORT int dmiGetVDeviceCount(int* count) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  if (count == nullptr) return hd::kInvalidArguments;
  *count = static_cast<int>(doc->at("vdevices").size());
  return hd::kSuccess;
}

XPU_FAKE_EXPORT int dmiGetVDeviceInfo(int vdevice_id, hd::DeviceInfo* info) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  if (info == nullptr) return hd::kInvalidArguments;
  for (const nlohmann::json& v : doc->at("vdevices")) {
    if (v.at("id").get<int>() != vdevice_id) continue;
    Fill(info, "vdev" + std::to_string(vdevice_id), v.at("computeUnits").get<int>(),
         v.at("memoryMiB").get<int64_t>(), v.at("device").get<int>());
    return hd::kSuccess;
  }
  return hd::kVdevNotExist;
}

XPU_FAKE_EXPORT int dmiGetDeviceRemainingInfo(int device_id, size_t* cus, size_t* memory_bytes) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  const nlohmann::json devices = doc->value("devices", nlohmann::json::array());
  if (cus == nullptr || memory_bytes == nullptr || device_id < 0 ||
      device_id >= static_cast<int>(devices.size())) {
    return hd::kInvalidArguments;
  }
  int64_t free_cus = devices[static_cast<size_t>(device_id)].at("computeUnits").get<int64_t>();
  int64_t free_mib = devices[static_cast<size_t>(device_id)].at("memoryMiB").get<int64_t>();
  for (const nlohmann::json& v : doc->at("vdevices")) {
    if (v.at("device").get<int>() != device_id) continue;
    free_cus -= v.at("computeUnits").get<int64_t>();
    free_mib -= v.at("memoryMiB").get<int64_t>();
  }
  *cus = static_cast<size_t>(std::max<int64_t>(free_cus, 0));
  *memory_bytes = static_cast<size_t>(std::max<int64_t>(free_mib, 0)) * kMiB;
  return hd::kSuccess;
}

XPU_FAKE_EXPORT int dmiCreateVDevices(int device_id, int vdev_count, int* vdev_cus,
                                      int* vdev_mem_size) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  const nlohmann::json devices = doc->value("devices", nlohmann::json::array());
  const int max = doc->value("maxVDevices", 0);
  if (max <= 0) return hd::kNotSupported;
  if (device_id < 0 || device_id >= static_cast<int>(devices.size()) || vdev_count < 1 ||
      vdev_cus == nullptr || vdev_mem_size == nullptr) {
    return hd::kInvalidArguments;
  }
  if (const int delay = doc->value("faults", nlohmann::json::object()).value("createDelayMs", 0);
      delay > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  }
  if (Contains(*doc, "createBusy", device_id)) return hd::kDeviceBusy;
  nlohmann::json vdevices = doc->at("vdevices");
  int on_device = 0;
  int64_t free_cus = devices[static_cast<size_t>(device_id)].at("computeUnits").get<int64_t>();
  int64_t free_mib = devices[static_cast<size_t>(device_id)].at("memoryMiB").get<int64_t>();
  std::set<int> ids;
  for (const nlohmann::json& v : vdevices) {
    ids.insert(v.at("id").get<int>());
    if (v.at("device").get<int>() != device_id) continue;
    ++on_device;
    free_cus -= v.at("computeUnits").get<int64_t>();
    free_mib -= v.at("memoryMiB").get<int64_t>();
  }
  for (int k = 0; k < vdev_count; ++k) {
    if (vdev_cus[k] < 1 || vdev_mem_size[k] < 1) return hd::kInvalidArguments;
    free_cus -= vdev_cus[k];
    free_mib -= vdev_mem_size[k];
  }
  if (on_device + vdev_count > max || free_cus < 0 || free_mib < 0) return hd::kOutOfResources;
  for (int k = 0; k < vdev_count; ++k) {
    int id = 0;
    while (ids.contains(id)) ++id;
    ids.insert(id);
    vdevices.push_back({{"id", id},
                        {"device", device_id},
                        {"computeUnits", vdev_cus[k]},
                        {"memoryMiB", vdev_mem_size[k]}});
  }
  return Save(s, vdevices);
}

XPU_FAKE_EXPORT int dmiDestroySingleVDevice(int vdevice_id) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  if (Contains(*doc, "destroyBusy", vdevice_id)) return hd::kDeviceBusy;
  nlohmann::json vdevices = nlohmann::json::array();
  bool found = false;
  for (const nlohmann::json& v : doc->at("vdevices")) {
    if (v.at("id").get<int>() == vdevice_id) {
      found = true;
    } else {
      vdevices.push_back(v);
    }
  }
  if (!found) return hd::kVdevNotExist;
  return Save(s, vdevices);
}

XPU_FAKE_EXPORT int dmiGetStatusString(int status, const char** text) {
  if (text == nullptr) return hd::kError;
  switch (status) {
    case hd::kSuccess:
      *text = "success";
      break;
    case hd::kNotSupported:
      *text = "not supported";
      break;
    case hd::kInvalidArguments:
      *text = "invalid arguments";
      break;
    case hd::kOutOfResources:
      *text = "out of resources";
      break;
    case hd::kVdevNotExist:
      *text = "virtual device does not exist";
      break;
    case hd::kDeviceBusy:
      *text = "device busy";
      break;
    default:
      *text = "error";
      break;
  }
  return hd::kSuccess;
}
