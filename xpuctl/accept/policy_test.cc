#include "xpuctl/accept/policy.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/skip.h"

namespace xpu::accept {
namespace {

using nlohmann::json;
using testing::ParsedValue;
using testing::ParseErrorMessage;

TEST_CASE("the built-in defaults are the contract's and the repository's default file",
          "[accept][policy]") {
  const json d = DefaultPolicy().doc;
  CHECK(d.at("policyVersion") == 1);
  const json& tol = d.at("operators").at("tolerances");
  // torch.testing's defaults per dtype.
  CHECK(tol.at("fp32") == json({{"rtol", 1.3e-6}, {"atol", 1e-5}}));
  CHECK(tol.at("bf16") == json({{"rtol", 1.6e-2}, {"atol", 1e-5}}));
  CHECK(tol.at("fp16") == json({{"rtol", 1e-3}, {"atol", 1e-5}}));
  CHECK(d.at("operators").at("minCosineSimilarity") == 0.99);
  CHECK(d.at("convergence") == json({{"steps", 40}, {"seed", 1234}, {"maxFinalLossShare", 0.02}}));
  CHECK(d.at("performance") ==
        json({{"warmupSteps", 3}, {"steps", 20}, {"batchSize", 8}, {"sequenceLength", 128}}));
  CHECK(d.at("stability") == json({{"durationSeconds", 600}}));
  CHECK(d.at("collectives") == json({{"minBytes", 1048576},
                                     {"maxBytes", 1073741824},
                                     {"gateBytes", 268435456},
                                     {"minShareOfExpected", 0.9},
                                     {"expectedBusBandwidthGBps", json::object()}}));
  CHECK(d.at("run") == json({{"timeoutSeconds", 3600}}));
  CHECK(d.size() == 7);
  CHECK(TimeoutSeconds(DefaultPolicy()) == 3600);

  const std::string path = std::string(XPU_SOURCE_DIR) + "/deploy/acceptance/policy.default.json";
  if (!std::filesystem::exists(path)) XPU_SKIP("no " + path);
  std::ifstream file(path);
  const json in_repo = json::parse(file);
  CHECK(in_repo == d);
  // The file also parses as a policy and changes nothing.
  std::ifstream again(path);
  const std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  CHECK(ParsedValue(ParsePolicy(text, path), text).doc == d);
}

// The defaults the schema documents, as a policy document: "default" of every leaf of its
// "properties", objects as objects.
json SchemaDefaults(const json& schema) {
  if (!schema.contains("properties")) return schema.value("default", json());
  json out = json::object();
  for (const auto& [key, sub] : schema.at("properties").items()) out[key] = SchemaDefaults(sub);
  return out;
}

TEST_CASE("the policy schema has the keys and defaults of the built-in policy",
          "[accept][policy]") {
  const std::string path =
      std::string(XPU_SOURCE_DIR) + "/deploy/acceptance/schema/policy.schema.json";
  if (!std::filesystem::exists(path)) XPU_SKIP("no " + path);
  std::ifstream file(path);
  const json schema = json::parse(file);
  CHECK(schema.at("additionalProperties") == false);
  json want = DefaultPolicy().doc;
  // The vendor map documents its members, not a default.
  want["collectives"]["expectedBusBandwidthGBps"] = json::object();
  CHECK(SchemaDefaults(schema) == want);
}

TEST_CASE("a policy file is merged over the defaults, YAML or JSON", "[accept][policy]") {
  const std::string yaml =
      "operators:\n"
      "  tolerances: {bf16: {rtol: 0.05}}\n"
      "convergence: {steps: 10.0}\n"
      "collectives:\n"
      "  expectedBusBandwidthGBps: {nvidia: 400, huawei: 180.5}\n"
      "run: {timeoutSeconds: 90}\n";
  const Policy p = ParsedValue(ParsePolicy(yaml, "p.yaml"), yaml);
  const json& tol = p.doc.at("operators").at("tolerances");
  CHECK(tol.at("bf16") == json({{"rtol", 0.05}, {"atol", 1e-5}}));  // atol kept
  CHECK(tol.at("fp32") == DefaultPolicy().doc["operators"]["tolerances"]["fp32"]);
  CHECK(p.doc["operators"]["minCosineSimilarity"] == 0.99);
  CHECK(p.doc["convergence"]["steps"].is_number_integer());  // 10.0 read as the integer 10
  CHECK(p.doc["convergence"]["steps"] == 10);
  CHECK(p.doc["convergence"]["seed"] == 1234);
  CHECK(p.doc["collectives"]["expectedBusBandwidthGBps"] ==
        json({{"nvidia", 400}, {"huawei", 180.5}}));
  CHECK(p.doc["collectives"]["gateBytes"] == 268435456);
  CHECK(TimeoutSeconds(p) == 90);

  const std::string text = R"({"stability": {"durationSeconds": 5}, "policyVersion": 1})";
  const Policy j = ParsedValue(ParsePolicy(text, "p.json"), text);
  CHECK(j.doc["stability"]["durationSeconds"] == 5);
  json want = DefaultPolicy().doc;
  want["stability"]["durationSeconds"] = 5;
  CHECK(j.doc == want);

  for (const char* empty : {"", "# nothing\n", "{}"}) {
    CHECK(ParsedValue(ParsePolicy(empty, "e.yaml"), empty).doc == DefaultPolicy().doc);
  }
}

TEST_CASE("policy errors name the file and the key", "[accept][policy]") {
  const auto error = [](const std::string& text) {
    return ParseErrorMessage(ParsePolicy(text, "bad.yaml"), text);
  };
  using Catch::Matchers::StartsWith;
  // The policy text, and the message after "policy bad.yaml: " that it gives.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bogusThreshold: 1\n",
       "bogusThreshold: unknown key; expected one of policyVersion, operators, convergence, "
       "performance, stability, collectives, run"},
      {"operators: {tolerances: {fp64: {rtol: 1}}}",
       "operators.tolerances.fp64: unknown key; expected one of fp32, bf16, fp16"},
      {"operators: {tolerances: {fp32: {rtol: x}}}",
       "operators.tolerances.fp32.rtol: expected a number >= 0, got \"x\""},
      {"operators: {tolerances: {fp32: {rtol: -1e-3}}}",
       "operators.tolerances.fp32.rtol: expected a number >= 0, got -0.001"},
      {"operators: {tolerances: {fp32: {btol: 1}}}",
       "operators.tolerances.fp32.btol: unknown key; expected one of rtol, atol"},
      {"operators: {minCosineSimilarity: 1.5}",
       "operators.minCosineSimilarity: expected a number >= 0 and <= 1, got 1.5"},
      {"operators: 3", "operators: expected a mapping, got 3"},
      {"operators: {tolerances: [1, 2]}", "operators.tolerances: expected a mapping, got [1,2]"},
      {"convergence: {steps: 2.5}", "convergence.steps: expected an integer >= 1, got 2.5"},
      {"convergence: {steps: 0}", "convergence.steps: expected an integer >= 1, got 0"},
      {"convergence: {seed:}", "convergence.seed: expected an integer >= 0, got null"},
      {"performance: {batchSize: true}",
       "performance.batchSize: expected an integer >= 1, got true"},
      {"stability: {durationSeconds: \"600\"}",
       "stability.durationSeconds: expected a number >= 0, got \"600\""},
      {"collectives: {expectedBusBandwidthGBps: {nvidia: -1}}",
       "collectives.expectedBusBandwidthGBps.nvidia: expected a number >= 0, got -1"},
      {"collectives: {expectedBusBandwidthGBps: [400]}",
       "collectives.expectedBusBandwidthGBps: expected a mapping, got [400]"},
      {"collectives: {minBytes: 4096, maxBytes: 1024}",
       "collectives.maxBytes: below collectives.minBytes (4096)"},
      {"collectives: {minShareOfExpected: -0.5}",
       "collectives.minShareOfExpected: expected a number >= 0, got -0.5"},
      {"collectives: {gateBytes: 2}", "collectives.gateBytes: expected an integer >= 4, got 2"},
      {"run: {timeoutSeconds: 0}", "run.timeoutSeconds: expected an integer >= 1, got 0"},
      {"run: {timeoutSeconds: 1.5}", "run.timeoutSeconds: expected an integer >= 1, got 1.5"},
      {"policyVersion: 2", "policyVersion: expected 1, got 2"},
      {"[1, 2]", "the document: expected a mapping, got [1,2]"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK(error(text) == "policy bad.yaml: " + message);
  }
  CHECK_THAT(error("a: [1\n"), StartsWith("policy bad.yaml: invalid YAML"));
  CHECK_THAT(error("run: {timeoutSeconds: 1}\nrun: {timeoutSeconds: 2}\n"),
             StartsWith("policy bad.yaml: run: duplicate field"));

  const StatusOr<Policy> missing = LoadPolicyFile("/nonexistent/policy.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "read policy /nonexistent/policy.yaml: cannot open the file");
}

TEST_CASE("stages: every one in the order they run, or a chosen few", "[accept][policy]") {
  CHECK(StageNames() == std::vector<std::string_view>{"environment", "operators", "convergence",
                                                      "performance", "power", "stability",
                                                      "collectives"});
  // Given in any order, run in theirs.
  CHECK(testing::RequireValue(ParseStages("collectives,operators")) ==
        std::vector<std::string>{"operators", "collectives"});
  CHECK(testing::RequireValue(ParseStages("power")) == std::vector<std::string>{"power"});
  const auto error = [](const std::string& csv) {
    return ParseErrorMessage(ParseStages(csv), csv);
  };
  CHECK(error("operators,bogus") ==
        "--stages: unknown stage \"bogus\"; expected some of environment, operators, "
        "convergence, performance, power, stability, collectives");
  CHECK(error("") == "--stages: no stage given");
  CHECK_THAT(error("power,power"), Catch::Matchers::StartsWith("--stages: "));
  CHECK_THAT(error("power,,stability"), Catch::Matchers::StartsWith("--stages: "));
}

}  // namespace
}  // namespace xpu::accept
