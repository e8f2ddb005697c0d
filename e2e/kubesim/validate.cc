#include "e2e/kubesim/validate.h"

#include <set>
#include <string>

#include "api/validation.h"

namespace xpu::kubesim {
namespace {

Status Invalid(const std::string& field, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, field + ": " + why);
}

bool NonEmptyString(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() && !it->get<std::string>().empty();
}

}  // namespace

Status ValidateResourceSlice(const nlohmann::json& slice) {
  auto spec_it = slice.find("spec");
  if (spec_it == slice.end() || !spec_it->is_object()) return Invalid("spec", "Required value");
  const auto& spec = *spec_it;
  if (!NonEmptyString(spec, "driver")) return Invalid("spec.driver", "Required value");
  auto pool = spec.find("pool");
  if (pool == spec.end() || !pool->is_object() || !NonEmptyString(*pool, "name")) {
    return Invalid("spec.pool.name", "Required value");
  }
  int selections = 0;
  if (NonEmptyString(spec, "nodeName")) ++selections;
  if (spec.contains("nodeSelector") && !spec["nodeSelector"].is_null()) ++selections;
  if (spec.value("allNodes", false)) ++selections;
  if (spec.value("perDeviceNodeSelection", false)) ++selections;
  if (selections != 1) {
    return Invalid("spec",
                   "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                   "`perDeviceNodeSelection` is required");
  }
  auto devices = spec.find("devices");
  if (devices == spec.end() || devices->is_null()) return OkStatus();
  if (!devices->is_array()) return Invalid("spec.devices", "must be a list");
  bool advanced = false;
  for (const auto& d : *devices) {
    if (d.is_object() && (d.contains("taints") || d.contains("consumesCounters"))) advanced = true;
  }
  // kube-sim applies the 1.35 limits (the stricter ones where 1.34 and 1.35 differ).
  const api::Limits limits = api::LimitsFor(api::KubeVersion::k1_35);
  const auto max =
      static_cast<size_t>(advanced ? limits.max_devices_per_slice_with_taints_or_counters
                                   : limits.max_devices_per_slice);
  if (devices->size() > max) {
    return Invalid("spec.devices", "Too many: " + std::to_string(devices->size()) +
                                       ": must have at most " + std::to_string(max) + " items");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < devices->size(); ++i) {
    const auto& d = (*devices)[i];
    const std::string field = "spec.devices[" + std::to_string(i) + "].name";
    if (!d.is_object() || !NonEmptyString(d, "name")) return Invalid(field, "Required value");
    const auto name = d["name"].get<std::string>();
    if (!api::IsDnsLabel(name)) {
      return Invalid(field, "Invalid value: \"" + name + "\": not a DNS label");
    }
    if (!names.insert(name).second) return Invalid(field, "Duplicate value: \"" + name + "\"");
  }
  return OkStatus();
}

}  // namespace xpu::kubesim
