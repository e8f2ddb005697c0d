#include "xpuctl/accept/policy.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "base/name_list.h"
#include "base/text.h"
#include "controller/yaml_json.h"

namespace xpu::accept {
namespace {
namespace policy_cc {

using Ordered = nlohmann::ordered_json;

// The defaults, members in the documented order (the order "expected one of" lists them in).
const Ordered& OrderedDefaults() {
  static const Ordered kDefaults = [] {
    Ordered tolerances;
    tolerances["fp32"] = {{"rtol", 1.3e-6}, {"atol", 1e-5}};
    tolerances["bf16"] = {{"rtol", 1.6e-2}, {"atol", 1e-5}};
    tolerances["fp16"] = {{"rtol", 1e-3}, {"atol", 1e-5}};
    Ordered d;
    d["policyVersion"] = 1;
    d["operators"]["tolerances"] = tolerances;
    d["operators"]["minCosineSimilarity"] = 0.99;
    d["convergence"] = {{"steps", 40}, {"seed", 1234}, {"maxFinalLossShare", 0.02}};
    d["performance"] = {
        {"warmupSteps", 3}, {"steps", 20}, {"batchSize", 8}, {"sequenceLength", 128}};
    d["stability"] = {{"durationSeconds", 600}};
    d["collectives"] = {{"minBytes", 1048576},
                        {"maxBytes", 1073741824},
                        {"gateBytes", 268435456},
                        {"minShareOfExpected", 0.9},
                        {"expectedBusBandwidthGBps", Ordered::object()}};
    d["run"] = {{"timeoutSeconds", 3600}};
    return d;
  }();
  return kDefaults;
}

// What a number at a path may be: the same rules as deploy/acceptance/schema/policy.schema.json.
struct Leaf {
  bool integer = false;
  double min = 0;
  bool min_exclusive = false;
  std::optional<double> max;
};

// A number >= 0 (tolerances, shares, durations).
constexpr Leaf kNumber = {false, 0, false, std::nullopt};
// An integer >= `min` (and <= `max`, where given).
constexpr Leaf Integer(double min, std::optional<double> max = std::nullopt) {
  return {true, min, false, max};
}

// A map whose members the user names (vendor -> GB/s); its members are `kMapLeaf`s.
constexpr std::string_view kVendorMap = "collectives.expectedBusBandwidthGBps";
constexpr Leaf kMapLeaf = kNumber;

std::optional<Leaf> LeafAt(const std::string& path) {
  static const std::map<std::string, Leaf, std::less<>> kLeaves = [] {
    std::map<std::string, Leaf, std::less<>> leaves = {
        {"policyVersion", Integer(1, 1)},
        {"operators.minCosineSimilarity", {false, 0, false, 1}},
        {"convergence.steps", Integer(1)},
        {"convergence.seed", Integer(0)},
        {"convergence.maxFinalLossShare", kNumber},
        {"performance.warmupSteps", Integer(0)},
        {"performance.steps", Integer(1)},
        {"performance.batchSize", Integer(1)},
        {"performance.sequenceLength", Integer(1)},
        {"stability.durationSeconds", kNumber},
        {"collectives.minBytes", Integer(4)},
        {"collectives.maxBytes", Integer(4)},
        {"collectives.gateBytes", Integer(4)},
        {"collectives.minShareOfExpected", kNumber},
        {"run.timeoutSeconds", Integer(1)},
    };
    for (const char* dtype : {"fp32", "bf16", "fp16"}) {
      for (const char* tol : {"rtol", "atol"}) {
        leaves[std::string("operators.tolerances.") + dtype + "." + tol] = kNumber;
      }
    }
    return leaves;
  }();
  auto it = kLeaves.find(path);
  if (it == kLeaves.end()) return std::nullopt;
  return it->second;
}

std::string Number(double v) {
  std::ostringstream text;
  text << v;
  return text.str();
}

// "an integer >= 1", "a number >= 0 and <= 1", "1".
std::string Expected(const Leaf& leaf) {
  if (leaf.max && *leaf.max == leaf.min && !leaf.min_exclusive) return Number(leaf.min);
  std::string text = leaf.integer ? "an integer " : "a number ";
  text += (leaf.min_exclusive ? "> " : ">= ") + Number(leaf.min);
  if (leaf.max) text += " and <= " + Number(*leaf.max);
  return text;
}

Status FieldError(std::string_view source, const std::string& path, const std::string& what) {
  return InvalidArgumentError("policy " + std::string(source) + ": " +
                              (path.empty() ? "the document" : path) + ": " + what);
}

std::string Got(const Ordered& value) { return "got " + Abbreviate(value.dump(), 60); }

// A number checked against its leaf; an integral float (40.0) is stored as an integer.
StatusOr<Ordered> CheckLeaf(const Ordered& value, const Leaf& leaf, const std::string& path,
                            std::string_view source) {
  const auto bad = [&] {
    return FieldError(source, path, "expected " + Expected(leaf) + ", " + Got(value));
  };
  if (!value.is_number()) return bad();
  const double v = value.get<double>();
  if (!std::isfinite(v)) return bad();
  if (leaf.integer && (std::floor(v) != v || std::fabs(v) > 9.0e15)) return bad();
  if (v < leaf.min || (leaf.min_exclusive && v == leaf.min) || (leaf.max && v > *leaf.max)) {
    return bad();
  }
  if (leaf.integer && !value.is_number_integer()) return Ordered(static_cast<int64_t>(v));
  return value;
}

// `user` checked against the shape of `defaults` at `path` (members only those the defaults
// have, numbers as LeafAt says); returns it with integral floats made integers.
StatusOr<Ordered> Check(const Ordered& user, const Ordered& defaults, const std::string& path,
                        std::string_view source) {
  if (!defaults.is_object()) {
    const std::optional<Leaf> leaf = path.starts_with(std::string(kVendorMap) + ".")
                                         ? std::optional<Leaf>(kMapLeaf)
                                         : LeafAt(path);
    if (!leaf) return FieldError(source, path, "no rule for this key (a bug)");
    return CheckLeaf(user, *leaf, path, source);
  }
  if (!user.is_object()) return FieldError(source, path, "expected a mapping, " + Got(user));
  Ordered out = Ordered::object();
  for (const auto& [key, value] : user.items()) {
    std::string member = path;
    if (!member.empty()) member += ".";
    member += key;
    if (path == kVendorMap) {
      ASSIGN_OR_RETURN(out[key], Check(value, Ordered(0), member, source));
      continue;
    }
    if (!defaults.contains(key)) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : defaults.items()) keys.push_back(k);
      return FieldError(source, member, "unknown key; expected one of " + JoinNames(keys, ", "));
    }
    ASSIGN_OR_RETURN(out[key], Check(value, defaults.at(key), member, source));
  }
  return out;
}

}  // namespace policy_cc
}  // namespace

using policy_cc::Ordered;

Policy DefaultPolicy() {
  return Policy{nlohmann::json::parse(policy_cc::OrderedDefaults().dump())};
}

StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view source) {
  StatusOr<Ordered> user = controller::ParseYamlDocument(text);
  if (!user.ok()) return user.status().WithContext("policy " + std::string(source));
  ASSIGN_OR_RETURN(const Ordered checked,
                   policy_cc::Check(*user, policy_cc::OrderedDefaults(), "", source));
  Ordered merged = policy_cc::OrderedDefaults();
  merged.merge_patch(checked);
  const Ordered& c = merged.at("collectives");
  if (c.at("minBytes").get<double>() > c.at("maxBytes").get<double>()) {
    return policy_cc::FieldError(source, "collectives.maxBytes",
                                 "below collectives.minBytes (" + c.at("minBytes").dump() + ")");
  }
  return Policy{nlohmann::json::parse(merged.dump())};
}

StatusOr<Policy> LoadPolicyFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return NotFoundError("read policy " + path + ": cannot open the file");
  std::stringstream text;
  text << file.rdbuf();
  return ParsePolicy(text.str(), path);
}

const std::vector<std::string_view>& StageNames() {
  static const std::vector<std::string_view> kStages = {"environment", "operators", "convergence",
                                                        "performance", "power",     "stability",
                                                        "collectives"};
  return kStages;
}

StatusOr<std::vector<std::string>> ParseStages(std::string_view csv) {
  StatusOr<std::vector<std::string>> names = SplitNameList(csv);
  if (!names.ok()) return names.status().WithContext("--stages");
  if (names->empty()) return InvalidArgumentError("--stages: no stage given");
  std::vector<std::string> all;
  for (std::string_view s : StageNames()) all.emplace_back(s);
  for (const std::string& name : *names) {
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      return InvalidArgumentError("--stages: unknown stage " + QuoteText(name) +
                                  "; expected some of " + JoinNames(all, ", "));
    }
  }
  std::vector<std::string> out;
  for (const std::string& s : all) {
    if (std::find(names->begin(), names->end(), s) != names->end()) out.push_back(s);
  }
  return out;
}

double TimeoutSeconds(const Policy& policy) {
  return policy.doc.at("run").at("timeoutSeconds").get<double>();
}

}  // namespace xpu::accept
