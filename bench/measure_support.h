// Small helpers of the measured runs (plugin_measure, controller_measure): failing a run,
// durations in ms and a stopwatch, percentiles and their summary line, and a process's memory
// from /proc.
#ifndef XPU_BENCH_MEASURE_SUPPORT_H_
#define XPU_BENCH_MEASURE_SUPPORT_H_

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::bench {

// Prints "<program>: <what>" on stderr and gives 1, the exit status of a failed run.
inline int Fail(std::string_view program, const std::string& what) {
  std::cerr << program << ": " << what << "\n";
  return 1;
}

// "--name value" pairs of argv, each name one of `known`; an unknown name or a missing value is
// an error naming it.
inline StatusOr<std::map<std::string, std::string>> FlagValues(int argc, char** argv,
                                                               const std::set<std::string>& known) {
  std::map<std::string, std::string> out;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (!known.contains(flag)) return InvalidArgumentError("unknown flag " + flag);
    if (i + 1 >= argc) return InvalidArgumentError(flag + " needs a value");
    out[flag] = argv[i + 1];
  }
  return out;
}

inline double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// The time since it was made, on the steady clock: what a measured run reports of a step.
class Stopwatch {
 public:
  double ElapsedMs() const { return Ms(std::chrono::steady_clock::now() - start_); }
  double ElapsedSeconds() const { return ElapsedMs() / 1000; }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The p-quantile (0..1) of `v` by nearest rank; `v` must not be empty.
inline double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

// A field of /proc/<pid>/status in MB ("VmRSS", "VmHWM", "RssAnon", "RssFile"); -1 if absent.
inline double StatusMb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(field + ":")) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return -1;
}

// "p50 X ms, p99 Y ms, max Z ms" of the durations `ms` (in ms); `ms` must not be empty.
inline std::string LatencyText(const std::vector<double>& ms) {
  std::ostringstream out;
  out << "p50 " << Percentile(ms, 0.5) << " ms, p99 " << Percentile(ms, 0.99) << " ms, max "
      << Percentile(ms, 1.0) << " ms";
  return out.str();
}

// "VmRSS X MB, peak VmHWM Y MB" of the process `pid`: its resident memory now and at its peak.
inline std::string MemoryText(pid_t pid) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "VmRSS " << StatusMb(pid, "VmRSS")
      << " MB, peak VmHWM " << StatusMb(pid, "VmHWM") << " MB";
  return out.str();
}

}  // namespace xpu::bench

#endif  // XPU_BENCH_MEASURE_SUPPORT_H_
