// The acceptance workload's result files (deploy/acceptance/schema/result.schema.json), as
// `xpuctl accept report` reads them: the schema version checked, the required fields and the stage
// statuses checked, a typed view of what the report uses, and the raw JSON kept for evidence.
// Several results of one vendor (gang members, several nodes) are grouped per vendor. Value types,
// no I/O but LoadResultFile, no exceptions.
#ifndef XPU_XPUCTL_ACCEPT_RESULTS_H_
#define XPU_XPUCTL_ACCEPT_RESULTS_H_

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::accept {

// The only result version this xpuctl reads.
inline constexpr std::string_view kResultSchemaVersion = "xpu.dra.dev/acceptance-result/v1";

// The stages, in the order the workload runs them.
inline constexpr std::array<std::string_view, 7> kStages = {
    "environment", "operators", "convergence", "performance", "power", "stability", "collectives"};

// A stage's status as the file gives it; kNotRun for a stage the result does not hold (a partial
// run, a run of some stages only).
enum class StageStatus { kPass, kFail, kSkip, kNotRun };
std::string_view StageStatusName(StageStatus status);  // "pass", "fail", "skip", "not run"

struct OperatorGap {
  std::string op;
  std::string dtype;
  std::string error;  // the framework's own error
};

struct Fallback {
  std::string op;
  std::string warning;
};

// One entry of the collectives sweep.
struct CollectivePoint {
  std::string op;     // all_reduce, all_gather, reduce_scatter, broadcast
  std::string scope;  // node, gang
  int64_t world_size = 0;
  double bytes = 0;
  double alg_bandwidth_gbps = 0;
  double bus_bandwidth_gbps = 0;
  bool correct = true;
};

// A stage: its status and reason, the stage object as the file has it (null when not run).
struct StageResult {
  StageStatus status = StageStatus::kNotRun;
  std::string reason;
  nlohmann::json raw;
};

// The numbers and lists the report and the checklist use, one struct per stage; absent where the
// stage did not record them (a summary result, a stage not run).
struct EnvironmentFacts {
  std::string torch_version;
  std::string extension_version;  // the vendor's extension package (torch_npu ...); "" for none
  std::string toolkit_version;
  std::string driver_version;
  std::vector<std::string> claimed_devices;
  std::vector<std::string> framework_devices;
  std::map<std::string, std::string> env;  // environment.env, where the workload records it
};

struct OperatorFacts {
  int operators_total = 0;
  int operators_passed = 0;
  std::vector<OperatorGap> gaps;
  std::vector<Fallback> fallbacks;
};

struct ConvergenceFacts {
  std::optional<int64_t> convergence_steps;
  std::vector<double> loss;
  std::vector<double> reference_loss;
  std::optional<double> final_loss_delta;  // a share: 0.01 = 1 %
};

struct PerformanceFacts {
  std::optional<double> train_tokens_per_second;
  std::optional<double> step_latency_p50_ms;
  std::optional<double> step_latency_p99_ms;
  std::optional<double> prefill_tokens_per_second;
  std::optional<double> decode_tokens_per_second;
  std::optional<double> time_to_first_token_ms;
  std::optional<double> time_per_output_token_ms;
  std::optional<double> memory_copy_gbps;
  std::optional<double> tokens;
  std::map<std::string, double> gemm_tflops;  // dtype -> TFLOP/s
};

// From the driver's telemetry, filled by `accept run`.
struct PowerFacts {
  std::optional<double> joules;
  std::optional<double> average_watts;
  std::optional<double> peak_watts;
  std::optional<double> power_seconds;
  std::optional<double> joules_per_token;
};

struct StabilityFacts {
  std::optional<double> soak_seconds;
  std::optional<int64_t> soak_steps;
  std::optional<int64_t> soak_errors;
  std::optional<int64_t> nan_steps;
  std::optional<int64_t> health_events;  // a count, or the length of the list the file gives
  std::optional<int64_t> xids;
};

struct CollectiveFacts {
  std::string backend;
  std::vector<CollectivePoint> points;  // the sweep
  std::optional<double> gate_bytes;
  std::optional<double> gate_expected_gbps;
  std::optional<double> gate_measured_gbps;
  std::string gate_status;
};

struct ResultFacts {
  EnvironmentFacts environment;
  OperatorFacts operators;
  ConvergenceFacts convergence;
  PerformanceFacts performance;
  PowerFacts power;
  StabilityFacts stability;
  CollectiveFacts collectives;
};

struct Result {
  std::string file;    // where it was read from, for messages and evidence
  std::string vendor;  // "vendor", else device.type (the schema leaves it optional)
  std::string image;
  std::string device_class;  // "class"
  std::string node;
  std::string pod;
  std::string device_type;
  int64_t device_count = 0;
  std::vector<std::string> device_names;
  bool summary = false;  // the termination-message summary: stage details trimmed
  std::map<std::string, StageResult, std::less<>> stages;  // every name of kStages
  ResultFacts facts;
  nlohmann::json raw;

  // The stage `name` (one of kStages).
  const StageResult& Stage(std::string_view name) const;
};

// Checks and reads one result document. Errors (invalid-argument) read
// `result FILE: <path>: <cause>`; another version reads `result FILE: schemaVersion: "..." is not
// the version this xpuctl reads (xpu.dra.dev/acceptance-result/v1)`.
StatusOr<Result> ParseResult(const nlohmann::json& doc, const std::string& file);
// Reads and parses a file; not-found for a missing file, invalid-argument for bad JSON.
StatusOr<Result> LoadResultFile(const std::string& path);

// The results of one vendor, in the order given.
struct VendorResults {
  std::string vendor;
  std::vector<Result> results;

  // The vendor's status of a stage over its results: fail when one failed, else pass when one
  // passed, else skip when one skipped, else not run.
  StageStatus Status(std::string_view stage) const;
  // The first result that ran `stage` (pass or fail), else the first that holds it, else null:
  // the one whose numbers stand for the vendor.
  const Result* For(std::string_view stage) const;
  // Every stage it ran passed (skipped and not-run stages do not count against it).
  bool Passed() const;
};

// Groups results per vendor, vendors in the order of their first result.
std::vector<VendorResults> GroupByVendor(std::vector<Result> results);

// A number for reports and evidence: `digits` significant digits, no exponent between 1e-4 and
// 1e9, no trailing zeros: 1234.5678 -> "1235", 0.0123456 -> "0.01235", 2.0 -> "2".
std::string FormatNumber(double value, int digits = 4);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_RESULTS_H_
