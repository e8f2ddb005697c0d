// NVML's binding table through dlopen (internal/nvml_api.h): the functions looked up, the library
// opened and initialised, and the text of a failed call.
#include "kubeletplugin/discovery/internal/nvml_api.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "base/text.h"

namespace xpu::discovery {
namespace {

namespace nv = ::xpu::discovery::nvml;

constexpr const char* kNvmlFile = "libnvidia-ml.so.1";

// nvmlErrorString's text, lower case, for the codes NVML defines.
std::string_view NvmlErrorName(nv::nvmlReturn_t rc) {
  static constexpr std::string_view kNames[] = {
      "success",
      "uninitialized",
      "invalid argument",
      "not supported",
      "insufficient permissions",
      "already initialized",
      "not found",
      "insufficient size",
      "insufficient external power",
      "driver not loaded",
      "timeout",
      "interrupt request issue",
      "nvml shared library not found",
      "function not found",
      "corrupted inforom",
      "gpu is lost",
      "gpu requires restart",
      "the operating system has blocked the request",
      "rm has detected an nvml/rm version mismatch",
      "in use by another client",
      "insufficient memory",
      "no data",
      "vgpu ecc not supported",
      "insufficient resources",
      "frequency not supported",
      "argument version mismatch",
      "deprecated",
      "not ready",
      "gpu not found",
      "invalid state",
  };
  return NameAt(kNames, rc).value_or("unknown error");
}

// Binds every symbol; returns the required ones that are missing.
std::vector<std::string> Bind(const DlLibrary& lib, NvmlApi* api,
                              std::vector<std::string>* optional_missing) {
  std::vector<std::string> required_missing;
  auto* req = &required_missing;
  lib.Bind("nvmlInit_v2", &api->init, req);
  lib.Bind("nvmlShutdown", &api->shutdown, req);
  lib.Bind("nvmlSystemGetDriverVersion", &api->system_get_driver_version, req);
  lib.Bind("nvmlDeviceGetCount_v2", &api->device_get_count, req);
  lib.Bind("nvmlDeviceGetHandleByIndex_v2", &api->device_get_handle_by_index, req);
  lib.Bind("nvmlDeviceGetName", &api->device_get_name, req);
  lib.Bind("nvmlDeviceGetUUID", &api->device_get_uuid, req);
  lib.Bind("nvmlDeviceGetPciInfo_v3", &api->device_get_pci_info, req);
  lib.Bind("nvmlDeviceGetMemoryInfo", &api->device_get_memory_info, req);
  lib.Bind("nvmlDeviceGetCudaComputeCapability", &api->device_get_cuda_compute_capability, req);
  lib.Bind("nvmlDeviceGetMinorNumber", &api->device_get_minor_number, req);
  auto* opt = optional_missing;
  lib.Bind("nvmlSystemGetCudaDriverVersion_v2", &api->system_get_cuda_driver_version, opt);
  lib.Bind("nvmlDeviceGetMemoryInfo_v2", &api->device_get_memory_info_v2, opt);
  lib.Bind("nvmlDeviceGetNumaNodeId", &api->device_get_numa_node_id, opt);
  lib.Bind("nvmlDeviceGetNvLinkState", &api->device_get_nvlink_state, opt);
  lib.Bind("nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->device_get_nvlink_remote_pci_info, opt);
  lib.Bind("nvmlDeviceGetNvLinkRemoteDeviceType", &api->device_get_nvlink_remote_device_type, opt);
  lib.Bind("nvmlDeviceGetGpuFabricInfo", &api->device_get_gpu_fabric_info, opt);
  lib.Bind("nvmlEventSetCreate", &api->event_set_create, opt);
  lib.Bind("nvmlDeviceRegisterEvents", &api->device_register_events, opt);
  lib.Bind("nvmlEventSetWait_v2", &api->event_set_wait, opt);
  lib.Bind("nvmlEventSetFree", &api->event_set_free, opt);
  lib.Bind("nvmlDeviceGetMigMode", &api->device_get_mig_mode, opt);
  lib.Bind("nvmlDeviceGetGpuInstanceProfileInfoV", &api->device_get_gpu_instance_profile_info_v,
           opt);
  lib.Bind("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
           &api->device_get_gpu_instance_possible_placements, opt);
  lib.Bind("nvmlDeviceGetGpuInstances", &api->device_get_gpu_instances, opt);
  lib.Bind("nvmlGpuInstanceGetInfo", &api->gpu_instance_get_info, opt);
  lib.Bind("nvmlDeviceGetMaxMigDeviceCount", &api->device_get_max_mig_device_count, opt);
  lib.Bind("nvmlDeviceGetMigDeviceHandleByIndex", &api->device_get_mig_device_handle_by_index, opt);
  lib.Bind("nvmlDeviceGetGpuInstanceId", &api->device_get_gpu_instance_id, opt);
  return required_missing;
}

void BindTelemetry(const DlLibrary& lib, NvmlApi* api, std::vector<std::string>* missing) {
  lib.Bind("nvmlDeviceGetTemperature", &api->device_get_temperature, missing);
  lib.Bind("nvmlDeviceGetPowerUsage", &api->device_get_power_usage, missing);
  lib.Bind("nvmlDeviceGetUtilizationRates", &api->device_get_utilization_rates, missing);
  lib.Bind("nvmlDeviceGetTotalEccErrors", &api->device_get_total_ecc_errors, missing);
  lib.Bind("nvmlDeviceGetTotalEnergyConsumption", &api->device_get_total_energy, missing);
}

}  // namespace

std::string NvmlCallError(std::string_view fn, nv::nvmlReturn_t rc) {
  std::string out(fn);
  out += ": " + std::to_string(rc) + " ";
  out += NvmlErrorName(rc);
  return out;
}

// NVML spells the domain with 8 hex digits ("00000000:13:00.0"), sysfs with 4, in lower case.
std::string NormaliseBusId(const char* bus_id, size_t cap) {
  std::string raw = BoundedCString(bus_id, cap);
  unsigned domain = 0, bus = 0, slot = 0, function = 0;
  if (std::sscanf(raw.c_str(), "%x:%x:%x.%x", &domain, &bus, &slot, &function) != 4) return raw;
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, slot, function);
  return out;
}

void OpenNvml(const std::vector<std::string>& lib_dirs, DlLibrary* lib, NvmlApi* api,
              LibraryStatus* status) {
  OpenVendorLibrary(
      "nvml", kNvmlFile, lib_dirs, lib, api, status,
      [](const DlLibrary& l, NvmlApi* a, std::vector<std::string>* missing) {
        return Bind(l, a, missing);
      },
      [](NvmlApi* a) -> std::string {
        const nv::nvmlReturn_t rc = a->init();
        return rc == nv::kSuccess ? "" : NvmlCallError("nvmlInit_v2", rc);
      });
}

unsigned OpenNvmlKept(const std::vector<std::string>& lib_dirs, DlLibrary* lib, NvmlApi* api,
                      LibraryStatus* status) {
  OpenNvml(lib_dirs, lib, api, status);
  if (!status->loaded) return 0;
  BindTelemetry(*lib, api, &status->missing_symbols);
  unsigned count = 0;
  if (nv::nvmlReturn_t rc = api->device_get_count(&count); rc != nv::kSuccess) {
    status->error = NvmlCallError("nvmlDeviceGetCount_v2", rc);
    return 0;
  }
  return std::min(count, kNvmlMaxDevices);
}

std::vector<std::string> BindNvmlMigManagement(const DlLibrary& lib, NvmlApi* api) {
  std::vector<std::string> missing;
  lib.Bind("nvmlDeviceCreateGpuInstanceWithPlacement",
           &api->device_create_gpu_instance_with_placement, &missing);
  lib.Bind("nvmlDeviceGetGpuInstanceById", &api->device_get_gpu_instance_by_id, &missing);
  lib.Bind("nvmlGpuInstanceDestroy", &api->gpu_instance_destroy, &missing);
  lib.Bind("nvmlGpuInstanceGetComputeInstanceProfileInfo",
           &api->gpu_instance_get_compute_instance_profile_info, &missing);
  lib.Bind("nvmlGpuInstanceCreateComputeInstance", &api->gpu_instance_create_compute_instance,
           &missing);
  lib.Bind("nvmlGpuInstanceGetComputeInstances", &api->gpu_instance_get_compute_instances,
           &missing);
  lib.Bind("nvmlComputeInstanceDestroy", &api->compute_instance_destroy, &missing);
  return missing;
}

}  // namespace xpu::discovery
