// The event loop of one policy's replay, and its accounting (lab/simulation.h).
#include "lab/simulation.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace xpu::lab {
namespace {
namespace simulation_cc {

// Queue delays kept in the result, evenly over the sorted delays.
constexpr size_t kMaxDelaySample = 500;

// Whether the device's largest profile still fits somewhere on it.
bool LargestFits(const topology::PartitionableDevice& device, const topology::PartitionUse& use) {
  const std::vector<int> left = topology::StillPossible(device, use);
  return !left.empty() && left.front() > 0;
}

}  // namespace simulation_cc
}  // namespace

using topology::DeviceSet;

Simulation::Simulation(const Fleet& fleet, const std::vector<Job>& jobs, Chooser& chooser,
                       SolverMemo& solver, const SimulationOptions& options)
    : fleet_(fleet),
      jobs_(jobs),
      chooser_(chooser),
      solver_(solver),
      order_(options.order),
      kube_(options.kube),
      solver_node_(options.solver_node),
      record_(options.record) {
  for (const FleetNode& n : fleet.nodes) {
    free_.push_back(model(n.model).node->All());
  }
  for (const DeviceSet& f : free_) ++histogram_[static_cast<size_t>(f.size())];
  for (const FleetNode& n : fleet.nodes) ++nodes_of_model_[n.model];
  for (const FleetNode& n : fleet.nodes) {
    const FleetModel& m = model(n.model);
    partitions_.push_back({std::vector<topology::PartitionUse>(m.partitionable.size()), {}});
    largest_.emplace_back(m.partitionable.size(), 0);
    partitionable_devices_ += static_cast<int>(m.partitionable.size());
  }
  for (int n = 0; n < static_cast<int>(fleet.nodes.size()); ++n) UpdateLargest(n);
}

StatusOr<PolicyMetrics> Simulation::Run(std::string policy) {
  metrics_.policy = std::move(policy);
  metrics_.jobs = static_cast<int64_t>(jobs_.size());
  std::vector<size_t> arrivals(jobs_.size());
  std::iota(arrivals.begin(), arrivals.end(), size_t{0});
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [&](size_t a, size_t b) { return jobs_[a].arrival < jobs_[b].arrival; });
  if (arrivals.empty()) return metrics_;
  const double first = jobs_[arrivals.front()].arrival;
  last_arrival_ = jobs_[arrivals.back()].arrival;
  double now = first;
  size_t next = 0;
  while (next < arrivals.size() || !running_.empty()) {
    double t = std::numeric_limits<double>::infinity();
    if (next < arrivals.size()) t = jobs_[arrivals[next]].arrival;
    if (!running_.empty()) t = std::min(t, running_.top().end);
    Advance(now, t);
    now = t;
    while (!running_.empty() && running_.top().end <= now) {
      Finish(running_.top().job);
      running_.pop();
    }
    while (next < arrivals.size() && jobs_[arrivals[next]].arrival <= now) {
      Arrive(arrivals[next++]);
    }
    RETURN_IF_ERROR(Pass(now));
    stranded_ = Stranded();
    totals_.utilisation.Record(now, busy_ / fleet_.devices);
    totals_.stranded.Record(now, static_cast<double>(stranded_));
  }
  Summarise(first, now);
  return metrics_;
}

// The metrics from the totals, once the run ended at `now` (the first arrival at `first`).
void Simulation::Summarise(double first, double now) {
  for (const auto& [shape, waiting] : queues_) {
    metrics_.unplaced += static_cast<int64_t>(waiting.size());
  }
  metrics_.makespan = now - first;
  const double window = last_arrival_ - first;
  metrics_.utilisation = window > 0 ? totals_.busy_seconds / (fleet_.devices * window) : 0;
  std::vector<double>& delays = totals_.delays;
  std::sort(delays.begin(), delays.end());
  metrics_.queue_delay_p50 = Percentile(delays, 0.50);
  metrics_.queue_delay_p95 = Percentile(delays, 0.95);
  metrics_.queue_delay_mean = delays.empty() ? 0
                                             : std::accumulate(delays.begin(), delays.end(), 0.0) /
                                                   static_cast<double>(delays.size());
  const size_t sample = std::min(delays.size(), simulation_cc::kMaxDelaySample);
  for (size_t i = 0; i < sample; ++i) {
    metrics_.queue_delays.push_back(
        delays[(i * (delays.size() - 1)) / std::max<size_t>(sample - 1, 1)]);
  }
  if (totals_.shortfall_count > 0) {
    metrics_.mean_bandwidth_shortfall =
        totals_.shortfall_sum / static_cast<double>(totals_.shortfall_count);
  }
  if (totals_.bottleneck_count > 0) {
    metrics_.mean_bottleneck_gbps =
        totals_.bottleneck_sum / static_cast<double>(totals_.bottleneck_count) / 1000.0;
  }
  metrics_.allocator_calls = chooser_.calls();
  metrics_.fragmented_waits = static_cast<int64_t>(totals_.fragmented.size());
  if (partitionable_devices_ > 0 && window > 0) {
    metrics_.largest_profile_fits = totals_.largest_seconds / (partitionable_devices_ * window);
  }
  metrics_.utilisation_series = totals_.utilisation.Downsampled(now);
  metrics_.stranded_series = totals_.stranded.Downsampled(now);
}

void Simulation::Advance(double from, double to) {
  if (to <= from) return;
  // Utilisation over the arrival window: the drain after the last arrival is not the fleet's
  // steady state.
  const double busy_to = std::min(to, last_arrival_);
  if (busy_to > from) {
    totals_.busy_seconds += busy_ * (busy_to - from);
    totals_.largest_seconds += static_cast<double>(largest_fits_) * (busy_to - from);
  }
  metrics_.stranded_device_seconds += static_cast<double>(stranded_) * (to - from);
}

void Simulation::SetFree(int node, DeviceSet set) {
  DeviceSet& f = free_[static_cast<size_t>(node)];
  --histogram_[static_cast<size_t>(f.size())];
  f = set;
  ++histogram_[static_cast<size_t>(f.size())];
  UpdateLargest(node);
}

// The node's partition state as a question sees it: a partitionable device that is not free
// and has given out no partition is held whole.
NodePartitions Simulation::PartitionsOf(int node) const {
  NodePartitions out = partitions_[static_cast<size_t>(node)];
  const FleetModel& m = model_of(node);
  const DeviceSet free = free_of(node);
  for (size_t k = 0; k < m.partitionable.size(); ++k) {
    out.uses[k].whole = !free.Contains(m.partitionable[k].device) && out.uses[k].empty();
  }
  return out;
}

// Recounts the node's devices on which their largest profile still fits.
void Simulation::UpdateLargest(int node) {
  const FleetModel& m = model_of(node);
  if (m.partitionable.empty()) return;
  const NodePartitions now = PartitionsOf(node);
  std::vector<int>& fits = largest_[static_cast<size_t>(node)];
  for (size_t k = 0; k < m.partitionable.size(); ++k) {
    const int f = simulation_cc::LargestFits(m.partitionable[k].model, now.uses[k]) ? 1 : 0;
    largest_fits_ += f - fits[k];
    fits[k] = f;
  }
}

void Simulation::FinishPartition(const PartitionPlaced& p) {
  const FleetModel& m = model_of(p.node);
  const FleetPartitionable& parent = m.partitionable[p.choice.slot];
  NodePartitions& state = partitions_[static_cast<size_t>(p.node)];
  topology::PartitionUse& use = state.uses[p.choice.slot];
  use.Give(*p.shape, p.choice.placement);
  state.held.erase(p.choice.device);
  busy_ -= p.share;
  dirty_.insert(p.node);
  if (use.empty()) {
    SetFree(p.node, free_of(p.node) | DeviceSet::Of({parent.device}));
  } else {
    UpdateLargest(p.node);
  }
}

void Simulation::Finish(size_t job) {
  if (auto it = partition_placed_.find(job); it != partition_placed_.end()) {
    FinishPartition(it->second);
    partition_placed_.erase(it);
    return;
  }
  for (const auto& [node, set] : placed_[job]) {
    SetFree(node, free_of(node) | set);
    busy_ -= set.size();
    dirty_.insert(node);
  }
  placed_.erase(job);
}

// Whether a model of the fleet has a device that could host the profile when empty.
bool Simulation::Offered(const std::string& profile) const {
  for (const FleetModel& m : fleet_.models) {
    for (const FleetPartitionable& p : m.partitionable) {
      if (topology::PlacePartition({&p.model}, {topology::PartitionUse{}}, profile)) return true;
    }
  }
  return false;
}

void Simulation::Arrive(size_t job) {
  const Job& j = jobs_[job];
  if (j.partition()) {
    if (!Offered(j.profile)) {
      ++metrics_.rejected;
      return;
    }
    Enqueue(Shape{1, 0, j.profile}, job);
    return;
  }
  const Shape shape{j.nodes(), j.per_node(), ""};
  // Larger than every node, or than the fleet's nodes of any one model: never fits.
  bool fits = false;
  for (const auto& [m, nodes] : nodes_of_model_) {
    fits = fits || (model(m).devices >= shape.per_node && nodes >= shape.nodes);
  }
  if (!fits) {
    ++metrics_.rejected;
    return;
  }
  Enqueue(shape, job);
}

// Queues `job` behind its shape's; a shape whose queue was empty starts afresh.
void Simulation::Enqueue(const Shape& shape, size_t job) {
  std::deque<size_t>& waiting = queues_[shape];
  if (waiting.empty()) state_[shape] = ShapeState{};
  waiting.push_back(job);
}

// FIFO with backfill: the shape whose head arrived first goes next; a shape that fails stays
// failed for the rest of the pass (nothing is freed during a pass).
Status Simulation::Pass(double now) {
  std::set<Shape> failed;
  while (true) {
    const Shape* pick = nullptr;
    size_t head = 0;
    for (const auto& [shape, waiting] : queues_) {
      if (waiting.empty() || failed.contains(shape)) continue;
      if (pick == nullptr || waiting.front() < head) {
        pick = &shape;
        head = waiting.front();
      }
    }
    if (pick == nullptr) break;
    const Shape shape = *pick;
    const bool only_dirty = state_[shape].failed_everywhere;
    ASSIGN_OR_RETURN(const bool started, TryShape(shape, only_dirty, now));
    if (!started) failed.insert(shape);
  }
  dirty_.clear();
  for (auto& [shape, waiting] : queues_) {
    state_[shape].failed_everywhere = !waiting.empty() && failed.contains(shape);
  }
  return OkStatus();
}

// Places and starts the head of `shape`'s queue; false when it does not fit now (a partition
// job held up by fragmentation is counted so).
StatusOr<bool> Simulation::TryShape(const Shape& shape, bool only_dirty, double now) {
  if (!shape.profile.empty()) {
    ASSIGN_OR_RETURN(std::optional<PartitionPlaced> placed,
                     PlacePartitionJob(shape.profile, only_dirty));
    if (!placed.has_value()) {
      if (Fragmented(shape.profile)) {
        for (size_t job : queues_[shape]) totals_.fragmented.insert(job);
      }
      return false;
    }
    StartPartition(PopHead(shape), *placed, now);
    return true;
  }
  std::vector<Placement> parts;
  if (shape.nodes == 1) {
    ASSIGN_OR_RETURN(auto placed, PlaceSingle(shape.per_node, only_dirty));
    if (placed.has_value()) parts.push_back(*placed);
  } else if (!only_dirty || !dirty_.empty()) {
    ASSIGN_OR_RETURN(parts, PlaceGang(shape));
  }
  if (parts.empty()) return false;
  Start(PopHead(shape), parts, now);
  return true;
}

// Takes the first job of `shape`'s queue off it.
size_t Simulation::PopHead(const Shape& shape) {
  std::deque<size_t>& waiting = queues_[shape];
  const size_t job = waiting.front();
  waiting.pop_front();
  return job;
}

// Devices free on nodes where a waiting job fits by count.
int Simulation::Stranded() const {
  int smallest = kMaxFreeCount + 1;
  for (const auto& [shape, waiting] : queues_) {
    if (waiting.empty() || !shape.profile.empty() || shape.per_node >= smallest) continue;
    if (NodesWithFree(shape.per_node) >= shape.nodes) smallest = shape.per_node;
  }
  int stranded = 0;
  for (int f = smallest; f <= kMaxFreeCount; ++f) {
    stranded += f * histogram_[static_cast<size_t>(f)];
  }
  return stranded;
}

int Simulation::NodesWithFree(int count) const {
  int nodes = 0;
  for (int f = std::max(count, 0); f <= kMaxFreeCount; ++f) {
    nodes += histogram_[static_cast<size_t>(f)];
  }
  return nodes;
}

}  // namespace xpu::lab
