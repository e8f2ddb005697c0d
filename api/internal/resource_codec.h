// Private to xpu::api: codecs of the resource.k8s.io parts that more than one object embeds.
// Declared in the types' namespace so that the generic helpers of codec.h find them.
#ifndef XPU_API_INTERNAL_RESOURCE_CODEC_H_
#define XPU_API_INTERNAL_RESOURCE_CODEC_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "api/internal/codec.h"
#include "api/resource.h"
#include "base/status.h"

namespace xpu::api::resource {

Status Read(const internal::Field& f, CelDeviceSelector* out);
Status Read(const internal::Field& f, DeviceSelector* out);
Status Read(const internal::Field& f, OpaqueDeviceConfiguration* out);
Status Read(const internal::Field& f, DeviceToleration* out);
Status Read(const internal::Field& f, CapacityRequirements* out);
nlohmann::json Write(const CelDeviceSelector& selector);
nlohmann::json Write(const DeviceSelector& selector);
nlohmann::json Write(const OpaqueDeviceConfiguration& opaque);
nlohmann::json Write(const DeviceToleration& toleration);
nlohmann::json Write(const CapacityRequirements& capacity);

// Reads a JSON object kept as raw JSON (node selectors, opaque parameters, status data).
Status ReadRawObject(const internal::Field& f, RawJson* out);
// The same for an optional member of the reader's object.
Status ReadOptionalObject(internal::ObjectReader& reader, std::string_view key,
                          std::optional<RawJson>* out);

}  // namespace xpu::api::resource

#endif  // XPU_API_INTERNAL_RESOURCE_CODEC_H_
