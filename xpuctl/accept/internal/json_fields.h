// Private to xpuctl accept: lenient reads of the Kubernetes objects and results `accept run`
// handles, where a missing or mistyped field reads as absent (null, "", 0) rather than throwing.
#ifndef XPU_XPUCTL_ACCEPT_INTERNAL_JSON_FIELDS_H_
#define XPU_XPUCTL_ACCEPT_INTERNAL_JSON_FIELDS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace xpu::accept::internal {

// j[key], or null when `j` is not an object or has no such member.
inline const nlohmann::json& Field(const nlohmann::json& j, const std::string& key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// j[key] as a string; "" when absent or not a string.
inline std::string Str(const nlohmann::json& j, const std::string& key) {
  const nlohmann::json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// j[key] as a number; 0 when absent or not a number.
inline double Num(const nlohmann::json& j, const std::string& key) {
  const nlohmann::json& v = Field(j, key);
  return v.is_number() ? v.get<double>() : 0.0;
}

// An object's metadata.name and metadata.uid; "" when absent.
inline std::string NameOf(const nlohmann::json& o) { return Str(Field(o, "metadata"), "name"); }
inline std::string UidOf(const nlohmann::json& o) { return Str(Field(o, "metadata"), "uid"); }

}  // namespace xpu::accept::internal

#endif  // XPU_XPUCTL_ACCEPT_INTERNAL_JSON_FIELDS_H_
