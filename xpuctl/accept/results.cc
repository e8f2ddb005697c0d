#include "xpuctl/accept/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "base/atomic_file.h"
#include "base/enum_names.h"
#include "base/text.h"

namespace xpu::accept {

namespace {
namespace results_cc {

using nlohmann::json;

// StageStatus's names, in value order; "not run" is never read from a file.
constexpr std::string_view kStageStatusNames[] = {"pass", "fail", "skip", "not run"};
static_assert(NamesCover(kStageStatusNames, StageStatus::kNotRun));

std::string TypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

// Reads the members of one object, naming `path.member` in errors.
class Reader {
 public:
  Reader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  std::string Path(std::string_view member) const {
    return path_.empty() ? std::string(member) : path_ + "." + std::string(member);
  }
  const json* Find(std::string_view member) const {
    if (!obj_.is_object()) return nullptr;
    auto it = obj_.find(member);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  Status Wrong(std::string_view member, std::string_view want, const json& got) const {
    return InvalidArgumentError(Path(member) + ": expected " + std::string(want) + ", got " +
                                TypeName(got) + " " + Abbreviate(got.dump(), 60));
  }
  Status String(std::string_view member, std::string* out) const {
    const json* v = Find(member);
    if (v == nullptr) return Status();
    if (!v->is_string()) return Wrong(member, "a string", *v);
    *out = v->get<std::string>();
    return Status();
  }
  Status Number(std::string_view member, std::optional<double>* out) const {
    const json* v = Find(member);
    if (v == nullptr) return Status();
    if (!v->is_number() || v->is_boolean()) return Wrong(member, "a number", *v);
    *out = v->get<double>();
    return Status();
  }
  Status Integer(std::string_view member, std::optional<int64_t>* out) const {
    std::optional<double> d;
    RETURN_IF_ERROR(Number(member, &d));
    if (d) *out = static_cast<int64_t>(std::llround(*d));
    return Status();
  }
  // A count written as a number or as the list of the things counted.
  Status Count(std::string_view member, std::optional<int64_t>* out) const {
    const json* v = Find(member);
    if (v != nullptr && v->is_array()) {
      *out = static_cast<int64_t>(v->size());
      return Status();
    }
    return Integer(member, out);
  }
  Status Strings(std::string_view member, std::vector<std::string>* out) const {
    const json* v = Find(member);
    if (v == nullptr) return Status();
    if (!v->is_array()) return Wrong(member, "a list of strings", *v);
    for (const json& s : *v) {
      if (!s.is_string()) return Wrong(member, "a list of strings", *v);
      out->push_back(s.get<std::string>());
    }
    return Status();
  }
  Status Numbers(std::string_view member, std::vector<double>* out) const {
    const json* v = Find(member);
    if (v == nullptr) return Status();
    if (!v->is_array()) return Wrong(member, "a list of numbers", *v);
    for (const json& x : *v) {
      if (!x.is_number() || x.is_boolean()) return Wrong(member, "a list of numbers", *v);
      out->push_back(x.get<double>());
    }
    return Status();
  }
  // A list of objects, each read by `read(Reader&)`.
  template <typename F>
  Status Objects(std::string_view member, F read) const {
    const json* v = Find(member);
    if (v == nullptr) return Status();
    if (!v->is_array()) return Wrong(member, "a list", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      const std::string at = Path(member) + "[" + std::to_string(i) + "]";
      if (!(*v)[i].is_object()) {
        return InvalidArgumentError(at + ": expected an object, got " + TypeName((*v)[i]));
      }
      RETURN_IF_ERROR(read(Reader((*v)[i], at)));
    }
    return Status();
  }
  Reader Child(std::string_view member) const {
    const json* v = Find(member);
    static const json kEmpty = json::object();
    return Reader(v != nullptr && v->is_object() ? *v : kEmpty, Path(member));
  }

 private:
  const json& obj_;
  std::string path_;
};

Status ReadEnvironment(const Reader& r, EnvironmentFacts* f) {
  const Reader versions = r.Child("versions");
  RETURN_IF_ERROR(versions.String("torch", &f->torch_version));
  RETURN_IF_ERROR(versions.String("extension", &f->extension_version));
  RETURN_IF_ERROR(versions.String("toolkit", &f->toolkit_version));
  RETURN_IF_ERROR(r.String("driverVersion", &f->driver_version));
  RETURN_IF_ERROR(r.Strings("claimedDevices", &f->claimed_devices));
  RETURN_IF_ERROR(r.Strings("frameworkDevices", &f->framework_devices));
  if (const json* env = r.Find("env"); env != nullptr && env->is_object()) {
    for (const auto& [name, value] : env->items()) {
      f->env[name] = value.is_string() ? value.get<std::string>() : value.dump();
    }
  }
  return Status();
}

Status ReadOperators(const Reader& r, OperatorFacts* f) {
  const auto read_op = [&](const Reader& op) -> Status {
    std::string status;
    RETURN_IF_ERROR(op.String("status", &status));
    ++f->operators_total;
    if (status == "pass") ++f->operators_passed;
    return Status();
  };
  RETURN_IF_ERROR(r.Objects("operators", read_op));
  const auto read_gap = [&](const Reader& g) -> Status {
    OperatorGap gap;
    RETURN_IF_ERROR(g.String("op", &gap.op));
    RETURN_IF_ERROR(g.String("dtype", &gap.dtype));
    RETURN_IF_ERROR(g.String("error", &gap.error));
    f->gaps.push_back(std::move(gap));
    return Status();
  };
  RETURN_IF_ERROR(r.Objects("gaps", read_gap));
  return r.Objects("fallbacks", [&](const Reader& b) -> Status {
    Fallback fb;
    RETURN_IF_ERROR(b.String("op", &fb.op));
    RETURN_IF_ERROR(b.String("warning", &fb.warning));
    f->fallbacks.push_back(std::move(fb));
    return Status();
  });
}

Status ReadConvergence(const Reader& r, ConvergenceFacts* f) {
  RETURN_IF_ERROR(r.Integer("steps", &f->convergence_steps));
  RETURN_IF_ERROR(r.Numbers("loss", &f->loss));
  RETURN_IF_ERROR(r.Numbers("referenceLoss", &f->reference_loss));
  return r.Number("finalLossDelta", &f->final_loss_delta);
}

Status ReadPerformance(const Reader& r, PerformanceFacts* f) {
  for (auto [member, out] :
       {std::pair{"trainTokensPerSecond", &f->train_tokens_per_second},
        std::pair{"stepLatencyP50Ms", &f->step_latency_p50_ms},
        std::pair{"stepLatencyP99Ms", &f->step_latency_p99_ms},
        std::pair{"prefillTokensPerSecond", &f->prefill_tokens_per_second},
        std::pair{"decodeTokensPerSecond", &f->decode_tokens_per_second},
        std::pair{"timeToFirstTokenMs", &f->time_to_first_token_ms},
        std::pair{"timePerOutputTokenMs", &f->time_per_output_token_ms},
        std::pair{"memoryCopyGBps", &f->memory_copy_gbps}, std::pair{"tokens", &f->tokens}}) {
    RETURN_IF_ERROR(r.Number(member, out));
  }
  if (const json* g = r.Find("gemmTflops"); g != nullptr) {
    if (!g->is_object()) return r.Wrong("gemmTflops", "an object of numbers", *g);
    const Reader gemm = r.Child("gemmTflops");
    for (const auto& [dtype, value] : g->items()) {
      std::optional<double> x;
      RETURN_IF_ERROR(gemm.Number(dtype, &x));
      if (x) f->gemm_tflops[dtype] = *x;
    }
  }
  return Status();
}

Status ReadPower(const Reader& r, PowerFacts* f) {
  for (auto [member, out] :
       {std::pair{"joules", &f->joules}, std::pair{"averageWatts", &f->average_watts},
        std::pair{"peakWatts", &f->peak_watts}, std::pair{"seconds", &f->power_seconds},
        std::pair{"joulesPerToken", &f->joules_per_token}}) {
    RETURN_IF_ERROR(r.Number(member, out));
  }
  return Status();
}

Status ReadStability(const Reader& r, StabilityFacts* f) {
  RETURN_IF_ERROR(r.Number("durationSeconds", &f->soak_seconds));
  RETURN_IF_ERROR(r.Integer("steps", &f->soak_steps));
  RETURN_IF_ERROR(r.Count("errors", &f->soak_errors));
  RETURN_IF_ERROR(r.Count("nanSteps", &f->nan_steps));
  RETURN_IF_ERROR(r.Count("healthEvents", &f->health_events));
  return r.Count("xids", &f->xids);
}

Status ReadCollectives(const Reader& r, CollectiveFacts* f) {
  RETURN_IF_ERROR(r.String("backend", &f->backend));
  const auto read_point = [&](const Reader& e) -> Status {
    CollectivePoint p;
    std::optional<int64_t> n;
    std::optional<double> bytes, alg, bus;
    RETURN_IF_ERROR(e.String("op", &p.op));
    RETURN_IF_ERROR(e.String("scope", &p.scope));
    RETURN_IF_ERROR(e.Integer("worldSize", &n));
    RETURN_IF_ERROR(e.Number("bytes", &bytes));
    RETURN_IF_ERROR(e.Number("algBandwidthGBps", &alg));
    RETURN_IF_ERROR(e.Number("busBandwidthGBps", &bus));
    if (const json* c = e.Find("correct"); c != nullptr && c->is_boolean()) {
      p.correct = c->get<bool>();
    }
    if (!bytes || !bus) return Status();  // not a sweep point the curves can draw
    p.world_size = n.value_or(0);
    p.bytes = *bytes;
    p.alg_bandwidth_gbps = alg.value_or(0);
    p.bus_bandwidth_gbps = *bus;
    f->points.push_back(std::move(p));
    return Status();
  };
  RETURN_IF_ERROR(r.Objects("results", read_point));
  const Reader gate = r.Child("gate");
  RETURN_IF_ERROR(gate.Number("bytes", &f->gate_bytes));
  RETURN_IF_ERROR(gate.Number("expectedBusBandwidthGBps", &f->gate_expected_gbps));
  RETURN_IF_ERROR(gate.Number("measuredBusBandwidthGBps", &f->gate_measured_gbps));
  return gate.String("status", &f->gate_status);
}

Status ReadStage(const Reader& stages, std::string_view name, Result* out) {
  StageResult& stage = out->stages[std::string(name)];
  const json* v = stages.Find(name);
  if (v == nullptr) return Status();  // not run
  if (!v->is_object()) return stages.Wrong(name, "an object", *v);
  const Reader r = stages.Child(name);
  std::string status;
  RETURN_IF_ERROR(r.String("status", &status));
  const std::optional<StageStatus> parsed = ValueNamed<StageStatus>(kStageStatusNames, status);
  if (!parsed || *parsed == StageStatus::kNotRun) {
    return InvalidArgumentError(r.Path("status") + ": expected pass, fail or skip, got " +
                                QuoteText(status));
  }
  stage.status = *parsed;
  RETURN_IF_ERROR(r.String("reason", &stage.reason));
  stage.raw = *v;
  ResultFacts* f = &out->facts;
  if (name == "environment") return ReadEnvironment(r, &f->environment);
  if (name == "operators") return ReadOperators(r, &f->operators);
  if (name == "convergence") return ReadConvergence(r, &f->convergence);
  if (name == "performance") return ReadPerformance(r, &f->performance);
  if (name == "power") return ReadPower(r, &f->power);
  if (name == "stability") return ReadStability(r, &f->stability);
  return ReadCollectives(r, &f->collectives);
}

Status ReadResult(const json& doc, Result* out) {
  if (!doc.is_object()) return InvalidArgumentError("expected a JSON object, got " + TypeName(doc));
  const Reader r(doc, "");
  const json* version = r.Find("schemaVersion");
  if (version == nullptr) return InvalidArgumentError("schemaVersion: required");
  if (!version->is_string() || version->get<std::string>() != kResultSchemaVersion) {
    return InvalidArgumentError("schemaVersion: " + Abbreviate(version->dump(), 80) +
                                " is not the version this xpuctl reads (" +
                                std::string(kResultSchemaVersion) + ")");
  }
  RETURN_IF_ERROR(r.String("vendor", &out->vendor));
  RETURN_IF_ERROR(r.String("image", &out->image));
  RETURN_IF_ERROR(r.String("class", &out->device_class));
  RETURN_IF_ERROR(r.String("node", &out->node));
  RETURN_IF_ERROR(r.String("pod", &out->pod));
  const Reader device = r.Child("device");
  RETURN_IF_ERROR(device.String("type", &out->device_type));
  std::optional<int64_t> count;
  RETURN_IF_ERROR(device.Integer("count", &count));
  out->device_count = count.value_or(0);
  RETURN_IF_ERROR(device.Strings("names", &out->device_names));
  // The schema leaves the vendor optional; the workload always writes it, else the device type.
  if (out->vendor.empty()) out->vendor = out->device_type;
  if (out->vendor.empty()) {
    return InvalidArgumentError("vendor: required (nor is device.type given)");
  }
  if (const json* s = r.Find("summary"); s != nullptr && s->is_boolean()) {
    out->summary = s->get<bool>();
  }
  const json* stages = r.Find("stages");
  if (stages == nullptr) return InvalidArgumentError("stages: required");
  if (!stages->is_object()) return r.Wrong("stages", "an object", *stages);
  for (const std::string_view name : kStages) {
    RETURN_IF_ERROR(ReadStage(r.Child("stages"), name, out));
  }
  return Status();
}

int Rank(StageStatus s) {
  switch (s) {
    case StageStatus::kFail:
      return 3;
    case StageStatus::kPass:
      return 2;
    case StageStatus::kSkip:
      return 1;
    case StageStatus::kNotRun:
      return 0;
  }
  return 0;
}

}  // namespace results_cc
using namespace results_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

std::string_view StageStatusName(StageStatus status) {
  return NameAt(kStageStatusNames, status).value_or("not run");
}

const StageResult& Result::Stage(std::string_view name) const {
  static const StageResult kNone;
  auto it = stages.find(name);
  return it == stages.end() ? kNone : it->second;
}

StatusOr<Result> ParseResult(const nlohmann::json& doc, const std::string& file) {
  Result out;
  out.file = file;
  if (Status s = ReadResult(doc, &out); !s.ok()) return s.WithContext("result " + file);
  out.raw = doc;
  return out;
}

StatusOr<Result> LoadResultFile(const std::string& path) {
  StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) return text.status().WithContext("read result " + path);
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError("result " + path + ": not valid JSON");
  return ParseResult(doc, path);
}

StageStatus VendorResults::Status(std::string_view stage) const {
  StageStatus best = StageStatus::kNotRun;
  for (const Result& r : results) {
    if (Rank(r.Stage(stage).status) > Rank(best)) best = r.Stage(stage).status;
  }
  return best;
}

const Result* VendorResults::For(std::string_view stage) const {
  for (const Result& r : results) {
    const StageStatus s = r.Stage(stage).status;
    if (s == StageStatus::kPass || s == StageStatus::kFail) return &r;
  }
  for (const Result& r : results) {
    if (r.Stage(stage).status != StageStatus::kNotRun) return &r;
  }
  return nullptr;
}

bool VendorResults::Passed() const {
  return std::none_of(kStages.begin(), kStages.end(),
                      [&](std::string_view s) { return Status(s) == StageStatus::kFail; });
}

std::vector<VendorResults> GroupByVendor(std::vector<Result> results) {
  std::vector<VendorResults> out;
  for (Result& r : results) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const VendorResults& v) { return v.vendor == r.vendor; });
    if (it == out.end()) it = out.insert(out.end(), VendorResults{r.vendor, {}});
    it->results.push_back(std::move(r));
  }
  return out;
}

std::string FormatNumber(double value, int digits) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : (value > 0 ? "Inf" : "-Inf");
  char buf[64];
  const double mag = std::fabs(value);
  if (mag != 0 && (mag < 1e-4 || mag >= 1e9)) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    return buf;
  }
  // Fixed notation with `digits` significant digits, then trailing zeros dropped.
  const int exponent = mag == 0 ? 0 : static_cast<int>(std::floor(std::log10(mag)));
  const int decimals = std::max(0, digits - 1 - exponent);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string out = buf;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out == "-0" ? "0" : out;
}

}  // namespace xpu::accept
