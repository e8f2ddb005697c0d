// YAML to JSON for configuration files that may be written in either (a JSON document is YAML
// too): one document, plain scalars resolved as YAML 1.2's core schema does, members in file
// order. No exceptions escape.
#ifndef XPU_CONTROLLER_YAML_JSON_H_
#define XPU_CONTROLLER_YAML_JSON_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu::controller {

// Reads exactly one YAML document into JSON, object members in file order. An empty document (or
// one holding only comments, or null) is an empty object. Errors (invalid-argument): YAML syntax
// ("invalid YAML at line 3, column 7: ..."), more than one document, a key that is not a scalar
// and a duplicate key (naming its path, "capabilityClasses: duplicate field"), and a document
// nested deeper than 64 levels or expanding, through aliases, to more than 200,000 nodes.
StatusOr<nlohmann::ordered_json> ParseYamlDocument(std::string_view text);

// A plain (unquoted, untagged) scalar as YAML 1.2's core schema reads it: true/false (also True,
// TRUE, ...) are booleans, decimal integers are integers (beyond int64: doubles), decimal floats
// are doubles; anything else, YAML 1.1's yes/no/on/off included, stays a string.
nlohmann::ordered_json ResolvePlainScalar(const std::string& text);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_YAML_JSON_H_
