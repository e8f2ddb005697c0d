#include "api/meta.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "api/codec/codec.h"
#include "api/internal/meta_codec.h"

namespace xpu::api {
namespace {

using codec::Field;
using codec::ObjectReader;
using codec::ObjectWriter;
using nlohmann::json;

constexpr std::array<std::string_view, 5> kWatchEventTypeNames = {"ADDED", "MODIFIED", "DELETED",
                                                                  "BOOKMARK", "ERROR"};

}  // namespace

template <typename V, codec::FieldsOf<ListMeta> S>
void VisitFields(V& v, S& self) {
  v.Optional("resourceVersion", self.resource_version);
  v.Optional("continue", self.continue_token);
}

template <typename V, codec::FieldsOf<ApiStatusDetails> S>
void VisitFields(V& v, S& self) {
  v.Optional("name", self.name);
  v.Optional("group", self.group);
  v.Optional("kind", self.kind);
}

template <typename V, codec::FieldsOf<ApiStatus> S>
void VisitFields(V& v, S& self) {
  v.Optional("status", self.status);
  v.Optional("message", self.message);
  v.Optional("reason", self.reason);
  v.Optional("code", self.code);
  v.Optional("details", self.details);
}

// Not in the unnamed namespace: the generic helpers of api/codec/codec.h find these by
// argument-dependent lookup. TypeMeta is read from whole objects, so it ignores the other members.
Status Read(const Field& f, TypeMeta* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  RETURN_IF_ERROR(r.Optional("apiVersion", &out->api_version));
  return r.Optional("kind", &out->kind);
}

Status Read(const Field& f, WatchEvent* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  std::string type;
  RETURN_IF_ERROR(r.Required("type", &type));
  const auto* it = std::find(kWatchEventTypeNames.begin(), kWatchEventTypeNames.end(), type);
  if (it == kWatchEventTypeNames.end()) {
    return codec::UnknownName(f.Member("type"), "watch event type", type,
                              {kWatchEventTypeNames.begin(), kWatchEventTypeNames.end()});
  }
  out->type = static_cast<WatchEventType>(it - kWatchEventTypeNames.begin());
  const Field object = r.Take("object");
  if (object.value == nullptr) return object.Error("missing required field");
  if (!object.value->is_object()) return codec::Expected(object, "an object");
  out->object = *object.value;
  return OkStatus();
}

namespace internal {

Status CheckConditionTypes(const std::vector<Condition>& conditions, std::string_view path) {
  std::set<std::string> types;
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (!types.insert(conditions[i].type).second) {
      return InvalidArgumentError(ElementPath(path, i) + ".type: duplicate condition \"" +
                                  conditions[i].type + "\"");
    }
  }
  return OkStatus();
}

std::string ElementPath(std::string_view base, size_t i) {
  return std::string(base) + "[" + std::to_string(i) + "]";
}

Status CheckTypeMeta(ObjectReader& reader, std::string_view api_version, std::string_view kind) {
  RETURN_IF_ERROR(codec::CheckConstant(reader.Take("apiVersion"), api_version));
  return codec::CheckConstant(reader.Take("kind"), kind);
}

}  // namespace internal

std::string_view WatchEventTypeName(WatchEventType type) {
  return kWatchEventTypeNames.at(static_cast<size_t>(type));
}

template <>
StatusOr<TypeMeta> FromJson<TypeMeta>(const json& json) {
  return codec::Decode<TypeMeta>(json);
}
template <>
StatusOr<ObjectMeta> FromJson<ObjectMeta>(const json& json) {
  return codec::Decode<ObjectMeta>(json);
}
template <>
StatusOr<ListMeta> FromJson<ListMeta>(const json& json) {
  return codec::Decode<ListMeta>(json);
}
template <>
StatusOr<WatchEvent> FromJson<WatchEvent>(const json& json) {
  return codec::Decode<WatchEvent>(json);
}
template <>
StatusOr<ApiStatus> FromJson<ApiStatus>(const json& json) {
  return internal::ReadObject<ApiStatus>(json, "v1", "Status");
}

json ToJson(const TypeMeta& type) {
  ObjectWriter w;
  w.NonEmpty("apiVersion", type.api_version);
  w.NonEmpty("kind", type.kind);
  return std::move(w).Finish(json::object());
}

json ToJson(const ObjectMeta& meta) { return codec::Encode(meta); }

json ToJson(const ListMeta& meta) { return codec::Encode(meta); }

json ToJson(const WatchEvent& event) {
  return {{"type", WatchEventTypeName(event.type)}, {"object", event.object}};
}

json ToJson(const ApiStatus& status) { return internal::WriteObject(status, "v1", "Status"); }

void CarryTransitionTime(const Condition& previous, Condition* fresh) {
  if (previous.type == fresh->type && previous.status == fresh->status) {
    fresh->last_transition_time = previous.last_transition_time;
  }
}

}  // namespace xpu::api
