#include "xpuctl/accept/report.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "base/text.h"

namespace xpu::accept {

namespace {
namespace report_cc {

using nlohmann::json;

std::string Num(const std::optional<double>& v) { return v ? FormatNumber(*v) : "?"; }
std::string Int(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }

std::vector<std::string> StageEvidence(std::string_view stage, const ResultFacts& f) {
  std::vector<std::string> out;
  if (stage == "environment") {
    const EnvironmentFacts& env = f.environment;
    out.push_back("torch " + env.torch_version + ", extension " +
                  (env.extension_version.empty() ? "none" : env.extension_version) + ", toolkit " +
                  env.toolkit_version + ", driver " + env.driver_version);
    out.push_back("claimed " + Join(env.claimed_devices, ",") + "; the framework sees " +
                  Join(env.framework_devices, ","));
  } else if (stage == "operators") {
    const OperatorFacts& ops = f.operators;
    out.push_back(std::to_string(ops.operators_passed) + "/" + std::to_string(ops.operators_total) +
                  " operator checks passed, " + std::to_string(ops.gaps.size()) + " gaps, " +
                  std::to_string(ops.fallbacks.size()) + " CPU fallbacks");
    for (const OperatorGap& g : ops.gaps) {
      out.push_back("gap " + g.op + "/" + g.dtype + ": " + Abbreviate(g.error, 160));
    }
    for (const Fallback& b : ops.fallbacks) {
      out.push_back("fallback " + b.op + ": " + Abbreviate(b.warning, 160));
    }
  } else if (stage == "convergence") {
    const ConvergenceFacts& conv = f.convergence;
    out.push_back(Int(conv.convergence_steps) + " steps, final loss " +
                  (conv.loss.empty() ? "?" : FormatNumber(conv.loss.back())) + " (reference " +
                  (conv.reference_loss.empty() ? "?" : FormatNumber(conv.reference_loss.back())) +
                  "), delta " +
                  (conv.final_loss_delta ? FormatNumber(*conv.final_loss_delta * 100) : "?") +
                  " %");
  } else if (stage == "performance") {
    const PerformanceFacts& perf = f.performance;
    out.push_back("train " + Num(perf.train_tokens_per_second) + " tokens/s, step p50 " +
                  Num(perf.step_latency_p50_ms) + " ms, p99 " + Num(perf.step_latency_p99_ms) +
                  " ms");
    out.push_back("prefill " + Num(perf.prefill_tokens_per_second) + " tokens/s, decode " +
                  Num(perf.decode_tokens_per_second) + " tokens/s, TTFT " +
                  Num(perf.time_to_first_token_ms) + " ms, TPOT " +
                  Num(perf.time_per_output_token_ms) + " ms");
  } else if (stage == "power") {
    const PowerFacts& power = f.power;
    out.push_back(Num(power.joules) + " J over " + Num(power.power_seconds) + " s, average " +
                  Num(power.average_watts) + " W, peak " + Num(power.peak_watts) + " W");
  } else if (stage == "stability") {
    const StabilityFacts& soak = f.stability;
    out.push_back(Num(soak.soak_seconds) + " s soak, " + Int(soak.soak_steps) + " steps, " +
                  Int(soak.soak_errors) + " errors, " + Int(soak.nan_steps) + " NaN steps, " +
                  Int(soak.health_events) + " health events, " + Int(soak.xids) + " XIDs");
  } else {
    const CollectiveFacts& coll = f.collectives;
    out.push_back("backend " + (coll.backend.empty() ? "?" : coll.backend) + ", " +
                  std::to_string(coll.points.size()) + " sweep points");
    if (coll.gate_bytes) {
      out.push_back("gate at " + Num(coll.gate_bytes) + " bytes: " + Num(coll.gate_measured_gbps) +
                    " GB/s bus bandwidth, expected " + Num(coll.gate_expected_gbps) + " GB/s (" +
                    (coll.gate_status.empty() ? "?" : coll.gate_status) + ")");
    }
  }
  return out;
}

std::vector<StageRow> StageRows(const VendorResults& v) {
  std::vector<StageRow> rows;
  for (std::string_view stage : kStages) {
    StageRow row{std::string(stage), v.Status(stage), "", {}};
    // Every result's reason for a stage that did not pass, the representative's evidence.
    for (const Result& r : v.results) {
      const StageResult& s = r.Stage(stage);
      if (s.status != StageStatus::kPass && !s.reason.empty()) {
        row.reason += (row.reason.empty() ? "" : "; ") + s.reason;
      }
    }
    const Result* rep = v.For(stage);
    if (rep != nullptr && rep->Stage(stage).status != StageStatus::kSkip) {
      row.evidence = StageEvidence(stage, rep->facts);
      if (v.results.size() > 1) row.evidence.insert(row.evidence.begin(), "from " + rep->file);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// The bus bandwidth at the gate size: the gate's measurement, else the all_reduce point there.
std::optional<double> GateBusBandwidth(const CollectiveFacts& f) {
  if (f.gate_measured_gbps) return f.gate_measured_gbps;
  if (!f.gate_bytes) return std::nullopt;
  std::optional<double> best;
  for (const CollectivePoint& p : f.points) {
    if (p.op == "all_reduce" && p.bytes == *f.gate_bytes) {
      best = std::max(best.value_or(0), p.bus_bandwidth_gbps);
    }
  }
  return best;
}

std::optional<double> JoulesPerToken(const VendorResults& v) {
  const Result* power = v.For("power");
  if (power == nullptr) return std::nullopt;
  if (power->facts.power.joules_per_token) return power->facts.power.joules_per_token;
  const Result* perf = v.For("performance");
  if (!power->facts.power.joules || perf == nullptr || !perf->facts.performance.tokens ||
      *perf->facts.performance.tokens <= 0) {
    return std::nullopt;
  }
  return *power->facts.power.joules / *perf->facts.performance.tokens;
}

struct MetricDef {
  std::string name;
  std::string unit;
  bool difference = false;  // compare by difference (the loss delta), else by ratio
};

// The metrics every vendor gets (the same rows for all), with each vendor's value.
std::vector<std::pair<MetricDef, std::optional<double>>> RawMetrics(
    const VendorResults& v, const std::set<std::string>& gemm_dtypes) {
  static const ResultFacts kNone;
  const auto facts = [&](std::string_view stage) -> const ResultFacts& {
    const Result* r = v.For(stage);
    return r == nullptr ? kNone : r->facts;
  };
  const PerformanceFacts& perf = facts("performance").performance;
  const ConvergenceFacts& conv = facts("convergence").convergence;
  std::vector<std::pair<MetricDef, std::optional<double>>> out = {
      {{"train tokens/s", "tokens/s"}, perf.train_tokens_per_second},
      {{"step latency p50", "ms"}, perf.step_latency_p50_ms},
      {{"step latency p99", "ms"}, perf.step_latency_p99_ms},
      {{"prefill tokens/s", "tokens/s"}, perf.prefill_tokens_per_second},
      {{"decode tokens/s", "tokens/s"}, perf.decode_tokens_per_second},
      {{"time to first token", "ms"}, perf.time_to_first_token_ms},
      {{"time per output token", "ms"}, perf.time_per_output_token_ms},
      {{"memory copy", "GB/s"}, perf.memory_copy_gbps}};
  for (const std::string& dtype : gemm_dtypes) {
    auto it = perf.gemm_tflops.find(dtype);
    out.push_back({{"GEMM " + dtype, "TFLOP/s"},
                   it == perf.gemm_tflops.end() ? std::nullopt : std::optional(it->second)});
  }
  out.push_back({{"joules per token", "J/token"}, JoulesPerToken(v)});
  out.push_back({{"average power", "W"}, facts("power").power.average_watts});
  out.push_back({{"peak power", "W"}, facts("power").power.peak_watts});
  std::optional<double> delta;
  if (conv.final_loss_delta) delta = *conv.final_loss_delta * 100;
  out.push_back({{"final loss delta", "%", true}, delta});
  out.push_back({{"bus bandwidth at the gate size", "GB/s"},
                 GateBusBandwidth(facts("collectives").collectives)});
  return out;
}

std::vector<BusCurve> BusCurves(const VendorResults& v) {
  std::map<std::tuple<std::string, std::string, int64_t>, std::map<double, double>> by;
  for (const Result& r : v.results) {
    for (const CollectivePoint& p : r.facts.collectives.points) {
      // The first result with a point wins: gang members report the same collective.
      by[{p.op, p.scope, p.world_size}].emplace(p.bytes, p.bus_bandwidth_gbps);
    }
  }
  std::vector<BusCurve> out;
  for (auto& [k, points] : by) {
    BusCurve c{std::get<0>(k), std::get<1>(k), std::get<2>(k), {}};
    c.points.assign(points.begin(), points.end());
    out.push_back(std::move(c));
  }
  return out;
}

VendorReport VendorOf(const VendorResults& v, const VendorResults& base,
                      const std::set<std::string>& gemm_dtypes, const ReportOptions& options) {
  VendorReport out;
  out.vendor = v.vendor;
  out.baseline = v.vendor == base.vendor;
  out.passed = v.Passed();
  for (const Result& r : v.results) {
    out.files.push_back(r.file);
    for (auto [list, value] : {std::pair{&out.images, &r.image}, std::pair{&out.nodes, &r.node}}) {
      if (!value->empty() && std::find(list->begin(), list->end(), *value) == list->end()) {
        list->push_back(*value);
      }
    }
  }
  out.stages = StageRows(v);
  const auto mine = RawMetrics(v, gemm_dtypes);
  const auto theirs = RawMetrics(base, gemm_dtypes);
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto& [def, value] = mine[i];
    Metric m{def.name, def.unit, value, theirs[i].second, std::nullopt, ""};
    if (!out.baseline) m.versus = def.difference ? "difference" : "ratio";
    if (!out.baseline && value && m.baseline_value) {
      if (def.difference) {
        m.versus_baseline = *value - *m.baseline_value;
      } else if (*m.baseline_value != 0) {
        m.versus_baseline = *value / *m.baseline_value;
      }
    }
    out.metrics.push_back(std::move(m));
  }
  if (const Result* r = v.For("convergence")) {
    out.loss = r->facts.convergence.loss;
    out.reference_loss = r->facts.convergence.reference_loss;
  }
  out.bus_curves = BusCurves(v);
  out.checklist = Checklist(v, options.config);
  out.rework_cost = DeriveReworkCost(v, base);
  return out;
}

// Columns padded to their widest cell, two spaces apart.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += std::string(Trim(line)) + "\n";
  }
  return out;
}

std::string Versus(const Metric& m) {
  if (!m.versus_baseline) return m.versus.empty() ? "" : "-";
  if (m.versus == "difference") {
    return (*m.versus_baseline >= 0 ? "+" : "") + FormatNumber(*m.versus_baseline) + " pp";
  }
  return FormatNumber(*m.versus_baseline) + "x";
}

json ItemJson(const ChecklistItem& i) {
  return {{"item", i.item},
          {"status", ItemStatusName(i.status)},
          {"evidence", i.evidence},
          {"whatWouldCoverIt", i.what_would_cover_it}};
}

json ReworkJson(const ReworkCost& c) {
  json out = {{"baseline", c.baseline},
              {"isBaseline", c.is_baseline},
              {"imageDiffers", c.image_differs},
              {"environmentVariables", c.env_differences},
              {"failedStages", c.failed_stages},
              {"stagesNotRun", c.not_run_stages},
              {"items", c.items}};
  // A fact set beside the baseline's: "key" and "baselineKey".
  const auto beside = [&out](std::string key, const auto& value, const auto& baseline_value) {
    out[key] = value;
    key[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(key[0])));
    out["baseline" + key] = baseline_value;
  };
  beside("image", c.image, c.baseline_image);
  beside("extensionPackage", c.extension, c.baseline_extension);
  beside("toolkit", c.toolkit, c.baseline_toolkit);
  beside("operatorGaps", c.operator_gaps, c.baseline_operator_gaps);
  beside("fallbacks", c.fallbacks, c.baseline_fallbacks);
  return out;
}

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json StagesJson(const std::vector<StageRow>& rows) {
  json out = json::array();
  for (const StageRow& s : rows) {
    out.push_back({{"stage", s.stage},
                   {"status", StageStatusName(s.status)},
                   {"reason", s.reason},
                   {"evidence", s.evidence}});
  }
  return out;
}

json MetricsJson(const std::vector<Metric>& metrics) {
  json out = json::array();
  for (const Metric& m : metrics) {
    out.push_back({{"name", m.name},
                   {"unit", m.unit},
                   {"value", Opt(m.value)},
                   {"baselineValue", Opt(m.baseline_value)},
                   {"versusBaseline", Opt(m.versus_baseline)},
                   {"versus", m.versus}});
  }
  return out;
}

json CurvesJson(const std::vector<BusCurve>& curves) {
  json out = json::array();
  for (const BusCurve& c : curves) {
    json points = json::array();
    for (const auto& [bytes, bw] : c.points) points.push_back({bytes, bw});
    out.push_back(
        {{"op", c.op}, {"scope", c.scope}, {"worldSize", c.world_size}, {"points", points}});
  }
  return out;
}

json VendorJson(const VendorReport& v) {
  json items = json::array();
  for (const ChecklistItem& i : v.checklist) items.push_back(ItemJson(i));
  return {{"vendor", v.vendor},
          {"baseline", v.baseline},
          {"passed", v.passed},
          {"stages", StagesJson(v.stages)},
          {"files", v.files},
          {"images", v.images},
          {"nodes", v.nodes},
          {"metrics", MetricsJson(v.metrics)},
          {"lossCurve", {{"loss", v.loss}, {"referenceLoss", v.reference_loss}}},
          {"busBandwidthCurves", CurvesJson(v.bus_curves)},
          {"acceptanceList", items},
          {"reworkCost", ReworkJson(v.rework_cost)}};
}

}  // namespace report_cc
using namespace report_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

StatusOr<Report> BuildReport(std::vector<Result> results, const ReportOptions& options) {
  if (results.empty()) return InvalidArgumentError("accept report: no results given");
  const std::vector<VendorResults> vendors = GroupByVendor(std::move(results));
  const VendorResults* base = &vendors.front();
  if (!options.baseline.empty()) {
    auto it = std::find_if(vendors.begin(), vendors.end(),
                           [&](const VendorResults& v) { return v.vendor == options.baseline; });
    if (it == vendors.end()) {
      std::vector<std::string> have;
      for (const VendorResults& v : vendors) have.push_back(v.vendor);
      return InvalidArgumentError("--baseline " + QuoteText(options.baseline) +
                                  ": no result of that vendor (have " + Join(have, ", ") + ")");
    }
    base = &*it;
  }
  std::set<std::string> gemm_dtypes;
  for (const VendorResults& v : vendors) {
    if (const Result* r = v.For("performance")) {
      for (const auto& [dtype, x] : r->facts.performance.gemm_tflops) gemm_dtypes.insert(dtype);
    }
  }
  Report report;
  report.baseline = base->vendor;
  for (const VendorResults& v : vendors) {
    report.vendors.push_back(VendorOf(v, *base, gemm_dtypes, options));
  }
  return report;
}

std::string RenderText(const Report& report) {
  std::ostringstream out;
  out << "xpuctl accept report: " << report.vendors.size() << " vendor(s), baseline "
      << report.baseline << "\n\n";
  std::vector<std::vector<std::string>> stages = {{"STAGE"}};
  for (const VendorReport& v : report.vendors) stages[0].push_back(v.vendor);
  for (size_t s = 0; s < kStages.size(); ++s) {
    stages.push_back({std::string(kStages[s])});
    for (const VendorReport& v : report.vendors) {
      stages.back().emplace_back(StageStatusName(v.stages[s].status));
    }
  }
  stages.push_back({"run"});
  for (const VendorReport& v : report.vendors) {
    stages.back().emplace_back(v.passed ? "passed" : "failed");
  }
  out << Table(stages) << "\n";
  std::vector<std::vector<std::string>> metrics = {{"METRIC"}};
  for (const VendorReport& v : report.vendors) metrics[0].push_back(v.vendor);
  for (const VendorReport& v : report.vendors) {
    if (!v.baseline) metrics[0].push_back(v.vendor + " vs " + report.baseline);
  }
  for (size_t m = 0; m < report.vendors.front().metrics.size(); ++m) {
    const Metric& first = report.vendors.front().metrics[m];
    metrics.push_back({first.name + " (" + first.unit + ")"});
    for (const VendorReport& v : report.vendors) metrics.back().push_back(Num(v.metrics[m].value));
    for (const VendorReport& v : report.vendors) {
      if (!v.baseline) metrics.back().push_back(Versus(v.metrics[m]));
    }
  }
  out << Table(metrics);
  for (const VendorReport& v : report.vendors) {
    out << "\n"
        << v.vendor << ": " << (v.passed ? "passed" : "failed") << ", image "
        << (v.images.empty() ? "?" : Join(v.images, ", ")) << "\n";
    for (const StageRow& row : v.stages) {
      if (!row.reason.empty()) out << "  " << row.stage << ": " << row.reason << "\n";
    }
    out << "  acceptance list:\n";
    std::vector<std::vector<std::string>> items;
    for (const ChecklistItem& i : v.checklist) {
      items.push_back({i.item, std::string(ItemStatusName(i.status)), i.evidence});
    }
    std::istringstream lines(Table(items));
    for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
    out << "  rework cost"
        << (v.rework_cost.is_baseline ? " (the baseline)" : " vs " + report.baseline)
        << (v.rework_cost.items.empty() ? ": nothing differed" : ":") << "\n";
    for (const std::string& line : v.rework_cost.items) out << "    " << line << "\n";
  }
  return out.str();
}

json ReportJson(const Report& report) {
  json vendors = json::array();
  for (const VendorReport& v : report.vendors) vendors.push_back(VendorJson(v));
  return {{"reportVersion", kReportVersion}, {"baseline", report.baseline}, {"vendors", vendors}};
}

}  // namespace xpu::accept
