// A checker for the OpenAPI v3 structural schemas of the project's CRDs (api/crds.h), covering
// the keywords those schemas use, with the API server's meaning:
//   type (object, array, string, integer, number, boolean), properties, required,
//   additionalProperties (a schema), items, enum, minimum, maximum, exclusiveMinimum (boolean, as
//   in OpenAPI 3.0), minLength, maxLength (in characters), pattern (ECMAScript), minItems,
//   maxItems, maxProperties, x-kubernetes-list-type (atomic, set, map) with
//   x-kubernetes-list-map-keys, format date-time (RFC 3339; other formats are not checked), and
//   the annotation description.
// An object schema with `properties` rejects other members (the API server would prune them); an
// object schema with neither properties nor additionalProperties (metadata) accepts any members.
//
// Pure functions; no exception escapes.
#ifndef XPU_API_OPENAPI_SCHEMA_H_
#define XPU_API_OPENAPI_SCHEMA_H_

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace xpu::api {

// OK, or an invalid-argument error naming the JSON path of the first violation:
// "status.devices[2].health: unsupported value \"Sick\"; expected one of Healthy, Unhealthy,
// Unknown".
Status ValidateAgainstSchema(const nlohmann::json& value, const nlohmann::json& schema);

// Checks that a schema is structural (every node has a type; list-type map items are objects
// whose map keys are required) and uses only the keywords ValidateAgainstSchema knows, so that a
// keyword it would silently skip cannot appear. Errors name the schema path
// ("properties.status.properties.devices.items: ...").
Status CheckStructuralSchema(const nlohmann::json& schema);

}  // namespace xpu::api

#endif  // XPU_API_OPENAPI_SCHEMA_H_
