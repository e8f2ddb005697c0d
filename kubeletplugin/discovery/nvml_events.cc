// NVML's XID events and counters: the event set the probe, telemetry and the health watcher share
// (internal/nvml_events.h), the XID catalogue (xid_events.h), NVML telemetry (telemetry.h) and the
// health watcher's event source.
#include "kubeletplugin/discovery/internal/nvml_events.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"
#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/nvml_api.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/telemetry.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery {
namespace {

namespace nv = ::xpu::discovery::nvml;

// XIDs the NVIDIA device plugin treats as application errors, not device faults
// (docs/reference/hardware.md, "Health: XIDs").
constexpr unsigned long long kApplicationXids[] = {13, 31, 43, 45, 68, 109};

}  // namespace

XidEventSet::XidEventSet(const NvmlApi& api) : api_(api) {
  const bool available = api.event_set_create != nullptr && api.device_register_events != nullptr &&
                         api.event_set_wait != nullptr && api.event_set_free != nullptr;
  if (available && api_.event_set_create(&set_) != nv::kSuccess) set_ = nullptr;
}

XidEventSet::~XidEventSet() {
  if (set_ != nullptr) api_.event_set_free(set_);
}

bool XidEventSet::Register(nv::nvmlDevice_t handle, size_t key) {
  if (set_ == nullptr) return false;
  if (api_.device_register_events(handle, nv::kEventTypeXidCriticalError, set_) != nv::kSuccess) {
    return false;
  }
  keys_[handle] = key;
  return true;
}

namespace {

// NVML initialised for as long as the object lives, with one XID event set for its GPUs: what the
// telemetry sampler and the health watcher share. Shut down on destruction (NVML counts inits:
// discovery's own init is unaffected), the set freed first while the library is still initialised.
class KeptNvml {
 public:
  KeptNvml(const KeptNvml&) = delete;
  KeptNvml& operator=(const KeptNvml&) = delete;

 protected:
  KeptNvml() = default;
  ~KeptNvml() {
    events_ = nullptr;
    if (status_.loaded) api_.shutdown();
  }

  // Opens the library (OpenNvmlKept) and, when it has GPUs, the event set; then `each(handle)`
  // for every GPU whose handle can be read (a lost GPU is skipped).
  template <typename Each>
  void Open(const std::vector<std::string>& lib_dirs, const Each& each) {
    const unsigned count = OpenNvmlKept(lib_dirs, &lib_, &api_, &status_);
    if (count == 0) return;
    events_ = std::make_unique<XidEventSet>(api_);
    for (unsigned i = 0; i < count; ++i) {
      nv::nvmlDevice_t handle = nullptr;
      if (api_.device_get_handle_by_index(i, &handle) != nv::kSuccess) continue;  // lost GPU
      each(handle);
    }
  }

  LibraryStatus status_;
  DlLibrary lib_;
  NvmlApi api_;
  std::unique_ptr<XidEventSet> events_;  // after api_: it reads it
};

// Telemetry from a library kept initialised: handles, identities and the XID event set are set up
// once; each Sample() reads the counters and drains the events queued since the last one.
class NvmlTelemetry final : public TelemetrySource, private KeptNvml {
 public:
  explicit NvmlTelemetry(const std::vector<std::string>& lib_dirs) {
    Open(lib_dirs, [this](nv::nvmlDevice_t handle) {
      Device d;
      d.handle = handle;
      char buf[nv::kDeviceUuidV2BufferSize] = {};
      if (api_.device_get_uuid(handle, buf, sizeof buf) == nv::kSuccess) {
        d.uuid = BoundedCString(buf, sizeof buf);
      }
      nv::nvmlPciInfo_t pci{};
      if (api_.device_get_pci_info(handle, &pci) != nv::kSuccess) return;  // cannot be joined
      d.pci_address = NormaliseBusId(pci.busId, sizeof pci.busId);
      d.xid_watched = events_->Register(handle, devices_.size());
      devices_.push_back(std::move(d));
    });
  }

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
    if (unsigned long long millijoules = 0;
        api_.device_get_total_energy != nullptr &&
        ok("nvmlDeviceGetTotalEnergyConsumption",
           api_.device_get_total_energy(d.handle, &millijoules))) {
      t.energy_joules = static_cast<double>(millijoules) / 1000.0;
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
  // NVIDIA's XID catalogue, the ones a node operator meets
  // (docs/reference/hardware.md, "Health: XIDs").
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
class NvmlXidEvents final : public XidEventSource, private KeptNvml {
 public:
  explicit NvmlXidEvents(const std::vector<std::string>& lib_dirs) {
    Open(lib_dirs, [this](nv::nvmlDevice_t handle) {
      std::string pci;
      if (!PciAddress(handle, &pci).ok()) return;  // cannot be named to the plugin
      Watch(handle, pci);
    });
  }

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
    for (unsigned i = 0; i < std::min(count, kNvmlMaxDevices); ++i) {
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

  std::vector<std::string> pci_;        // by registration key
  std::set<nv::nvmlDevice_t> handles_;  // registered
  std::set<std::string> watched_;       // the GPUs (PCI addresses) with a registered handle
};

}  // namespace

std::unique_ptr<XidEventSource> OpenNvmlXidEvents(const std::vector<std::string>& lib_dirs) {
  return std::make_unique<NvmlXidEvents>(lib_dirs);
}

}  // namespace xpu::discovery
