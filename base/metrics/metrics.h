// Prometheus text exposition (format 0.0.4), our own small module: counters, gauges and
// histograms, each a family with fixed label names; `# HELP` and `# TYPE` lines; label values
// and help text escaped as the format requires. Thread-safe; cheap enough for every request.
//
// A Registry owns its families; the references AddCounter/AddGauge/AddHistogram return stay
// valid for the registry's lifetime. Every family has its own mutex, so recording never waits
// on other families or on registration. Samples with the wrong number of label values (or a
// negative counter increment, or a NaN observation) are dropped, never recorded and never
// fatal; DroppedSamples() counts them so tests can catch the mistake. Registration mistakes
// (bad names, a conflicting second registration) abort: they are programming errors.
//
// A family without labels always renders its one series (0 until recorded); a family with
// labels renders the series recorded so far, sorted by label values.
#ifndef XPU_BASE_METRICS_METRICS_H_
#define XPU_BASE_METRICS_METRICS_H_

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

  bool LabelsFit(const std::vector<std::string>& labels) const {
    return labels.size() == label_names_.size();
  }
  void Drop() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  // Appends the `# HELP` / `# TYPE` lines and every series to `out`.
  virtual void RenderTo(std::string& out) const = 0;

 private:
  friend class Registry;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  std::atomic<uint64_t> dropped_{0};
};

// What counters and gauges share: one value per series.
class ScalarFamily : public Family {
 public:
  // 0 for a series never recorded.
  double Value(const std::vector<std::string>& labels = {}) const;

 protected:
  using Family::Family;

  // Applies `update` to the value of the series with these label values (one per label name, in
  // order); a wrong label count is dropped.
  template <typename Update>
  void Apply(const std::vector<std::string>& labels, Update update) {
    if (!LabelsFit(labels)) {
      Drop();
      return;
    }
    MutexLock lock(mu_);
    update(series_[labels]);
  }
  void ClearSeries();
  void RenderTo(std::string& out) const override;

 private:
  mutable Mutex mu_;
  std::map<std::vector<std::string>, double> series_ GUARDED_BY(mu_);
};

class Counter final : public ScalarFamily {
 public:
  // Adds `value` (>= 0) to the series with these label values (one per label name, in order).
  void Inc(const std::vector<std::string>& labels = {}, double value = 1);
  MetricType type() const override { return MetricType::kCounter; }

 private:
  friend class Registry;
  using ScalarFamily::ScalarFamily;
};

class Gauge final : public ScalarFamily {
 public:
  void Set(const std::vector<std::string>& labels, double value);
  void Set(double value) { Set({}, value); }
  void Add(const std::vector<std::string>& labels, double delta);
  void Add(double delta) { Add({}, delta); }
  // Removes every series (for gauges rebuilt from scratch, e.g. health by device); a gauge
  // without labels reads 0 again.
  void Clear() { ClearSeries(); }
  MetricType type() const override { return MetricType::kGauge; }

 private:
  friend class Registry;
  using ScalarFamily::ScalarFamily;
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
  struct Series {
    std::vector<uint64_t> counts;  // per bucket, not cumulative; the last one is +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Histogram(std::string name, std::string help, std::vector<std::string> label_names,
            std::vector<double> buckets);
  void RenderTo(std::string& out) const override;

  const std::vector<double> buckets_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, Series> series_ GUARDED_BY(mu_);
};

// 0.0005 s to 10 s in 1-2.5-5 steps: request and RPC latencies.
std::vector<double> LatencyBuckets();
// `count` bounds: start, start*factor, ...; start > 0, factor > 1, count >= 1 (else aborts).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// A sample value as Prometheus writes it: integers below 1e21 without exponent ("3",
// "1000000"), others in the shortest form that reads back exactly ("0.005", "1.5e-07"),
// and "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);

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

  // Names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* (not starting
  // with "__", no duplicates, no "le" on histograms); a second registration of a name returns
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
  // Every family, sorted by name, series sorted by label values.
  std::string Render() const;

 private:
  // Checks names and conflicts; returns the existing family or null.
  Family* Find(const std::string& name, MetricType type,
               const std::vector<std::string>& label_names) const REQUIRES(mu_);
  // Find, else the family `make` builds, added.
  Family& FindOrAdd(const std::string& name, MetricType type,
                    const std::vector<std::string>& label_names,
                    const std::function<std::unique_ptr<Family>()>& make) EXCLUDES(mu_);

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_ GUARDED_BY(mu_);
};

}  // namespace xpu::metrics

#endif  // XPU_BASE_METRICS_METRICS_H_
