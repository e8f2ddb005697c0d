#include "base/metrics/metrics.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/enum_names.h"

namespace xpu::metrics {
namespace {

// Registration mistakes are programming errors: say what and stop.
template <typename... Parts>
[[noreturn]] void Fatal(const Parts&... parts) {
  std::string message;
  ((message += parts), ...);
  std::fprintf(stderr, "metrics: %s\n", message.c_str());
  std::abort();
}

bool IsMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};
static_assert(NamesCover(kTypeNames, MetricType::kHistogram));

std::string_view TypeName(MetricType type) { return NameAt(kTypeNames, type).value_or("untyped"); }

void AppendEscaped(std::string& out, std::string_view text, bool quotes) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quotes && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendHeader(std::string& out, const Family& family) {
  if (!family.help().empty()) {
    out += "# HELP ";
    out += family.name();
    out += ' ';
    AppendEscaped(out, family.help(), /*quotes=*/false);
    out += '\n';
  }
  out += "# TYPE ";
  out += family.name();
  out += ' ';
  out += TypeName(family.type());
  out += '\n';
}

// `name{l1="v1",...,extra_name="extra_value"} value\n`; braces only when there is a label.
void AppendSample(std::string& out, std::string_view name, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, std::string_view extra_name,
                  std::string_view extra_value, double value) {
  out += name;
  if (!names.empty() || !extra_name.empty()) {
    out += '{';
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) out += ',';
      out += names[i];
      out += "=\"";
      AppendEscaped(out, values[i], /*quotes=*/true);
      out += '"';
    }
    if (!extra_name.empty()) {
      if (!names.empty()) out += ',';
      out += extra_name;
      out += "=\"";
      AppendEscaped(out, extra_value, /*quotes=*/true);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

std::string LabelList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ",";
    out += names[i];
  }
  return out + "]";
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";  // -0 too
  char buf[64];
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  if (ec != std::errc()) return "NaN";  // cannot happen with 64 bytes
  // Shortest round-trip digits as d[.ddd]e±XX; laid out in fixed notation unless the exponent
  // is far from zero, the way Go's strconv 'g' does for Prometheus' own clients.
  std::string_view sci(buf, static_cast<size_t>(end - buf));
  const bool negative = sci.front() == '-';
  if (negative) sci.remove_prefix(1);
  const size_t e = sci.find('e');
  std::string digits(1, sci[0]);
  if (e > 1) digits.append(sci.substr(2, e - 2));
  std::string_view exp_text = sci.substr(e + 1);
  const bool exp_negative = exp_text.front() == '-';
  exp_text.remove_prefix(1);
  int exp = 0;
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
  if (exp_negative) exp = -exp;
  if (exp < -4 || exp >= 21) return std::string(buf, end);

  std::string out = negative ? "-" : "";
  // Digits before the decimal point.
  const size_t point = exp < 0 ? 0 : static_cast<size_t>(exp) + 1;
  if (exp < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exp - 1), '0');
    out += digits;
  } else if (digits.size() <= point) {
    out += digits;
    out.append(point - digits.size(), '0');
  } else {
    out.append(digits, 0, point);
    out += '.';
    out.append(digits, point);
  }
  return out;
}

std::vector<double> LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    Fatal("exponential buckets need start > 0, factor > 1 and count >= 1");
  }
  std::vector<double> out;
  out.reserve(static_cast<size_t>(count));
  double bound = start;
  for (int i = 0; i < count; ++i) {
    out.push_back(bound);
    bound *= factor;
  }
  return out;
}

Family::Family(std::string name, std::string help, std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

// Counter and Gauge

double ScalarFamily::Value(const std::vector<std::string>& labels) const {
  MutexLock lock(mu_);
  const auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second;
}

void ScalarFamily::ClearSeries() {
  MutexLock lock(mu_);
  series_.clear();
}

void ScalarFamily::RenderTo(std::string& out) const {
  AppendHeader(out, *this);
  MutexLock lock(mu_);
  if (label_names().empty() && series_.empty()) {
    AppendSample(out, name(), {}, {}, {}, {}, 0);
  }
  for (const auto& [labels, value] : series_) {
    AppendSample(out, name(), label_names(), labels, {}, {}, value);
  }
}

void Counter::Inc(const std::vector<std::string>& labels, double value) {
  if (!(value >= 0)) {
    Drop();
    return;
  }
  Apply(labels, [value](double& v) { v += value; });
}

void Gauge::Set(const std::vector<std::string>& labels, double value) {
  Apply(labels, [value](double& v) { v = value; });
}

void Gauge::Add(const std::vector<std::string>& labels, double delta) {
  Apply(labels, [delta](double& v) { v += delta; });
}

// Histogram

Histogram::Histogram(std::string name, std::string help, std::vector<std::string> label_names,
                     std::vector<double> buckets)
    : Family(std::move(name), std::move(help), std::move(label_names)),
      buckets_(std::move(buckets)) {}

void Histogram::Observe(const std::vector<std::string>& labels, double value) {
  if (!LabelsFit(labels) || std::isnan(value)) {
    Drop();
    return;
  }
  size_t bucket = 0;
  while (bucket < buckets_.size() && value > buckets_[bucket]) ++bucket;
  MutexLock lock(mu_);
  Series& series = series_[labels];
  if (series.counts.empty()) series.counts.assign(buckets_.size() + 1, 0);
  ++series.counts[bucket];
  series.sum += value;
  ++series.count;
}

uint64_t Histogram::Count(const std::vector<std::string>& labels) const {
  MutexLock lock(mu_);
  const auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

double Histogram::Sum(const std::vector<std::string>& labels) const {
  MutexLock lock(mu_);
  const auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.sum;
}

void Histogram::RenderTo(std::string& out) const {
  AppendHeader(out, *this);
  const std::string bucket_name = name() + "_bucket";
  const std::string sum_name = name() + "_sum";
  const std::string count_name = name() + "_count";
  std::vector<std::string> le_values;
  le_values.reserve(buckets_.size() + 1);
  for (const double bound : buckets_) le_values.push_back(FormatValue(bound));
  le_values.emplace_back("+Inf");

  auto render_series = [&](const std::vector<std::string>& labels, const Series& series) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < le_values.size(); ++i) {
      if (!series.counts.empty()) cumulative += series.counts[i];
      AppendSample(out, bucket_name, label_names(), labels, "le", le_values[i],
                   static_cast<double>(cumulative));
    }
    AppendSample(out, sum_name, label_names(), labels, {}, {}, series.sum);
    AppendSample(out, count_name, label_names(), labels, {}, {}, static_cast<double>(series.count));
  };
  MutexLock lock(mu_);
  if (label_names().empty() && series_.empty()) render_series({}, Series{});
  for (const auto& [labels, series] : series_) render_series(labels, series);
}

// ScopeTimer

ScopeTimer::ScopeTimer(Histogram& histogram, std::vector<std::string> labels)
    : ScopeTimer(histogram, std::move(labels), nullptr) {}

ScopeTimer::ScopeTimer(Histogram& histogram, std::vector<std::string> labels, Clock now)
    : histogram_(histogram), labels_(std::move(labels)), now_(std::move(now)), start_(Now()) {}

ScopeTimer::~ScopeTimer() { Stop(); }

std::chrono::steady_clock::time_point ScopeTimer::Now() const {
  return now_ ? now_() : std::chrono::steady_clock::now();
}

void ScopeTimer::SetLabel(std::string_view name, std::string value) {
  const std::vector<std::string>& names = histogram_.label_names();
  for (size_t i = 0; i < names.size() && i < labels_.size(); ++i) {
    if (names[i] == name) {
      labels_[i] = std::move(value);
      return;
    }
  }
}

double ScopeTimer::Elapsed() const { return std::chrono::duration<double>(Now() - start_).count(); }

void ScopeTimer::Stop() {
  if (done_) return;
  done_ = true;
  histogram_.Observe(labels_, Elapsed());
}

// Registry

Family* Registry::Find(const std::string& name, MetricType type,
                       const std::vector<std::string>& label_names) const {
  if (!IsMetricName(name)) Fatal("invalid metric name \"", name, "\"");
  for (size_t i = 0; i < label_names.size(); ++i) {
    const std::string& label = label_names[i];
    if (!IsLabelName(label)) Fatal(name, ": invalid label name \"", label, "\"");
    if (type == MetricType::kHistogram && label == "le") {
      Fatal(name, ": a histogram cannot have a label named \"le\"");
    }
    for (size_t j = 0; j < i; ++j) {
      if (label_names[j] == label) Fatal(name, ": duplicate label name \"", label, "\"");
    }
  }
  const auto it = families_.find(name);
  if (it != families_.end()) {
    const Family& family = *it->second;
    if (family.type() != type || family.label_names() != label_names) {
      Fatal("conflicting registration of ", name, ": ", TypeName(family.type()), " ",
            LabelList(family.label_names()), " then ", TypeName(type), " ", LabelList(label_names));
    }
    return it->second.get();
  }
  // Histograms expose three series names of their own; no other family may take them.
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const auto base = families_.find(name.substr(0, name.size() - s.size()));
      if (base != families_.end() && base->second->type() == MetricType::kHistogram) {
        Fatal(name, " clashes with histogram ", base->first);
      }
    }
    if (type == MetricType::kHistogram && families_.count(name + suffix) > 0) {
      Fatal("histogram ", name, " clashes with ", name, suffix);
    }
  }
  return nullptr;
}

Family& Registry::FindOrAdd(const std::string& name, MetricType type,
                            const std::vector<std::string>& label_names,
                            const std::function<std::unique_ptr<Family>()>& make) {
  MutexLock lock(mu_);
  if (Family* existing = Find(name, type, label_names)) return *existing;
  return *families_.emplace(name, make()).first->second;
}

Counter& Registry::AddCounter(const std::string& name, const std::string& help,
                              const std::vector<std::string>& label_names) {
  return static_cast<Counter&>(FindOrAdd(name, MetricType::kCounter, label_names, [&] {
    return std::unique_ptr<Family>(new Counter(name, help, label_names));
  }));
}

Gauge& Registry::AddGauge(const std::string& name, const std::string& help,
                          const std::vector<std::string>& label_names) {
  return static_cast<Gauge&>(FindOrAdd(name, MetricType::kGauge, label_names, [&] {
    return std::unique_ptr<Family>(new Gauge(name, help, label_names));
  }));
}

Histogram& Registry::AddHistogram(const std::string& name, const std::string& help,
                                  const std::vector<std::string>& label_names,
                                  std::vector<double> buckets) {
  if (!buckets.empty() && std::isinf(buckets.back()) && buckets.back() > 0) buckets.pop_back();
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
      Fatal(name, ": histogram buckets must be finite and strictly ascending");
    }
  }
  auto& histogram =
      static_cast<Histogram&>(FindOrAdd(name, MetricType::kHistogram, label_names, [&] {
        return std::unique_ptr<Family>(new Histogram(name, help, label_names, buckets));
      }));
  if (histogram.buckets() != buckets) Fatal("conflicting buckets for histogram ", name);
  return histogram;
}

std::string Registry::Render() const {
  std::string out;
  MutexLock lock(mu_);
  for (const auto& [name, family] : families_) family->RenderTo(out);
  return out;
}

}  // namespace xpu::metrics
