// NVML through dlopen, the part its users share: the table of the library's functions (NvmlApi),
// opening, binding and initialising it, and the text of a failed call. Each user holds its own
// DlLibrary and NvmlApi: the discovery probe (nvml.cc, ProbeNvml), the MIG partition backend
// (nvml_mig.cc), telemetry and the XID watcher (nvml_events.cc). NVML counts its inits, so one
// user's shutdown never ends another's. Internal to kubeletplugin/discovery.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_API_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_API_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

// More GPUs than any node has: guards a garbage device count.
inline constexpr unsigned kNvmlMaxDevices = 1024;

// "<fn>: <rc> <nvmlErrorString's text, lower case>" ("nvmlInit_v2: 9 driver not loaded"); an
// unknown code reads "unknown error".
std::string NvmlCallError(std::string_view fn, nvml::nvmlReturn_t rc);

// A bus id as sysfs spells it: NVML gives the domain 8 hex digits ("00000000:13:00.0"), sysfs 4,
// in lower case ("0000:13:00.0"). Text that is no bus id comes back as it was. `cap` bounds the
// C string `bus_id`.
std::string NormaliseBusId(const char* bus_id, size_t cap);

// The library's functions, looked up by name. A required one is never null once OpenNvml
// succeeded; an optional one is null where this driver lacks it, and every caller checks.
struct NvmlApi {
  // Required: present in every driver this project supports (R450+).
  nvml::InitFn init = nullptr;
  nvml::InitFn shutdown = nullptr;
  nvml::SystemGetStringFn system_get_driver_version = nullptr;
  nvml::DeviceGetCountFn device_get_count = nullptr;
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nvml::DeviceGetStringFn device_get_name = nullptr;
  nvml::DeviceGetStringFn device_get_uuid = nullptr;
  nvml::DeviceGetPciInfoFn device_get_pci_info = nullptr;
  nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  nvml::DeviceGetCudaComputeCapabilityFn device_get_cuda_compute_capability = nullptr;
  nvml::DeviceGetUintFn device_get_minor_number = nullptr;
  // Optional: newer drivers, or features some builds leave out.
  nvml::SystemGetCudaDriverVersionFn system_get_cuda_driver_version = nullptr;
  nvml::DeviceGetMemoryInfoV2Fn device_get_memory_info_v2 = nullptr;
  nvml::DeviceGetUintFn device_get_numa_node_id = nullptr;
  nvml::DeviceGetNvLinkStateFn device_get_nvlink_state = nullptr;
  nvml::DeviceGetNvLinkRemotePciInfoFn device_get_nvlink_remote_pci_info = nullptr;
  nvml::DeviceGetNvLinkRemoteDeviceTypeFn device_get_nvlink_remote_device_type = nullptr;
  nvml::DeviceGetGpuFabricInfoFn device_get_gpu_fabric_info = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::DeviceRegisterEventsFn device_register_events = nullptr;
  nvml::EventSetWaitFn event_set_wait = nullptr;
  nvml::EventSetFreeFn event_set_free = nullptr;
  // MIG: used only when all are there (the versioned profile info and the _v2 placements are
  // newer than the first MIG drivers).
  nvml::DeviceGetMigModeFn device_get_mig_mode = nullptr;
  nvml::DeviceGetGpuInstanceProfileInfoVFn device_get_gpu_instance_profile_info_v = nullptr;
  nvml::DeviceGetGpuInstancePossiblePlacementsFn device_get_gpu_instance_possible_placements =
      nullptr;
  nvml::DeviceGetGpuInstancesFn device_get_gpu_instances = nullptr;
  nvml::GpuInstanceGetInfoFn gpu_instance_get_info = nullptr;
  nvml::DeviceGetUintFn device_get_max_mig_device_count = nullptr;
  nvml::DeviceGetMigDeviceHandleByIndexFn device_get_mig_device_handle_by_index = nullptr;
  nvml::DeviceGetUintFn device_get_gpu_instance_id = nullptr;
  // Creating and destroying MIG instances (BindNvmlMigManagement, for the partition backend).
  nvml::DeviceCreateGpuInstanceWithPlacementFn device_create_gpu_instance_with_placement{};
  nvml::DeviceGetGpuInstanceByIdFn device_get_gpu_instance_by_id{};
  nvml::GpuInstanceDestroyFn gpu_instance_destroy{};
  nvml::GpuInstanceGetComputeInstanceProfileInfoFn gpu_instance_get_compute_instance_profile_info =
      {};
  nvml::GpuInstanceCreateComputeInstanceFn gpu_instance_create_compute_instance{};
  nvml::GpuInstanceGetComputeInstancesFn gpu_instance_get_compute_instances{};
  nvml::ComputeInstanceDestroyFn compute_instance_destroy{};
  // Telemetry only (OpenNvmlKept): optional, never part of the discovery probe's status.
  nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;
  nvml::DeviceGetUintFn device_get_power_usage = nullptr;
  nvml::DeviceGetUtilizationRatesFn device_get_utilization_rates = nullptr;
  nvml::DeviceGetTotalEccErrorsFn device_get_total_ecc_errors = nullptr;
  nvml::DeviceGetTotalEnergyConsumptionFn device_get_total_energy = nullptr;

  bool has_mig() const {
    return device_get_mig_mode != nullptr && device_get_gpu_instance_profile_info_v != nullptr &&
           device_get_gpu_instance_possible_placements != nullptr &&
           device_get_gpu_instances != nullptr && gpu_instance_get_info != nullptr &&
           device_get_max_mig_device_count != nullptr &&
           device_get_mig_device_handle_by_index != nullptr &&
           device_get_gpu_instance_id != nullptr;
  }
};

// Loads libnvidia-ml.so.1 (from `lib_dirs` first, see DlLibrary::Open) into `lib`, binds the
// required and optional functions into `api` (the optional ones missing go to
// status->missing_symbols) and calls nvmlInit_v2; sets status->loaded on success, else
// status->error says why.
void OpenNvml(const std::vector<std::string>& lib_dirs, DlLibrary* lib, NvmlApi* api,
              LibraryStatus* status);

// OpenNvml for a library kept open (telemetry, the XID watcher): the telemetry functions bound
// too, and the number of GPUs (at most kNvmlMaxDevices); 0 when the library or the count failed
// (status says why).
unsigned OpenNvmlKept(const std::vector<std::string>& lib_dirs, DlLibrary* lib, NvmlApi* api,
                      LibraryStatus* status);

// Binds the functions that create and destroy MIG instances into `api`; returns the names of
// those `lib` lacks (empty: all bound).
std::vector<std::string> BindNvmlMigManagement(const DlLibrary& lib, NvmlApi* api);

// The discovery probe's reading of one GPU's MIG (nvml.cc): out->mig set when MIG is there and
// every call succeeded, each failed call appended to out->error. The partition backend's view.
void ReadNvmlMig(const NvmlApi& api, nvml::nvmlDevice_t handle, NvmlDevice* out);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_API_H_
