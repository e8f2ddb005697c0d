// The JSON codecs of xpu-dra: one field list per struct, from which the reader, the writer and
// the OpenAPI v3 structural schema (for CRDs) are all derived, so that they cannot drift.
//
// A struct T opts in with an overload beside it, found by argument-dependent lookup,
//
//   template <typename V, codec::FieldsOf<T> S>
//   void VisitFields(V& v, S& self) {
//     v.Required("name", self.name, "what the field means", codec::Pattern("..."));
//     v.Optional("numaNode", self.numa_node, "...", codec::Minimum(-1));
//     v.Always("devices", self.devices);
//   }
//
// Required members must be present (reader), are always written (writer) and listed under
// `required` (schema). Optional members may be absent and are written when set: std::optional
// when it has a value, strings, lists and maps when not empty, anything else when it differs
// from a value-initialised one (0, false, a struct with nothing set). Always members may be absent
// and are always written (Go fields without omitempty). The trailing arguments are an optional
// description and schema keywords merged into the member's schema: enums, bounds, patterns, list
// types; kJsonObject makes the reader insist on a JSON object for a raw nlohmann::json member; a
// converter (ConverterOf below) reads and writes a member with a wire form of its own.
//
// Members the list does not name follow one of two policies, chosen by the struct:
//  - keep: a struct with a member `nlohmann::json unknown` keeps them there and writes them back,
//    so that an update never drops fields a newer API server set; a null member counts as unset,
//    as the API server reads it (Kubernetes objects).
//  - reject: a struct without one fails on them, naming the member and the members it knows
//    (the project's own files and configuration, where an unknown member is a typo); null is a
//    value like any other, unless the struct says NullIsUnset (below).
//
// Values: std::string, int64_t, bool, double, nlohmann::json (kept as it is), std::vector,
// std::map<std::string, T>, std::optional, and structs with fields. Another type, or a struct
// that needs a check across its members, adds `Status Read(const codec::Field&, T*)` and
// `nlohmann::json Write(const T&)` beside it (ReadFields and WriteFields do the field list part).
// A field list can also be a callable `visit(v, self)` handed to ReadFields and WriteFields, for
// types that cannot have a VisitFields beside them (another component's, such as topology's).
// Errors name the JSON path of the first problem ("spec.devices[2].name: expected a string, got
// number 5"). Decode and Encode read and write a whole document. Nothing throws.
#ifndef XPU_API_CODEC_CODEC_H_
#define XPU_API_CODEC_CODEC_H_

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

#include "api/codec/field.h"
#include "base/status.h"

namespace xpu::api::codec {

// ---- Values ----

Status Read(const Field& f, std::string* out);
Status Read(const Field& f, int64_t* out);
Status Read(const Field& f, bool* out);
// Any finite JSON number.
Status Read(const Field& f, double* out);
// Any JSON value, kept as it is (raw extensions, node selectors, conditions).
Status Read(const Field& f, nlohmann::json* out);

nlohmann::json Write(const std::string& value);
nlohmann::json Write(int64_t value);
nlohmann::json Write(bool value);
// Whole numbers as JSON integers (see Number in field.h).
nlohmann::json Write(double value);
nlohmann::json Write(const nlohmann::json& value);

// "<key>" of an object member, or "[<key>]" for map keys that are not identifiers.
std::string MapKeyPath(const Field& f, const std::string& key);

// ---- Field lists ----

// `S` is T or const T: lets one VisitFields overload serve the reader (T&) and the writer
// (const T&).
template <typename S, typename T>
concept FieldsOf = std::same_as<std::remove_const_t<S>, T>;

// The keep policy (see above).
template <typename T>
concept KeepsUnknown = requires(T& t) {
  { t.unknown } -> std::convertible_to<nlohmann::json>;
};

// A struct that rejects unknown members but reads a null member as absent, as its file format
// says (CDI specs; YAML, where "key:" with nothing after it is null), declares
//   static constexpr bool kNullIsUnset = true;
template <typename T>
concept NullIsUnset = KeepsUnknown<T> || requires {
  requires T::kNullIsUnset;
};

// Trailing argument of a raw nlohmann::json member that must hold a JSON object.
struct JsonObjectTag {};
inline constexpr JsonObjectTag kJsonObject;

// A converter: a trailing argument that reads and writes a member of type T in a form of its own
// (a byte count as a quantity string, an enumerator by name), with
//   Status Read(const Field& f, T* out) const;
//   nlohmann::json Write(const T& value) const;
// and, for an Optional member, `bool IsSet(const T& value) const` (otherwise the usual rule).
template <typename C, typename T>
concept ConverterOf = requires(const C& c, const Field& f, T* out, const T& value) {
  { c.Read(f, out) } -> std::same_as<Status>;
  { c.Write(value) } -> std::same_as<nlohmann::json>;
};

// The first converter of T among `extra`; only called when there is one.
template <typename T, typename E, typename... Rest>
const auto& ConverterIn(const E& e, const Rest&... rest) {
  if constexpr (ConverterOf<E, T>) {
    return e;
  } else {
    return ConverterIn<T>(rest...);
  }
}
template <typename T, typename... Extra>
inline constexpr bool kHasConverter = (ConverterOf<Extra, T> || ...);
template <typename C, typename T>
concept SetTestingConverterOf = ConverterOf<C, T> && requires(const C& c, const T& value) {
  { c.IsSet(value) } -> std::same_as<bool>;
};

// Lists the member names of a struct, in field-list order.
class FieldNames {
 public:
  template <typename T, typename... Extra>
  void Required(std::string_view key, const T& /*value*/, const Extra&... /*extra*/) {
    keys_.emplace_back(key);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, const T& /*value*/, const Extra&... /*extra*/) {
    keys_.emplace_back(key);
  }
  template <typename T, typename... Extra>
  void Always(std::string_view key, const T& /*value*/, const Extra&... /*extra*/) {
    keys_.emplace_back(key);
  }
  std::vector<std::string_view> keys() const { return {keys_.begin(), keys_.end()}; }

 private:
  std::vector<std::string> keys_;
};

template <typename T>
concept HasFields = requires(FieldNames& v, T& t) {
  VisitFields(v, t);
};

template <typename T>
Status Read(const Field& f, std::vector<T>* out);
template <typename T>
Status Read(const Field& f, std::map<std::string, T>* out);
template <typename T>
Status Read(const Field& f, std::optional<T>* out);
template <HasFields T>
Status Read(const Field& f, T* out);

template <typename T>
nlohmann::json Write(const std::vector<T>& values);
template <typename T>
nlohmann::json Write(const std::map<std::string, T>& values);
template <HasFields T>
nlohmann::json Write(const T& value);

// Reads the members of one JSON object and records which ones were taken.
class ObjectReader {
 public:
  // Fails unless the field holds an object. With null_is_unset, a member that is null counts as
  // absent (the keep policy); otherwise null is a value.
  static StatusOr<ObjectReader> Open(const Field& f, bool null_is_unset = true);

  // The member `key`, now counted as known.
  Field Take(std::string_view key);

  template <typename T>
  Status Required(std::string_view key, T* out) {
    const Field m = Take(key);
    if (m.value == nullptr) return m.Error("missing required field");
    return Read(m, out);
  }
  // Leaves *out as it is when the member is unset.
  template <typename T>
  Status Optional(std::string_view key, T* out) {
    const Field m = Take(key);
    if (m.value == nullptr) return OkStatus();
    return Read(m, out);
  }

  // The members not taken so far, as an object; null if none.
  nlohmann::json Unknown() const;

  const Field& field() const { return field_; }

 private:
  ObjectReader(Field f, bool null_is_unset) : field_(std::move(f)), null_is_unset_(null_is_unset) {}

  Field field_;
  bool null_is_unset_;
  std::vector<std::string_view> known_;
};

// Builds one JSON object with the upstream member names.
class ObjectWriter {
 public:
  template <typename T>
  void Set(std::string_view key, const T& value) {
    out_[std::string(key)] = Write(value);
  }
  // Strings, lists and maps tagged omitempty upstream.
  template <typename T>
  void NonEmpty(std::string_view key, const T& value) {
    if (!value.empty()) Set(key, value);
  }
  // The object, with the members of `unknown` the writer did not set itself added back.
  nlohmann::json Finish(const nlohmann::json& unknown) &&;

 private:
  nlohmann::json out_ = nlohmann::json::object();
};

// Reads the members of one object into a struct; keeps the first error.
class FieldReader {
 public:
  explicit FieldReader(ObjectReader* reader) : reader_(reader) {}

  template <typename T, typename... Extra>
  void Required(std::string_view key, T& value, const Extra&... extra) {
    if (status_.ok()) status_ = ReadMember(key, &value, true, extra...);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, T& value, const Extra&... extra) {
    if (status_.ok()) status_ = ReadMember(key, &value, false, extra...);
  }
  template <typename T, typename... Extra>
  void Always(std::string_view key, T& value, const Extra&... extra) {
    Optional(key, value, extra...);
  }
  const Status& status() const { return status_; }

 private:
  template <typename T, typename... Extra>
  Status ReadMember(std::string_view key, T* value, bool required, const Extra&... extra) {
    const Field m = reader_->Take(key);
    if (m.value == nullptr) return required ? m.Error("missing required field") : OkStatus();
    if constexpr (kHasConverter<T, Extra...>) {
      return ConverterIn<T>(extra...).Read(m, value);
    } else {
      if ((std::is_same_v<Extra, JsonObjectTag> || ...) && !m.value->is_object()) {
        return Expected(m, "an object");
      }
      return Read(m, value);
    }
  }

  ObjectReader* reader_;
  Status status_;
};

// Writes the members of one struct.
class FieldWriter {
 public:
  template <typename T, typename... Extra>
  void Required(std::string_view key, const T& value, const Extra&... extra) {
    Set(key, value, extra...);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, const T& value, const Extra&... extra) {
    if constexpr ((SetTestingConverterOf<Extra, T> || ...)) {
      if (ConverterIn<T>(extra...).IsSet(value)) Set(key, value, extra...);
    } else if constexpr (IsOptional<T>::value) {
      if (value.has_value()) writer_.Set(key, *value);
    } else if constexpr (requires { value.empty(); }) {
      if (!value.empty()) Set(key, value, extra...);
    } else if (!(value == T{})) {
      Set(key, value, extra...);
    }
  }
  template <typename T, typename... Extra>
  void Always(std::string_view key, const T& value, const Extra&... extra) {
    Set(key, value, extra...);
  }
  nlohmann::json Finish(const nlohmann::json& unknown) && {
    return std::move(writer_).Finish(unknown);
  }

 private:
  template <typename T, typename... Extra>
  void Set(std::string_view key, const T& value, const Extra&... extra) {
    if constexpr (kHasConverter<T, Extra...>) {
      writer_.Set(key, ConverterIn<T>(extra...).Write(value));
    } else {
      writer_.Set(key, value);
    }
  }
  template <typename T>
  struct IsOptional : std::false_type {};
  template <typename T>
  struct IsOptional<std::optional<T>> : std::true_type {};

  ObjectWriter writer_;
};

// ---- Schemas ----

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

// The schema of each value type; structs with fields get theirs from their field list.
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
template <HasFields T>
nlohmann::json SchemaFor(Tag<T>);

// Merges `extra` into `schema`: Items(...) into items / additionalProperties, the rest on top.
void MergeSchema(nlohmann::json* schema, const nlohmann::json& extra);

// Builds the structural schema of one struct: {type: object, properties, required}.
class FieldSchema {
 public:
  template <typename T, typename... Extra>
  void Required(std::string_view key, const T& /*value*/, const Extra&... extra) {
    Add(key, SchemaFor(Tag<T>{}), extra...);
    required_.emplace_back(key);
  }
  template <typename T, typename... Extra>
  void Optional(std::string_view key, const T& /*value*/, const Extra&... extra) {
    Add(key, SchemaFor(Tag<T>{}), extra...);
  }
  template <typename T, typename... Extra>
  void Always(std::string_view key, const T& value, const Extra&... extra) {
    Optional(key, value, extra...);
  }
  nlohmann::json Finish() &&;

 private:
  template <typename... Extra>
  void Add(std::string_view key, nlohmann::json schema, const Extra&... extra) {
    (AddKeywords(&schema, extra), ...);
    properties_[std::string(key)] = std::move(schema);
  }
  // A description, or schema keywords.
  template <typename E>
  static void AddKeywords(nlohmann::json* schema, const E& extra) {
    if constexpr (std::is_convertible_v<const E&, std::string_view>) {
      const std::string_view doc = extra;
      if (!doc.empty()) (*schema)["description"] = std::string(doc);
    } else if constexpr (std::is_same_v<E, nlohmann::json>) {
      MergeSchema(schema, extra);
    }
  }

  nlohmann::json properties_ = nlohmann::json::object();
  std::vector<std::string> required_;
};

template <HasFields T>
nlohmann::json SchemaFor(Tag<T>) {
  FieldSchema schema;
  T value{};
  VisitFields(schema, value);
  return std::move(schema).Finish();
}

// ---- Structs with fields ----

// Reads the members a field list names, following the struct's policy for the others. The field
// list is `visit(visitor, *out)`; the overload without one uses the struct's VisitFields.
template <typename T, typename Visit>
Status ReadFields(const Field& f, T* out, const Visit& visit) {
  ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::Open(f, NullIsUnset<T>));
  if constexpr (!KeepsUnknown<T>) {
    // Before reading any member, so that a misspelt member is named as such rather than as a
    // missing one.
    FieldNames names;
    visit(names, *out);
    RETURN_IF_ERROR(CheckObject(f, names.keys()));
  }
  FieldReader reader(&r);
  visit(reader, *out);
  RETURN_IF_ERROR(reader.status());
  if constexpr (KeepsUnknown<T>) out->unknown = r.Unknown();
  return OkStatus();
}

template <typename T, typename Visit>
nlohmann::json WriteFields(const T& value, const Visit& visit) {
  FieldWriter writer;
  visit(writer, value);
  if constexpr (KeepsUnknown<T>) {
    return std::move(writer).Finish(value.unknown);
  } else {
    return std::move(writer).Finish(nullptr);
  }
}

// The struct's own field list, as a `visit` argument.
struct OwnFields {
  template <typename V, typename S>
  void operator()(V& v, S& self) const {
    VisitFields(v, self);
  }
};

template <HasFields T>
Status ReadFields(const Field& f, T* out) {
  return ReadFields(f, out, OwnFields{});
}

template <HasFields T>
nlohmann::json WriteFields(const T& value) {
  return WriteFields(value, OwnFields{});
}

template <HasFields T>
Status Read(const Field& f, T* out) {
  return ReadFields(f, out);
}

template <HasFields T>
nlohmann::json Write(const T& value) {
  return WriteFields(value);
}

// ---- Lists, maps, optionals ----

template <typename T>
Status Read(const Field& f, std::vector<T>* out) {
  if (!f.value->is_array()) return Expected(f, "an array");
  out->clear();
  out->reserve(f.value->size());
  for (size_t i = 0; i < f.value->size(); ++i) {
    T item{};
    RETURN_IF_ERROR(Read(f.Element(i), &item));
    out->push_back(std::move(item));
  }
  return OkStatus();
}

template <typename T>
Status Read(const Field& f, std::map<std::string, T>* out) {
  if (!f.value->is_object()) return Expected(f, "an object");
  out->clear();
  for (const auto& [key, value] : f.value->items()) {
    T item{};
    RETURN_IF_ERROR(Read(Field{&value, MapKeyPath(f, key)}, &item));
    out->emplace(key, std::move(item));
  }
  return OkStatus();
}

template <typename T>
Status Read(const Field& f, std::optional<T>* out) {
  T value{};
  RETURN_IF_ERROR(Read(f, &value));
  *out = std::move(value);
  return OkStatus();
}

template <typename T>
nlohmann::json Write(const std::vector<T>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const T& value : values) out.push_back(Write(value));
  return out;
}

template <typename T>
nlohmann::json Write(const std::map<std::string, T>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : values) out[key] = Write(value);
  return out;
}

// ---- Documents ----

// Reads a whole document into a T (the root's path is empty). Errors carry `code`:
// invalid-argument for what users and the API server send, data-loss for the project's own files,
// where a document that does not read is corrupt.
template <typename T>
StatusOr<T> Decode(const nlohmann::json& json, StatusCode code = StatusCode::kInvalidArgument) {
  T out{};
  if (Status status = Read(Field{&json, ""}, &out); !status.ok()) {
    return Status(code, status.message());
  }
  return out;
}

template <typename T>
nlohmann::json Encode(const T& value) {
  return Write(value);
}

}  // namespace xpu::api::codec

#endif  // XPU_API_CODEC_CODEC_H_
