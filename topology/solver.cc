#include "topology/solver.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "topology/internal/text.h"

namespace xpu::topology {
namespace {

// Groups of `kind`, in device order (the rule sets that use them were checked by Node::Build).
std::vector<const Group*> GroupsOf(const Node& node, GroupKind kind) {
  std::vector<const Group*> out;
  for (const Group& g : node.groups()) {
    if (g.kind == kind) out.push_back(&g);
  }
  std::sort(out.begin(), out.end(),
            [](const Group* a, const Group* b) { return a->mask.First() < b->mask.First(); });
  return out;
}

int AreaSize(const Node& node) { return node.size() / 2; }

// Published Ascend 910 preference (docs/reference/hardware.md §1.3): for a request of k inside one
// ring, the free counts of the ring in order of preference (the other ring's state does not
// matter).
int Ascend910RingRank(int k, int ring_free) {
  static constexpr std::array<std::array<int, 4>, 5> kPreference = {{
      {0, 0, 0, 0},
      {1, 3, 2, 4},  // request 1
      {2, 4, 3, 0},  // request 2
      {0, 0, 0, 0},
      {4, 0, 0, 0},  // request 4
  }};
  if (k >= 1 && k <= 4) {
    const auto& order = kPreference[static_cast<size_t>(k)];
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] == ring_free) return static_cast<int>(i);
    }
  }
  return 4 + ring_free;
}

// Counts the rule set allows, as "1, 2, 4, 8" for messages; and whether k is one of them.
bool CountAllowed(const Node& node, int k, std::string* allowed) {
  const int n = node.size();
  std::vector<int> counts;
  switch (node.rule_set()) {
    case RuleSetKind::kAscend910Ring: {
      int ring = 0;
      for (const Group* g : GroupsOf(node, GroupKind::kHccsRing)) {
        ring = std::max(ring, g->mask.size());
      }
      for (int c : {1, 2, 4}) {
        if (c <= ring) counts.push_back(c);
      }
      if (std::find(counts.begin(), counts.end(), n) == counts.end()) counts.push_back(n);
      break;
    }
    case RuleSetKind::kAscend910BBox16: {
      const int area = AreaSize(node);
      for (int c = 1; c <= area; ++c) counts.push_back(c);
      for (int c = area + 1; c <= 2 * area; ++c) {
        if (c % 2 == 0) counts.push_back(c);
      }
      break;
    }
    case RuleSetKind::kAscendA3:
      counts.push_back(1);
      for (int c = 2; c <= n; c += 2) counts.push_back(c);
      break;
    case RuleSetKind::kRingSets:
      counts.push_back(1);
      for (int c = 2; c <= n; ++c) {
        if (!node.valid_sets(c).empty()) counts.push_back(c);
      }
      break;
    case RuleSetKind::kAny:
    case RuleSetKind::kNvSwitch:
    case RuleSetKind::kPcieTree:
      for (int c = 1; c <= n; ++c) counts.push_back(c);
      break;
  }
  allowed->clear();
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) *allowed += ", ";
    *allowed += std::to_string(counts[i]);
  }
  return std::find(counts.begin(), counts.end(), k) != counts.end();
}

int64_t Fragmentation(const Node& node, DeviceSet free, DeviceSet set) {
  int64_t frag = 0;
  for (const Group& g : node.groups()) {
    if (g.mask.Intersects(set)) frag += (g.mask & free).size();
  }
  return frag;
}

int Preference(const Node& node, DeviceSet free, DeviceSet set) {
  if (node.rule_set() != RuleSetKind::kAscend910Ring || set.size() == node.size()) return 0;
  for (const Group* ring : GroupsOf(node, GroupKind::kHccsRing)) {
    if (set.IsSubsetOf(ring->mask)) {
      return Ascend910RingRank(set.size(), (ring->mask & free).size());
    }
  }
  return 0;
}

// Depth-first search over units (single devices, A3 modules or Box16 position pairs), in order
// of their lowest device, with symmetry breaking and branch and bound.
//
// Symmetry: skipping a unit closes its class, because a set using a later unit of that class
// scores the same as the set using the skipped one, and the latter has lower indices.
// Bounds, once a best set is known: every pair of a better set is at least as fast as the best
// set's bottleneck, so only units that fast to everything chosen can still be added (and there
// must be enough of them); when the bottleneck can at most tie, the total bandwidth is bounded
// by what is chosen, the largest gains of the candidates towards it, and the fastest links
// among them.
class Search {
 public:
  Search(const Node& node, DeviceSet free, int count, DeviceSet required)
      : node_(node), free_(free), count_(count), required_(required) {}

  // Searches the units of `sys` that lie inside `domain` and are entirely free.
  void Run(const Node::UnitSystem& sys, DeviceSet domain) {
    if (!required_.IsSubsetOf(domain)) return;
    units_.clear();
    int next_private_class = static_cast<int>(sys.units.size());
    for (size_t u = 0; u < sys.units.size(); ++u) {
      const DeviceSet mask = sys.units[u];
      if (!mask.IsSubsetOf(free_ & domain)) continue;
      Unit unit{mask, mask.size(), sys.unit_class[u], mask.Ids(), kNoPairs, 0};
      // A unit holding a required device must not be swapped for another: its own class.
      if (mask.Intersects(required_)) unit.cls = next_private_class++;
      for (size_t i = 0; i < unit.members.size(); ++i) {
        for (size_t j = i + 1; j < unit.members.size(); ++j) {
          const int64_t bw = node_.PairBandwidth(unit.members[i], unit.members[j]);
          unit.internal_min = std::min(unit.internal_min, bw);
          unit.internal_total += bw;
        }
      }
      units_.push_back(std::move(unit));
    }
    suffix_size_.assign(units_.size() + 1, 0);
    for (size_t i = units_.size(); i-- > 0;) suffix_size_[i] = suffix_size_[i + 1] + units_[i].size;
    closed_.assign(static_cast<size_t>(next_private_class), false);
    State start;
    start.min_to.fill(kNoPairs);
    start.gain.fill(0);
    Dfs(0, start);
  }

  // Scores a complete candidate (ring sets are checked one by one).
  void Consider(DeviceSet set) {
    if (!set.IsSubsetOf(free_) || !required_.IsSubsetOf(set) || !RuleAllows(node_, set)) return;
    Offer(set, Evaluate(node_, free_, set));
  }

  bool found() const { return found_; }
  DeviceSet best() const { return best_set_; }
  const Score& best_score() const { return best_; }

 private:
  struct Unit {
    DeviceSet mask;
    int size;
    int cls;
    std::vector<int> members;
    int64_t internal_min;  // slowest pair inside the unit
    int64_t internal_total;
  };
  struct State {
    DeviceSet chosen;
    int count = 0;
    int64_t min = kNoPairs;  // slowest pair chosen so far
    int64_t total = 0;
    std::array<int64_t, kMaxDevices> min_to;  // per device: slowest link to the chosen ones
    std::array<int64_t, kMaxDevices> gain;    // per device: bandwidth to the chosen ones
  };

  void Offer(DeviceSet set, const Score& score) {
    if (!found_ || score.BetterThan(best_) ||
        (score == best_ && DeviceSet::LexLess(set, best_set_))) {
      found_ = true;
      best_ = score;
      best_set_ = set;
    }
  }

  State With(const State& s, const Unit& unit) const {
    State next = s;
    next.chosen = s.chosen | unit.mask;
    next.count = s.count + unit.size;
    next.min = std::min(s.min, unit.internal_min);
    next.total = s.total + unit.internal_total;
    for (int m : unit.members) {
      next.min = std::min(next.min, s.min_to[static_cast<size_t>(m)]);
      next.total += s.gain[static_cast<size_t>(m)];
    }
    for (int x = 0; x < node_.size(); ++x) {
      for (int m : unit.members) {
        const int64_t bw = x == m ? kNoPairs : node_.PairBandwidth(x, m);
        next.min_to[static_cast<size_t>(x)] = std::min(next.min_to[static_cast<size_t>(x)], bw);
        next.gain[static_cast<size_t>(x)] += x == m ? 0 : bw;
      }
    }
    return next;
  }

  // False when no completion of `s` from units_[pos..] can beat the best set.
  bool MayImprove(size_t pos, const State& s, int need) const {
    if (s.min < best_.bottleneck_mbps) return false;
    const int64_t floor = best_.bottleneck_mbps;
    int capacity = 0;
    int64_t fastest = 0;
    gains_.clear();
    for (size_t i = pos; i < units_.size(); ++i) {
      const Unit& u = units_[i];
      if (closed_[static_cast<size_t>(u.cls)] || u.size > need || u.internal_min < floor) continue;
      bool fast_enough = true;
      for (int m : u.members) {
        fast_enough = fast_enough && s.min_to[static_cast<size_t>(m)] >= floor;
      }
      if (!fast_enough) continue;
      capacity += u.size;
      for (int m : u.members) {
        gains_.push_back(s.gain[static_cast<size_t>(m)]);
        fastest = std::max(fastest, node_.MaxPairBandwidth(m));
      }
    }
    if (capacity < need) return false;
    if (s.min > best_.bottleneck_mbps) return true;  // may still raise the bottleneck
    const auto top = gains_.begin() + need;
    std::nth_element(gains_.begin(), top - 1, gains_.end(), std::greater<>());
    int64_t bound = s.total + int64_t{need} * (need - 1) / 2 * fastest;
    for (auto it = gains_.begin(); it != top; ++it) bound += *it;
    return bound >= best_.total_mbps;
  }

  void Dfs(size_t pos, const State& s) {
    const int need = count_ - s.count;
    if (need == 0) {
      if (required_.IsSubsetOf(s.chosen) && RuleAllows(node_, s.chosen)) {
        Offer(s.chosen, Score{s.min, s.total, Preference(node_, free_, s.chosen),
                              Fragmentation(node_, free_, s.chosen)});
      }
      return;
    }
    if (pos == units_.size() || suffix_size_[pos] < need) return;
    if (found_ && !MayImprove(pos, s, need)) return;
    const Unit& unit = units_[pos];
    const auto cls = static_cast<size_t>(unit.cls);
    if (!closed_[cls] && unit.size <= need) Dfs(pos + 1, With(s, unit));
    if (unit.mask.Intersects(required_)) return;  // a required unit cannot be skipped
    const bool was_closed = closed_[cls];
    closed_[cls] = true;
    Dfs(pos + 1, s);
    closed_[cls] = was_closed;
  }

  const Node& node_;
  const DeviceSet free_;
  const int count_;
  const DeviceSet required_;
  std::vector<Unit> units_;
  std::vector<int> suffix_size_;
  std::vector<bool> closed_;
  mutable std::vector<int64_t> gains_;  // scratch for MayImprove
  bool found_ = false;
  Score best_;
  DeviceSet best_set_;
};

}  // namespace

bool Score::BetterThan(const Score& other) const {
  if (bottleneck_mbps != other.bottleneck_mbps) return bottleneck_mbps > other.bottleneck_mbps;
  if (total_mbps != other.total_mbps) return total_mbps > other.total_mbps;
  if (preference != other.preference) return preference < other.preference;
  return fragmentation < other.fragmentation;
}

bool RuleAllows(const Node& node, DeviceSet set) {
  const int k = set.size();
  const int n = node.size();
  if (k == 0 || !set.IsSubsetOf(node.All())) return false;
  if (k == 1) return true;
  switch (node.rule_set()) {
    case RuleSetKind::kAny:
    case RuleSetKind::kNvSwitch:
    case RuleSetKind::kPcieTree:
      return true;
    case RuleSetKind::kAscend910Ring: {
      if (k == n) return true;
      if (k != 2 && k != 4) return false;
      for (const Group* ring : GroupsOf(node, GroupKind::kHccsRing)) {
        if (set.IsSubsetOf(ring->mask)) return true;
      }
      return false;
    }
    case RuleSetKind::kAscend910BBox16: {
      const std::vector<const Group*> areas = GroupsOf(node, GroupKind::kHccsArea);
      const int area = AreaSize(node);
      if (k <= area) return set.IsSubsetOf(areas[0]->mask) || set.IsSubsetOf(areas[1]->mask);
      if (k % 2 != 0) return false;
      // k/2 in each area, at the same positions.
      for (size_t p = 0; p < areas[0]->members.size(); ++p) {
        if (set.Contains(areas[0]->members[p]) != set.Contains(areas[1]->members[p])) return false;
      }
      return true;
    }
    case RuleSetKind::kAscendA3: {
      if (k % 2 != 0) return false;
      for (const Group* module : GroupsOf(node, GroupKind::kHiamModule)) {
        if (module->mask.Intersects(set) && !module->mask.IsSubsetOf(set)) return false;
      }
      return true;
    }
    case RuleSetKind::kRingSets: {
      const std::vector<DeviceSet>& sets = node.valid_sets(k);
      return std::find(sets.begin(), sets.end(), set) != sets.end();
    }
  }
  return false;
}

Score Evaluate(const Node& node, DeviceSet free, DeviceSet set) {
  Score score;
  const std::vector<int> ids = set.Ids();
  for (size_t i = 0; i < ids.size(); ++i) {
    for (size_t j = i + 1; j < ids.size(); ++j) {
      const int64_t bw = node.PairBandwidth(ids[i], ids[j]);
      score.bottleneck_mbps = std::min(score.bottleneck_mbps, bw);
      score.total_mbps += bw;
    }
  }
  score.preference = Preference(node, free, set);
  score.fragmentation = Fragmentation(node, free, set);
  return score;
}

SolveResult Solve(const Node& node, DeviceSet free, int count, DeviceSet required) {
  SolveResult result;
  free = free & node.All();
  const int n = node.size();
  const std::string rules(RuleSetKindName(node.rule_set()));
  std::string allowed;
  if (count < 1) {
    result.reason = "count must be at least 1, got " + std::to_string(count);
    return result;
  }
  if (!CountAllowed(node, count, &allowed)) {
    result.reason = "count " + std::to_string(count) + " is not allowed by rule set " + rules +
                    " of node " + node.name() + " (allowed: " + allowed + ")";
    return result;
  }
  if (!required.IsSubsetOf(free)) {
    result.reason =
        "required device " + node.device((required - free).First()).name + " is not free";
    return result;
  }
  if (count > free.size()) {
    result.reason = "node " + node.name() + " has " + internal::Plural(free.size(), "free device") +
                    ", " + std::to_string(count) + " requested";
    return result;
  }

  Search search(node, free, count, required);
  switch (node.rule_set()) {
    case RuleSetKind::kRingSets:
      if (count == 1) {
        search.Run(node.singles(), node.All());
      } else {
        for (DeviceSet set : node.valid_sets(count)) search.Consider(set);
      }
      break;
    case RuleSetKind::kAscend910Ring:
      if (count == n) {
        search.Run(node.singles(), node.All());
      } else {
        for (const Group* ring : GroupsOf(node, GroupKind::kHccsRing)) {
          search.Run(node.singles(), ring->mask);
        }
      }
      break;
    case RuleSetKind::kAscend910BBox16:
      if (count <= AreaSize(node)) {
        for (const Group* area : GroupsOf(node, GroupKind::kHccsArea)) {
          search.Run(node.singles(), area->mask);
        }
      } else {
        search.Run(node.positions(), node.All());
      }
      break;
    case RuleSetKind::kAscendA3:
      search.Run(count == 1 ? node.singles() : node.modules(), node.All());
      break;
    case RuleSetKind::kAny:
    case RuleSetKind::kNvSwitch:
    case RuleSetKind::kPcieTree:
      search.Run(node.singles(), node.All());
      break;
  }
  if (!search.found()) {
    std::string why;
    switch (node.rule_set()) {
      case RuleSetKind::kAscend910Ring:
        why = "no HCCS ring has " + internal::Plural(count, "free device");
        break;
      case RuleSetKind::kAscend910BBox16:
        why = count <= AreaSize(node) ? "no HCCS area has " + internal::Plural(count, "free device")
                                      : "fewer than " + std::to_string(count / 2) +
                                            " positions are free in both HCCS areas";
        break;
      case RuleSetKind::kAscendA3:
        why = "fewer than " + internal::Plural(count / 2, "whole free HiAM module");
        break;
      case RuleSetKind::kRingSets:
        why = "no listed set of " + std::to_string(count) + " is entirely free";
        break;
      default:
        why = "no set satisfies the rules";
        break;
    }
    if (!required.empty()) why += " that contains " + node.device(required.First()).name;
    result.reason = "no set of " + std::to_string(count) + " on node " + node.name() +
                    " under rule set " + rules + ": " + why;
    return result;
  }
  result.feasible = true;
  result.devices = search.best();
  result.score = search.best_score();
  return result;
}

std::vector<DeviceSet> AlignedGroups(const Node& node, int size) {
  std::vector<DeviceSet> groups;
  DeviceSet free = node.All();
  DeviceSet covered;
  int64_t best_bottleneck = 0;
  // Buddy pass: each group is what Solve takes from what the earlier groups left.
  while (true) {
    SolveResult r = Solve(node, free, size);
    if (!r.feasible) break;
    if (groups.empty()) best_bottleneck = r.score.bottleneck_mbps;
    if (r.score.bottleneck_mbps < best_bottleneck) break;
    groups.push_back(r.devices);
    free = free - r.devices;
    covered = covered | r.devices;
  }
  if (groups.empty()) return groups;
  // Cover pass: the best overlapping set for each device no disjoint group holds.
  for (int id : (node.All() - covered).Ids()) {
    if (covered.Contains(id)) continue;
    SolveResult r = Solve(node, node.All(), size, DeviceSet::Of({id}));
    if (!r.feasible || r.score.bottleneck_mbps < best_bottleneck) continue;
    groups.push_back(r.devices);
    covered = covered | r.devices;
  }
  return groups;
}

}  // namespace xpu::topology
