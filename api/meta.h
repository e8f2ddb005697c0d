// Kubernetes object metadata and the envelopes around objects (k8s.io/apimachinery meta/v1):
// ObjectMeta, TypeMeta, ListMeta, List<T>, WatchEvent and the API error object (ApiStatus).
//
// Codecs: `FromJson<T>(json)` reads a value, naming the JSON path of the first problem
// ("metadata.ownerReferences[0].uid: expected a string, got number 3"); `ToJson(value)` writes the
// upstream member names and leaves out unset optional fields. Members this code does not know are
// kept in `unknown` and written back, so an update does not drop fields a newer API server set
// (`unknown` is null while nothing is unknown: no allocation).
// Quantities and timestamps stay in their wire spelling. No exception escapes. Value types,
// thread-compatible.
#ifndef XPU_API_META_H_
#define XPU_API_META_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::api {

// Reads a T from its JSON form; specialised for each type with a codec.
template <typename T>
StatusOr<T> FromJson(const nlohmann::json& json);

struct TypeMeta {
  std::string api_version;  // "apiVersion"
  std::string kind;
  friend bool operator==(const TypeMeta&, const TypeMeta&) = default;
};

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_name;  // "namespace"
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339, as sent
  std::optional<std::string> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  // Everything else (managedFields, deletionGracePeriodSeconds, ...), written back unchanged.
  nlohmann::json unknown = nullptr;
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// A status condition (meta/v1 Condition), as the project's custom resources report them.
struct Condition {
  std::string type;    // CamelCase, e.g. "Ready"
  std::string status;  // "True", "False" or "Unknown"
  std::optional<int64_t> observed_generation;
  std::string last_transition_time;  // RFC 3339
  std::string reason;                // CamelCase
  std::string message;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// Kubernetes' rule for lastTransitionTime: it moves only when the status does. `fresh` takes
// `previous`'s time when both have the same type and status.
void CarryTransitionTime(const Condition& previous, Condition* fresh);

struct ListMeta {
  std::string resource_version;
  std::string continue_token;  // "continue"
  nlohmann::json unknown = nullptr;
  friend bool operator==(const ListMeta&, const ListMeta&) = default;
};

template <>
StatusOr<TypeMeta> FromJson<TypeMeta>(const nlohmann::json& json);
template <>
StatusOr<ObjectMeta> FromJson<ObjectMeta>(const nlohmann::json& json);
template <>
StatusOr<ListMeta> FromJson<ListMeta>(const nlohmann::json& json);
nlohmann::json ToJson(const TypeMeta& type);
nlohmann::json ToJson(const ObjectMeta& meta);
nlohmann::json ToJson(const ListMeta& meta);

// The `<Kind>List` answer of a list call. The items' kind and apiVersion are not on the wire;
// ToJson of each item adds them.
template <typename T>
struct List {
  TypeMeta type;  // e.g. {"resource.k8s.io/v1", "ResourceSliceList"}
  ListMeta metadata;
  std::vector<T> items;
};

template <typename T>
StatusOr<List<T>> ListFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return InvalidArgumentError("expected an object, got " + std::string(json.type_name()));
  }
  List<T> list;
  ASSIGN_OR_RETURN(list.type, FromJson<TypeMeta>(json));
  if (auto it = json.find("metadata"); it != json.end() && !it->is_null()) {
    StatusOr<ListMeta> meta = FromJson<ListMeta>(*it);
    if (!meta.ok()) return meta.status().WithContext("metadata");
    list.metadata = *std::move(meta);
  }
  auto items = json.find("items");
  if (items == json.end() || items->is_null()) return list;
  if (!items->is_array()) return InvalidArgumentError("items: expected an array");
  for (size_t i = 0; i < items->size(); ++i) {
    StatusOr<T> item = FromJson<T>((*items)[i]);
    if (!item.ok()) return item.status().WithContext("items[" + std::to_string(i) + "]");
    list.items.push_back(*std::move(item));
  }
  return list;
}

template <typename T>
nlohmann::json ToJson(const List<T>& list) {
  nlohmann::json out = ToJson(list.type);
  out["metadata"] = ToJson(list.metadata);
  out["items"] = nlohmann::json::array();
  for (const T& item : list.items) out["items"].push_back(ToJson(item));
  return out;
}

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

// "ADDED", "MODIFIED", ...
std::string_view WatchEventTypeName(WatchEventType type);

// One line of a watch stream. `object` is the object (decode it with FromJson of its type), or an
// ApiStatus for kError.
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;
  friend bool operator==(const WatchEvent&, const WatchEvent&) = default;
};

template <>
StatusOr<WatchEvent> FromJson<WatchEvent>(const nlohmann::json& json);
nlohmann::json ToJson(const WatchEvent& event);

// The API error object (meta/v1 Status, kind "Status"), returned with non-2xx answers and in
// ERROR watch events. Named ApiStatus so it does not hide xpu::Status.
struct ApiStatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  nlohmann::json unknown = nullptr;  // causes, uid, retryAfterSeconds
  friend bool operator==(const ApiStatusDetails&, const ApiStatusDetails&) = default;
};

struct ApiStatus {
  std::string status;  // "Success" or "Failure"
  std::string message;
  std::string reason;  // "NotFound", "Conflict", "AlreadyExists", ...
  int64_t code = 0;    // the HTTP status code
  std::optional<ApiStatusDetails> details;
  nlohmann::json unknown = nullptr;
  friend bool operator==(const ApiStatus&, const ApiStatus&) = default;
};

template <>
StatusOr<ApiStatus> FromJson<ApiStatus>(const nlohmann::json& json);
nlohmann::json ToJson(const ApiStatus& status);

}  // namespace xpu::api

#endif  // XPU_API_META_H_
