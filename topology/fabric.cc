#include "topology/fabric.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "topology/internal/text.h"

namespace xpu::topology {

StatusOr<Fabric> Fabric::Build(const FabricSpec& spec) {
  Fabric f;
  if (spec.tiers.empty()) return InvalidArgumentError("tiers: a fabric needs at least one tier");
  for (size_t i = 0; i < spec.tiers.size(); ++i) {
    const TierSpec& t = spec.tiers[i];
    const std::string field = "tiers[" + std::to_string(i) + "]";
    if (t.name.empty()) return InvalidArgumentError(field + ".name: must not be empty");
    for (size_t j = 0; j < i; ++j) {
      if (spec.tiers[j].name == t.name) {
        return InvalidArgumentError(field + ".name: duplicate tier " + t.name);
      }
    }
    if (!(t.bandwidth_gbps >= 0) || !std::isfinite(t.bandwidth_gbps)) {
      return InvalidArgumentError(field + ".bandwidthGBps: must be a non-negative number");
    }
  }
  f.tiers_ = spec.tiers;
  std::map<std::string, int> domain_ids;
  for (size_t i = 0; i < spec.domains.size(); ++i) {
    const DomainSpec& d = spec.domains[i];
    const std::string field = "domains[" + std::to_string(i) + "]";
    if (d.name.empty()) return InvalidArgumentError(field + ".name: must not be empty");
    if (d.tier < 0 || d.tier >= static_cast<int>(spec.tiers.size())) {
      return InvalidArgumentError(field + ".tier: " + std::to_string(d.tier) +
                                  " is not a tier index");
    }
    if (!domain_ids.emplace(d.name, static_cast<int>(i)).second) {
      return InvalidArgumentError(field + ".name: duplicate domain " + d.name);
    }
    f.domains_.push_back(DomainRec{d.name, d.tier, -1, {}, {}});
  }
  for (size_t i = 0; i < spec.domains.size(); ++i) {
    const DomainSpec& d = spec.domains[i];
    if (d.parent.empty()) continue;
    const std::string field = "domains[" + std::to_string(i) + "].parent";
    auto it = domain_ids.find(d.parent);
    if (it == domain_ids.end()) return InvalidArgumentError(field + ": unknown domain " + d.parent);
    if (f.domains_[static_cast<size_t>(it->second)].tier <= d.tier) {
      return InvalidArgumentError(field + ": " + d.parent + " is not in a higher tier than " +
                                  d.name);
    }
    f.domains_[i].parent = it->second;
    f.domains_[static_cast<size_t>(it->second)].children.push_back(static_cast<int>(i));
  }
  std::map<std::string, int> node_ids;
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const FabricNodeSpec& n = spec.nodes[i];
    const std::string field = "nodes[" + std::to_string(i) + "]";
    if (n.name.empty()) return InvalidArgumentError(field + ".name: must not be empty");
    if (!node_ids.emplace(n.name, static_cast<int>(i)).second) {
      return InvalidArgumentError(field + ".name: duplicate node " + n.name);
    }
    int domain = -1;
    if (!n.domain.empty()) {
      auto it = domain_ids.find(n.domain);
      if (it == domain_ids.end()) {
        return InvalidArgumentError(field + ".domain: unknown domain " + n.domain);
      }
      domain = it->second;
      f.domains_[static_cast<size_t>(domain)].nodes.push_back(static_cast<int>(i));
    }
    f.nodes_.push_back(NodeRec{n.name, domain});
  }
  const size_t tiers = f.tiers_.size();
  f.ancestors_.assign(f.nodes_.size() * tiers, -1);
  for (size_t i = 0; i < f.nodes_.size(); ++i) {
    for (int d = f.nodes_[i].domain; d >= 0; d = f.domains_[static_cast<size_t>(d)].parent) {
      f.ancestors_[i * tiers + static_cast<size_t>(f.domains_[static_cast<size_t>(d)].tier)] = d;
    }
  }
  return f;
}

std::optional<int> Fabric::FindTier(std::string_view name) const {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    if (tiers_[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<int> Fabric::FindNode(std::string_view name) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

int Fabric::NodeDomain(int node, int tier) const {
  return ancestors_[static_cast<size_t>(node) * tiers_.size() + static_cast<size_t>(tier)];
}

// Per-call state of one placement: eligible-node and free-device counts per domain.
class GangPlacer {
 public:
  GangPlacer(const Fabric& fabric, std::span<const int> free, int k)
      : f_(fabric), free_(free), k_(k) {
    eligible_.assign(f_.domains_.size(), 0);
    free_sum_.assign(f_.domains_.size(), 0);
    // One pass over the compact node x tier ancestor table (not the domain records).
    const size_t tiers = f_.tiers_.size();
    const size_t n = std::min(f_.nodes_.size(), free_.size());
    for (size_t i = 0; i < n; ++i) {
      const int node_free = std::max(free_[i], 0);
      if (node_free == 0) continue;
      const int* up = &f_.ancestors_[i * tiers];
      for (size_t t = 0; t < tiers; ++t) {
        if (up[t] < 0) continue;
        free_sum_[static_cast<size_t>(up[t])] += node_free;
        if (node_free >= k_) ++eligible_[static_cast<size_t>(up[t])];
      }
    }
  }

  int64_t eligible(int d) const { return eligible_[static_cast<size_t>(d)]; }
  int64_t free_sum(int d) const { return free_sum_[static_cast<size_t>(d)]; }

  // Takes `want` eligible nodes out of domain `d` (which has at least that many), best-fit:
  // whole parts from the largest down, the remainder from the tightest part that holds it. A
  // node directly in the domain is a part holding one node.
  void Take(int d, int64_t want, std::vector<int>* out) const {
    const auto& rec = f_.domains_[static_cast<size_t>(d)];
    struct Part {
      int64_t eligible;
      int64_t free;
      bool is_node;
      int id;
    };
    std::vector<Part> parts;
    for (int c : rec.children) {
      if (eligible(c) > 0) parts.push_back(Part{eligible(c), free_sum(c), false, c});
    }
    for (int n : rec.nodes) {
      if (NodeFree(n) >= k_) parts.push_back(Part{1, NodeFree(n), true, n});
    }
    std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) {
      return std::tuple(-a.eligible, a.free, a.is_node, a.id) <
             std::tuple(-b.eligible, b.free, b.is_node, b.id);
    });
    for (auto next = parts.begin(); want > 0 && next != parts.end(); ++next) {
      // The unused parts that hold `want` are a prefix of [next, end).
      auto holds = std::partition_point(next, parts.end(),
                                        [&](const Part& p) { return p.eligible >= want; });
      if (holds != next) {
        const int64_t tight = std::prev(holds)->eligible;
        auto pick =
            std::partition_point(next, holds, [&](const Part& p) { return p.eligible > tight; });
        TakeFrom(*pick, want, out);
        return;
      }
      TakeFrom(*next, next->eligible, out);
      want -= next->eligible;
    }
  }

 private:
  int NodeFree(int n) const {
    return static_cast<size_t>(n) < free_.size() ? std::max(free_[static_cast<size_t>(n)], 0) : 0;
  }

  template <typename Part>
  void TakeFrom(const Part& part, int64_t want, std::vector<int>* out) const {
    if (part.is_node) {
      out->push_back(part.id);
    } else {
      Take(part.id, want, out);
    }
  }

  const Fabric& f_;
  std::span<const int> free_;
  int k_;
  std::vector<int64_t> eligible_;
  std::vector<int64_t> free_sum_;
};

GangResult PlaceGang(const Fabric& fabric, std::span<const int> free_devices, int nodes,
                     int devices_per_node, int highest_tier) {
  GangResult result;
  if (nodes < 1 || devices_per_node < 1) {
    result.reason = "a gang needs at least 1 node and 1 device per node";
    return result;
  }
  if (highest_tier < 0 || highest_tier >= fabric.tier_count()) {
    result.reason = "highest tier " + std::to_string(highest_tier) + " is not a tier of the fabric";
    return result;
  }
  GangPlacer placer(fabric, free_devices, devices_per_node);
  // Lowest tier first; inside a tier the best fit: fewest free devices, then lowest id.
  int64_t largest = 0;
  for (int tier = 0; tier <= highest_tier; ++tier) {
    int best = -1;
    for (int d = 0; d < fabric.domain_count(); ++d) {
      if (fabric.domain_tier(d) != tier) continue;
      largest = std::max(largest, placer.eligible(d));
      if (placer.eligible(d) < nodes) continue;
      if (best < 0 || placer.free_sum(d) < placer.free_sum(best)) best = d;
    }
    if (best < 0) continue;
    placer.Take(best, nodes, &result.nodes);
    // Rank order: tree order (the node's domains from the top tier down, then node id), so the
    // ranks of one leaf, and of one spine, are adjacent whatever order the spec lists them in.
    const size_t width = static_cast<size_t>(fabric.tier_count()) + 1;
    std::vector<int> keys;  // one row of `width` per placed node, computed once
    keys.reserve(result.nodes.size() * width);
    for (int n : result.nodes) {
      for (int t = fabric.tier_count() - 1; t >= 0; --t) keys.push_back(fabric.NodeDomain(n, t));
      keys.push_back(n);
    }
    auto row = [&](size_t i) { return keys.begin() + static_cast<std::ptrdiff_t>(i * width); };
    std::vector<size_t> order(result.nodes.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::lexicographical_compare(row(a), row(a + 1), row(b), row(b + 1));
    });
    std::vector<int> ranked;
    ranked.reserve(order.size());
    for (size_t i : order) ranked.push_back(result.nodes[i]);
    result.nodes = std::move(ranked);
    result.feasible = true;
    result.tier = tier;
    result.domain = best;
    result.free_devices_left = placer.free_sum(best) - int64_t{nodes} * devices_per_node;
    return result;
  }
  result.reason = "no domain up to tier " + fabric.tier(highest_tier).name + " has " +
                  internal::Plural(nodes, "node") + " with " +
                  internal::Plural(devices_per_node, "free device") + " (the most any has is " +
                  std::to_string(largest) + ")";
  return result;
}

}  // namespace xpu::topology
