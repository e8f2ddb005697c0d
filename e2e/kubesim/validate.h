// Server-side validation kube-sim applies on create and update: api::ValidateResourceSlice with
// the 1.35 rules and limits.
#ifndef XPU_E2E_KUBESIM_VALIDATE_H_
#define XPU_E2E_KUBESIM_VALIDATE_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace xpu::kubesim {

// Checks a v1 ResourceSlice in its JSON form: parsed with FromJson<resource::ResourceSlice> (a
// shape error is itself invalid), then api::ValidateResourceSlice(slice, KubeVersion::k1_35).
// kInvalidArgument naming the field.
Status ValidateResourceSlice(const nlohmann::json& slice);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_VALIDATE_H_
