// Small helpers of the measured runs (plugin_measure, controller_measure): failing a run,
// durations in ms, percentiles, and a process's memory from /proc.
#ifndef XPU_BENCH_MEASURE_SUPPORT_H_
#define XPU_BENCH_MEASURE_SUPPORT_H_

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace xpu::bench {

// Prints "<program>: <what>" on stderr and gives 1, the exit status of a failed run.
inline int Fail(std::string_view program, const std::string& what) {
  std::cerr << program << ": " << what << "\n";
  return 1;
}

inline double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

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

}  // namespace xpu::bench

#endif  // XPU_BENCH_MEASURE_SUPPORT_H_
