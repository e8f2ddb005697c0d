// The replay's result as JSON and as the text table (the HTML report is report.cc).
#include "lab/result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

namespace xpu::lab {
namespace {
namespace result_cc {

// `x` rounded to `decimals` places (1e3 or 1e6), so the JSON's bytes are stable.
double Rounded(double x, double scale) {
  if (!std::isfinite(x)) return x;
  const double r = std::round(x * scale) / scale;
  return r == 0 ? 0 : r;  // no "-0.0"
}

std::string Fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// Characters on screen: UTF-8 code points ("dev·h" is 5).
size_t Width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
  }));
}

std::string BelowBest(const PolicyMetrics& m) {
  std::string out = std::to_string(m.below_best_bandwidth);
  if (m.below_best_bandwidth > 0) out += " (" + Fixed(m.mean_bandwidth_shortfall * 100, 1) + "%)";
  return out;
}

std::string Gangs(const PolicyMetrics& m) {
  std::string out = std::to_string(m.gangs);
  if (m.gang_tiers.empty()) return out;
  out += " (";
  bool first = true;
  for (const auto& [tier, count] : m.gang_tiers) {
    if (!first) out += ", ";
    first = false;
    out += tier;
    out += ' ';
    out += std::to_string(count);
  }
  return out + ")";
}

}  // namespace result_cc
}  // namespace

std::vector<std::string> TableCells(const PolicyMetrics& m) {
  using result_cc::Fixed;
  return {std::to_string(m.placements),
          std::to_string(m.unplaced),
          std::to_string(m.rejected),
          std::to_string(m.rule_violations),
          result_cc::BelowBest(m),
          std::to_string(m.below_fleet_best_bandwidth),
          std::to_string(m.below_vendor_best_bandwidth),
          Fixed(m.mean_bottleneck_gbps, 1),
          Fixed(m.stranded_device_seconds / 3600, 1),
          Fixed(m.queue_delay_p50, 1),
          Fixed(m.queue_delay_p95, 1),
          Fixed(m.utilisation * 100, 1),
          result_cc::Gangs(m)};
}

nlohmann::json ToJson(const ReplayResult& result) {
  using result_cc::Rounded;
  nlohmann::json policies = nlohmann::json::object();
  for (const auto& m : result.policies) {
    nlohmann::json tiers = nlohmann::json::object();
    for (const auto& [tier, count] : m.gang_tiers) tiers[tier] = count;
    policies[m.policy] = {{"placements", m.placements},
                          {"unplaced", m.unplaced},
                          {"rejected", m.rejected},
                          {"ruleViolations", m.rule_violations},
                          {"belowBestBandwidth", m.below_best_bandwidth},
                          {"meanBandwidthShortfall", Rounded(m.mean_bandwidth_shortfall, 1e6)},
                          {"belowFleetBestBandwidth", m.below_fleet_best_bandwidth},
                          {"belowVendorBestBandwidth", m.below_vendor_best_bandwidth},
                          {"meanBottleneckGBps", Rounded(m.mean_bottleneck_gbps, 1e3)},
                          {"strandedDeviceSeconds", Rounded(m.stranded_device_seconds, 1e3)},
                          {"queueDelayP50", Rounded(m.queue_delay_p50, 1e3)},
                          {"queueDelayP95", Rounded(m.queue_delay_p95, 1e3)},
                          {"queueDelayMean", Rounded(m.queue_delay_mean, 1e3)},
                          {"utilisation", Rounded(m.utilisation, 1e6)},
                          {"makespan", Rounded(m.makespan, 1e3)},
                          {"gangs", m.gangs},
                          {"gangTiers", tiers},
                          {"allocatorCalls", m.allocator_calls},
                          {"partitionPlacements", m.partition_placements},
                          {"fragmentedWaits", m.fragmented_waits},
                          {"largestProfileFits", Rounded(m.largest_profile_fits, 1e6)},
                          {"notes", m.notes}};
  }
  return {{"trace", result.trace},
          {"fleet", result.fleet},
          {"nodeOrder", result.node_order},
          {"scheduler", result.scheduler},
          {"schedulerSeed", result.scheduler_seed},
          {"nodes", result.nodes},
          {"devices", result.devices},
          {"jobs", result.jobs},
          {"policies", policies}};
}

std::string TextTable(const ReplayResult& result) {
  using result_cc::Width;
  std::string out = "trace: " + result.trace + "\n";
  out += "fleet: " + result.fleet + " (" + std::to_string(result.nodes) + " nodes, " +
         std::to_string(result.devices) + " devices)\n";
  out += "node order: " + result.node_order + "\n";
  if (!result.scheduler.empty()) out += "scheduler: " + SchedulerLine(result) + "\n";
  out += "jobs: " + std::to_string(result.jobs) + "\n\n";

  std::vector<std::vector<std::string>> rows = {
      {"policy", "placed", "unplaced", "rejected", "rule viol.", "below-best bw",
       "below-fleet-best", "below-vendor-best", "bottleneck GB/s", "stranded dev·h", "delay p50 s",
       "delay p95 s", "util %"}};
  for (const auto& m : result.policies) {
    std::vector<std::string> row = TableCells(m);
    row.pop_back();  // the gangs: a line of their own below the table
    row.insert(row.begin(), m.policy);
    rows.push_back(std::move(row));
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], Width(row[c]));
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(widths[c] - Width(row[c]), ' ');
      if (c == 0) {  // names to the left, numbers to the right
        line += row[c];
        line += pad;
      } else {
        line += "  ";
        line += pad;
        line += row[c];
      }
    }
    out += line;
    out += '\n';
  }

  const bool any_gangs = std::any_of(result.policies.begin(), result.policies.end(),
                                     [](const PolicyMetrics& m) { return m.gangs > 0; });
  if (any_gangs) {
    out += "\n";
    for (const auto& m : result.policies) {
      const std::string pad(widths[0] - Width(m.policy), ' ');
      out += "  ";
      out += m.policy;
      out += pad;
      out += "  gangs: ";
      out += result_cc::Gangs(m);
      out += '\n';
    }
  }
  if (AnyPartitions(result)) {
    out += "\n";
    for (const auto& m : result.policies) {
      const std::string pad(widths[0] - Width(m.policy), ' ');
      out += "  " + m.policy + pad + "  partitions: " + PartitionLine(m) + "\n";
    }
  }
  for (const auto& m : result.policies) {
    for (const std::string& note : m.notes) out += "  " + m.policy + "  note: " + note + "\n";
  }
  return out;
}

std::string SchedulerLine(const ReplayResult& result) {
  std::string line = result.scheduler + " (the stock policies' node choice";
  if (result.scheduler == "kube") {
    line += ", ties broken with seed " + std::to_string(result.scheduler_seed);
  }
  return line + ")";
}

bool AnyPartitions(const ReplayResult& result) {
  return std::any_of(result.policies.begin(), result.policies.end(), [](const PolicyMetrics& m) {
    return m.partition_placements > 0 || m.fragmented_waits > 0;
  });
}

std::string PartitionLine(const PolicyMetrics& m) {
  return std::to_string(m.partition_placements) + " placed, " + std::to_string(m.fragmented_waits) +
         " waited on fragmentation, largest profile fits " +
         result_cc::Fixed(m.largest_profile_fits * 100, 1) + "% of device-time";
}

}  // namespace xpu::lab
