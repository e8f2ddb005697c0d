// The driver's opaque device configuration (`opaque.parameters` of a DeviceClass or
// ResourceClaim config entry whose driver is ours):
//
//   apiVersion: xpu.dra.dev/v1alpha1
//   kind: DeviceConfig
//   env:                 # extra environment for the containers that use the devices
//     HCCL_CONNECT_TIMEOUT: "600"
//
// Parsing is strict: an unknown apiVersion, kind or field, or a bad value, is an error that names
// the field. A bad config fails its claim only, never the batch.
#ifndef XPU_KUBELETPLUGIN_DRIVER_CONFIG_H_
#define XPU_KUBELETPLUGIN_DRIVER_CONFIG_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/resource.h"
#include "base/status.h"

namespace xpu::plugin {

inline constexpr const char* kConfigApiVersion = "xpu.dra.dev/v1alpha1";
inline constexpr const char* kDeviceConfigKind = "DeviceConfig";

struct DeviceConfig {
  std::map<std::string, std::string> env;
  friend bool operator==(const DeviceConfig&, const DeviceConfig&) = default;
};

// "<request>/<subrequest>" -> "<request>".
std::string BaseRequestName(const std::string& request);

// `where` prefixes error fields ("config[1].opaque.parameters").
StatusOr<DeviceConfig> ParseDeviceConfig(const nlohmann::json& parameters,
                                         const std::string& where);

// The configuration that applies to each request of an allocation: the allocation's config
// entries for `driver` in order (class entries before claim entries, as the scheduler records
// them; later wins per variable), each applying to its listed requests or to all when none.
// Keys: base request names; "" holds what applies to every request.
StatusOr<std::map<std::string, DeviceConfig>> ConfigByRequest(
    const std::vector<api::resource::DeviceAllocationConfiguration>& config,
    const std::string& driver, const std::vector<std::string>& requests);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_CONFIG_H_
