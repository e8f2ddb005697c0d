#include "e2e/trials/trial_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace xpu::e2e::trials {
namespace {

std::string Seconds(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 10'000 ? "%.2f s" : "%.1f s", ms / 1000);
  return buf;
}

}  // namespace

Status KillPlan::Validate(const std::string& flag) const {
  if (kills < 0) return InvalidArgumentError(flag + ": must not be negative");
  if (work_dir.empty()) return InvalidArgumentError(flag + ": no work dir");
  if (max_kill_delay.count() < 0 || bound.count() <= 0) {
    return InvalidArgumentError(flag + ": the kill delay and the bound must be positive");
  }
  if (recovery_kill_share < 0 || recovery_kill_share > 1) {
    return InvalidArgumentError(flag + ": the share of kills in recovery must be in [0, 1]");
  }
  return OkStatus();
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::lround(q * static_cast<double>(values.size() - 1)));
  return values[std::min(rank, values.size() - 1)];
}

std::string Summary(const TrialStats& stats) {
  std::string out = stats.part + ": " + std::to_string(stats.kills) + " kills (" +
                    std::to_string(stats.kills_mid_work) + " mid-work, " +
                    std::to_string(stats.kills_in_recovery) + " in recovery), " +
                    std::to_string(stats.checks) + " invariant checks held; recovery p50 " +
                    Seconds(Quantile(stats.recovery_ms, 0.5)) + ", p99 " +
                    Seconds(Quantile(stats.recovery_ms, 0.99)) + ", max " +
                    Seconds(Quantile(stats.recovery_ms, 1)) + " (bound " +
                    Seconds(static_cast<double>(stats.bound.count())) + ")";
  if (!stats.serving_ms.empty()) {
    out += "; serving again p50 " + Seconds(Quantile(stats.serving_ms, 0.5)) + ", p99 " +
           Seconds(Quantile(stats.serving_ms, 0.99)) + ", max " +
           Seconds(Quantile(stats.serving_ms, 1));
  }
  for (const auto& [name, value] : stats.counters) {
    out += "; " + name + " " + std::to_string(value);
  }
  return out + "; " + Seconds(stats.seconds * 1000);
}

}  // namespace xpu::e2e::trials
