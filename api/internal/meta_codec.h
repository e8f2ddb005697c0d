// Private to xpu::api: the meta/v1 codecs that the resource codecs embed.
#ifndef XPU_API_INTERNAL_META_CODEC_H_
#define XPU_API_INTERNAL_META_CODEC_H_

#include <nlohmann/json.hpp>
#include <string_view>

#include "api/internal/codec.h"
#include "api/internal/object_fields.h"
#include "api/meta.h"
#include "base/status.h"

namespace xpu::api {

Status Read(const internal::Field& f, ObjectMeta* out);
nlohmann::json Write(const ObjectMeta& meta);

// The fields of meta/v1 Condition, with the API server's limits.
template <typename V, internal::FieldsOf<Condition> S>
void VisitFields(V& v, S& self) {
  v.Required(
      "type", self.type, "type of condition in CamelCase", internal::MaxLength(316),
      internal::Pattern(R"(^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?)"
                        R"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$)"));
  v.Required("status", self.status, "status of the condition",
             internal::Enum({"True", "False", "Unknown"}));
  v.Optional("observedGeneration", self.observed_generation,
             "metadata.generation the condition was set for", internal::Minimum(0));
  v.Required("lastTransitionTime", self.last_transition_time,
             "last time the condition changed status (RFC 3339)",
             nlohmann::json{{"format", "date-time"}});
  v.Required("reason", self.reason, "CamelCase reason for the last transition",
             internal::MinLength(1), internal::MaxLength(1024),
             internal::Pattern(R"(^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$)"));
  v.Required("message", self.message, "human-readable details", internal::MaxLength(32768));
}

namespace internal {

// Takes apiVersion and kind of a top-level object: each must be absent or equal to the given one.
Status CheckTypeMeta(ObjectReader& reader, std::string_view api_version, std::string_view kind);

// metadata in a CRD schema: the API server checks it itself.
inline nlohmann::json SchemaFor(Tag<ObjectMeta> /*tag*/) { return {{"type", "object"}}; }

// A top-level object of one of the project's kinds, with fields (object_fields.h) for everything
// but apiVersion, kind and metadata.
template <HasFields T>
StatusOr<T> ReadObject(const nlohmann::json& json, std::string_view api_version,
                       std::string_view kind) {
  const Field root{&json, ""};
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(root));
  RETURN_IF_ERROR(CheckTypeMeta(r, api_version, kind));
  T out;
  RETURN_IF_ERROR(r.Optional("metadata", &out.metadata));
  FieldReader reader(&r);
  VisitFields(reader, out);
  RETURN_IF_ERROR(reader.status());
  out.unknown = r.Unknown();
  return out;
}

template <HasFields T>
nlohmann::json WriteObject(const T& value, std::string_view api_version, std::string_view kind) {
  FieldWriter writer;
  writer.Required("apiVersion", std::string(api_version), "");
  writer.Required("kind", std::string(kind), "");
  writer.Required("metadata", value.metadata, "");
  VisitFields(writer, value);
  return std::move(writer).Finish(value.unknown);
}

// The openAPIV3Schema of a top-level object.
template <HasFields T>
nlohmann::json ObjectSchema(std::string_view description) {
  FieldSchema schema;
  const std::string empty;
  schema.Optional("apiVersion", empty, "APIVersion defines the versioned schema of this object");
  schema.Optional("kind", empty, "Kind is a string value representing the REST resource");
  T value{};
  schema.Optional("metadata", value.metadata, "");
  VisitFields(schema, value);
  nlohmann::json out = std::move(schema).Finish();
  out["description"] = std::string(description);
  return out;
}

// Reads a whole top-level object with `Read(Field, T*)`, the root path being empty.
template <typename T>
StatusOr<T> ReadRoot(const nlohmann::json& json) {
  T out;
  RETURN_IF_ERROR(Read(Field{&json, ""}, &out));
  return out;
}

}  // namespace internal
}  // namespace xpu::api

#endif  // XPU_API_INTERNAL_META_CODEC_H_
