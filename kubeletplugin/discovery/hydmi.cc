// Hygon's DMI through dlopen (vendor_libs.h, partition_backend.h): the devices and vHCUs it
// reports, and vHCUs made and destroyed at prepare. DMI has no init call (the library opens
// /dev/mkfd itself) and cannot list vHCUs directly: dmiGetVDeviceCount says how many there are,
// and the ids are asked one by one until that many answered. dmiCreateVDevices does not say
// which id it gave: the new vHCU is the one on the device that was not there before.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/text.h"
#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/hydmi_types.h"
#include "kubeletplugin/discovery/internal/partition_backends.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {
namespace {

namespace hd = ::xpu::discovery::hydmi;

constexpr const char* kHydmiFile = "libhydmi.so";
constexpr int kMaxDmiDevices = 64;     // guards garbage counts
constexpr int kMaxVdevIdAsked = 4096;  // ids asked before giving up on the count
constexpr uint64_t kMiBytes = uint64_t{1} << 20;

std::string_view HydmiErrorName(int rc) {
  static constexpr CodeName kNames[] = {
      {0, "success"},
      {1, "error"},
      {2, "no memory"},
      {3, "open mkfd failed"},
      {4, "mkfd already opened"},
      {5, "sys node does not exist"},
      {6, "not supported"},
      {7, "mkfd not opened"},
      {8, "create vdev failed"},
      {9, "destroy vdev failed"},
      {10, "invalid arguments"},
      {11, "out of resources"},
      {12, "query vdev info failed"},
      {13, "not initialized"},
      {14, "device not supported"},
      {15, "vdev does not exist"},
      {16, "init device failed"},
      {17, "device busy"},
      {18, "file error"},
      {19, "permission denied"},
      {29, "smi busy"},
  };
  return NameOf(kNames, rc).value_or("unknown error");
}

std::string HydmiCallError(std::string_view fn, int rc) {
  std::string out(fn);
  out.append(": ").append(std::to_string(rc)).append(" ").append(HydmiErrorName(rc));
  return out;
}

struct HydmiApi {
  hd::GetDeviceCountFn get_device_count{};
  hd::GetDeviceInfoFn get_device_info{};
  hd::GetMaxVDeviceCountFn get_max_vdevice_count{};
  hd::GetVDeviceCountFn get_vdevice_count{};
  hd::GetVDeviceInfoFn get_vdevice_info{};
  hd::CreateVDevicesFn create_vdevices{};
  hd::DestroySingleVDeviceFn destroy_single_vdevice{};
};

// Binds the query calls (required) and the create and destroy calls (optional: a probe needs
// none of them); returns the required ones missing.
std::vector<std::string> BindHydmi(const DlLibrary& lib, HydmiApi* api,
                                   std::vector<std::string>* optional_missing) {
  std::vector<std::string> required_missing;
  lib.Bind("dmiGetDeviceCount", &api->get_device_count, &required_missing);
  lib.Bind("dmiGetDeviceInfo", &api->get_device_info, &required_missing);
  lib.Bind("dmiGetMaxVDeviceCount", &api->get_max_vdevice_count, &required_missing);
  lib.Bind("dmiGetVDeviceCount", &api->get_vdevice_count, &required_missing);
  lib.Bind("dmiGetVDeviceInfo", &api->get_vdevice_info, &required_missing);
  lib.Bind("dmiCreateVDevices", &api->create_vdevices, optional_missing);
  lib.Bind("dmiDestroySingleVDevice", &api->destroy_single_vdevice, optional_missing);
  return required_missing;
}

// DMI has no init call: a library that cannot count the devices cannot be used.
std::string InitHydmi(HydmiApi* api) {
  int count = 0;
  const int rc = api->get_device_count(&count);
  return rc == hd::kSuccess ? "" : HydmiCallError("dmiGetDeviceCount", rc);
}

void OpenHydmi(const std::vector<std::string>& lib_dirs, DlLibrary* lib, HydmiApi* api,
               LibraryStatus* status) {
  OpenVendorLibrary("hydmi", kHydmiFile, lib_dirs, lib, api, status, &BindHydmi, &InitHydmi);
}

// Every vHCU, by id; the failing call's message in `error` otherwise.
bool ListVdevices(const HydmiApi& api, std::vector<HydmiVdevice>* out, std::string* error) {
  out->clear();
  int count = 0;
  if (const int rc = api.get_vdevice_count(&count); rc != hd::kSuccess) {
    *error = HydmiCallError("dmiGetVDeviceCount", rc);
    return false;
  }
  for (int id = 0; static_cast<int>(out->size()) < count && id < kMaxVdevIdAsked; ++id) {
    hd::DeviceInfo info{};
    const int rc = api.get_vdevice_info(id, &info);
    if (rc == hd::kVdevNotExist) continue;
    if (rc != hd::kSuccess) {
      *error = HydmiCallError("dmiGetVDeviceInfo(" + std::to_string(id) + ")", rc);
      return false;
    }
    out->push_back({id, info.device_id, info.compute_unit_count,
                    static_cast<uint64_t>(info.global_mem_size) / kMiBytes});
  }
  if (static_cast<int>(out->size()) < count) {
    *error = "dmiGetVDeviceCount says " + std::to_string(count) + " vHCUs, only " +
             std::to_string(out->size()) + " answered below id " + std::to_string(kMaxVdevIdAsked);
    return false;
  }
  return true;
}

// A failed DMI call as a status: unavailable (retryable) when the device was short of resources
// or busy.
Status VhcuCallStatus(const PartitionParent& parent, const std::string& call, int rc) {
  return internal::PartitionCallError(
      "hydmi: " + parent.name + ": " + HydmiCallError(call, rc),
      rc == hd::kOutOfResources || rc == hd::kDeviceBusy || rc == hd::kSmiBusy);
}

// vHCUs through DMI. A parent is DMI's device of the same index (DMI reports no PCI address).
class HydmiPartitions final : public PartitionBackend {
  HydmiApi api_;
  DlLibrary lib_;
  LibraryStatus status_;

 public:
  Status Open(const std::vector<std::string>& lib_dirs) {
    OpenHydmi(lib_dirs, &lib_, &api_, &status_);
    if (!status_.loaded) return UnavailableError("hydmi: " + status_.error);
    if (api_.create_vdevices == nullptr || api_.destroy_single_vdevice == nullptr) {
      return UnavailableError("hydmi: " + status_.path +
                              " cannot create vHCUs: it lacks dmiCreateVDevices or "
                              "dmiDestroySingleVDevice");
    }
    int max = 0;
    if (const int rc = api_.get_max_vdevice_count(&max); rc != hd::kSuccess || max < 1) {
      return UnavailableError("hydmi: " + status_.path + ": no vHCUs on this node (" +
                              HydmiCallError("dmiGetMaxVDeviceCount", rc) + ")");
    }
    return OkStatus();
  }

  std::string kind() const override { return "vhcu"; }

  StatusOr<std::vector<LivePartition>> List(const PartitionParent& parent) override {
    std::vector<HydmiVdevice> all;
    std::string error;
    if (!ListVdevices(api_, &all, &error)) {
      return UnavailableError("hydmi: " + parent.name + ": " + error);
    }
    std::vector<LivePartition> out;
    for (const HydmiVdevice& v : all) {
      if (v.device != parent.index) continue;
      out.push_back({VhcuProfileName(v.compute_units, v.memory_mib), v.id, std::nullopt, ""});
    }
    return out;
  }

  // `id` is ignored: DMI picks it, and the new one is found by asking again.
  StatusOr<LivePartition> Create(const PartitionParent& parent, const std::string& profile,
                                 int64_t /*id*/, std::optional<int64_t> /*placement*/) override {
    int cus = 0;
    uint64_t memory_mib = 0;
    if (!ParseVhcuProfileName(profile, &cus, &memory_mib) || memory_mib > INT32_MAX) {
      return InvalidArgumentError("vHCU profile \"" + profile +
                                  "\" is not a size (<compute units>cu.<memory>gb)");
    }
    ASSIGN_OR_RETURN(const std::vector<LivePartition> before, List(parent));
    int mem = static_cast<int>(memory_mib);
    const int rc = api_.create_vdevices(static_cast<int>(parent.index), 1, &cus, &mem);
    if (rc != hd::kSuccess) {
      return VhcuCallStatus(parent, "dmiCreateVDevices(" + profile + ")", rc);
    }
    ASSIGN_OR_RETURN(const std::vector<LivePartition> after, List(parent));
    for (const LivePartition& l : after) {
      const bool old = std::any_of(before.begin(), before.end(),
                                   [&l](const LivePartition& b) { return b.id == l.id; });
      if (!old && l.profile == profile) return l;
    }
    return InternalError("hydmi: " + parent.name + ": dmiCreateVDevices(" + profile +
                         ") succeeded but no new vHCU of that size is on the device");
  }

  Status Destroy(const PartitionParent& parent, int64_t id) override {
    const int rc = api_.destroy_single_vdevice(static_cast<int>(id));
    if (rc == hd::kSuccess) return OkStatus();
    const Status error =
        VhcuCallStatus(parent, "dmiDestroySingleVDevice(" + std::to_string(id) + ")", rc);
    return rc == hd::kVdevNotExist ? NotFoundError(error.message()) : error;
  }
};

}  // namespace

StatusOr<std::unique_ptr<PartitionBackend>> OpenHydmiPartitions(
    const std::vector<std::string>& lib_dirs) {
  return internal::OpenPartitionBackend<HydmiPartitions>(lib_dirs);
}

std::string VhcuProfileName(int compute_units, uint64_t memory_mib) {
  std::string name = std::to_string(compute_units) + "cu.";
  if (memory_mib > 0 && memory_mib % 1024 == 0) {
    return name + std::to_string(memory_mib / 1024) + "gb";
  }
  return name + std::to_string(memory_mib) + "mb";
}

bool ParseVhcuProfileName(std::string_view name, int* compute_units, uint64_t* memory_mib) {
  const size_t cu = name.find("cu.");
  if (cu == std::string_view::npos || cu == 0) return false;
  int units = 0;
  if (auto [end, ec] = std::from_chars(name.data(), name.data() + cu, units);
      ec != std::errc{} || end != name.data() + cu || units < 1) {
    return false;
  }
  std::string_view rest = name.substr(cu + 3);
  uint64_t scale = 0;
  if (rest.ends_with("gb")) scale = 1024;
  if (rest.ends_with("mb")) scale = 1;
  if (scale == 0 || rest.size() < 3) return false;
  rest.remove_suffix(2);
  uint64_t amount = 0;
  if (auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), amount);
      ec != std::errc{} || end != rest.data() + rest.size() || amount < 1) {
    return false;
  }
  if (VhcuProfileName(units, amount * scale) != name) return false;  // one spelling per size
  *compute_units = units;
  *memory_mib = amount * scale;
  return true;
}

HydmiFacts ProbeHydmi(const std::vector<std::string>& lib_dirs) {
  HydmiFacts facts;
  DlLibrary lib;
  HydmiApi api;
  OpenHydmi(lib_dirs, &lib, &api, &facts.library);
  if (!facts.library.loaded) return facts;
  // Counted once more after the open's check: the count is what this probe works from, so its
  // own answer is checked too.
  int count = 0;
  if (const int rc = api.get_device_count(&count); rc != hd::kSuccess) {
    facts.library.error = HydmiCallError("dmiGetDeviceCount", rc);
    return facts;
  }
  for (int i = 0; i < std::min(count, kMaxDmiDevices); ++i) {
    hd::DeviceInfo info{};
    if (const int rc = api.get_device_info(i, &info); rc != hd::kSuccess) {
      facts.library.error = HydmiCallError("dmiGetDeviceInfo(" + std::to_string(i) + ")", rc);
      continue;
    }
    facts.devices.push_back({i, BoundedCString(info.name, sizeof info.name),
                             info.compute_unit_count,
                             static_cast<uint64_t>(info.global_mem_size) / kMiBytes});
  }
  int max = 0;
  if (const int rc = api.get_max_vdevice_count(&max); rc == hd::kSuccess && max > 0) {
    std::string error;
    if (ListVdevices(api, &facts.vdevices, &error)) {
      facts.max_vdevices = max;
    } else if (facts.library.error.empty()) {
      facts.library.error = error;
    }
  } else if (rc != hd::kNotSupported && rc != hd::kDeviceNotSupport && rc != hd::kSuccess &&
             facts.library.error.empty()) {
    facts.library.error = HydmiCallError("dmiGetMaxVDeviceCount", rc);
  }
  return facts;
}

}  // namespace xpu::discovery
