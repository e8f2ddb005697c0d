#include "kubeletplugin/driver/config.h"

#include <algorithm>

namespace xpu::plugin {
namespace {

bool ValidEnvName(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  if (std::isdigit(static_cast<unsigned char>(name[0])) != 0) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

}  // namespace

std::string BaseRequestName(const std::string& request) {
  return request.substr(0, request.find('/'));
}

StatusOr<DeviceConfig> ParseDeviceConfig(const nlohmann::json& parameters,
                                         const std::string& where) {
  if (!parameters.is_object()) return InvalidArgumentError(where + ": expected an object");
  DeviceConfig out;
  auto api_version = parameters.find("apiVersion");
  if (api_version == parameters.end() || !api_version->is_string() ||
      *api_version != kConfigApiVersion) {
    return InvalidArgumentError(where + ".apiVersion: expected \"" + kConfigApiVersion + "\"");
  }
  auto kind = parameters.find("kind");
  if (kind == parameters.end() || !kind->is_string() || *kind != kDeviceConfigKind) {
    return InvalidArgumentError(where + ".kind: expected \"" + kDeviceConfigKind + "\"");
  }
  for (const auto& [key, value] : parameters.items()) {
    if (key == "apiVersion" || key == "kind") continue;
    if (key != "env") {
      std::string field = where;
      field += ".";
      field += key;
      return InvalidArgumentError(field + ": unknown field");
    }
    if (!value.is_object()) return InvalidArgumentError(where + ".env: expected an object");
    for (const auto& [name, v] : value.items()) {
      std::string field = where;
      field += ".env.";
      field += name;
      if (!ValidEnvName(name)) {
        return InvalidArgumentError(field + ": not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
      }
      if (name.starts_with("XPU_DRA_")) {
        return InvalidArgumentError(field + ": the XPU_DRA_ prefix is reserved for the driver");
      }
      if (!v.is_string()) return InvalidArgumentError(field + ": expected a string");
      const std::string text = v.get<std::string>();
      if (text.size() > 4096) return InvalidArgumentError(field + ": longer than 4096 bytes");
      out.env[name] = text;
    }
  }
  return out;
}

StatusOr<std::map<std::string, DeviceConfig>> ConfigByRequest(
    const std::vector<api::resource::DeviceAllocationConfiguration>& config,
    const std::string& driver, const std::vector<std::string>& requests) {
  std::map<std::string, DeviceConfig> out;
  out[""];
  for (const std::string& r : requests) out[BaseRequestName(r)];
  // Class entries first, then claim entries; within each, the recorded order.
  std::vector<size_t> order;
  for (const char* source : {"FromClass", "FromClaim"}) {
    for (size_t i = 0; i < config.size(); ++i) {
      if (config[i].source == source) order.push_back(i);
    }
  }
  for (size_t i = 0; i < config.size(); ++i) {
    if (config[i].source != "FromClass" && config[i].source != "FromClaim") order.push_back(i);
  }
  for (size_t i : order) {
    const auto& entry = config[i];
    if (!entry.opaque || entry.opaque->driver != driver) continue;
    ASSIGN_OR_RETURN(DeviceConfig parsed,
                     ParseDeviceConfig(entry.opaque->parameters,
                                       "status.allocation.devices.config[" + std::to_string(i) +
                                           "] (" + entry.source + ").opaque.parameters"));
    std::vector<std::string> targets;
    if (entry.requests.empty()) {
      for (const auto& [name, unused] : out) targets.push_back(name);
    } else {
      for (const std::string& r : entry.requests) targets.push_back(BaseRequestName(r));
    }
    for (const std::string& t : targets) {
      for (const auto& [name, value] : parsed.env) out[t].env[name] = value;
    }
  }
  return out;
}

}  // namespace xpu::plugin
