#include "api/codec/codec.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/testing/temp_file.h"
#include "base/testing/require_ok.h"

namespace xpu::api::codec {
namespace {

using nlohmann::json;

// The reject policy: no `unknown` member.
struct Settings {
  std::string name;
  int64_t count = 0;
  std::optional<bool> strict;
  std::vector<std::string> tags;
};

template <typename V, FieldsOf<Settings> S>
void VisitFields(V& v, S& self) {
  v.Required("name", self.name);
  v.Optional("count", self.count);
  v.Optional("strict", self.strict);
  v.Always("tags", self.tags);
}

// The keep policy.
struct Object {
  std::string name;
  std::optional<json> selector;
  json unknown = nullptr;
};

template <typename V, FieldsOf<Object> S>
void VisitFields(V& v, S& self) {
  v.Optional("name", self.name);
  v.Optional("selector", self.selector, kJsonObject);
}

std::string Error(const json& doc) { return Decode<Settings>(doc).status().message(); }

TEST_CASE("A struct without `unknown` rejects members its field list does not name") {
  StatusOr<Settings> settings = Decode<Settings>(json{{"name", "a"}, {"count", 3}});
  REQUIRE_OK(settings);
  CHECK(settings->count == 3);
  // A misspelt member is named before the member it should have been.
  CHECK(Error({{"nmae", "a"}}) == "nmae: unknown field; expected one of name, count, strict, tags");
  CHECK(Error({{"count", 1}}) == "name: missing required field");
  // Null is a value like any other.
  CHECK_THAT(Error({{"name", nullptr}}),
             Catch::Matchers::StartsWith("name: expected a string, got null"));
  CHECK(Error(json::array()) == "expected an object, got array");
}

TEST_CASE("Decode gives its errors the code the caller names") {
  CHECK(Decode<Settings>(json::object()).status().code() == StatusCode::kInvalidArgument);
  const Status corrupt = Decode<Settings>(json::object(), StatusCode::kDataLoss).status();
  CHECK(corrupt.code() == StatusCode::kDataLoss);
  CHECK(corrupt.message() == "name: missing required field");
}

TEST_CASE("Optional members are written when set, Always members always") {
  CHECK(Encode(Settings{"a", 0, std::nullopt, {}}) == json{{"name", "a"}, {"tags", json::array()}});
  CHECK(Encode(Settings{"a", 2, false, {"x"}}) ==
        json{{"name", "a"}, {"count", 2}, {"strict", false}, {"tags", {"x"}}});
}

TEST_CASE("A struct with `unknown` keeps other members and reads null as unset") {
  const json doc = {{"name", nullptr}, {"selector", {{"a", 1}}}, {"future", {1, 2}}};
  StatusOr<Object> object = Decode<Object>(doc);
  REQUIRE_OK(object);
  CHECK(object->name.empty());
  CHECK(object->unknown == json{{"future", {1, 2}}});
  CHECK(Encode(*object) == json{{"selector", {{"a", 1}}}, {"future", {1, 2}}});
  CHECK(Decode<Object>(json{{"selector", 1}}).status().message() ==
        "selector: expected an object, got number 1");
}

TEST_CASE("Field lists give the schema of a struct") {
  CHECK(SchemaFor(Tag<Settings>{}) ==
        json::parse(R"({"type": "object", "required": ["name"], "properties": {
          "name": {"type": "string"}, "count": {"type": "integer", "format": "int64"},
          "strict": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}}})"));
}

TEST_CASE("ReadJsonFile starts every error with the context") {
  SECTION("a valid file") {
    testing::TempFile file(R"({"name": "x"})");
    StatusOr<json> doc = ReadJsonFile(file.path(), "read x");
    REQUIRE_OK(doc);
    CHECK(*doc == json{{"name", "x"}});
  }
  SECTION("a missing file") {
    const Status status = ReadJsonFile("/nonexistent/x.json", "read x").status();
    CHECK(status.code() == StatusCode::kNotFound);
    CHECK(status.message() == "read x: no such file or directory");
  }
  SECTION("a directory") {
    const Status status = ReadJsonFile("/tmp", "read x").status();
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Matchers::StartsWith("read x: "));
  }
  SECTION("a syntax error gives the byte position") {
    testing::TempFile file("{\"name\": \"x\",\n \"devices\": [}");
    const Status status = ReadJsonFile(file.path(), "read x").status();
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(status.message() ==
          "read x: invalid JSON at byte 28: parse error at line 2, column 14: syntax error while "
          "parsing value - unexpected '}'; expected '[', '{', or a literal");
  }
}

}  // namespace
}  // namespace xpu::api::codec
