// The project's metrics API on prometheus-cpp: counters, gauges and histograms, each a family with
// fixed label names. The series live in a prometheus::Registry (one prometheus::Family per
// family), and Render() writes the text exposition (format 0.0.4) with prometheus::TextSerializer.
// Thread-safe; cheap enough for every request.
//
// A Registry owns its families; the references AddCounter/AddGauge/AddHistogram return stay
// valid for the registry's lifetime. Every family has its own mutex, so recording never waits
// on other families or on registration. Samples with the wrong number of label values (or a
// negative counter increment, or a NaN observation) are dropped, never recorded and never
// fatal; DroppedSamples() counts them so tests can catch the mistake. Registration mistakes
// (bad names, a conflicting second registration) abort: they are programming errors.
//
// A family without labels always renders its one series (0 until recorded); a family with
// labels renders the series recorded so far, sorted by label values, each with its labels in the
// order of the label names; families are sorted by name.
#ifndef XPU_BASE_METRICS_METRICS_H_
#define XPU_BASE_METRICS_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace xpu::metrics {

class Registry;

enum class MetricType { kCounter, kGauge, kHistogram };

// The prometheus-cpp series of one family by label values (one per label name, in order): the
// first record of a label set adds its series to the prometheus::Family, later ones find it here
// without building prometheus-cpp's label map.
template <typename Metric>
class SeriesIndex {
 public:
  SeriesIndex(prometheus::Family<Metric>& family, std::vector<std::string> label_names)
      : family_(family), label_names_(std::move(label_names)) {}

  // Runs `update` on the series of `values`, added first (built from `args`) when new.
  template <typename Fn, typename... Args>
  void Update(const std::vector<std::string>& values, Fn update, const Args&... args)
      EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto it = series_.find(values);
    if (it == series_.end()) {
      prometheus::Labels labels;
      for (size_t i = 0; i < label_names_.size(); ++i) labels.emplace(label_names_[i], values[i]);
      it = series_.emplace(values, &family_.Add(labels, args...)).first;
    }
    update(*it->second);
  }
  // Adds the series of `values` (built from `args`) unless it is there: a label-less family's one
  // series, rendered as 0 from the start.
  template <typename... Args>
  void Ensure(const std::vector<std::string>& values, const Args&... args) EXCLUDES(mu_) {
    const auto leave_as_is = [](Metric&) {};
    Update(values, leave_as_is, args...);
  }
  // `read` of the series of `values`, or `missing` when it has none.
  template <typename Fn, typename T>
  T Get(const std::vector<std::string>& values, Fn read, T missing) const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    const auto it = series_.find(values);
    return it == series_.end() ? missing : read(*it->second);
  }
  // Removes every series from the family.
  void Clear() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    for (const auto& [values, metric] : series_) family_.Remove(metric);
    series_.clear();
  }

 private:
  prometheus::Family<Metric>& family_;
  const std::vector<std::string> label_names_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, Metric*> series_ GUARDED_BY(mu_);
};

// What the three kinds share: a name, help text, label names and the drop count.
class Family {
 public:
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;
  virtual ~Family() = default;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  virtual MetricType type() const = 0;

  // Samples ignored because of a wrong label count or an invalid value.
  uint64_t DroppedSamples() const { return dropped_.load(std::memory_order_relaxed); }

 protected:
  Family(std::string name, std::string help, std::vector<std::string> label_names);

  // Whether a sample is recorded: one value per label name, and a valid value (`value_ok`);
  // otherwise it counts as dropped.
  bool Accept(const std::vector<std::string>& labels, bool value_ok = true) {
    if (labels.size() == label_names_.size() && value_ok) return true;
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  std::atomic<uint64_t> dropped_{0};
};

// A family whose series are prometheus-cpp metrics of one type (Counter, Gauge); one without
// labels has its single series from the start, so that it reads 0 before anything is recorded.
template <typename Metric>
class SeriesFamily : public Family {
 protected:
  friend class Registry;
  SeriesFamily(std::string name, std::string help, const std::vector<std::string>& label_names,
               prometheus::Family<Metric>& family)
      : Family(std::move(name), std::move(help), label_names), series_(family, label_names) {
    if (label_names.empty()) series_.Ensure({});
  }

  SeriesIndex<Metric> series_;
};

class Counter final : public SeriesFamily<prometheus::Counter> {
 public:
  // Adds `value` (>= 0) to the series with these label values (one per label name, in order).
  void Inc(const std::vector<std::string>& labels = {}, double value = 1);
  // 0 for a series never recorded.
  double Value(const std::vector<std::string>& labels = {}) const;
  MetricType type() const override { return MetricType::kCounter; }

 private:
  friend class Registry;
  using SeriesFamily::SeriesFamily;
};

class Gauge final : public SeriesFamily<prometheus::Gauge> {
 public:
  void Set(const std::vector<std::string>& labels, double value);
  void Set(double value) { Set({}, value); }
  void Add(const std::vector<std::string>& labels, double delta);
  void Add(double delta) { Add({}, delta); }
  // 0 for a series never recorded.
  double Value(const std::vector<std::string>& labels = {}) const;
  // Removes every series (for gauges rebuilt from scratch, e.g. health by device); a gauge
  // without labels reads 0 again.
  void Clear();
  MetricType type() const override { return MetricType::kGauge; }

 private:
  friend class Registry;
  using SeriesFamily::SeriesFamily;
};

class Histogram final : public Family {
 public:
  // A value lands in the first bucket whose upper bound is >= value. NaN is dropped.
  void Observe(const std::vector<std::string>& labels, double value);
  void Observe(double value) { Observe({}, value); }
  // Observations so far (0 for a series never recorded).
  uint64_t Count(const std::vector<std::string>& labels = {}) const;
  // Sum of the observations so far (0 for a series never recorded).
  double Sum(const std::vector<std::string>& labels = {}) const;
  // Upper bounds, ascending, without the implicit +Inf.
  const std::vector<double>& buckets() const { return buckets_; }
  MetricType type() const override { return MetricType::kHistogram; }

 private:
  friend class Registry;
  Histogram(std::string name, std::string help, const std::vector<std::string>& label_names,
            std::vector<double> buckets, prometheus::Family<prometheus::Histogram>& family);

  const std::vector<double> buckets_;
  SeriesIndex<prometheus::Histogram> series_;
};

// 0.0005 s to 10 s in 1-2.5-5 steps: request and RPC latencies.
std::vector<double> LatencyBuckets();
// `count` bounds: start, start*factor, ...; start > 0, factor > 1, count >= 1 (else aborts).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// Records the seconds from construction to destruction into a histogram. The labels may change
// before the end (e.g. result="ok" to result="error" on an error path). Not thread-safe: one
// timer belongs to one scope. The histogram must outlive the timer.
class ScopeTimer {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit ScopeTimer(Histogram& histogram, std::vector<std::string> labels = {});
  // `now` replaces the steady clock (tests use a fake one).
  ScopeTimer(Histogram& histogram, std::vector<std::string> labels, Clock now);
  ScopeTimer(const ScopeTimer&) = delete;
  ScopeTimer& operator=(const ScopeTimer&) = delete;
  ~ScopeTimer();

  void SetLabels(std::vector<std::string> labels) { labels_ = std::move(labels); }
  // Sets the value of one label by name; an unknown name is ignored.
  void SetLabel(std::string_view name, std::string value);
  const std::vector<std::string>& labels() const { return labels_; }

  // Seconds since construction.
  double Elapsed() const;
  // Records now instead of at destruction; later calls and the destructor record nothing.
  void Stop();
  // Records nothing, ever.
  void Cancel() { done_ = true; }

 private:
  std::chrono::steady_clock::time_point Now() const;

  Histogram& histogram_;
  std::vector<std::string> labels_;
  Clock now_;
  std::chrono::steady_clock::time_point start_;
  bool done_ = false;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Names must pass prometheus-cpp's checks (CheckMetricName: [a-zA-Z_:][a-zA-Z0-9_:]*, not
  // starting with "__"; CheckLabelName: [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"), with no
  // duplicate label names and no "le" on histograms; a second registration of a name returns
  // the same family (same type and labels, and buckets for histograms) or aborts the program
  // (a programming error, never outside input). A name that clashes with a histogram's
  // _bucket/_sum/_count series aborts too.
  Counter& AddCounter(const std::string& name, const std::string& help,
                      const std::vector<std::string>& label_names = {});
  Gauge& AddGauge(const std::string& name, const std::string& help,
                  const std::vector<std::string>& label_names = {});
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          const std::vector<std::string>& label_names,
                          std::vector<double> buckets);  // upper bounds, ascending; +Inf added
  // The text exposition of every family (prometheus::TextSerializer), families sorted by name,
  // series by label values.
  std::string Render() const;

 private:
  // Checks names and conflicts; returns the existing family or null.
  Family* Find(const std::string& name, MetricType type,
               const std::vector<std::string>& label_names) const REQUIRES(mu_);
  // Find, else the family `make` builds (its prometheus::Family registered in `registry_`) added.
  Family& FindOrAdd(const std::string& name, MetricType type,
                    const std::vector<std::string>& label_names,
                    const std::function<std::unique_ptr<Family>()>& make) EXCLUDES(mu_);

  mutable Mutex mu_;
  prometheus::Registry registry_;  // registered to under mu_
  std::map<std::string, std::unique_ptr<Family>> families_ GUARDED_BY(mu_);
};

}  // namespace xpu::metrics

#endif  // XPU_BASE_METRICS_METRICS_H_
