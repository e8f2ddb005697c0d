// The acceptance kit's policy: every threshold the workload and `xpuctl accept` judge by, with
// documented defaults (deploy/acceptance/policy.default.json, whose JSON Schema is
// deploy/acceptance/schema/policy.schema.json; docs/acceptance.md explains each):
//
//   policyVersion: 1
//   operators:   {tolerances: {fp32: {rtol, atol}, bf16: {...}, fp16: {...}}, minCosineSimilarity}
//   convergence: {steps, seed, maxFinalLossShare}
//   performance: {warmupSteps, steps, batchSize, sequenceLength}
//   stability:   {durationSeconds}
//   collectives: {minBytes, maxBytes, gateBytes, minShareOfExpected,
//                 expectedBusBandwidthGBps: {<vendor>: GB/s}}
//   run:         {timeoutSeconds}
//
// A user's file (YAML or JSON) may give any subset of the keys; it is merged over the defaults
// (objects member by member, as a JSON merge patch). Unknown keys, wrong types and values out of
// range are errors naming the file and the dotted path of the key. The stages are named here
// too, in the order the workload runs them. Pure; no exceptions.
#ifndef XPU_XPUCTL_ACCEPT_POLICY_H_
#define XPU_XPUCTL_ACCEPT_POLICY_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::accept {

// The effective policy: the defaults with the user's file merged over them. The workload gets it
// as compact JSON (XPU_ACCEPT_POLICY).
struct Policy {
  nlohmann::json doc;
};

// The defaults: the contents of deploy/acceptance/policy.default.json.
Policy DefaultPolicy();

// Reads a policy document (YAML or JSON; empty: the defaults) and merges it over the defaults.
// Errors (invalid argument) read "policy SOURCE: <dotted.path>: ...":
//   "policy bad.yaml: bogusThreshold: unknown key; expected one of policyVersion, operators, ..."
//   "policy p.json: operators.tolerances.fp32.rtol: expected a number >= 0, got \"x\""
StatusOr<Policy> ParsePolicy(std::string_view text, std::string_view source);
// Reads `path` and parses it with the path as the source; a file that cannot be read is a
// not-found error "read policy PATH: cannot open the file".
StatusOr<Policy> LoadPolicyFile(const std::string& path);

// The stages in the order they run: environment, operators, convergence, performance, power,
// stability, collectives.
const std::vector<std::string_view>& StageNames();
// A comma-separated list of stages (--stages), in the order StageNames gives, each once. Errors
// name the flag and the stage: "--stages: unknown stage \"bogus\"; expected some of
// environment, operators, ...".
StatusOr<std::vector<std::string>> ParseStages(std::string_view csv);

// run.timeoutSeconds: how long `accept run` waits for the Jobs unless --timeout says otherwise.
double TimeoutSeconds(const Policy& policy);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_POLICY_H_
