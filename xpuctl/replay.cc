// xpuctl replay: the placement lab (lab/replay.h), a job trace replayed on a fleet under each
// placement policy, side by side.
#include "lab/replay.h"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "lab/fleet.h"
#include "lab/result.h"
#include "lab/stock_allocator.h"
#include "lab/trace.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

// The number flag `name`, `fallback` when absent; `range` says what it must be, and `ok` checks.
StatusOr<double> NumberFlag(const Flags& flags, const std::string& name, double fallback,
                            std::string_view range, bool (*ok)(double)) {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  double value = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      !ok(value)) {
    return InvalidArgumentError("--" + name + ": expected " + std::string(range) + ", got \"" +
                                text + "\"");
  }
  return value;
}

StatusOr<double> LoadFlag(const Flags& flags) {
  return NumberFlag(flags, "load", 0.9, "a number in (0, 10]",
                    [](double v) { return v > 0 && v <= 10; });
}

StatusOr<double> PartitionShareFlag(const Flags& flags) {
  return NumberFlag(flags, "partitions", 0, "a share in [0, 1]",
                    [](double v) { return v >= 0 && v <= 1; });
}

StatusOr<uint64_t> SeedFlag(const Flags& flags) {
  auto it = flags.find("seed");
  if (it == flags.end()) return uint64_t{1};
  uint64_t value = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgumentError("--seed: expected a non-negative integer, got \"" + text + "\"");
  }
  return value;
}

// The trace of --trace or --synthetic (exactly one), and its name for the report.
StatusOr<std::pair<std::vector<lab::Job>, std::string>> LoadTrace(const Flags& flags,
                                                                  const lab::Fleet& fleet) {
  const bool file = flags.contains("trace");
  if (file == flags.contains("synthetic")) {
    return InvalidArgumentError("give exactly one of --trace FILE and --synthetic N");
  }
  if (file) {
    if (flags.contains("partitions")) {
      return InvalidArgumentError("--partitions goes with --synthetic; a trace file says its own");
    }
    const std::string& path = flags.at("trace");
    ASSIGN_OR_RETURN(const std::string text, ReadInputFile("trace", path));
    ASSIGN_OR_RETURN(std::vector<lab::Job> jobs, lab::ParseTrace(text, path));
    return std::make_pair(std::move(jobs), path);
  }
  ASSIGN_OR_RETURN(const int count, PositiveIntFlag(flags, "synthetic"));
  lab::SyntheticOptions options;
  options.jobs = count;
  ASSIGN_OR_RETURN(options.seed, SeedFlag(flags));
  ASSIGN_OR_RETURN(options.load, LoadFlag(flags));
  ASSIGN_OR_RETURN(options.partition_share, PartitionShareFlag(flags));
  options = lab::SyntheticForFleet(fleet, options);
  if (options.partition_share > 0 && options.partitions.empty()) {
    return InvalidArgumentError(
        "--partitions: the fleet has no partitionable device (an inventory whose devices have "
        "partitioning enabled, such as one of a node in MIG mode)");
  }
  const std::string name =
      "synthetic " + std::to_string(count) + " (seed " + std::to_string(options.seed) + ", load " +
      (flags.contains("load") ? flags.at("load") : std::string("0.9")) +
      (options.partition_share > 0 ? ", partitions " + flags.at("partitions") : std::string()) +
      ")";
  return std::make_pair(lab::SyntheticTrace(options), name);
}

Status WriteFile(const std::string& path, const std::string& text, std::string_view what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return InternalError("write " + std::string(what) + " " + path + ": failed");
  return OkStatus();
}

}  // namespace

StatusOr<int> RunReplay(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"text", "json"}));
  ASSIGN_OR_RETURN(const lab::Fleet fleet, lab::LoadFleetFile(flags.at("fleet")));
  ASSIGN_OR_RETURN(const auto trace, LoadTrace(flags, fleet));

  lab::ReplayOptions options;
  options.trace_name = trace.second;
  std::vector<std::string> policies = RepeatedFlag(flags, "policy");
  if (!policies.empty()) options.policies = std::move(policies);
  if (auto it = flags.find("node-order"); it != flags.end()) {
    std::optional<lab::NodeOrder> order = lab::ParseNodeOrder(it->second);
    if (!order.has_value()) {
      return InvalidArgumentError(
          "--node-order: expected first, most-allocated or "
          "least-allocated, got \"" +
          it->second + "\"");
    }
    options.node_order = *order;
  }
  if (auto it = flags.find("scheduler"); it != flags.end()) {
    std::optional<lab::Scheduler> scheduler = lab::ParseScheduler(it->second);
    if (!scheduler.has_value()) {
      return InvalidArgumentError("--scheduler: expected kube or order, got \"" + it->second +
                                  "\"");
    }
    options.scheduler = *scheduler;
  }
  ASSIGN_OR_RETURN(options.seed, SeedFlag(flags));
  ASSIGN_OR_RETURN(options.config, LoadConfigFlag(flags));
  if (auto it = flags.find("class"); it != flags.end()) options.capability_class = it->second;
  bool stock = false;
  for (const std::string& p : options.policies) stock = stock || lab::IsStockPolicy(p);
  if (stock) {
    auto it = flags.find("stock-allocator");
    ASSIGN_OR_RETURN(options.stock_allocator,
                     lab::FindStockAllocator(it == flags.end() ? "" : it->second));
  }
  if (auto it = flags.find("write-trace"); it != flags.end()) {
    RETURN_IF_ERROR(WriteFile(it->second, lab::TraceCsv(trace.first), "trace"));
  }

  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const lab::ReplayResult result, lab::Replay(fleet, trace.first, options));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (auto it = flags.find("report"); it != flags.end()) {
    RETURN_IF_ERROR(WriteFile(it->second, lab::ReportHtml(result), "report"));
  }
  if (format == "json") {
    PrintDocument(lab::ToJson(result), format, out);
  } else {
    out << lab::TextTable(result);
  }
  char line[160];
  std::snprintf(line, sizeof line, "replayed %lld jobs on %d nodes, %zu %s, in %.2f s\n",
                static_cast<long long>(result.jobs), result.nodes, result.policies.size(),
                result.policies.size() == 1 ? "policy" : "policies", seconds);
  std::cerr << line;
  return kExitOk;
}

}  // namespace xpu::cli::internal
