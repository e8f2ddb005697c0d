// What the partition backends (DCMI, NVML) share: opening one, and the status of a failed
// vendor call.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_PARTITION_BACKENDS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_PARTITION_BACKENDS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "kubeletplugin/discovery/partition_backend.h"

namespace xpu::discovery::internal {

// Unavailable when the device was busy or short of resources (another partition holds what this
// one needs: the caller may retry), Internal otherwise.
inline Status PartitionCallError(std::string message, bool busy) {
  return busy ? UnavailableError(std::move(message)) : InternalError(std::move(message));
}

// A `Backend` (with Status Open(lib_dirs)) made and opened.
template <typename Backend>
StatusOr<std::unique_ptr<PartitionBackend>> OpenPartitionBackend(
    const std::vector<std::string>& lib_dirs) {
  auto backend = std::make_unique<Backend>();
  RETURN_IF_ERROR(backend->Open(lib_dirs));
  return std::unique_ptr<PartitionBackend>(std::move(backend));
}

}  // namespace xpu::discovery::internal

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_PARTITION_BACKENDS_H_
