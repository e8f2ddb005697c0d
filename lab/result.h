// What a replay measured, per policy, and how it is printed: the text table, the JSON document
// (`xpuctl replay -o json`) and the self-contained HTML report (`--report`). Deterministic: the
// same result gives the same bytes (no clock, no addresses, fixed number formatting).
#ifndef XPU_LAB_RESULT_H_
#define XPU_LAB_RESULT_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xpu::lab {

// One point of a step function over simulated time: `value` holds from `t` to the next point.
struct SeriesPoint {
  double t = 0;
  double value = 0;
  friend bool operator==(const SeriesPoint&, const SeriesPoint&) = default;
};

struct PolicyMetrics {
  std::string policy;      // "stock-unordered", "stock-xpu", "solver", "solver-node"
  int64_t jobs = 0;        // in the trace
  int64_t placements = 0;  // jobs started
  int64_t unplaced = 0;    // still waiting when the trace ran out (never started)
  int64_t rejected = 0;    // fit no node or no gang of the fleet even when empty
  // Jobs with a node part whose device set the node's rule set forbids (topology::RuleAllows).
  int64_t rule_violations = 0;
  // Jobs with a node part whose bottleneck bandwidth is below the best a rule-keeping set of that
  // count had on that node's free devices at that moment.
  int64_t below_best_bandwidth = 0;
  double mean_bandwidth_shortfall = 0;  // among those: the mean of 1 - got / best, 0..1
  // Single-node jobs of 2 or more devices: how many got a bottleneck below the best that any
  // node's free devices offered at that moment (what the node choice lost), and the mean
  // bottleneck bandwidth they got (GB/s).
  int64_t below_fleet_best_bandwidth = 0;
  double mean_bottleneck_gbps = 0;
  // Of those jobs, how many got a bottleneck below the best that any node of the chosen node's
  // vendor offered at that moment: what the node choice lost where the job could not change
  // vendor (its images are one vendor's).
  int64_t below_vendor_best_bandwidth = 0;
  // Device-seconds during which devices sat free on a node where a waiting job fitted by count
  // (its devices per node <= the node's free devices) but was not placed.
  double stranded_device_seconds = 0;
  double queue_delay_p50 = 0;  // seconds from arrival to start, placed jobs
  double queue_delay_p95 = 0;
  double queue_delay_mean = 0;
  // Busy device-seconds / (fleet devices x the arrival window, first to last arrival): the
  // drain after the last arrival is left out.
  double utilisation = 0;
  double makespan = 0;                        // first arrival to last completion, seconds
  int64_t gangs = 0;                          // gang jobs placed
  std::map<std::string, int64_t> gang_tiers;  // fabric tier name -> gangs placed in it
  int64_t allocator_calls = 0;                // device choices asked of the policy
  // Partition jobs (lab/trace.h): how many started; how many waited while a device offering
  // their profile had the free slots and units but no legal placement (fragmentation); and the
  // share of partitionable device-time, over the arrival window, during which each device's
  // largest profile still fitted on it (what a small partition's placement keeps possible).
  int64_t partition_placements = 0;
  int64_t fragmented_waits = 0;
  double largest_profile_fits = 0;
  // What the policy could not do and why (stock-xpu: counts `xpuctl render` writes no claim for,
  // vendors it leaves out).
  std::vector<std::string> notes;
  // For the plots (downsampled to at most a few hundred points each):
  std::vector<SeriesPoint> utilisation_series;  // busy devices / fleet devices
  std::vector<SeriesPoint> stranded_series;     // stranded devices
  std::vector<double> queue_delays;             // sorted ascending (a sample of at most 500)
  // With ReplayOptions::record_placements: one line per job started, in start order,
  // "<job id> @<start s> <node>:<device>,<device> [<node>:...]". Not in the JSON.
  std::vector<std::string> placement_log;
};

struct ReplayResult {
  std::string trace;       // "synthetic 2000 (seed 1)" or the file name
  std::string fleet;       // "6 x atlas800-9000, 4 x hgx-h200, ..."
  std::string node_order;  // "first", "most-allocated", "least-allocated"
  // The stock policies' node choice, "kube" or "order" (empty when no stock policy ran), and
  // kube's tie-break seed.
  std::string scheduler;
  uint64_t scheduler_seed = 0;
  int nodes = 0;
  int devices = 0;
  int64_t jobs = 0;
  std::vector<PolicyMetrics> policies;  // in the order asked for
};

// {"trace", "fleet", "nodeOrder", "scheduler", "schedulerSeed", "nodes", "devices", "jobs",
//  "policies": {"<policy>":
//  {"placements", "unplaced", "rejected", "ruleViolations", "belowBestBandwidth",
//   "meanBandwidthShortfall", "belowFleetBestBandwidth", "belowVendorBestBandwidth",
//   "meanBottleneckGBps",
//   "strandedDeviceSeconds", "queueDelayP50", "queueDelayP95", "queueDelayMean", "utilisation",
//   "makespan", "gangs", "gangTiers", "allocatorCalls", "partitionPlacements",
//   "fragmentedWaits", "largestProfileFits", "notes"}}}.
// Doubles are rounded to 3 decimals (6 for utilisation and shortfall) so the bytes are stable.
nlohmann::json ToJson(const ReplayResult& result);

// A policy's cells of the table, as TextTable and ReportHtml show them: placed, unplaced,
// rejected, rule viol., below-best bw (with the mean shortfall in brackets), below-fleet-best,
// below-vendor-best, bottleneck GB/s, stranded dev·h, delay p50 s, delay p95 s, util %, and gangs
// (with the gangs per tier in brackets).
std::vector<std::string> TableCells(const PolicyMetrics& m);

// The table a person reads: one row per policy, one column per metric (TableCells; the gangs on
// a line of their own below it).
std::string TextTable(const ReplayResult& result);

// "kube (the stock policies' node choice, ties broken with seed 1)", or "order (...)".
std::string SchedulerLine(const ReplayResult& result);

// Whether any policy placed a partition job (or saw one wait on fragmentation).
bool AnyPartitions(const ReplayResult& result);
// "12 placed, 3 waited on fragmentation, largest profile fits 71.2% of device-time".
std::string PartitionLine(const PolicyMetrics& m);

// A self-contained HTML page: the table, then three plots as inline SVG (utilisation over time,
// the CDF of queueing delay, stranded devices over time), one line per policy, with a legend. No
// script, no external reference.
std::string ReportHtml(const ReplayResult& result);

}  // namespace xpu::lab

#endif  // XPU_LAB_RESULT_H_
