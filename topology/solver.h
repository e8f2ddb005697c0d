// Single-node device-set selection.
//
// Objective, in order: the rule set's hard rules; the set's bottleneck bandwidth (slowest pair),
// higher first; total pair bandwidth, higher first; fragmentation left behind, lower first
// (the vendor's published preference table where there is one, then the fullest group that
// still fits, so whole groups stay free); lowest device indices. Pure and deterministic.
#ifndef XPU_TOPOLOGY_SOLVER_H_
#define XPU_TOPOLOGY_SOLVER_H_

#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "topology/device_set.h"
#include "topology/model.h"

namespace xpu::topology {

// The bottleneck of a single device (no pairs).
inline constexpr int64_t kNoPairs = std::numeric_limits<int64_t>::max();

struct Score {
  int64_t bottleneck_mbps = kNoPairs;  // slowest pair; kNoPairs for one device
  int64_t total_mbps = 0;              // sum over pairs
  // The vendor's published preference rank (Ascend 910 rings: 0 = best); 0 where there is no
  // table. Lower is better; compared before fragmentation.
  int preference = 0;
  // Sum, over the groups the set touches, of their free devices: lower keeps whole groups free.
  int64_t fragmentation = 0;

  // True when `this` is strictly better than `other` (ignoring the index tie-break).
  bool BetterThan(const Score& other) const;
  friend bool operator==(const Score&, const Score&) = default;
};

struct SolveResult {
  bool feasible = false;
  DeviceSet devices;   // when feasible
  Score score;         // when feasible
  std::string reason;  // when not feasible
};

// True when the rule set of `node` allows `set` as an allocation (ignores which devices are free).
bool RuleAllows(const Node& node, DeviceSet set);

// The score of allocating `set` out of `free` (set must be a subset of free).
Score Evaluate(const Node& node, DeviceSet free, DeviceSet set);

// The best set of `count` devices out of `free` that contains `required` (may be empty).
// Infeasible is a normal result with a reason.
SolveResult Solve(const Node& node, DeviceSet free, int count, DeviceSet required = {});

// The device sets worth publishing as allocatable groups of `size`: rule-valid sets of the best
// bottleneck bandwidth, chosen buddy-style (non-overlapping first: each pick is what Solve would
// take from what is left), then, for devices no disjoint group covers, the best overlapping set
// that contains them. Ordered as chosen.
std::vector<DeviceSet> AlignedGroups(const Node& node, int size);

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_SOLVER_H_
