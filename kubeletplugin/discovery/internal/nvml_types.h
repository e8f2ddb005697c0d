// The slice of the NVML C API that the probe calls and the fake library exports, declared here so
// that neither needs NVIDIA's nvml.h. Names, values and layouts are NVML's own (nvml.h as vendored
// by NVIDIA/go-nvml gen/nvml/nvml.h, and tools/nvml-probe, which read them on a real H200 with
// driver 580.159.04). Plain C types only: these cross a dlopen boundary.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_TYPES_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_TYPES_H_

namespace xpu::discovery::nvml {

using nvmlReturn_t = int;  // an enum in nvml.h; enums are int-sized on every ABI we target
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
using nvmlEnableState_t = int;          // NVML_FEATURE_DISABLED=0, NVML_FEATURE_ENABLED=1
using nvmlIntNvLinkDeviceType_t = int;  // GPU=0, IBMNPU=1, SWITCH=2, UNKNOWN=0xFF
using nvmlGpuFabricState_t = unsigned char;

// nvmlReturn_t values.
inline constexpr nvmlReturn_t kSuccess = 0;
inline constexpr nvmlReturn_t kErrorUninitialized = 1;
inline constexpr nvmlReturn_t kErrorInvalidArgument = 2;
inline constexpr nvmlReturn_t kErrorNotSupported = 3;
inline constexpr nvmlReturn_t kErrorNoPermission = 4;
inline constexpr nvmlReturn_t kErrorNotFound = 6;
inline constexpr nvmlReturn_t kErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kErrorTimeout = 10;
inline constexpr nvmlReturn_t kErrorLibraryNotFound = 12;
inline constexpr nvmlReturn_t kErrorFunctionNotFound = 13;
inline constexpr nvmlReturn_t kErrorGpuIsLost = 15;
inline constexpr nvmlReturn_t kErrorArgumentVersionMismatch = 25;
inline constexpr nvmlReturn_t kErrorUnknown = 999;

inline constexpr unsigned kSystemDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_...
inline constexpr unsigned kDeviceUuidV2BufferSize = 96;         // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kDeviceNameV2BufferSize = 96;         // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kNvLinkMaxLinks = 36;                 // NVML_NVLINK_MAX_LINKS (R535+)

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 and nvmlDeviceGetNvLinkRemotePciInfo_v2.
struct nvmlPciInfo_t {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // device id << 16 | vendor id
  unsigned int pciSubSystemId;  // subsystem device << 16 | subsystem vendor
  char busId[32];               // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, "00000000:13:00.0"
};

struct nvmlMemory_t {  // nvmlDeviceGetMemoryInfo
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {  // nvmlDeviceGetMemoryInfo_v2; `version` must be kMemoryV2Version
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | 2 << 24.
inline constexpr unsigned kMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2U << 24);

struct nvmlGpuFabricInfo_t {      // nvmlDeviceGetGpuFabricInfo (R550+; deprecated by ...InfoV)
  unsigned char clusterUuid[16];  // NVML_GPU_FABRIC_UUID_LEN
  nvmlReturn_t status;            // the fabric registration result
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
};
inline constexpr nvmlGpuFabricState_t kFabricStateNotSupported = 0;
inline constexpr nvmlGpuFabricState_t kFabricStateNotStarted = 1;
inline constexpr nvmlGpuFabricState_t kFabricStateInProgress = 2;
inline constexpr nvmlGpuFabricState_t kFabricStateCompleted = 3;

struct nvmlEventData_t {  // nvmlEventSetWait_v2
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
inline constexpr unsigned long long kEventTypeSingleBitEccError = 0x1;
inline constexpr unsigned long long kEventTypeDoubleBitEccError = 0x2;
inline constexpr unsigned long long kEventTypeXidCriticalError = 0x8;

// Telemetry (nvml.h): nvmlDeviceGetTemperature's sensor NVML_TEMPERATURE_GPU; the ECC counters of
// nvmlDeviceGetTotalEccErrors by nvmlMemoryErrorType_t and nvmlEccCounterType_t.
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kMemoryErrorTypeCorrected = 0;
inline constexpr int kMemoryErrorTypeUncorrected = 1;
inline constexpr int kVolatileEcc = 0;  // since the last driver load, what DCGM's *_VOL_* read

struct nvmlUtilization_t {  // nvmlDeviceGetUtilizationRates: percent over the last sample period
  unsigned int gpu;
  unsigned int memory;
};

// Function types, one per symbol.
using InitFn = nvmlReturn_t (*)();  // nvmlInit_v2, nvmlShutdown
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using SystemGetStringFn = nvmlReturn_t (*)(char*, unsigned int);  // nvmlSystemGetDriverVersion
using SystemGetCudaDriverVersionFn = nvmlReturn_t (*)(int*);
using DeviceGetCountFn = nvmlReturn_t (*)(unsigned int*);
using DeviceGetHandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using DeviceGetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);  // UUID, Name
using DeviceGetUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);  // MinorNumber, NumaNodeId
using DeviceGetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using DeviceGetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using DeviceGetMemoryInfoV2Fn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*);
using DeviceGetCudaComputeCapabilityFn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using DeviceGetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlEnableState_t*);
using DeviceGetNvLinkRemotePciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using DeviceGetNvLinkRemoteDeviceTypeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                           nvmlIntNvLinkDeviceType_t*);
using DeviceGetGpuFabricInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlGpuFabricInfo_t*);
using EventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using DeviceRegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using EventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using EventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);
using DeviceGetTemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, int sensor, unsigned int* celsius);
// nvmlDeviceGetPowerUsage is a DeviceGetUintFn: milliwatts.
using DeviceGetUtilizationRatesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using DeviceGetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, int error_type, int counter_type,
                                                   unsigned long long* count);

}  // namespace xpu::discovery::nvml

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_TYPES_H_
