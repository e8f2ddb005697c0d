#include "api/codec/codec.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace xpu::api::codec {

using nlohmann::json;

Status Read(const Field& f, std::string* out) {
  if (!f.value->is_string()) return Expected(f, "a string");
  *out = f.value->get_ref<const std::string&>();
  return OkStatus();
}

Status Read(const Field& f, int64_t* out) {
  const json& j = *f.value;
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Expected(f, "a 64-bit integer");
    }
    *out = static_cast<int64_t>(j.get<uint64_t>());
    return OkStatus();
  }
  if (!j.is_number_integer()) return Expected(f, "an integer");
  *out = j.get<int64_t>();
  return OkStatus();
}

Status Read(const Field& f, bool* out) {
  if (!f.value->is_boolean()) return Expected(f, "a boolean");
  *out = f.value->get<bool>();
  return OkStatus();
}

Status Read(const Field& f, double* out) {
  if (!f.value->is_number()) return Expected(f, "a number");
  *out = f.value->get<double>();
  return OkStatus();
}

Status Read(const Field& f, json* out) {
  *out = *f.value;
  return OkStatus();
}

json Write(const std::string& value) { return value; }
json Write(int64_t value) { return value; }
json Write(bool value) { return value; }
json Write(double value) { return Number(value); }
json Write(const json& value) { return value; }

std::string MapKeyPath(const Field& f, const std::string& key) {
  // Attribute names such as "resource.kubernetes.io/pcieRoot" read better in brackets.
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
  if (plain) return f.path.empty() ? key : f.path + "." + key;
  return f.path + "[\"" + key + "\"]";
}

StatusOr<ObjectReader> ObjectReader::Open(const Field& f, bool null_is_unset) {
  if (!f.value->is_object()) return Expected(f, "an object");
  return ObjectReader(f, null_is_unset);
}

Field ObjectReader::Take(std::string_view key) {
  known_.push_back(key);
  Field m = field_.Member(key);
  if (null_is_unset_ && m.value != nullptr && m.value->is_null()) m.value = nullptr;
  return m;
}

json ObjectReader::Unknown() const {
  // Null, not an empty object, when every member was known: decoded objects hold one of these per
  // struct, and an empty object costs a heap allocation each (informer caches hold millions).
  json out;
  for (const auto& [key, value] : field_.value->items()) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) out[key] = value;
  }
  return out;
}

json ObjectWriter::Finish(const json& unknown) && {
  if (unknown.is_object()) {
    for (const auto& [key, value] : unknown.items()) {
      if (!out_.contains(key)) out_[key] = value;
    }
  }
  return std::move(out_);
}

json Enum(const std::vector<std::string>& values) { return {{"enum", values}}; }
json Minimum(int64_t min) { return {{"minimum", min}}; }
json Maximum(int64_t max) { return {{"maximum", max}}; }
json ExclusiveMinimum(double min) { return {{"minimum", Number(min)}, {"exclusiveMinimum", true}}; }
json MinLength(int64_t min) { return {{"minLength", min}}; }
json MaxLength(int64_t max) { return {{"maxLength", max}}; }
json Pattern(std::string_view regex) { return {{"pattern", std::string(regex)}}; }
json MinItems(int64_t min) { return {{"minItems", min}}; }
json MaxItems(int64_t max) { return {{"maxItems", max}}; }
json MaxProperties(int64_t max) { return {{"maxProperties", max}}; }
json Items(json keywords) { return {{"items", std::move(keywords)}}; }
json ListMap(const std::vector<std::string>& keys) {
  return {{"x-kubernetes-list-type", "map"}, {"x-kubernetes-list-map-keys", keys}};
}
json ListSet() { return {{"x-kubernetes-list-type", "set"}}; }
json ListAtomic() { return {{"x-kubernetes-list-type", "atomic"}}; }

json SchemaFor(Tag<std::string>) { return {{"type", "string"}}; }
json SchemaFor(Tag<int64_t>) { return {{"type", "integer"}, {"format", "int64"}}; }
json SchemaFor(Tag<bool>) { return {{"type", "boolean"}}; }
json SchemaFor(Tag<double>) { return {{"type", "number"}}; }

void MergeSchema(json* schema, const json& extra) {
  for (const auto& [key, value] : extra.items()) {
    if (key == "items") {
      // Items(...) of a list, or of the values of a map.
      json* inner =
          schema->contains("items") ? &(*schema)["items"] : &(*schema)["additionalProperties"];
      MergeSchema(inner, value);
    } else {
      (*schema)[key] = value;
    }
  }
}

json FieldSchema::Finish() && {
  json out = {{"type", "object"}, {"properties", std::move(properties_)}};
  if (!required_.empty()) out["required"] = required_;
  return out;
}

}  // namespace xpu::api::codec
