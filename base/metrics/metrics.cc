#include "base/metrics/metrics.h"

#include <prometheus/check_names.h>
#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/enum_names.h"

namespace xpu::metrics {
namespace {
namespace metrics_cc {

// Registration mistakes are programming errors: say what and stop.
template <typename... Parts>
[[noreturn]] void Fatal(const Parts&... parts) {
  std::string message;
  ((message += parts), ...);
  std::fprintf(stderr, "metrics: %s\n", message.c_str());
  std::abort();
}

constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};
static_assert(NamesCover(kTypeNames, MetricType::kHistogram));

std::string_view TypeName(MetricType type) { return NameAt(kTypeNames, type).value_or("untyped"); }

prometheus::MetricType PrometheusType(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return prometheus::MetricType::Counter;
    case MetricType::kGauge:
      return prometheus::MetricType::Gauge;
    case MetricType::kHistogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

// The HELP text as the exposition format escapes it (backslash and line feed): prometheus-cpp
// 1.0 writes help verbatim, label values escaped.
std::string EscapedHelp(std::string_view help) {
  std::string out;
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ",";
    out += names[i];
  }
  return out + "]";
}

// prometheus-cpp collects a series' labels sorted by name and the series in hash order: puts the
// labels in the order of `label_names` and the series in the order of their label values.
void InLabelOrder(prometheus::MetricFamily& family, const std::vector<std::string>& label_names) {
  for (prometheus::ClientMetric& metric : family.metric) {
    std::vector<prometheus::ClientMetric::Label> ordered;
    ordered.reserve(metric.label.size());
    for (const std::string& name : label_names) {
      const auto it = std::find_if(metric.label.begin(), metric.label.end(),
                                   [&name](const auto& label) { return label.name == name; });
      if (it != metric.label.end()) ordered.push_back(std::move(*it));
    }
    metric.label = std::move(ordered);
  }
  std::sort(family.metric.begin(), family.metric.end(),
            [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
              return std::lexicographical_compare(
                  a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
                  [](const auto& x, const auto& y) { return x.value < y.value; });
            });
}

}  // namespace metrics_cc
}  // namespace

std::vector<double> LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    metrics_cc::Fatal("exponential buckets need start > 0, factor > 1 and count >= 1");
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

void Counter::Inc(const std::vector<std::string>& labels, double value) {
  if (!Accept(labels, value >= 0)) return;
  series_.Update(labels, [value](prometheus::Counter& c) { c.Increment(value); });
}

double Counter::Value(const std::vector<std::string>& labels) const {
  return series_.Get(
      labels, [](const prometheus::Counter& c) { return c.Value(); }, 0.0);
}

void Gauge::Set(const std::vector<std::string>& labels, double value) {
  if (!Accept(labels)) return;
  series_.Update(labels, [value](prometheus::Gauge& g) { g.Set(value); });
}

void Gauge::Add(const std::vector<std::string>& labels, double delta) {
  if (!Accept(labels)) return;
  series_.Update(labels, [delta](prometheus::Gauge& g) { g.Increment(delta); });
}

double Gauge::Value(const std::vector<std::string>& labels) const {
  return series_.Get(
      labels, [](const prometheus::Gauge& g) { return g.Value(); }, 0.0);
}

void Gauge::Clear() {
  if (label_names().empty()) {
    Set(0);  // its one series stays
  } else {
    series_.Clear();
  }
}

// Histogram

Histogram::Histogram(std::string name, std::string help,
                     const std::vector<std::string>& label_names, std::vector<double> buckets,
                     prometheus::Family<prometheus::Histogram>& family)
    : Family(std::move(name), std::move(help), label_names),
      buckets_(std::move(buckets)),
      series_(family, label_names) {
  if (label_names.empty()) series_.Ensure({}, buckets_);
}

void Histogram::Observe(const std::vector<std::string>& labels, double value) {
  if (!Accept(labels, !std::isnan(value))) return;
  series_.Update(
      labels, [value](prometheus::Histogram& h) { h.Observe(value); }, buckets_);
}

uint64_t Histogram::Count(const std::vector<std::string>& labels) const {
  return series_.Get(
      labels, [](const prometheus::Histogram& h) { return h.Collect().histogram.sample_count; },
      uint64_t{0});
}

double Histogram::Sum(const std::vector<std::string>& labels) const {
  return series_.Get(
      labels, [](const prometheus::Histogram& h) { return h.Collect().histogram.sample_sum; }, 0.0);
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
  if (!prometheus::CheckMetricName(name)) metrics_cc::Fatal("invalid metric name \"", name, "\"");
  for (size_t i = 0; i < label_names.size(); ++i) {
    const std::string& label = label_names[i];
    if (!prometheus::CheckLabelName(label)) {
      metrics_cc::Fatal(name, ": invalid label name \"", label, "\"");
    }
    if (type == MetricType::kHistogram && label == "le") {
      metrics_cc::Fatal(name, ": a histogram cannot have a label named \"le\"");
    }
    for (size_t j = 0; j < i; ++j) {
      if (label_names[j] == label) {
        metrics_cc::Fatal(name, ": duplicate label name \"", label, "\"");
      }
    }
  }
  const auto it = families_.find(name);
  if (it != families_.end()) {
    const Family& family = *it->second;
    if (family.type() != type || family.label_names() != label_names) {
      metrics_cc::Fatal("conflicting registration of ", name, ": ",
                        metrics_cc::TypeName(family.type()), " ",
                        metrics_cc::LabelList(family.label_names()), " then ",
                        metrics_cc::TypeName(type), " ", metrics_cc::LabelList(label_names));
    }
    return it->second.get();
  }
  // Histograms expose three series names of their own; no other family may take them.
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const auto base = families_.find(name.substr(0, name.size() - s.size()));
      if (base != families_.end() && base->second->type() == MetricType::kHistogram) {
        metrics_cc::Fatal(name, " clashes with histogram ", base->first);
      }
    }
    if (type == MetricType::kHistogram && families_.count(name + suffix) > 0) {
      metrics_cc::Fatal("histogram ", name, " clashes with ", name, suffix);
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
    auto& family = prometheus::BuildCounter()
                       .Name(name)
                       .Help(metrics_cc::EscapedHelp(help))
                       .Register(registry_);
    return std::unique_ptr<Family>(new Counter(name, help, label_names, family));
  }));
}

Gauge& Registry::AddGauge(const std::string& name, const std::string& help,
                          const std::vector<std::string>& label_names) {
  return static_cast<Gauge&>(FindOrAdd(name, MetricType::kGauge, label_names, [&] {
    auto& family =
        prometheus::BuildGauge().Name(name).Help(metrics_cc::EscapedHelp(help)).Register(registry_);
    return std::unique_ptr<Family>(new Gauge(name, help, label_names, family));
  }));
}

Histogram& Registry::AddHistogram(const std::string& name, const std::string& help,
                                  const std::vector<std::string>& label_names,
                                  std::vector<double> buckets) {
  if (!buckets.empty() && std::isinf(buckets.back()) && buckets.back() > 0) buckets.pop_back();
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!std::isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
      metrics_cc::Fatal(name, ": histogram buckets must be finite and strictly ascending");
    }
  }
  auto& histogram =
      static_cast<Histogram&>(FindOrAdd(name, MetricType::kHistogram, label_names, [&] {
        auto& family = prometheus::BuildHistogram()
                           .Name(name)
                           .Help(metrics_cc::EscapedHelp(help))
                           .Register(registry_);
        return std::unique_ptr<Family>(new Histogram(name, help, label_names, buckets, family));
      }));
  if (histogram.buckets() != buckets) metrics_cc::Fatal("conflicting buckets for histogram ", name);
  return histogram;
}

std::string Registry::Render() const {
  MutexLock lock(mu_);
  // The families with series, from prometheus-cpp; those without any (labelled, never recorded)
  // still show their HELP and TYPE lines.
  std::map<std::string, prometheus::MetricFamily> collected;
  for (prometheus::MetricFamily& family : registry_.Collect()) {
    std::string family_name = family.name;
    collected.emplace(std::move(family_name), std::move(family));
  }
  std::vector<prometheus::MetricFamily> families;
  families.reserve(families_.size());
  for (const auto& [name, family] : families_) {
    const auto it = collected.find(name);
    if (it == collected.end()) {
      families.push_back({name,
                          metrics_cc::EscapedHelp(family->help()),
                          metrics_cc::PrometheusType(family->type()),
                          {}});
      continue;
    }
    metrics_cc::InLabelOrder(it->second, family->label_names());
    families.push_back(std::move(it->second));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace xpu::metrics
