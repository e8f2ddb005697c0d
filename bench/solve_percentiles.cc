// Per-call latency percentiles of Solve (the budget is a p50): for each model and count, times
// each of `--sets` solves over pre-drawn free sets and prints p50 / p99 / max in microseconds.
// Usage: solve_percentiles [--sets N] [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "topology/solver.h"

int main(int argc, char** argv) {
  int sets = 256;
  int rounds = 8;
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "usage: solve_percentiles [--sets N] [--rounds R]\n"
        "Per-call latency percentiles of the single-node solver for every bundled model and\n"
        "every count its rule set allows, over N random free sets x R rounds.\n");
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sets") == 0) sets = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  }
  if (sets < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: solve_percentiles [--sets N>0] [--rounds R>0]\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  std::printf("%-22s %3s %3s %9s %9s %9s\n", "model", "n", "k", "p50_us", "p99_us", "max_us");
  double worst_p50 = 0;
  for (const xpu::bench::SolveCase& c : xpu::bench::SolveCases(sets)) {
    std::vector<double> us;
    for (int r = 0; r < rounds; ++r) {
      for (const xpu::topology::DeviceSet& free : c.free_sets) {
        const auto start = Clock::now();
        const xpu::topology::SolveResult result = xpu::topology::Solve(c.node, free, c.count);
        const auto stop = Clock::now();
        if (result.devices.size() > c.node.size()) return 1;  // keeps the call observable
        us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
      }
    }
    std::sort(us.begin(), us.end());
    const double p50 = us[us.size() / 2];
    worst_p50 = std::max(worst_p50, p50);
    std::printf("%-22s %3d %3d %9.2f %9.2f %9.2f\n", c.model.c_str(), c.node.size(), c.count, p50,
                us[us.size() * 99 / 100], us.back());
  }
  std::printf("worst p50: %.2f us\n", worst_p50);
  return 0;
}
