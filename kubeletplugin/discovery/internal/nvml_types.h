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
inline constexpr nvmlReturn_t kErrorInUse = 19;  // NVML_ERROR_IN_USE
inline constexpr nvmlReturn_t kErrorInsufficientResources =
    23;  // NVML_ERROR_INSUFFICIENT_RESOURCES
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

// ---- Multi-Instance GPU (nvml.h, "Multi Instance GPU Management") ----
// A GPU instance: what nvmlDeviceGetGpuInstances hands out and nvmlGpuInstanceGetInfo reads.
using nvmlGpuInstance_t = struct nvmlGpuInstance_st*;

// nvmlDeviceGetMigMode's current and pending modes: NVML_DEVICE_MIG_DISABLE,
// NVML_DEVICE_MIG_ENABLE.
inline constexpr unsigned kDeviceMigDisable = 0x0;
inline constexpr unsigned kDeviceMigEnable = 0x1;

// The `profile` argument of nvmlDeviceGetGpuInstanceProfileInfo(V): NVML_GPU_INSTANCE_PROFILE_*,
// 1_SLICE = 0x0, 2_SLICE = 0x1, 3_SLICE = 0x2, 4_SLICE = 0x3, 7_SLICE = 0x4, 8_SLICE = 0x5,
// 6_SLICE = 0x6, 1_SLICE_REV1 = 0x7 (+me), 2_SLICE_REV1 = 0x8, 1_SLICE_REV2 = 0x9 (twice the
// memory), ..., 3_SLICE_GFX = 0x11; NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12 (nvml.h of NVML 13.3).
// nvml.h: enumerate "starting from 0, until the API returns NVML_ERROR_INVALID_ARGUMENT", so a
// newer driver's profiles past the count are read too. The profile's `id` (19 for 1g.18gb on
// H200) is what placements and GPU instances name, not this index.
inline constexpr unsigned kGpuInstanceProfileCount = 0x12;

struct nvmlGpuInstancePlacement_t {
  unsigned int start;  // index of the first memory slice occupied
  unsigned int size;   // number of memory slices occupied
};

// nvmlDeviceGetGpuInstanceProfileInfoV: `version` first, `name` ("MIG 1g.18gb") last; `version`
// must be kGpuInstanceProfileInfoV2Version, else NVML_ERROR_ARGUMENT_VERSION_MISMATCH.
struct nvmlGpuInstanceProfileInfo_v2_t {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[96];  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
};
// nvmlGpuInstanceProfileInfo_v2 = NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)
//                              = sizeof(nvmlGpuInstanceProfileInfo_v2_t) | 2 << 24.
inline constexpr unsigned kGpuInstanceProfileInfoV2Version =
    sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2U << 24);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "the LP64 layout of nvml.h");

struct nvmlGpuInstanceInfo_t {  // nvmlGpuInstanceGetInfo
  nvmlDevice_t device;          // the parent GPU
  unsigned int id;              // the GPU instance id, unique within the device
  unsigned int profileId;       // a profile's `id`
  nvmlGpuInstancePlacement_t placement;
};

// Creating and destroying MIG instances (nvml.h, "Multi Instance GPU Management").
// A compute instance: what nvmlGpuInstanceCreateComputeInstance and
// nvmlGpuInstanceGetComputeInstances hand out; each is one MIG device.
using nvmlComputeInstance_t = struct nvmlComputeInstance_st*;

// The `profile` argument of nvmlGpuInstanceGetComputeInstanceProfileInfo:
// NVML_COMPUTE_INSTANCE_PROFILE_* 1_SLICE = 0x0, 2_SLICE = 0x1, 3_SLICE = 0x2, 4_SLICE = 0x3,
// 7_SLICE = 0x4, 8_SLICE = 0x5, 6_SLICE = 0x6, 1_SLICE_REV1 = 0x7;
// NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x8. Its `engProfile`:
// NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0, the only one.
inline constexpr unsigned kComputeInstanceProfileCount = 0x8;
inline constexpr unsigned kComputeInstanceEngineProfileShared = 0x0;

// nvmlGpuInstanceGetComputeInstanceProfileInfo (unversioned). `id` is what
// nvmlGpuInstanceCreateComputeInstance and nvmlGpuInstanceGetComputeInstances take.
struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
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
// nvmlDeviceGetTotalEnergyConsumption: millijoules since the driver loaded (Volta and newer).
using DeviceGetTotalEnergyConsumptionFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using DeviceGetUtilizationRatesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using DeviceGetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, int error_type, int counter_type,
                                                   unsigned long long* count);
// MIG. nvmlDeviceGetMaxMigDeviceCount and nvmlDeviceGetGpuInstanceId are DeviceGetUintFn.
using DeviceGetMigModeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int* current,
                                            unsigned int* pending);
using DeviceGetGpuInstanceProfileInfoVFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int profile,
                                                            nvmlGpuInstanceProfileInfo_v2_t*);
// placements NULL: *count = how many there are.
using DeviceGetGpuInstancePossiblePlacementsFn = nvmlReturn_t (*)(nvmlDevice_t,
                                                                  unsigned int profile_id,
                                                                  nvmlGpuInstancePlacement_t*,
                                                                  unsigned int* count);
// The buffer holds the profile's instanceCount handles; *count in: its size, out: how many.
using DeviceGetGpuInstancesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int profile_id,
                                                 nvmlGpuInstance_t*, unsigned int* count);
using GpuInstanceGetInfoFn = nvmlReturn_t (*)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
using DeviceGetMigDeviceHandleByIndexFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int index,
                                                           nvmlDevice_t* mig_device);

// Creating and destroying MIG instances.
using DeviceCreateGpuInstanceWithPlacementFn = nvmlReturn_t (*)(nvmlDevice_t,
                                                                unsigned int profile_id,
                                                                const nvmlGpuInstancePlacement_t*,
                                                                nvmlGpuInstance_t*);
using DeviceGetGpuInstanceByIdFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int id,
                                                    nvmlGpuInstance_t*);
using GpuInstanceDestroyFn = nvmlReturn_t (*)(nvmlGpuInstance_t);
using GpuInstanceGetComputeInstanceProfileInfoFn =
    nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int profile, unsigned int eng_profile,
                     nvmlComputeInstanceProfileInfo_t*);
using GpuInstanceCreateComputeInstanceFn = nvmlReturn_t (*)(nvmlGpuInstance_t,
                                                            unsigned int profile_id,
                                                            nvmlComputeInstance_t*);
// *count in: the buffer's size, out: how many.
using GpuInstanceGetComputeInstancesFn = nvmlReturn_t (*)(nvmlGpuInstance_t,
                                                          unsigned int profile_id,
                                                          nvmlComputeInstance_t*,
                                                          unsigned int* count);
using ComputeInstanceDestroyFn = nvmlReturn_t (*)(nvmlComputeInstance_t);

}  // namespace xpu::discovery::nvml

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_TYPES_H_
