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
// left (out of resources), and a busy device (device busy). With $XPU_FAKE_HYDMI_DEV_DIR set (in
// a container: /dev) only the devices whose <dir>/dri/renderD<renderMinor> exists are listed,
// numbered from 0, as a container given some DCUs' nodes sees them.
#include <unistd.h>

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

// $XPU_FAKE_HYDMI_DEV_DIR: the devices whose render node is in that folder.
void FilterByDeviceNodes(nlohmann::json& doc) {
  const char* dir = std::getenv("XPU_FAKE_HYDMI_DEV_DIR");
  if (dir == nullptr || *dir == '\0') return;
  nlohmann::json kept = nlohmann::json::array();
  for (const nlohmann::json& d : doc.at("devices")) {
    const std::string node =
        std::string(dir) + "/dri/renderD" + std::to_string(d.value("renderMinor", -1));
    if (::access(node.c_str(), F_OK) == 0) kept.push_back(d);
  }
  doc["devices"] = std::move(kept);
}

// The fixture, with "vdevices" as they are now; nullopt (and a line on stderr) when unreadable.
std::optional<nlohmann::json> Load(State& s) REQUIRES(s.mu) {
  const std::string path = JsonPath();
  try {
    // No fixture (a host without Hygon's DMI, or a test that did not set one): a library that
    // sees no device and no virtualisation, so hosts of other vendors are not disturbed.
    if (path.empty()) {
      return nlohmann::json{{"devices", nlohmann::json::array()},
                            {"vdevices", nlohmann::json::array()}};
    }
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "fake hydmi: cannot read %s\n", path.c_str());
      return std::nullopt;
    }
    nlohmann::json doc = nlohmann::json::parse(in);
    if (!doc.contains("devices")) doc["devices"] = nlohmann::json::array();
    if (!doc.contains("vdevices")) doc["vdevices"] = nlohmann::json::array();
    FilterByDeviceNodes(doc);
    if (const char* state = std::getenv("XPU_FAKE_HYDMI_STATE"); state != nullptr && *state) {
      if (std::ifstream saved(state); saved) {
        doc["vdevices"] = nlohmann::json::parse(saved).at("vdevices");
      }
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

// Answers a call: `fn(doc, vdevices)` on the fixture as it is now, with DMI's status; what it
// changed in `vdevices` is kept.
template <typename Fn>
int Answer(Fn fn) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  const std::optional<nlohmann::json> doc = Load(s);
  if (!doc) return hd::kOpenMkfdFailed;
  nlohmann::json vdevices = doc->at("vdevices");
  const int rc = fn(*doc, vdevices);
  if (rc != hd::kSuccess || vdevices == doc->at("vdevices")) return rc;
  return Save(s, vdevices);
}

// Physical device `id` of the fixture, or nullptr.
const nlohmann::json* DeviceOf(const nlohmann::json& doc, int id) {
  const nlohmann::json& devices = doc.at("devices");
  if (id < 0 || id >= static_cast<int>(devices.size())) return nullptr;
  return &devices[static_cast<size_t>(id)];
}

// What device `id` has left, and how many vHCUs it holds.
struct Left {
  int64_t cus = 0;
  int64_t mib = 0;
  int vdevices = 0;
};
Left LeftOn(const nlohmann::json& device, const nlohmann::json& vdevices, int id) {
  Left left{device.at("computeUnits").get<int64_t>(), device.at("memoryMiB").get<int64_t>(), 0};
  for (const nlohmann::json& v : vdevices) {
    if (v.at("device").get<int>() != id) continue;
    left.cus -= v.at("computeUnits").get<int64_t>();
    left.mib -= v.at("memoryMiB").get<int64_t>();
    ++left.vdevices;
  }
  return left;
}

}  // namespace

#define XPU_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

XPU_FAKE_EXPORT int dmiGetDeviceCount(int* count) {
  return Answer([&](const nlohmann::json& doc, nlohmann::json&) {
    if (count == nullptr) return hd::kInvalidArguments;
    *count = static_cast<int>(doc.at("devices").size());
    return hd::kSuccess;
  });
}

XPU_FAKE_EXPORT int dmiGetDeviceInfo(int device_id, hd::DeviceInfo* info) {
  return Answer([&](const nlohmann::json& doc, nlohmann::json&) {
    const nlohmann::json* d = DeviceOf(doc, device_id);
    if (info == nullptr || d == nullptr) return hd::kInvalidArguments;
    Fill(info, d->value("name", "DCU"), d->at("computeUnits").get<int>(),
         d->at("memoryMiB").get<int64_t>(), device_id);
    return hd::kSuccess;
  });
}

XPU_FAKE_EXPORT int dmiGetMaxVDeviceCount(int* count) {
  return Answer([&](const nlohmann::json& doc, nlohmann::json&) {
    const int max = doc.value("maxVDevices", 0);
    if (max <= 0) return hd::kNotSupported;
    if (count == nullptr) return hd::kInvalidArguments;
    *count = max;
    return hd::kSuccess;
  });
}

XPU_FAKE_EXPORT int dmiGetVDeviceCount(int* count) {
  return Answer([&](const nlohmann::json&, nlohmann::json& vdevices) {
    if (count == nullptr) return hd::kInvalidArguments;
    *count = static_cast<int>(vdevices.size());
    return hd::kSuccess;
  });
}

XPU_FAKE_EXPORT int dmiGetVDeviceInfo(int vdevice_id, hd::DeviceInfo* info) {
  return Answer([&](const nlohmann::json&, nlohmann::json& vdevices) {
    if (info == nullptr) return hd::kInvalidArguments;
    for (const nlohmann::json& v : vdevices) {
      if (v.at("id").get<int>() != vdevice_id) continue;
      Fill(info, "vdev" + std::to_string(vdevice_id), v.at("computeUnits").get<int>(),
           v.at("memoryMiB").get<int64_t>(), v.at("device").get<int>());
      return hd::kSuccess;
    }
    return hd::kVdevNotExist;
  });
}

XPU_FAKE_EXPORT int dmiGetDeviceRemainingInfo(int device_id, size_t* cus, size_t* memory_bytes) {
  return Answer([&](const nlohmann::json& doc, nlohmann::json& vdevices) {
    const nlohmann::json* d = DeviceOf(doc, device_id);
    if (cus == nullptr || memory_bytes == nullptr || d == nullptr) return hd::kInvalidArguments;
    const Left left = LeftOn(*d, vdevices, device_id);
    *cus = static_cast<size_t>(std::max<int64_t>(left.cus, 0));
    *memory_bytes = static_cast<size_t>(std::max<int64_t>(left.mib, 0)) * kMiB;
    return hd::kSuccess;
  });
}

XPU_FAKE_EXPORT int dmiCreateVDevices(int device_id, int vdev_count, int* vdev_cus,
                                      int* vdev_mem_size) {
  return Answer([&](const nlohmann::json& doc, nlohmann::json& vdevices) {
    const int max = doc.value("maxVDevices", 0);
    if (max <= 0) return hd::kNotSupported;
    const nlohmann::json* d = DeviceOf(doc, device_id);
    if (d == nullptr || vdev_count < 1 || vdev_cus == nullptr || vdev_mem_size == nullptr) {
      return hd::kInvalidArguments;
    }
    if (const int delay = doc.value("faults", nlohmann::json::object()).value("createDelayMs", 0);
        delay > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
    if (Contains(doc, "createBusy", device_id)) return hd::kDeviceBusy;
    Left left = LeftOn(*d, vdevices, device_id);
    for (int k = 0; k < vdev_count; ++k) {
      if (vdev_cus[k] < 1 || vdev_mem_size[k] < 1) return hd::kInvalidArguments;
      left.cus -= vdev_cus[k];
      left.mib -= vdev_mem_size[k];
    }
    if (left.vdevices + vdev_count > max || left.cus < 0 || left.mib < 0) {
      return hd::kOutOfResources;
    }
    std::set<int> ids;
    for (const nlohmann::json& v : vdevices) ids.insert(v.at("id").get<int>());
    for (int k = 0; k < vdev_count; ++k) {
      int id = 0;
      while (ids.contains(id)) ++id;
      ids.insert(id);
      vdevices.push_back({{"id", id},
                          {"device", device_id},
                          {"computeUnits", vdev_cus[k]},
                          {"memoryMiB", vdev_mem_size[k]}});
    }
    return hd::kSuccess;
  });
}

XPU_FAKE_EXPORT int dmiDestroySingleVDevice(int vdevice_id) {
  return Answer([&](const nlohmann::json& doc, nlohmann::json& vdevices) {
    if (Contains(doc, "destroyBusy", vdevice_id)) return hd::kDeviceBusy;
    const size_t before = vdevices.size();
    vdevices.erase(std::remove_if(vdevices.begin(), vdevices.end(),
                                  [&](const nlohmann::json& v) {
                                    return v.at("id").get<int>() == vdevice_id;
                                  }),
                   vdevices.end());
    return vdevices.size() == before ? hd::kVdevNotExist : hd::kSuccess;
  });
}
