// One policy's replay in the placement lab (lab/replay.h describes the model): a discrete-event
// simulation of the fleet over the job trace. Arrivals and completions are the events; at each,
// the queue is scanned FIFO with backfill and every job that can start does, single-node jobs,
// gangs and partitions each placed their own way (lab/placement.cc) with the policy's device
// choice (lab/choosers.h). The metrics of lab/result.h are accounted as the clock advances.
//
// The event loop and its accounting live in lab/simulation.cc, the placement of one job in
// lab/placement.cc.
#ifndef XPU_LAB_SIMULATION_H_
#define XPU_LAB_SIMULATION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "lab/choosers.h"
#include "lab/fleet.h"
#include "lab/node_choice.h"
#include "lab/replay.h"
#include "lab/result.h"
#include "lab/series.h"
#include "lab/trace.h"
#include "topology/device_set.h"
#include "topology/partitions.h"

namespace xpu::lab {

// How one policy picks nodes, and what the run records.
struct SimulationOptions {
  NodeOrder order = NodeOrder::kFirst;
  // When not null, picks the node of single-node jobs instead of `order`.
  KubeNodeSearch* kube = nullptr;
  bool solver_node = false;  // the solver picks the node too (solver-node)
  bool record = false;       // fill PolicyMetrics::placement_log
};

// One policy's replay. `fleet`, `jobs`, `chooser` and `solver` must outlive it; Run once.
class Simulation {
 public:
  Simulation(const Fleet& fleet, const std::vector<Job>& jobs, Chooser& chooser, SolverMemo& solver,
             const SimulationOptions& options);

  // Replays every job and returns the metrics, named `policy`. Errors: the chooser's.
  StatusOr<PolicyMetrics> Run(std::string policy);

 private:
  static constexpr int kMaxFreeCount = topology::DeviceSet::kCapacity;
  using Placement = std::pair<int, topology::DeviceSet>;  // node, devices

  struct Running {
    double end = 0;
    size_t job = 0;
    // Min-heap on (end, job).
    bool operator<(const Running& o) const { return end != o.end ? end > o.end : job > o.job; }
  };
  // What a job asks for: nodes x devices per node, or one partition of `profile` (per_node 0).
  struct Shape {
    int nodes = 1;
    int per_node = 1;
    std::string profile;
    friend bool operator<(const Shape& a, const Shape& b) {
      return std::tie(a.nodes, a.per_node, a.profile) < std::tie(b.nodes, b.per_node, b.profile);
    }
  };
  struct ShapeState {
    // The shape failed on every node at the end of the last pass, and no node has gained free
    // devices since but those in dirty_: only they can serve it now.
    bool failed_everywhere = false;
  };
  struct PartitionPlaced {
    int node = 0;
    PartitionChoice choice;
    const topology::PartitionShape* shape = nullptr;
    double share = 0;
  };
  // The sums the metrics are made of, accumulated over the run.
  struct RunningTotals {
    double busy_seconds = 0;     // busy_ x time, up to the last arrival
    double largest_seconds = 0;  // largest_fits_ x time, up to the last arrival
    double shortfall_sum = 0;
    int64_t shortfall_count = 0;
    double bottleneck_sum = 0;  // MB/s, single-node sets of 2 or more
    int64_t bottleneck_count = 0;
    std::vector<double> delays;   // queue delay of every job started
    std::set<size_t> fragmented;  // partition jobs held up by fragmentation
    Series utilisation;           // busy devices / fleet devices
    Series stranded;              // stranded devices
  };

  const FleetModel& model(int index) const { return fleet_.models[static_cast<size_t>(index)]; }
  const FleetModel& model_of(int node) const {
    return model(fleet_.nodes[static_cast<size_t>(node)].model);
  }
  int model_index(int node) const { return fleet_.nodes[static_cast<size_t>(node)].model; }
  topology::DeviceSet free_of(int node) const { return free_[static_cast<size_t>(node)]; }

  // lab/simulation.cc: the event loop and the accounting.
  void Summarise(double first, double now);
  void Advance(double from, double to);
  void SetFree(int node, topology::DeviceSet set);
  NodePartitions PartitionsOf(int node) const;
  void UpdateLargest(int node);
  void FinishPartition(const PartitionPlaced& p);
  void Finish(size_t job);
  bool Offered(const std::string& profile) const;
  void Arrive(size_t job);
  void Enqueue(const Shape& shape, size_t job);
  Status Pass(double now);
  StatusOr<bool> TryShape(const Shape& shape, bool only_dirty, double now);
  size_t PopHead(const Shape& shape);
  int Stranded() const;
  int NodesWithFree(int count) const;

  // lab/placement.cc: where one job goes, and starting it there.
  std::vector<int> Candidates(int count, bool only_dirty) const;
  StatusOr<std::optional<Placement>> PlaceSingle(int count, bool only_dirty);
  std::optional<Placement> PlaceSingleBySolver(const std::vector<int>& nodes, int count);
  StatusOr<std::optional<Placement>> PlaceSingleKube(int count, bool only_dirty);
  StatusOr<std::optional<PartitionPlaced>> PlacePartitionJob(const std::string& profile,
                                                             bool only_dirty);
  bool Fragmented(const std::string& profile) const;
  void StartPartition(size_t job, const PartitionPlaced& p, double now);
  StatusOr<std::vector<Placement>> PlaceGang(const Shape& shape);
  int64_t FleetBest(int count, const std::string* vendor = nullptr);
  void JudgeAgainstFleet(const Placement& part);
  void Start(size_t job, const std::vector<Placement>& parts, double now);
  void LogPlacement(size_t job, double now, const std::string& where);

  const Fleet& fleet_;
  const std::vector<Job>& jobs_;
  Chooser& chooser_;
  SolverMemo& solver_;
  NodeOrder order_;
  KubeNodeSearch* kube_;
  bool solver_node_;
  bool record_;

  std::vector<topology::DeviceSet> free_;
  std::array<int, kMaxFreeCount + 1> histogram_ = {};  // nodes by free devices
  std::map<int, int> nodes_of_model_;
  std::set<int> dirty_;  // nodes that gained free devices since the last pass
  std::map<Shape, std::deque<size_t>> queues_;
  std::map<Shape, ShapeState> state_;
  std::priority_queue<Running> running_;
  std::unordered_map<size_t, std::vector<Placement>> placed_;
  double busy_ = 0;  // devices, a partition counting its share
  int stranded_ = 0;
  std::vector<NodePartitions> partitions_;  // per node
  std::vector<std::vector<int>> largest_;   // per node and partitionable device: 1 fits
  int largest_fits_ = 0;                    // devices whose largest profile fits
  int partitionable_devices_ = 0;
  std::unordered_map<size_t, PartitionPlaced> partition_placed_;
  double last_arrival_ = 0;
  std::string last_gang_tier_;
  RunningTotals totals_;
  PolicyMetrics metrics_;
};

}  // namespace xpu::lab

#endif  // XPU_LAB_SIMULATION_H_
