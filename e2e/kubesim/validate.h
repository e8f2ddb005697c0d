// Server-side validation kube-sim applies on create and update, with the api/ module's name
// checks and per-release limits (1.35). The full ResourceSlice validator belongs in api/ (the
// API-layer issue); ValidateResourceSlice then becomes a call to it.
#ifndef XPU_E2E_KUBESIM_VALIDATE_H_
#define XPU_E2E_KUBESIM_VALIDATE_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace xpu::kubesim {

// Checks a v1 ResourceSlice: driver and pool.name required; exactly one of nodeName,
// nodeSelector, allNodes, perDeviceNodeSelection; at most 128 devices (64 when a device has
// taints or consumesCounters); device names unique DNS labels. kInvalidArgument naming the field.
Status ValidateResourceSlice(const nlohmann::json& slice);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_VALIDATE_H_
