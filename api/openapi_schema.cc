#include "api/openapi_schema.h"

#include <algorithm>
#include <array>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <string_view>

namespace xpu::api {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 21> kKnownKeywords = {
    "type",
    "description",
    "format",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "nullable",
};

std::string Join(std::string_view base, std::string_view key) {
  return base.empty() ? std::string(key) : std::string(base) + "." + std::string(key);
}

Status Fail(const std::string& path, const std::string& what) {
  return InvalidArgumentError(path.empty() ? what : path + ": " + what);
}

std::string Short(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  return text;
}

// Characters, as the API server counts string lengths: UTF-8 lead bytes.
int64_t Characters(const std::string& text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

bool HasType(const json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "integer") return value.is_number_integer();
  if (type == "number") return value.is_number();
  return false;
}

Status Validate(const json& value, const json& schema, const std::string& path);

Status ValidateObject(const json& value, const json& schema, const std::string& path) {
  if (auto it = schema.find("required"); it != schema.end()) {
    for (const json& key : *it) {
      if (!value.contains(key.get<std::string>())) {
        return Fail(Join(path, key.get<std::string>()), "missing required field");
      }
    }
  }
  if (auto it = schema.find("maxProperties"); it != schema.end() && value.size() > *it) {
    return Fail(
        path, "must have at most " + it->dump() + " members, got " + std::to_string(value.size()));
  }
  const auto props = schema.find("properties");
  const auto additional = schema.find("additionalProperties");
  for (const auto& [key, member] : value.items()) {
    const std::string member_path = Join(path, key);
    if (props != schema.end() && props->contains(key)) {
      RETURN_IF_ERROR(Validate(member, (*props)[key], member_path));
    } else if (additional != schema.end() && additional->is_object()) {
      std::string value_path = path;
      value_path.append("[\"").append(key).append("\"]");
      RETURN_IF_ERROR(Validate(member, *additional, value_path));
    } else if (props != schema.end()) {
      return Fail(member_path, "unknown field");
    }
  }
  return OkStatus();
}

Status ValidateArray(const json& value, const json& schema, const std::string& path) {
  if (auto it = schema.find("minItems"); it != schema.end() && value.size() < *it) {
    return Fail(path,
                "must have at least " + it->dump() + " items, got " + std::to_string(value.size()));
  }
  if (auto it = schema.find("maxItems"); it != schema.end() && value.size() > *it) {
    return Fail(path,
                "must have at most " + it->dump() + " items, got " + std::to_string(value.size()));
  }
  if (auto it = schema.find("items"); it != schema.end()) {
    for (size_t i = 0; i < value.size(); ++i) {
      RETURN_IF_ERROR(Validate(value[i], *it, path + "[" + std::to_string(i) + "]"));
    }
  }
  const std::string list_type = schema.value("x-kubernetes-list-type", "atomic");
  if (list_type == "set" || list_type == "map") {
    std::set<std::string> seen;
    for (size_t i = 0; i < value.size(); ++i) {
      std::string key;
      if (list_type == "set") {
        key = Short(value[i]);
      } else {
        for (const json& k : schema["x-kubernetes-list-map-keys"]) {
          const std::string name = k.get<std::string>();
          key += (key.empty() ? "with " : ", ") + name + "=" + Short(value[i].value(name, json()));
        }
      }
      if (!seen.insert(key).second) {
        return Fail(path + "[" + std::to_string(i) + "]", "duplicate entry " + key);
      }
    }
  }
  return OkStatus();
}

// Patterns compiled once per thread: validating an inventory checks the same few patterns
// hundreds of times.
const std::regex& Compiled(const std::string& pattern) {
  thread_local std::map<std::string, std::regex> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) {
    it = cache.emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
  }
  return it->second;
}

// RFC 3339 date-time, as format "date-time" requires.
bool IsDateTime(const std::string& text) {
  static const std::regex kDateTime(
      R"(^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$)");
  return std::regex_match(text, kDateTime);
}

Status ValidateString(const std::string& text, const json& schema, const std::string& path) {
  if (schema.value("format", "") == "date-time" && !IsDateTime(text)) {
    return Fail(path, Short(json(text)) + " is not an RFC 3339 date-time");
  }
  if (auto it = schema.find("minLength"); it != schema.end() && Characters(text) < *it) {
    return Fail(path, "must be at least " + it->dump() + " characters");
  }
  if (auto it = schema.find("maxLength"); it != schema.end() && Characters(text) > *it) {
    return Fail(path, "must be at most " + it->dump() + " characters, got " +
                          std::to_string(Characters(text)));
  }
  if (auto it = schema.find("pattern"); it != schema.end()) {
    if (!std::regex_search(text, Compiled(it->get<std::string>()))) {
      return Fail(path, Short(json(text)) + " does not match " + it->get<std::string>());
    }
  }
  return OkStatus();
}

Status ValidateNumber(const json& value, const json& schema, const std::string& path) {
  const double x = value.get<double>();
  const bool exclusive = schema.value("exclusiveMinimum", false);
  if (auto it = schema.find("minimum"); it != schema.end()) {
    const double min = it->get<double>();
    if (x < min || (exclusive && x == min)) {
      return Fail(path, "must be " + std::string(exclusive ? "greater than " : "at least ") +
                            it->dump() + ", got " + value.dump());
    }
  }
  if (auto it = schema.find("maximum"); it != schema.end() && x > it->get<double>()) {
    return Fail(path, "must be at most " + it->dump() + ", got " + value.dump());
  }
  return OkStatus();
}

Status Validate(const json& value, const json& schema, const std::string& path) {
  if (value.is_null() && schema.value("nullable", false)) return OkStatus();
  if (auto it = schema.find("type"); it != schema.end()) {
    const std::string type = it->get<std::string>();
    if (!HasType(value, type)) {
      return Fail(path, "expected " + type + ", got " + std::string(value.type_name()) + " " +
                            Short(value));
    }
  }
  if (auto it = schema.find("enum"); it != schema.end()) {
    if (std::find(it->begin(), it->end(), value) == it->end()) {
      std::string names;
      for (const json& e : *it) {
        names += (names.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
      }
      return Fail(path, "unsupported value " + Short(value) + "; expected one of " + names);
    }
  }
  if (value.is_object()) return ValidateObject(value, schema, path);
  if (value.is_array()) return ValidateArray(value, schema, path);
  if (value.is_string()) return ValidateString(value.get_ref<const std::string&>(), schema, path);
  if (value.is_number()) return ValidateNumber(value, schema, path);
  return OkStatus();
}

Status CheckNode(const json& schema, const std::string& path) {
  if (!schema.is_object()) return Fail(path, "schema must be an object");
  for (const auto& [key, unused] : schema.items()) {
    if (std::find(kKnownKeywords.begin(), kKnownKeywords.end(), key) == kKnownKeywords.end()) {
      return Fail(path, "keyword " + key + " is not supported by ValidateAgainstSchema");
    }
  }
  const auto type = schema.find("type");
  if (type == schema.end() || !type->is_string()) return Fail(path, "missing type");
  if (*type == "object") {
    if (auto props = schema.find("properties"); props != schema.end()) {
      for (const auto& [key, sub] : props->items()) {
        RETURN_IF_ERROR(CheckNode(sub, Join(path, "properties." + key)));
      }
      for (const json& r : schema.value("required", json::array())) {
        if (!props->contains(r.get<std::string>())) {
          return Fail(path, "required field " + r.dump() + " is not a property");
        }
      }
    }
    if (auto add = schema.find("additionalProperties"); add != schema.end()) {
      if (schema.contains("properties")) {
        return Fail(path, "properties and additionalProperties are exclusive");
      }
      RETURN_IF_ERROR(CheckNode(*add, Join(path, "additionalProperties")));
    }
  } else if (*type == "array") {
    const auto items = schema.find("items");
    if (items == schema.end()) return Fail(path, "array without items");
    RETURN_IF_ERROR(CheckNode(*items, Join(path, "items")));
    const std::string list_type = schema.value("x-kubernetes-list-type", "atomic");
    if (list_type == "map") {
      const json keys = schema.value("x-kubernetes-list-map-keys", json::array());
      if (keys.empty()) return Fail(path, "list-type map without list-map-keys");
      const json required = items->value("required", json::array());
      for (const json& k : keys) {
        if (std::find(required.begin(), required.end(), k) == required.end()) {
          return Fail(path, "list-map key " + k.dump() + " must be a required field of items");
        }
      }
    } else if (list_type == "set") {
      if ((*items)["type"] == "object" || (*items)["type"] == "array") {
        return Fail(path, "list-type set needs scalar items");
      }
    } else if (list_type != "atomic") {
      return Fail(path, "unknown x-kubernetes-list-type " + list_type);
    }
  }
  if (auto p = schema.find("pattern"); p != schema.end()) {
    try {
      const std::regex re(p->get<std::string>(), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Fail(path, "bad pattern: " + std::string(e.what()));
    }
  }
  return OkStatus();
}

}  // namespace

Status ValidateAgainstSchema(const json& value, const json& schema) {
  try {
    return Validate(value, schema, "");
  } catch (const std::exception& e) {  // a malformed schema or pattern
    return InvalidArgumentError(std::string("check against schema: ") + e.what());
  }
}

Status CheckStructuralSchema(const json& schema) {
  try {
    return CheckNode(schema, "");
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("check schema: ") + e.what());
  }
}

}  // namespace xpu::api
