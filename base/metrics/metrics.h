// Prometheus text exposition (format 0.0.4), our own small module: counters, gauges and
// histograms, each a family with fixed label names; `# HELP` and `# TYPE` lines; label values
// and help text escaped as the format requires. Thread-safe; cheap enough for every request.
#ifndef XPU_BASE_METRICS_METRICS_H_
#define XPU_BASE_METRICS_METRICS_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xpu::metrics {

class Registry;

class Counter {
 public:
  // Adds `value` (>= 0) to the series with these label values (one per label name, in order).
  void Inc(const std::vector<std::string>& labels = {}, double value = 1);
  double Value(const std::vector<std::string>& labels = {}) const;
  // ...
};

class Gauge {
 public:
  void Set(const std::vector<std::string>& labels, double value);
  void Set(double value) { Set({}, value); }
  void Add(const std::vector<std::string>& labels, double delta);
  double Value(const std::vector<std::string>& labels = {}) const;
  // Removes every series (for gauges rebuilt from scratch, e.g. health by device).
  void Clear();
};

class Histogram {
 public:
  void Observe(const std::vector<std::string>& labels, double value);
  void Observe(double value) { Observe({}, value); }
  uint64_t Count(const std::vector<std::string>& labels = {}) const;
};

// Records the seconds from construction to destruction into a histogram.
class ScopeTimer;

class Registry {
 public:
  // Names must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*; a second
  // registration of a name returns the same family (same type and labels) or aborts the program
  // (a programming error, never outside input).
  Counter& AddCounter(const std::string& name, const std::string& help,
                      const std::vector<std::string>& label_names = {});
  Gauge& AddGauge(const std::string& name, const std::string& help,
                  const std::vector<std::string>& label_names = {});
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          const std::vector<std::string>& label_names,
                          std::vector<double> buckets);  // upper bounds, ascending; +Inf added
  // Every family, sorted by name, series sorted by label values.
  std::string Render() const;
};

}  // namespace xpu::metrics

#endif  // XPU_BASE_METRICS_METRICS_H_
