// Private to xpu::api: one field list per struct of the project's own custom resources
// (NodeInventory, AcceleratorGang), from which the JSON reader, the JSON writer and the OpenAPI v3
// structural schema of the CRD are all derived, so that the codec and the CRD cannot drift.
//
// A struct T opts in with an overload, found by argument-dependent lookup,
//
//   template <typename V, internal::FieldsOf<T> S>
//   void VisitFields(V& v, S& self) {
//     v.Required("name", self.name, "what the field means", internal::Pattern("..."));
//     v.Optional("numaNode", self.numa_node, "...", internal::Minimum(-1));
//   }
//
// and a member `nlohmann::json unknown` that keeps the members the reader did not know (written
// back, as the Kubernetes codecs of codec.h do). Required members must be present (reader), are
// always written (writer) and listed under `required` (schema). Optional members are
// std::optional (written when set), strings, lists and maps (written when not empty) or structs
// (written when not equal to a default-constructed one). The trailing arguments are JSON objects
// merged into the member's schema: enums, bounds, patterns, list types. Nothing throws.
#ifndef XPU_API_INTERNAL_OBJECT_FIELDS_H_
#define XPU_API_INTERNAL_OBJECT_FIELDS_H_

#include <concepts>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/internal/codec.h"
#include "api/internal/json_fields.h"
#include "base/status.h"

namespace xpu::api::internal {

// `S` is T or const T: lets one VisitFields overload serve the reader (T&) and the writer
// (const T&).
template <typename S, typename T>
concept FieldsOf = std::same_as<std::remove_const_t<S>, T>;

// Schema keywords for the trailing arguments of Required/Optional.
nlohmann::json Enum(const std::vector<std::string>& values);
nlohmann::json Minimum(int64_t min);
nlohmann::json Maximum(int64_t max);
nlohmann::json ExclusiveMinimum(double min);
nlohmann::json MinLength(int64_t min);
nlohmann::json MaxLength(int64_t max);
nlohmann::json Pattern(std::string_view regex);
nlohmann::json MinItems(int64_t min);
nlohmann::json MaxItems(int64_t max);
nlohmann::json MaxProperties(int64_t max);
// Schema keywords of the items of a list (or values of a map): merged into `items`
// (`additionalProperties`) instead of the list itself.
nlohmann::json Items(nlohmann::json keywords);
// A list of objects keyed by `keys` (x-kubernetes-list-type: map); the keys must be required
// members of the items.
nlohmann::json ListMap(const std::vector<std::string>& keys);
// A list of unique scalars (x-kubernetes-list-type: set).
nlohmann::json ListSet();
// A list replaced as a whole (x-kubernetes-list-type: atomic).
nlohmann::json ListAtomic();

template <typename T>
struct Tag {};

// The schema of each value type; structs with VisitFields get theirs from SchemaOfFields.
nlohmann::json SchemaFor(Tag<std::string>);
nlohmann::json SchemaFor(Tag<int64_t>);
nlohmann::json SchemaFor(Tag<bool>);
nlohmann::json SchemaFor(Tag<double>);
template <typename T>
nlohmann::json SchemaFor(Tag<std::optional<T>>) {
  return SchemaFor(Tag<T>{});
}
template <typename T>
nlohmann::json SchemaFor(Tag<std::vector<T>>) {
  return {{"type", "array"}, {"items", SchemaFor(Tag<T>{})}};
}
template <typename T>
nlohmann::json SchemaFor(Tag<std::map<std::string, T>>) {
  return {{"type", "object"}, {"additionalProperties", SchemaFor(Tag<T>{})}};
}

// Merges `extra` into `schema`: Items(...) into items / additionalProperties, the rest on top.
void MergeSchema(nlohmann::json* schema, const nlohmann::json& extra);

// Reads the members of one object into a struct; keeps the first error.
class FieldReader {
 public:
  explicit FieldReader(ObjectReader* reader) : reader_(reader) {}

  template <typename T, typename... Extra>
  void Required(std::string_view key, T& value, std::string_view /*doc*/, const Extra&... /*x*/) {
    if (status_.ok()) status_ = reader_->Required(key, &value);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, T& value, std::string_view /*doc*/, const Extra&... /*x*/) {
    if (status_.ok()) status_ = reader_->Optional(key, &value);
  }
  const Status& status() const { return status_; }

 private:
  ObjectReader* reader_;
  Status status_;
};

// Writes the members of one struct.
class FieldWriter {
 public:
  template <typename T, typename... Extra>
  void Required(std::string_view key, const T& value, std::string_view /*doc*/,
                const Extra&... /*x*/) {
    writer_.Set(key, value);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, const T& value, std::string_view /*doc*/,
                const Extra&... /*x*/) {
    if constexpr (IsOptional<T>::value) {
      writer_.Optional(key, value);
    } else if constexpr (requires { value.empty(); }) {
      writer_.NonEmpty(key, value);
    } else if (!(value == T{})) {  // a struct: left out when all its members are unset
      writer_.Set(key, value);
    }
  }
  nlohmann::json Finish(const nlohmann::json& unknown) && {
    return std::move(writer_).Finish(unknown);
  }

 private:
  template <typename T>
  struct IsOptional : std::false_type {};
  template <typename T>
  struct IsOptional<std::optional<T>> : std::true_type {};

  ObjectWriter writer_;
};

// Builds the structural schema of one struct: {type: object, properties, required}.
class FieldSchema {
 public:
  template <typename T, typename... Extra>
  void Required(std::string_view key, const T& /*value*/, std::string_view doc,
                const Extra&... extra) {
    Add(key, SchemaFor(Tag<T>{}), doc, {nlohmann::json(extra)...});
    required_.emplace_back(key);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, const T& /*value*/, std::string_view doc,
                const Extra&... extra) {
    Add(key, SchemaFor(Tag<T>{}), doc, {nlohmann::json(extra)...});
  }
  nlohmann::json Finish() &&;

 private:
  void Add(std::string_view key, nlohmann::json schema, std::string_view doc,
           const std::vector<nlohmann::json>& extra);

  nlohmann::json properties_ = nlohmann::json::object();
  std::vector<std::string> required_;
};

template <typename T>
concept HasFields = requires(FieldSchema& v, T& t) {
  VisitFields(v, t);
  { t.unknown } -> std::convertible_to<nlohmann::json>;
};

template <HasFields T>
nlohmann::json SchemaFor(Tag<T>) {
  FieldSchema schema;
  T value{};
  VisitFields(schema, value);
  return std::move(schema).Finish();
}

// Readers and writers of structs with fields.
template <HasFields T>
Status ReadFields(const Field& f, T* out) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f));
  FieldReader reader(&r);
  VisitFields(reader, *out);
  RETURN_IF_ERROR(reader.status());
  out->unknown = r.Unknown();
  return OkStatus();
}

template <HasFields T>
nlohmann::json WriteFields(const T& value) {
  FieldWriter writer;
  VisitFields(writer, value);
  return std::move(writer).Finish(value.unknown);
}

}  // namespace xpu::api::internal

namespace xpu::api {

// In the types' namespace, so that the generic list, map and optional helpers of codec.h find
// them by argument-dependent lookup.
template <internal::HasFields T>
Status Read(const internal::Field& f, T* out) {
  return internal::ReadFields(f, out);
}
template <internal::HasFields T>
nlohmann::json Write(const T& value) {
  return internal::WriteFields(value);
}

}  // namespace xpu::api

#endif  // XPU_API_INTERNAL_OBJECT_FIELDS_H_
