// The multi-node fabric model and gang placement.
//
// Nodes sit under domains of increasing tiers (e.g. tier 0 "leaf" or an NVL72 domain, tier 1
// "spine", tier 2 "superpod"); each tier has a name and a bandwidth. PlaceGang puts m nodes of k
// free devices each into the lowest tier whose single domain fits, best-fit inside it (the domain
// with the fewest free devices, then, among its children, whole children first and the tightest
// fit for the rest), as Slurm's topology/tree and Kueue's BestFit do. Pure and deterministic;
// Fabric is immutable after Build and safe to share between threads.
#ifndef XPU_TOPOLOGY_FABRIC_H_
#define XPU_TOPOLOGY_FABRIC_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::topology {

struct TierSpec {
  std::string name;           // "leaf", "spine", "superpod", "nvl72" ...
  double bandwidth_gbps = 0;  // per node into this tier; for pictures and reports
};

struct DomainSpec {
  std::string name;
  int tier = 0;        // index into FabricSpec::tiers
  std::string parent;  // empty: a top domain
};

struct FabricNodeSpec {
  std::string name;
  std::string domain;  // the lowest domain holding the node; empty: in no domain
};

struct FabricSpec {
  std::vector<TierSpec> tiers;  // lowest first
  std::vector<DomainSpec> domains;
  std::vector<FabricNodeSpec> nodes;
};

class Fabric {
 public:
  // Errors name the field, e.g. "domains[4].parent: unknown domain spine-9".
  static StatusOr<Fabric> Build(const FabricSpec& spec);

  int node_count() const { return static_cast<int>(nodes_.size()); }
  int domain_count() const { return static_cast<int>(domains_.size()); }
  int tier_count() const { return static_cast<int>(tiers_.size()); }
  const std::string& node_name(int node) const { return nodes_[static_cast<size_t>(node)].name; }
  const std::string& domain_name(int domain) const {
    return domains_[static_cast<size_t>(domain)].name;
  }
  const TierSpec& tier(int t) const { return tiers_[static_cast<size_t>(t)]; }
  std::optional<int> FindTier(std::string_view name) const;
  std::optional<int> FindNode(std::string_view name) const;
  int domain_tier(int domain) const { return domains_[static_cast<size_t>(domain)].tier; }
  int domain_parent(int domain) const { return domains_[static_cast<size_t>(domain)].parent; }
  // The node's domain at `tier`, or -1.
  int NodeDomain(int node, int tier) const;
  int node_leaf(int node) const { return nodes_[static_cast<size_t>(node)].domain; }

 private:
  struct DomainRec {
    std::string name;
    int tier = 0;
    int parent = -1;
    std::vector<int> children;  // child domains
    std::vector<int> nodes;     // nodes directly in this domain
  };
  struct NodeRec {
    std::string name;
    int domain = -1;
  };
  friend class GangPlacer;

  std::vector<TierSpec> tiers_;
  std::vector<DomainRec> domains_;
  std::vector<NodeRec> nodes_;
  std::vector<int> ancestors_;  // node * tiers + tier -> domain or -1
};

struct GangResult {
  bool feasible = false;
  std::vector<int> nodes;  // rank order: fabric order, so ranks in one leaf are adjacent
  int tier = -1;           // tier of the domain that holds the gang
  int domain = -1;
  int64_t free_devices_left = 0;  // in that domain after placement
  std::string reason;             // when not feasible
};

// Places `nodes` nodes with `devices_per_node` devices each. `free_devices[i]` is how many
// devices node i can give to one such request (callers pass 0 for nodes whose rule set cannot
// give k, or that are not schedulable). `highest_tier` is the highest tier index allowed.
GangResult PlaceGang(const Fabric& fabric, std::span<const int> free_devices, int nodes,
                     int devices_per_node, int highest_tier);

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_FABRIC_H_
