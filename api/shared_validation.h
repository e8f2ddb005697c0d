// Private to xpu::api's object validators (resource_validation.h): the checks that ResourceSlice,
// ResourceClaim(Template) and DeviceClass validation share, with the API server's messages:
// object metadata and its update, the core/v1 NodeSelector, taint effects and binding
// conditions. Each records what it finds in an Errors collector (api/field_errors.h).
#ifndef XPU_API_SHARED_VALIDATION_H_
#define XPU_API_SHARED_VALIDATION_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/field_errors.h"
#include "api/meta.h"
#include "api/validation.h"

namespace xpu::api::checks {

// What `check(limits, errs)` records with the limits of `version` in a fresh collector: the body
// of each object's `...Errors` function.
template <typename Check>
FieldErrors Collect(KubeVersion version, const Check& check) {
  Errors errs;
  check(LimitsFor(version), errs);
  return errs.Take();
}

// metadata: name (a DNS subdomain, or a DNS label with `name_is_label`) or generateName, the
// namespace (required when `namespaced`, forbidden otherwise), label keys and values, annotation
// keys and their total size, finalizers. `field` is the path of the metadata.
void CheckObjectMeta(const ObjectMeta& meta, bool namespaced, const Limits& limits, Errors& errs,
                     const std::string& field = "metadata", bool name_is_label = false);

// An update of `old` to `meta`: name, namespace and (when both are set) uid are immutable.
void CheckMetaUpdate(const ObjectMeta& meta, const ObjectMeta& old, Errors& errs);

// core/v1 NodeSelector at `field`: at least one term; in each term the matchExpressions (label
// keys, operators and values) and the matchFields (only metadata.name, In/NotIn, one value).
void CheckNodeSelector(const nlohmann::json& selector, const std::string& field, Errors& errs);

// The taint effects the release of `limits` accepts, sorted: NoExecute, NoSchedule (and None).
std::vector<std::string> TaintEffects(const Limits& limits);

// bindingConditions and bindingFailureConditions under `field` (a device or an allocation
// result): counts, label keys, unique, not in both lists, and the two lists used together.
void CheckBindingConditions(const std::vector<std::string>& conditions,
                            const std::vector<std::string>& failure_conditions,
                            const Limits& limits, const std::string& field, Errors& errs);

}  // namespace xpu::api::checks

#endif  // XPU_API_SHARED_VALIDATION_H_
