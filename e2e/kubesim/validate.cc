#include "e2e/kubesim/validate.h"

#include <set>
#include <string>

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

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return alnum(s.front()) && alnum(s.back());
}

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
  const size_t max = advanced ? 64 : 128;
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
    if (!IsDnsLabel(name)) {
      return Invalid(field, "Invalid value: \"" + name + "\": not a DNS label");
    }
    if (!names.insert(name).second) return Invalid(field, "Duplicate value: \"" + name + "\"");
  }
  return OkStatus();
}

}  // namespace xpu::kubesim
