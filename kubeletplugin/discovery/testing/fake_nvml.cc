// A fake libnvidia-ml.so.1 for tests: the NVML functions ProbeNvml calls, with NVML's signatures
// and return codes, answering from the fixture JSON named by $XPU_FAKE_NVML_JSON
// (e2e/fixtures/hosts/README.md, "fake-vendor/nvml.json"), else from the fixture host root it was
// loaded from (a fixture's usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 links to it). Telemetry
// (temperature, power, the energy counter, utilisation, memory used, volatile ECC counts) comes
// from each device's `telemetry` member; a reading the fixture lacks answers NOT_SUPPORTED. Faults
// honoured: `init` (nvmlInit_v2 fails with that code), `deviceGone`
// (nvmlDeviceGetHandleByIndex_v2 answers GPU_IS_LOST), `unhealthy` (the device's xidEvents are
// queued when it registers for XID events), `linkDown` (nvmlDeviceGetNvLinkState answers
// DISABLED). A missing variable or unreadable file makes nvmlInit_v2 fail with NVML_ERROR_UNKNOWN
// (999) and a line on stderr. With $XPU_FAKE_NVML_DEV_DIR set (in a container: /dev) it
// enumerates only the GPUs whose node is there, as the real NVML does in a container. Built with
// XPU_FAKE_NVML_OLD it lacks the functions newer drivers added (memory v2, NUMA id, fabric info,
// the versioned MIG profile info and the _v2 placements).
//
// MIG: fake_nvml_mig.cc; the state both answer from: fake_nvml_state.h.
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
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "kubeletplugin/discovery/testing/fake_nvml_state.h"

namespace xpu::discovery::nvml {
namespace {

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

// The counter of a device whose telemetry has energyMillijoules: that value when the library was
// loaded, then growing at the fixture's power (mW x s = mJ), as a real counter does at a steady
// draw. Without it NOT_SUPPORTED, as on GPUs before Volta.
XPU_FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                 unsigned long long* millijoules) {
  return nv::WithDevice(device, [&](nv::State& s, const nv::nvmlDevice_st& d) {
    unsigned long long at_load = 0;
    if (nvmlReturn_t rc = nv::Reading(d, "energyMillijoules", &at_load); rc != nv::kSuccess) {
      return rc;
    }
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - s.loaded_at)
                            .count();
    const auto milliwatts = nv::Telemetry(d).value("powerMilliwatts", 0ULL);
    *millijoules = at_load + milliwatts * static_cast<unsigned long long>(micros) / 1'000'000;
    return nv::kSuccess;
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
