// The names of the project's vocabulary that travel together and are easily swapped, as distinct
// types (base/strong_id.h).
#ifndef XPU_API_IDS_H_
#define XPU_API_IDS_H_

#include "base/strong_id.h"

namespace xpu::api {

using DriverName = StrongId<struct DriverNameTag>;  // "xpu.dra.dev"
using PoolName = StrongId<struct PoolNameTag>;      // a ResourceSlice pool: the node's name here
using VendorName = StrongId<struct VendorNameTag>;  // "huawei", "nvidia", ...

}  // namespace xpu::api

#endif  // XPU_API_IDS_H_
