// Codecs of the parts DeviceClass and ResourceClaim share, and the version names.
#include <array>
#include <utility>

#include "api/internal/codec.h"
#include "api/internal/resource_codec.h"
#include "api/resource.h"

namespace xpu::api::resource {

using internal::Field;
using internal::ObjectReader;
using internal::ObjectWriter;
using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 3> kApiVersions = {
    "resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"};

}  // namespace

std::string_view ApiVersionOf(ResourceVersion version) {
  return kApiVersions.at(static_cast<size_t>(version));
}

std::optional<ResourceVersion> ParseApiVersion(std::string_view api_version) {
  for (size_t i = 0; i < kApiVersions.size(); ++i) {
    if (kApiVersions[i] == api_version) return static_cast<ResourceVersion>(i);
  }
  return std::nullopt;
}

Status ReadRawObject(const Field& f, RawJson* out) {
  if (!f.value->is_object()) return internal::Expected(f, "an object");
  *out = *f.value;
  return OkStatus();
}

Status ReadOptionalObject(ObjectReader& reader, std::string_view key, std::optional<RawJson>* out) {
  const Field f = reader.Take(key);
  if (f.value == nullptr) return OkStatus();
  RawJson value;
  RETURN_IF_ERROR(ReadRawObject(f, &value));
  *out = std::move(value);
  return OkStatus();
}

Status Read(const Field& f, CelDeviceSelector* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("expression", &out->expression));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const CelDeviceSelector& selector) {
  ObjectWriter w;
  w.Set("expression", selector.expression);
  return std::move(w).Finish(selector.unknown);
}

Status Read(const Field& f, DeviceSelector* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("cel", &out->cel));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceSelector& selector) {
  ObjectWriter w;
  w.Optional("cel", selector.cel);
  return std::move(w).Finish(selector.unknown);
}

Status Read(const Field& f, OpaqueDeviceConfiguration* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("driver", &out->driver));
  const Field parameters = r.Take("parameters");
  if (parameters.value == nullptr) return parameters.Error("missing required field");
  RETURN_IF_ERROR(ReadRawObject(parameters, &out->parameters));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const OpaqueDeviceConfiguration& opaque) {
  ObjectWriter w;
  w.Set("driver", opaque.driver);
  w.Set("parameters", opaque.parameters);
  return std::move(w).Finish(opaque.unknown);
}

Status Read(const Field& f, DeviceToleration* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("key", &out->key));
  RETURN_IF_ERROR(r.Optional("operator", &out->operator_name));
  RETURN_IF_ERROR(r.Optional("value", &out->value));
  RETURN_IF_ERROR(r.Optional("effect", &out->effect));
  RETURN_IF_ERROR(r.Optional("tolerationSeconds", &out->toleration_seconds));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const DeviceToleration& toleration) {
  ObjectWriter w;
  w.NonEmpty("key", toleration.key);
  w.NonEmpty("operator", toleration.operator_name);
  w.NonEmpty("value", toleration.value);
  w.NonEmpty("effect", toleration.effect);
  w.Optional("tolerationSeconds", toleration.toleration_seconds);
  return std::move(w).Finish(toleration.unknown);
}

Status Read(const Field& f, CapacityRequirements* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("requests", &out->requests));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const CapacityRequirements& capacity) {
  ObjectWriter w;
  w.NonEmpty("requests", capacity.requests);
  return std::move(w).Finish(capacity.unknown);
}

}  // namespace xpu::api::resource
