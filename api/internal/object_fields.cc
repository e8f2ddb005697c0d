#include "api/internal/object_fields.h"

namespace xpu::api::internal {

using nlohmann::json;

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

void FieldSchema::Add(std::string_view key, json schema, std::string_view doc,
                      const std::vector<json>& extra) {
  if (!doc.empty()) schema["description"] = std::string(doc);
  for (const json& e : extra) MergeSchema(&schema, e);
  properties_[std::string(key)] = std::move(schema);
}

json FieldSchema::Finish() && {
  json out = {{"type", "object"}, {"properties", std::move(properties_)}};
  if (!required_.empty()) out["required"] = required_;
  return out;
}

}  // namespace xpu::api::internal
