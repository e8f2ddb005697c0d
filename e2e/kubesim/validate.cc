#include "e2e/kubesim/validate.h"

#include "api/resource.h"
#include "api/resource_validation.h"
#include "api/validation.h"

namespace xpu::kubesim {

Status ValidateResourceSlice(const nlohmann::json& slice) {
  auto parsed = api::FromJson<api::resource::ResourceSlice>(slice);
  if (!parsed.ok()) return Status(StatusCode::kInvalidArgument, parsed.status().message());
  // kube-sim applies the 1.35 rules (the stricter limits where 1.34 and 1.35 differ).
  return api::ValidateResourceSlice(*parsed, api::KubeVersion::k1_35);
}

}  // namespace xpu::kubesim
