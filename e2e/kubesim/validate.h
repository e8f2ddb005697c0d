// Server-side validation kube-sim applies on create and update. A small stand-in: the api/
// module's ResourceSlice validation replaces ValidateResourceSlice once it lands.
#ifndef XPU_E2E_KUBESIM_VALIDATE_H_
#define XPU_E2E_KUBESIM_VALIDATE_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace xpu::kubesim {

// A DNS-1123 label: lower-case alphanumerics and '-', alphanumeric at both ends, at most 63.
bool IsDnsLabel(std::string_view s);

// Checks a v1 ResourceSlice: driver and pool.name required; exactly one of nodeName,
// nodeSelector, allNodes, perDeviceNodeSelection; at most 128 devices (64 when a device has
// taints or consumesCounters); device names unique DNS labels. kInvalidArgument naming the field.
Status ValidateResourceSlice(const nlohmann::json& slice);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_VALIDATE_H_
