#include "api/meta.h"

#include <algorithm>
#include <array>
#include <utility>

#include "api/internal/codec.h"
#include "api/internal/meta_codec.h"

namespace xpu::api {
namespace {

using internal::Field;
using internal::ObjectReader;
using internal::ObjectWriter;
using internal::ReadRoot;
using nlohmann::json;

constexpr std::array<std::string_view, 5> kWatchEventTypeNames = {"ADDED", "MODIFIED", "DELETED",
                                                                  "BOOKMARK", "ERROR"};

}  // namespace

// Not in the unnamed namespace: the generic helpers of codec.h find these by argument-dependent
// lookup.
Status Read(const Field& f, OwnerReference* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Required("apiVersion", &out->api_version));
  RETURN_IF_ERROR(r.Required("kind", &out->kind));
  RETURN_IF_ERROR(r.Required("name", &out->name));
  RETURN_IF_ERROR(r.Required("uid", &out->uid));
  RETURN_IF_ERROR(r.Optional("controller", &out->controller));
  RETURN_IF_ERROR(r.Optional("blockOwnerDeletion", &out->block_owner_deletion));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const OwnerReference& ref) {
  ObjectWriter w;
  w.Set("apiVersion", ref.api_version);
  w.Set("kind", ref.kind);
  w.Set("name", ref.name);
  w.Set("uid", ref.uid);
  w.Optional("controller", ref.controller);
  w.Optional("blockOwnerDeletion", ref.block_owner_deletion);
  return std::move(w).Finish(ref.unknown);
}

Status Read(const Field& f, ListMeta* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("resourceVersion", &out->resource_version));
  RETURN_IF_ERROR(r.Optional("continue", &out->continue_token));
  out->unknown = r.Unknown();
  return OkStatus();
}

Status Read(const Field& f, TypeMeta* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("apiVersion", &out->api_version));
  return r.Optional("kind", &out->kind);
}

Status Read(const Field& f, ApiStatusDetails* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("name", &out->name));
  RETURN_IF_ERROR(r.Optional("group", &out->group));
  RETURN_IF_ERROR(r.Optional("kind", &out->kind));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ApiStatusDetails& details) {
  ObjectWriter w;
  w.NonEmpty("name", details.name);
  w.NonEmpty("group", details.group);
  w.NonEmpty("kind", details.kind);
  return std::move(w).Finish(details.unknown);
}

Status Read(const Field& f, ApiStatus* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(internal::CheckTypeMeta(r, "v1", "Status"));
  RETURN_IF_ERROR(r.Optional("status", &out->status));
  RETURN_IF_ERROR(r.Optional("message", &out->message));
  RETURN_IF_ERROR(r.Optional("reason", &out->reason));
  RETURN_IF_ERROR(r.Optional("code", &out->code));
  RETURN_IF_ERROR(r.Optional("details", &out->details));
  out->unknown = r.Unknown();
  return OkStatus();
}

Status Read(const Field& f, WatchEvent* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  std::string type;
  RETURN_IF_ERROR(r.Required("type", &type));
  const auto* it = std::find(kWatchEventTypeNames.begin(), kWatchEventTypeNames.end(), type);
  if (it == kWatchEventTypeNames.end()) {
    return internal::UnknownName(f.Member("type"), "watch event type", type,
                                 {kWatchEventTypeNames.begin(), kWatchEventTypeNames.end()});
  }
  out->type = static_cast<WatchEventType>(it - kWatchEventTypeNames.begin());
  const Field object = r.Take("object");
  if (object.value == nullptr) return object.Error("missing required field");
  if (!object.value->is_object()) return internal::Expected(object, "an object");
  out->object = *object.value;
  return OkStatus();
}

Status Read(const Field& f, ObjectMeta* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("name", &out->name));
  RETURN_IF_ERROR(r.Optional("generateName", &out->generate_name));
  RETURN_IF_ERROR(r.Optional("namespace", &out->namespace_name));
  RETURN_IF_ERROR(r.Optional("uid", &out->uid));
  RETURN_IF_ERROR(r.Optional("resourceVersion", &out->resource_version));
  RETURN_IF_ERROR(r.Optional("generation", &out->generation));
  RETURN_IF_ERROR(r.Optional("creationTimestamp", &out->creation_timestamp));
  RETURN_IF_ERROR(r.Optional("deletionTimestamp", &out->deletion_timestamp));
  RETURN_IF_ERROR(r.Optional("labels", &out->labels));
  RETURN_IF_ERROR(r.Optional("annotations", &out->annotations));
  RETURN_IF_ERROR(r.Optional("ownerReferences", &out->owner_references));
  RETURN_IF_ERROR(r.Optional("finalizers", &out->finalizers));
  out->unknown = r.Unknown();
  return OkStatus();
}

json Write(const ObjectMeta& meta) {
  ObjectWriter w;
  w.NonEmpty("name", meta.name);
  w.NonEmpty("generateName", meta.generate_name);
  w.NonEmpty("namespace", meta.namespace_name);
  w.NonEmpty("uid", meta.uid);
  w.NonEmpty("resourceVersion", meta.resource_version);
  w.NonZero("generation", meta.generation);
  w.NonEmpty("creationTimestamp", meta.creation_timestamp);
  w.Optional("deletionTimestamp", meta.deletion_timestamp);
  w.NonEmpty("labels", meta.labels);
  w.NonEmpty("annotations", meta.annotations);
  w.NonEmpty("ownerReferences", meta.owner_references);
  w.NonEmpty("finalizers", meta.finalizers);
  return std::move(w).Finish(meta.unknown);
}

namespace internal {

Status CheckTypeMeta(ObjectReader& reader, std::string_view api_version, std::string_view kind) {
  RETURN_IF_ERROR(CheckConstant(reader.Take("apiVersion"), api_version));
  return CheckConstant(reader.Take("kind"), kind);
}

}  // namespace internal

std::string_view WatchEventTypeName(WatchEventType type) {
  return kWatchEventTypeNames.at(static_cast<size_t>(type));
}

template <>
StatusOr<TypeMeta> FromJson<TypeMeta>(const json& json) {
  return ReadRoot<TypeMeta>(json);
}
template <>
StatusOr<ObjectMeta> FromJson<ObjectMeta>(const json& json) {
  return ReadRoot<ObjectMeta>(json);
}
template <>
StatusOr<ListMeta> FromJson<ListMeta>(const json& json) {
  return ReadRoot<ListMeta>(json);
}
template <>
StatusOr<WatchEvent> FromJson<WatchEvent>(const json& json) {
  return ReadRoot<WatchEvent>(json);
}
template <>
StatusOr<ApiStatus> FromJson<ApiStatus>(const json& json) {
  return ReadRoot<ApiStatus>(json);
}

json ToJson(const TypeMeta& type) {
  ObjectWriter w;
  w.NonEmpty("apiVersion", type.api_version);
  w.NonEmpty("kind", type.kind);
  return std::move(w).Finish(json::object());
}

json ToJson(const ObjectMeta& meta) { return Write(meta); }

json ToJson(const ListMeta& meta) {
  ObjectWriter w;
  w.NonEmpty("resourceVersion", meta.resource_version);
  w.NonEmpty("continue", meta.continue_token);
  return std::move(w).Finish(meta.unknown);
}

json ToJson(const WatchEvent& event) {
  return {{"type", WatchEventTypeName(event.type)}, {"object", event.object}};
}

json ToJson(const ApiStatus& status) {
  ObjectWriter w;
  w.Set("apiVersion", std::string("v1"));
  w.Set("kind", std::string("Status"));
  w.NonEmpty("status", status.status);
  w.NonEmpty("message", status.message);
  w.NonEmpty("reason", status.reason);
  w.NonZero("code", status.code);
  w.Optional("details", status.details);
  return std::move(w).Finish(status.unknown);
}

}  // namespace xpu::api
