#include "controller/yaml_json.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"

namespace xpu::controller {
namespace {

using Catch::Matchers::Contains;
using OrderedJson = nlohmann::ordered_json;

OrderedJson MustParseYaml(const std::string& text) {
  return xpu::testing::ParsedValue(ParseYamlDocument(text), text);
}

std::string YamlError(const std::string& text) {
  return xpu::testing::ParseErrorMessage(ParseYamlDocument(text), text);
}

TEST_CASE("ParseYamlDocument reads YAML and JSON into JSON, members in file order") {
  const OrderedJson yaml = MustParseYaml("b: 1\na: [x, {c: true}]\nz:\n");
  CHECK(yaml.dump() == R"({"b":1,"a":["x",{"c":true}],"z":null})");
  const OrderedJson json = MustParseYaml(R"({"b": 1, "a": ["x", {"c": true}], "z": null})");
  CHECK(json == yaml);
  // Quoted and tagged scalars stay strings.
  CHECK(MustParseYaml("a: \"1\"\nb: '2'\nc: !!str 3\n").dump() == R"({"a":"1","b":"2","c":"3"})");
}

TEST_CASE("ParseYamlDocument reads an empty document as an empty object") {
  CHECK(MustParseYaml("") == OrderedJson::object());
  CHECK(MustParseYaml("# only a comment\n") == OrderedJson::object());
  CHECK(MustParseYaml("~\n") == OrderedJson::object());
  CHECK(MustParseYaml("---\n") == OrderedJson::object());
}

TEST_CASE("ParseYamlDocument names the problem and where it is") {
  const std::vector<xpu::testing::ParseErrorCase> cases = {
      {"a: 1\na: 2\n", "a: duplicate field"},
      {"a: {b: 1, b: 2}\n", "a.b: duplicate field"},
      {"a: [{b: 1}, {c: 1, c: 2}]\n", "a[1].c: duplicate field"},
      {"a: {[1, 2]: x}\n", "a: keys must be strings (line 1, column 5)"},
      {"a: 1\n---\nb: 2\n", "expected one document, got 2"},
      {"a: [x\n", "invalid YAML at line"},
      {"a: &x [*x]\n", "a[0][0]"},  // an alias to its own node
  };
  xpu::testing::CheckParseErrors(YamlError, cases);
  std::string many;
  for (int i = 0; i < 70; ++i) many += "---\na: 1\n";
  CHECK(YamlError(many) == "expected one document, got more than 64");
}

TEST_CASE("ParseYamlDocument stops aliases that expand without bound") {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int j = 0; j < 9; ++j) text += ", " + prev;
    text += "]\n";
  }
  CHECK_THAT(YamlError(text), Contains("document too large"));
  CHECK_THAT(YamlError("a: &x [*x]\n"), Contains("nested too deeply"));
  // Aliases within the limits are fine.
  CHECK(MustParseYaml("a: &x [1, 2]\nb: *x\n").dump() == R"({"a":[1,2],"b":[1,2]})");
}

TEST_CASE("ResolvePlainScalar reads plain scalars as YAML 1.2 core does") {
  CHECK(ResolvePlainScalar("true") == true);
  CHECK(ResolvePlainScalar("True") == true);
  CHECK(ResolvePlainScalar("FALSE") == false);
  CHECK(ResolvePlainScalar("42") == 42);
  CHECK(ResolvePlainScalar("+42") == 42);
  CHECK(ResolvePlainScalar("-7") == -7);
  CHECK(ResolvePlainScalar("42").is_number_integer());
  CHECK(ResolvePlainScalar("4.5") == 4.5);
  CHECK(ResolvePlainScalar("1e3") == 1000.0);
  CHECK(ResolvePlainScalar("1e3").is_number_float());
  CHECK(ResolvePlainScalar("99999999999999999999").is_number_float());  // beyond int64
  // YAML 1.1's booleans, and anything not quite a number, stay strings.
  for (const char* text : {"yes", "no", "on", "off", "tRUE", "1e", "1.2.3", "0x10", "64Gi", "-"}) {
    INFO(text);
    CHECK(ResolvePlainScalar(text) == text);
  }
}

}  // namespace
}  // namespace xpu::controller
