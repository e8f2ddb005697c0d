#include "api/openapi_schema.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace xpu::api {
namespace {

using nlohmann::json;

json TestSchema() {
  return json::parse(R"({
    "type": "object",
    "required": ["name"],
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$"},
      "count": {"type": "integer", "minimum": 1, "maximum": 3},
      "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
      "on": {"type": "boolean"},
      "color": {"type": "string", "enum": ["red", "blue"]},
      "when": {"type": "string", "format": "date-time"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2,
               "x-kubernetes-list-type": "set"},
      "items": {"type": "array", "minItems": 1, "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
                "items": {"type": "object", "required": ["id"],
                          "properties": {"id": {"type": "integer"}}}},
      "labels": {"type": "object", "maxProperties": 1,
                 "additionalProperties": {"type": "string", "maxLength": 3}},
      "opaque": {"type": "object"}
    }
  })");
}

TEST_CASE("ValidateAgainstSchema accepts a value that follows every keyword") {
  const json value = json::parse(R"({
    "name": "abc", "count": 2, "ratio": 0.5, "on": true, "color": "red",
    "when": "2026-11-30T22:00:00Z", "tags": ["a", "b"], "items": [{"id": 1}, {"id": 2}],
    "labels": {"k": "v"}, "opaque": {"anything": [1, 2]}
  })");
  const Status status = ValidateAgainstSchema(value, TestSchema());
  INFO(status.ToString());
  CHECK(status.ok());
  CHECK(CheckStructuralSchema(TestSchema()).ok());
}

TEST_CASE("ValidateAgainstSchema names the path and the rule") {
  struct Case {
    std::string value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({})", "name: missing required field"},
      {R"({"name": 5})", "name: expected string, got number 5"},
      {R"({"name": ""})", "name: must be at least 1 characters"},
      {R"({"name": "abcdef"})", "name: must be at most 5 characters, got 6"},
      {R"({"name": "ab1"})", "name: \"ab1\" does not match ^[a-z]+$"},
      {R"({"name": "a", "count": 0})", "count: must be at least 1, got 0"},
      {R"({"name": "a", "count": 4})", "count: must be at most 3, got 4"},
      {R"({"name": "a", "count": 1.5})", "count: expected integer, got number 1.5"},
      {R"({"name": "a", "ratio": 0})", "ratio: must be greater than 0, got 0"},
      {R"({"name": "a", "on": "yes"})", "on: expected boolean, got string \"yes\""},
      {R"({"name": "a", "color": "green"})",
       "color: unsupported value \"green\"; expected one of red, blue"},
      {R"({"name": "a", "when": "yesterday"})", "when: \"yesterday\" is not an RFC 3339 date-time"},
      {R"({"name": "a", "tags": ["x", "x"]})", "tags[1]: duplicate entry \"x\""},
      {R"({"name": "a", "tags": ["x", "y", "z"]})", "tags: must have at most 2 items, got 3"},
      {R"({"name": "a", "items": []})", "items: must have at least 1 items, got 0"},
      {R"({"name": "a", "items": [{"id": 1}, {"id": 1}]})", "items[1]: duplicate entry with id=1"},
      {R"({"name": "a", "items": [{}]})", "items[0].id: missing required field"},
      {R"({"name": "a", "items": [{"id": 1, "x": 2}]})", "items[0].x: unknown field"},
      {R"({"name": "a", "labels": {"k": "long"}})",
       "labels[\"k\"]: must be at most 3 characters, got 4"},
      {R"({"name": "a", "labels": {"a": "1", "b": "2"}})",
       "labels: must have at most 1 members, got 2"},
      {R"({"name": "a", "typo": 1})", "typo: unknown field"},
  };
  for (const Case& c : cases) {
    const Status status = ValidateAgainstSchema(json::parse(c.value), TestSchema());
    INFO(c.value);
    REQUIRE_FALSE(status.ok());
    CHECK(status.message() == c.message);
  }
}

TEST_CASE("CheckStructuralSchema rejects what the checker or the API server would not take") {
  struct Case {
    std::string schema;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"properties": {}})", "missing type"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "oneOf": []}}})",
       "properties.a: keyword oneOf is not supported by ValidateAgainstSchema"},
      {R"({"type": "array"})", "array without items"},
      {R"({"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}}})",
       "required field \"b\" is not a property"},
      {R"({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
           "items": {"type": "object", "properties": {"id": {"type": "string"}}}})",
       "list-map key \"id\" must be a required field of items"},
      {R"({"type": "array", "x-kubernetes-list-type": "set",
           "items": {"type": "object", "properties": {}}})",
       "list-type set needs scalar items"},
      {R"({"type": "string", "pattern": "("})", "bad pattern"},
  };
  for (const Case& c : cases) {
    const Status status = CheckStructuralSchema(json::parse(c.schema));
    INFO(c.schema);
    REQUIRE_FALSE(status.ok());
    CHECK_THAT(status.message(), Catch::Matchers::StartsWith(c.message));
  }
}

}  // namespace
}  // namespace xpu::api
