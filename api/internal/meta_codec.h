// Private to xpu::api: the field lists of meta/v1 (api/meta.h) that other objects embed, and the
// top-level objects built on them: apiVersion and kind, metadata, then the object's own fields.
#ifndef XPU_API_INTERNAL_META_CODEC_H_
#define XPU_API_INTERNAL_META_CODEC_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/codec/codec.h"
#include "api/meta.h"
#include "base/status.h"

namespace xpu::api {

template <typename V, codec::FieldsOf<OwnerReference> S>
void VisitFields(V& v, S& self) {
  v.Required("apiVersion", self.api_version);
  v.Required("kind", self.kind);
  v.Required("name", self.name);
  v.Required("uid", self.uid);
  v.Optional("controller", self.controller);
  v.Optional("blockOwnerDeletion", self.block_owner_deletion);
}

template <typename V, codec::FieldsOf<ObjectMeta> S>
void VisitFields(V& v, S& self) {
  v.Optional("name", self.name);
  v.Optional("generateName", self.generate_name);
  v.Optional("namespace", self.namespace_name);
  v.Optional("uid", self.uid);
  v.Optional("resourceVersion", self.resource_version);
  v.Optional("generation", self.generation);
  v.Optional("creationTimestamp", self.creation_timestamp);
  v.Optional("deletionTimestamp", self.deletion_timestamp);
  v.Optional("labels", self.labels);
  v.Optional("annotations", self.annotations);
  v.Optional("ownerReferences", self.owner_references);
  v.Optional("finalizers", self.finalizers);
}

// metadata in a CRD schema: the API server checks it itself.
inline nlohmann::json SchemaFor(codec::Tag<ObjectMeta> /*tag*/) { return {{"type", "object"}}; }

// The fields of meta/v1 Condition, with the API server's limits.
template <typename V, codec::FieldsOf<Condition> S>
void VisitFields(V& v, S& self) {
  v.Required(
      "type", self.type, "type of condition in CamelCase", codec::MaxLength(316),
      codec::Pattern(R"(^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?)"
                     R"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$)"));
  v.Required("status", self.status, "status of the condition",
             codec::Enum({"True", "False", "Unknown"}));
  v.Optional("observedGeneration", self.observed_generation,
             "metadata.generation the condition was set for", codec::Minimum(0));
  v.Required("lastTransitionTime", self.last_transition_time,
             "last time the condition changed status (RFC 3339)",
             nlohmann::json{{"format", "date-time"}});
  v.Required("reason", self.reason, "CamelCase reason for the last transition", codec::MinLength(1),
             codec::MaxLength(1024), codec::Pattern(R"(^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$)"));
  v.Required("message", self.message, "human-readable details", codec::MaxLength(32768));
}

namespace internal {

// The fields that end the status of each of the project's kinds: its conditions, one per type,
// and the generation it was computed for. `what` names the object in the description.
template <typename V, typename S>
void VisitStatusConditions(V& v, S& status, std::string_view what) {
  v.Optional("conditions", status.conditions, "conditions of the " + std::string(what),
             codec::ListMap({"type"}));
  v.Optional("observedGeneration", status.observed_generation,
             "metadata.generation the status was computed for", codec::Minimum(0));
}

// Fails naming the second of two conditions of one type ("<path>[i].type: duplicate ...").
Status CheckConditionTypes(const std::vector<Condition>& conditions, std::string_view path);

// "<base>[i]".
std::string ElementPath(std::string_view base, size_t i);

// Takes apiVersion and kind of a top-level object: each must be absent or equal to the given one.
Status CheckTypeMeta(codec::ObjectReader& reader, std::string_view api_version,
                     std::string_view kind);

// A top-level object whose field list holds everything but apiVersion, kind and metadata (an
// object without a `metadata` member, such as the API's Status, keeps one in `unknown`).
template <codec::HasFields T>
StatusOr<T> ReadObject(const nlohmann::json& json, std::string_view api_version,
                       std::string_view kind) {
  const codec::Field root{&json, ""};
  ASSIGN_OR_RETURN(codec::ObjectReader r, codec::ObjectReader::Open(root));
  RETURN_IF_ERROR(CheckTypeMeta(r, api_version, kind));
  T out;
  if constexpr (requires { out.metadata; }) {
    RETURN_IF_ERROR(r.Optional("metadata", &out.metadata));
  }
  codec::FieldReader reader(&r);
  VisitFields(reader, out);
  RETURN_IF_ERROR(reader.status());
  out.unknown = r.Unknown();
  return out;
}

template <codec::HasFields T>
nlohmann::json WriteObject(const T& value, std::string_view api_version, std::string_view kind) {
  codec::FieldWriter writer;
  writer.Required("apiVersion", std::string(api_version));
  writer.Required("kind", std::string(kind));
  if constexpr (requires { value.metadata; }) writer.Required("metadata", value.metadata);
  VisitFields(writer, value);
  return std::move(writer).Finish(value.unknown);
}

// The openAPIV3Schema of a top-level object.
template <codec::HasFields T>
nlohmann::json ObjectSchema(std::string_view description) {
  codec::FieldSchema schema;
  const std::string empty;
  schema.Optional("apiVersion", empty, "APIVersion defines the versioned schema of this object");
  schema.Optional("kind", empty, "Kind is a string value representing the REST resource");
  T value{};
  schema.Optional("metadata", value.metadata);
  VisitFields(schema, value);
  nlohmann::json out = std::move(schema).Finish();
  out["description"] = std::string(description);
  return out;
}

}  // namespace internal
}  // namespace xpu::api

#endif  // XPU_API_INTERNAL_META_CODEC_H_
