// Server-side validation kube-sim applies on create and update: the api/ validators of
// resource.k8s.io objects (api/resource_validation.h) with the rules and limits of one release.
#ifndef XPU_E2E_KUBESIM_VALIDATE_H_
#define XPU_E2E_KUBESIM_VALIDATE_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "api/validation.h"
#include "base/status.h"
#include "e2e/kubesim/resources.h"

namespace xpu::kubesim {

// Checks a v1 ResourceSlice in its JSON form: parsed with FromJson<resource::ResourceSlice> (a
// shape error is itself invalid), then api::ValidateResourceSlice(slice, KubeVersion::k1_35).
// kInvalidArgument naming the field.
Status ValidateResourceSlice(const nlohmann::json& slice);

// Every problem of `obj` (v1 storage form) of `type`: a create when `old` is null, otherwise an
// update of the main resource or, with `status`, of the /status subresource. ResourceSlices,
// DeviceClasses, ResourceClaims and ResourceClaimTemplates are checked; other types have no
// rules (empty result). A JSON shape error is one FieldValueInvalid error at its path.
// xpu.dra.dev objects are checked against their CRD schema, as the API server does for custom
// resources (the driver's own rules beyond the schema are not server-side rules).
// What the API server does to a custom resource before validating it: drops the fields its CRD's
// structural schema does not declare (xpu.dra.dev kinds, schemas generated from the C++ types).
// Other types are left as they are.
void PruneUnknownFields(const ResourceType& type, nlohmann::json* obj);

api::FieldErrors ValidateObject(const ResourceType& type, const nlohmann::json& obj,
                                const nlohmann::json* old, bool status, api::KubeVersion version);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_VALIDATE_H_
