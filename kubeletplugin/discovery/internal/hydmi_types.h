// The parts of Hygon's DMI (libhydmi.so, shipped in /opt/hyhal/lib) that this project calls, as
// its public headers dmi_virtual.h and dmi_error.h declare them: the device and virtual-device
// (vHCU) queries and the vHCU create and destroy calls. Shared by the real binding (hydmi.cc) and
// the fake library the tests load in its place. Facts, not code, carried over: the struct layout,
// the status numbers and the function signatures.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_HYDMI_TYPES_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_HYDMI_TYPES_H_

#include <cstddef>
#include <cstdint>

namespace xpu::discovery::hydmi {

inline constexpr int kNameSize = 256;  // DMI_NAME_SIZE

// dmiDeviceInfo: a physical device (dmiGetDeviceInfo) or a virtual one (dmiGetVDeviceInfo).
struct DeviceInfo {
  char name[kNameSize];
  int compute_unit_count;
  size_t global_mem_size;  // bytes
  size_t usage_mem_size;   // bytes
  uint64_t container_id;   // the container bound to it (virtual devices only)
  int device_id;           // the physical device it belongs to
};

// dmiStatus values this project tells apart.
inline constexpr int kSuccess = 0;
inline constexpr int kError = 1;
inline constexpr int kOpenMkfdFailed = 3;
inline constexpr int kNotSupported = 6;
inline constexpr int kCreateVdevFailed = 8;
inline constexpr int kDestroyVdevFailed = 9;
inline constexpr int kInvalidArguments = 10;
inline constexpr int kOutOfResources = 11;
inline constexpr int kDeviceNotSupport = 14;
inline constexpr int kVdevNotExist = 15;
inline constexpr int kDeviceBusy = 17;
inline constexpr int kFileError = 18;
inline constexpr int kSmiBusy = 29;

using GetDeviceCountFn = int (*)(int* count);
using GetDeviceInfoFn = int (*)(int device_id, DeviceInfo* info);
using GetMaxVDeviceCountFn = int (*)(int* count);
using GetVDeviceCountFn = int (*)(int* count);
using GetVDeviceInfoFn = int (*)(int vdevice_id, DeviceInfo* info);
using GetDeviceRemainingInfoFn = int (*)(int device_id, size_t* cus, size_t* memory_bytes);
// vdev_mem_size in MiB; the new vdevices' ids are not returned.
using CreateVDevicesFn = int (*)(int device_id, int vdev_count, int* vdev_cus, int* vdev_mem_size);
using DestroySingleVDeviceFn = int (*)(int vdevice_id);

}  // namespace xpu::discovery::hydmi

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_HYDMI_TYPES_H_
