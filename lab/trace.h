// Job traces for the placement lab (`xpuctl replay`): what arrives when, in what shape, for how
// long. A trace is a CSV file, one job per line:
//
//   #id,arrival,shape,duration
//   train-1,0,8+8+8+8,3600
//   infer-7,12.5,1,95
//
// id: any text without commas; arrival and duration: seconds (decimals allowed, duration > 0,
// arrival >= 0); shape: the devices per node, joined by '+' ("8" is one node of 8 devices,
// "8+8+8+8" a gang of 4 nodes of 8), or "partition:<profile>": one partition of a partitionable
// device ("partition:1g.18gb", "partition:vir05_1c_16g"). A gang's parts must be equal (a gang is
// placed as `nodes x devicesPerNode`). Blank lines and lines starting with '#' are skipped. Jobs
// need not be sorted by arrival; the simulation orders them (ties: file order).
//
// SyntheticTrace generates a trace with the documented mix (docs/placement-lab.md): mostly
// 1-device jobs, a tail of 2/3/4/6/8, and a few multi-node gangs of 2 and 4 nodes x 8; durations
// heavy-tailed (Pareto); Poisson arrivals at the rate that offers `load` of the fleet's devices.
// With `partition_share` > 0, that share of the jobs asks for one partition instead, of a profile
// of `partitions` drawn by weight (lab/fleet.h's PartitionOffers: an inference-style mix).
// Deterministic: the same options give the same trace on every platform (no std:: distributions).
#ifndef XPU_LAB_TRACE_H_
#define XPU_LAB_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::lab {

inline constexpr std::string_view kPartitionShapePrefix = "partition:";

struct Job {
  std::string id;
  double arrival = 0;        // seconds from the trace's start
  std::vector<int> parts;    // devices per node; size() > 1: a gang (all parts equal)
  double duration = 0;       // seconds, > 0
  std::string profile = {};  // a partition job: the profile (parts is then empty)

  bool partition() const { return !profile.empty(); }

  int nodes() const { return static_cast<int>(parts.size()); }
  int per_node() const { return parts.empty() ? 0 : parts.front(); }
  int devices() const { return nodes() * per_node(); }
  friend bool operator==(const Job&, const Job&) = default;
};

// Parses a trace. `source` names the input in errors, which give the line and the column:
//   "jobs.csv: line 3, column shape: \"8+x\" is not a device count (a positive integer)".
StatusOr<std::vector<Job>> ParseTrace(std::string_view text, std::string_view source);

// A partition profile a synthetic trace may ask for, the share of one device it takes, and how
// often it is drawn (weight / the sum of the offers' weights).
struct PartitionOffer {
  std::string profile;
  double device_share = 0;  // 0 < share <= 1
  double weight = 1;        // > 0
};

struct SyntheticOptions {
  int jobs = 1000;
  uint64_t seed = 1;
  int fleet_devices = 0;         // devices in the fleet (sets the arrival rate)
  int max_devices_per_node = 8;  // single-node shapes above this are left out of the mix
  int nodes = 1;                 // gangs larger than the fleet are left out of the mix
  double load = 0.9;             // offered device-seconds per second / fleet devices
  double partition_share = 0;    // of the jobs, 0..1: one partition each
  std::vector<PartitionOffer> partitions = {};  // when partition_share > 0
  int partitionable_devices = 0;  // the devices that serve them (sets their share of the rate)
};

// A synthetic trace; ids "job-000001"...; arrivals rounded to milliseconds.
std::vector<Job> SyntheticTrace(const SyntheticOptions& options);

// The trace as CSV, with the header line; ParseTrace reads it back.
std::string TraceCsv(const std::vector<Job>& jobs);

}  // namespace xpu::lab

#endif  // XPU_LAB_TRACE_H_
