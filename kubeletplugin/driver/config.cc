#include "kubeletplugin/driver/config.h"

#include <algorithm>
#include <utility>

#include "api/codec/codec.h"

namespace xpu::plugin {
namespace {

bool ValidEnvName(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  if (std::isdigit(static_cast<unsigned char>(name[0])) != 0) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

constexpr size_t kMaxEnvValue = 4096;

// The document as written; the values are checked after reading.
struct WireDeviceConfig {
  std::string api_version;
  std::string kind;
  std::map<std::string, std::string> env;
};

template <typename V, api::codec::FieldsOf<WireDeviceConfig> S>
void VisitFields(V& v, S& self) {
  v.Optional("apiVersion", self.api_version);
  v.Optional("kind", self.kind);
  v.Optional("env", self.env);
}

}  // namespace

std::string BaseRequestName(const std::string& request) {
  return request.substr(0, request.find('/'));
}

StatusOr<DeviceConfig> ParseDeviceConfig(const nlohmann::json& parameters,
                                         const std::string& where) {
  WireDeviceConfig wire;
  RETURN_IF_ERROR(api::codec::Read(api::codec::Field{&parameters, where}, &wire));
  if (wire.api_version != kConfigApiVersion) {
    return InvalidArgumentError(where + ".apiVersion: expected \"" + kConfigApiVersion + "\"");
  }
  if (wire.kind != kDeviceConfigKind) {
    return InvalidArgumentError(where + ".kind: expected \"" + kDeviceConfigKind + "\"");
  }
  for (const auto& [name, text] : wire.env) {
    std::string field = where;
    field.append(".env.").append(name);
    if (!ValidEnvName(name)) {
      return InvalidArgumentError(field + ": not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    if (name.starts_with("XPU_DRA_")) {
      return InvalidArgumentError(field + ": the XPU_DRA_ prefix is reserved for the driver");
    }
    if (text.size() > kMaxEnvValue) {
      return InvalidArgumentError(field + ": longer than " + std::to_string(kMaxEnvValue) +
                                  " bytes");
    }
  }
  return DeviceConfig{std::move(wire.env)};
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
