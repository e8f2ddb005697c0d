// Where one job of a replay goes, and starting it there (lab/simulation.h): single-node jobs in
// the node order, by kube-scheduler's search or by the solver; gangs by the fabric solver;
// partitions on a partitionable device.
#include <algorithm>
#include <bit>
#include <cstdio>

#include "lab/simulation.h"
#include "topology/solver.h"

namespace xpu::lab {

using topology::DeviceSet;

// Nodes to try for `count` devices, in the node order; only `dirty_` nodes when the shape
// failed everywhere before.
std::vector<int> Simulation::Candidates(int count, bool only_dirty) const {
  std::vector<int> nodes;
  if (only_dirty) {
    for (int n : dirty_) {
      if (free_of(n).size() >= count) nodes.push_back(n);
    }
  } else {
    for (int n = 0; n < static_cast<int>(free_.size()); ++n) {
      if (free_of(n).size() >= count) nodes.push_back(n);
    }
  }
  auto free_count = [&](int n) { return free_of(n).size(); };
  if (order_ == NodeOrder::kMostAllocated) {
    std::stable_sort(nodes.begin(), nodes.end(),
                     [&](int a, int b) { return free_count(a) < free_count(b); });
  } else if (order_ == NodeOrder::kLeastAllocated) {
    std::stable_sort(nodes.begin(), nodes.end(),
                     [&](int a, int b) { return free_count(a) > free_count(b); });
  }
  return nodes;
}

// A placement for a single-node job, or nullopt.
StatusOr<std::optional<Simulation::Placement>> Simulation::PlaceSingle(int count, bool only_dirty) {
  using Result = std::optional<Placement>;
  if (NodesWithFree(count) == 0) return Result();
  if (kube_ != nullptr) return PlaceSingleKube(count, only_dirty);
  const std::vector<int> nodes = Candidates(count, only_dirty);
  if (solver_node_) return PlaceSingleBySolver(nodes, count);
  for (int n : nodes) {
    ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                     chooser_.Choose(model_index(n), free_of(n), count));
    if (set.has_value()) return Result(std::make_pair(n, *set));
  }
  return Result();
}

// solver-node: the best set over `nodes` (Score::BetterThan), then the least fragmentation
// left, then fleet order.
std::optional<Simulation::Placement> Simulation::PlaceSingleBySolver(const std::vector<int>& nodes,
                                                                     int count) {
  std::optional<Placement> best;
  topology::Score best_score;
  int best_left = 0;
  for (int n : nodes) {
    const DeviceSet free = free_of(n);
    const topology::SolveResult& r = solver_.Best(model_index(n), free, count);
    if (!r.feasible) continue;
    const int left = free.size() - count;
    if (!best.has_value() || r.score.BetterThan(best_score) ||
        (r.score == best_score && (left < best_left || (left == best_left && n < best->first)))) {
      best = std::make_pair(n, r.devices);
      best_score = r.score;
      best_left = left;
    }
  }
  return best;
}

// A placement for a single-node job by kube-scheduler's search and scores (lab/node_choice.h).
// The nodes that can pass Filter: those whose free devices cover the count, and after a pass in
// which the shape failed everywhere, only the dirty ones (dirty_ is ordered, as `only` must be).
StatusOr<std::optional<Simulation::Placement>> Simulation::PlaceSingleKube(int count,
                                                                           bool only_dirty) {
  using Result = std::optional<Placement>;
  std::vector<int> dirty;
  if (only_dirty) dirty.assign(dirty_.begin(), dirty_.end());
  ASSIGN_OR_RETURN(const std::optional<int> node,
                   kube_->Schedule(
                       [&](int n) -> StatusOr<std::optional<int64_t>> {
                         const DeviceSet free = free_of(n);
                         if (free.size() < count) return std::optional<int64_t>();
                         ASSIGN_OR_RETURN(const PolicyAnswer* answer,
                                          chooser_.Answer(model_index(n), free, count));
                         if (!answer->set.has_value()) return std::optional<int64_t>();
                         return std::optional<int64_t>(answer->prioritized_raw);
                       },
                       only_dirty ? &dirty : nullptr));
  if (!node.has_value()) return Result();
  ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                   chooser_.Choose(model_index(*node), free_of(*node), count));
  return Result(std::make_pair(*node, *set));
}

// A place for one partition of `profile`: the node order's first node where the policy finds
// one (solver-node: the solver's cheapest over all nodes, then the node order).
StatusOr<std::optional<Simulation::PartitionPlaced>> Simulation::PlacePartitionJob(
    const std::string& profile, bool only_dirty) {
  std::optional<PartitionPlaced> best;
  std::optional<topology::PartitionCost> best_cost;
  for (int n : Candidates(0, only_dirty)) {
    const FleetModel& m = model_of(n);
    if (m.partitionable.empty()) continue;
    const NodePartitions state = PartitionsOf(n);
    std::optional<PartitionChoice> choice;
    if (solver_node_) {
      const std::optional<topology::PartitionPlace> place = SolverPartition(m, state, profile);
      if (!place.has_value() || (best_cost.has_value() && !(place->cost < *best_cost))) continue;
      best_cost = place->cost;
      choice = ChoiceOf(m, *place, state, profile);
    } else {
      ASSIGN_OR_RETURN(choice,
                       chooser_.ChoosePartition(model_index(n), free_of(n), state, profile));
      if (!choice.has_value()) continue;
    }
    const topology::PartitionableDevice& device = m.partitionable[choice->slot].model;
    const topology::PartitionShape* shape = topology::FindShape(device, profile);
    if (shape == nullptr ||
        !topology::PartitionFits(device, state.uses[choice->slot], *shape, choice->placement)) {
      return InternalError("the policy chose partition " + choice->device + ", which does not fit");
    }
    best = PartitionPlaced{n, *std::move(choice), shape, DeviceShare(device, *shape)};
    if (!solver_node_) break;
  }
  return best;
}

// A waiting partition job is held up by fragmentation when a device that offers its profile
// has the free slots and units for it, but no legal placement free.
bool Simulation::Fragmented(const std::string& profile) const {
  for (int n = 0; n < static_cast<int>(fleet_.nodes.size()); ++n) {
    const FleetModel& m = model_of(n);
    if (m.partitionable.empty()) continue;
    const NodePartitions state = PartitionsOf(n);
    for (size_t k = 0; k < m.partitionable.size(); ++k) {
      const topology::PartitionableDevice& device = m.partitionable[k].model;
      const topology::PartitionShape* shape = topology::FindShape(device, profile);
      if (shape == nullptr || shape->placements.empty() || state.uses[k].whole) continue;
      topology::PartitionUse units = state.uses[k];
      units.slots = 0;
      const int free_slots = static_cast<int>(device.slots) - std::popcount(state.uses[k].slots);
      if (free_slots >= shape->slots &&
          topology::PartitionFits(device, units, *shape, shape->placements.front())) {
        return true;
      }
    }
  }
  return false;
}

void Simulation::StartPartition(size_t job, const PartitionPlaced& p, double now) {
  const FleetModel& m = model_of(p.node);
  const FleetPartitionable& parent = m.partitionable[p.choice.slot];
  NodePartitions& state = partitions_[static_cast<size_t>(p.node)];
  const bool was_free = state.uses[p.choice.slot].empty();
  state.uses[p.choice.slot].Take(*p.shape, p.choice.placement);
  state.held.insert(p.choice.device);
  busy_ += p.share;
  if (was_free) {
    SetFree(p.node, free_of(p.node) - DeviceSet::Of({parent.device}));
  } else {
    UpdateLargest(p.node);
  }
  ++metrics_.placements;
  ++metrics_.partition_placements;
  totals_.delays.push_back(now - jobs_[job].arrival);
  if (record_) {
    LogPlacement(job, now,
                 " " + fleet_.nodes[static_cast<size_t>(p.node)].name + ":" + p.choice.device);
  }
  partition_placed_[job] = p;
  running_.push({now + jobs_[job].duration, job});
}

// A placement for a gang: the fabric solver over each model's nodes that can give the count.
StatusOr<std::vector<Simulation::Placement>> Simulation::PlaceGang(const Shape& shape) {
  std::vector<Placement> parts;
  if (NodesWithFree(shape.per_node) < shape.nodes) return parts;
  const topology::Fabric& fabric = *fleet_.fabric;
  std::optional<topology::GangResult> best;
  for (int m = 0; m < static_cast<int>(fleet_.models.size()); ++m) {
    std::vector<int> free_devices(fleet_.nodes.size(), 0);
    int candidates = 0;
    for (int n = 0; n < static_cast<int>(fleet_.nodes.size()); ++n) {
      const DeviceSet free = free_of(n);
      if (model_index(n) != m || free.size() < shape.per_node) continue;
      ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                       chooser_.Choose(m, free, shape.per_node));
      if (set.has_value()) {
        free_devices[static_cast<size_t>(n)] = free.size();
        ++candidates;
      }
    }
    if (candidates < shape.nodes) continue;
    topology::GangResult r = topology::PlaceGang(fabric, free_devices, shape.nodes, shape.per_node,
                                                 fabric.tier_count() - 1);
    if (!r.feasible) continue;
    if (!best.has_value() || r.tier < best->tier ||
        (r.tier == best->tier && r.free_devices_left < best->free_devices_left)) {
      best = std::move(r);
    }
  }
  if (!best.has_value()) return parts;
  for (int n : best->nodes) {
    ASSIGN_OR_RETURN(const std::optional<DeviceSet> set,
                     chooser_.Choose(model_index(n), free_of(n), shape.per_node));
    if (!set.has_value()) return InternalError("a gang node lost its devices");
    parts.emplace_back(n, *set);
  }
  last_gang_tier_ = fabric.tier(best->tier).name;
  return parts;
}

// The best bottleneck bandwidth a rule-keeping set of `count` had on any node's free devices
// (with `vendor`, any node of a model of that vendor).
int64_t Simulation::FleetBest(int count, const std::string* vendor) {
  int64_t best = 0;
  for (size_t n = 0; n < free_.size(); ++n) {
    if (free_[n].size() < count) continue;
    if (vendor != nullptr && model(fleet_.nodes[n].model).vendor != *vendor) continue;
    const topology::SolveResult& r = solver_.Best(fleet_.nodes[n].model, free_[n], count);
    if (r.feasible) best = std::max(best, r.score.bottleneck_mbps);
  }
  return best;
}

// A single-node job's set against the best set any node (of its vendor) could have given it at
// this moment.
void Simulation::JudgeAgainstFleet(const Placement& part) {
  const auto& [node, set] = part;
  const int64_t got = topology::Evaluate(*model_of(node).node, free_of(node), set).bottleneck_mbps;
  totals_.bottleneck_sum += static_cast<double>(got);
  ++totals_.bottleneck_count;
  if (got < FleetBest(set.size())) ++metrics_.below_fleet_best_bandwidth;
  if (got < FleetBest(set.size(), &model_of(node).vendor)) {
    ++metrics_.below_vendor_best_bandwidth;
  }
}

// Starts `job` on `parts`, judging each part against the rules and the best set.
void Simulation::Start(size_t job, const std::vector<Placement>& parts, double now) {
  const Job& j = jobs_[job];
  bool violation = false;
  double shortfall = 0;
  if (parts.size() == 1 && parts.front().second.size() > 1) JudgeAgainstFleet(parts.front());
  for (const auto& [node, set] : parts) {
    const FleetModel& m = model_of(node);
    const DeviceSet free = free_of(node);
    if (!topology::RuleAllows(*m.node, set)) violation = true;
    const topology::SolveResult& best = solver_.Best(model_index(node), free, set.size());
    if (best.feasible) {
      const int64_t got = topology::Evaluate(*m.node, free, set).bottleneck_mbps;
      const int64_t want = best.score.bottleneck_mbps;
      if (got < want && want > 0) {
        shortfall = std::max(shortfall, 1.0 - static_cast<double>(got) / static_cast<double>(want));
      }
    }
    SetFree(node, free - set);
    busy_ += set.size();
  }
  ++metrics_.placements;
  if (violation) ++metrics_.rule_violations;
  if (shortfall > 0) {
    ++metrics_.below_best_bandwidth;
    totals_.shortfall_sum += shortfall;
    ++totals_.shortfall_count;
  }
  if (j.nodes() > 1) {
    ++metrics_.gangs;
    ++metrics_.gang_tiers[last_gang_tier_];
  }
  totals_.delays.push_back(now - j.arrival);
  if (record_) {
    std::string where;
    for (const auto& [node, set] : parts) {
      where += " " + fleet_.nodes[static_cast<size_t>(node)].name + ":";
      const std::vector<std::string> names = model_of(node).node->Names(set);
      for (size_t i = 0; i < names.size(); ++i) where += (i == 0 ? "" : ",") + names[i];
    }
    LogPlacement(job, now, where);
  }
  placed_[job] = parts;
  running_.push({now + j.duration, job});
}

// Adds "<job> @<now><where>" to the placement log.
void Simulation::LogPlacement(size_t job, double now, const std::string& where) {
  char start[32];
  std::snprintf(start, sizeof start, "%g", now);
  metrics_.placement_log.push_back(jobs_[job].id + " @" + start + where);
}

}  // namespace xpu::lab
