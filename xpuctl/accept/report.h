// The report of `xpuctl accept report`: a model built from the results of several vendors
// (xpuctl/accept/results.h) against a baseline vendor, and its three renderings: a terminal table,
// JSON (the model), and one self-contained HTML page (inline CSS and SVG, no scripts, no links).
// Building and rendering are pure; every text that comes from a result is HTML-escaped in the page.
#ifndef XPU_XPUCTL_ACCEPT_REPORT_H_
#define XPU_XPUCTL_ACCEPT_REPORT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "controller/config.h"
#include "xpuctl/accept/checklist.h"
#include "xpuctl/accept/results.h"

namespace xpu::accept {

inline constexpr std::string_view kReportVersion = "xpu.dra.dev/acceptance-report/v1";

// One stage of one vendor: the status over its results and the evidence lines.
struct StageRow {
  std::string stage;
  StageStatus status = StageStatus::kNotRun;
  std::string reason;
  std::vector<std::string> evidence;
};

// A number side by side: the vendor's value and, for the ratios, its ratio to the baseline's.
struct Metric {
  std::string name;  // "train tokens/s"
  std::string unit;  // "tokens/s", "J/token", "%", "GB/s", ...
  std::optional<double> value;
  std::optional<double> baseline_value;
  // value / baseline (or value - baseline for the loss delta, in percentage points): "ratio"
  // or "difference"; absent when either side lacks the number.
  std::optional<double> versus_baseline;
  std::string versus;  // "ratio", "difference" or "" (not compared)
};

// One bus-bandwidth line: one op at one scope and world size.
struct BusCurve {
  std::string op;
  std::string scope;
  int64_t world_size = 0;
  std::vector<std::pair<double, double>> points;  // (bytes, busbw GB/s), by bytes
};

struct VendorReport {
  std::string vendor;
  bool baseline = false;
  bool passed = false;  // every stage it ran passed
  std::vector<std::string> files;
  std::vector<std::string> images;
  std::vector<std::string> nodes;
  std::vector<StageRow> stages;  // kStages order
  std::vector<Metric> metrics;
  std::vector<double> loss;
  std::vector<double> reference_loss;
  std::vector<BusCurve> bus_curves;
  std::vector<ChecklistItem> checklist;
  ReworkCost rework_cost;
};

struct Report {
  std::string baseline;
  std::vector<VendorReport> vendors;  // in the order of their first result
};

struct ReportOptions {
  std::string baseline;                        // "" = the first vendor
  const controller::Config* config = nullptr;  // --config: the support matrix; may be null
};

// The report of `results` (at least one). Errors (invalid-argument): no results; a --baseline
// vendor without a result ("--baseline \"amd\": no result of that vendor (have nvidia, huawei)").
StatusOr<Report> BuildReport(std::vector<Result> results, const ReportOptions& options);

// The terminal table: vendor x stage, the numbers side by side with the ratios against the
// baseline, the checklist and the rework cost.
std::string RenderText(const Report& report);
// The model as JSON (reportVersion kReportVersion), for tools.
nlohmann::json ReportJson(const Report& report);
// One self-contained HTML page (report_html.cc): no <script>, no <link>, no external source;
// inline CSS and two inline SVG plots (the loss curves, the bus-bandwidth curves).
std::string RenderHtml(const Report& report);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_REPORT_H_
