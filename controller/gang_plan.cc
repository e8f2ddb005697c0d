#include "controller/gang_plan.h"

#include <algorithm>
#include <array>
#include <deque>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "api/node_description.h"
#include "controller/device_classes.h"
#include "controller/fabric_tiers.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::controller {
namespace {

using api::AcceleratorGang;
using api::AcceleratorGangStatus;
using api::GangNode;
using api::GangRank;

constexpr std::string_view kAny = api::kGangTierAny;
constexpr std::string_view kPlacedCondition = "Placed";

// The default rank of a tier name; "clique" is the scale-up tier.
int NominalRank(std::string_view name) {
  if (name == "clique") name = "scaleUpDomain";
  const auto& names = api::GangTierNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return static_cast<int>(names.size());
}

constexpr size_t kTierCount = std::size(kFabricTiers);
constexpr int kUnset = -2;  // Nested: no node of the lower domain seen yet

size_t TierIndex(FabricTier tier) { return static_cast<size_t>(tier); }

// The candidates' domains, interned: per tier, each distinct domain value gets an id (in the
// order the nodes first name it), and each node its id per tier (-1: no domain in that tier).
// A fleet of 65,000 nodes has a few thousand domains: what follows works on ids, not strings.
struct InternedTiers {
  std::vector<std::array<int, kTierCount>> nodes;
  std::array<std::vector<std::string_view>, kTierCount> values;  // per tier: id -> value
};

// The views point into the candidates' labels and fabrics, which outlive the result.
InternedTiers InternTiers(const std::vector<const GangCandidate*>& nodes) {
  InternedTiers out;
  std::array<std::unordered_map<std::string_view, int>, kTierCount> ids;
  out.nodes.reserve(nodes.size());
  for (const GangCandidate* n : nodes) {
    const std::optional<api::InventoryFabric>& fabric =
        n->inventory != nullptr ? n->inventory->status.fabric : n->fabric;
    const FabricTierViews views = NodeFabricTierViews(n->labels, fabric ? &*fabric : nullptr);
    std::array<int, kTierCount> mine{};
    mine.fill(-1);
    for (size_t t = 0; t < kTierCount; ++t) {
      if (views[t].empty()) continue;
      auto [it, inserted] = ids[t].emplace(views[t], static_cast<int>(out.values[t].size()));
      if (inserted) out.values[t].push_back(views[t]);
      mine[t] = it->second;
    }
    out.nodes.push_back(mine);
  }
  return out;
}

// True when every domain of `lower` lies inside one domain of `upper`: all nodes of a `lower`
// domain carry the same `upper` value (or all none).
bool Nested(const InternedTiers& tiers, FabricTier lower, FabricTier upper) {
  const size_t l = TierIndex(lower);
  const size_t u = TierIndex(upper);
  std::vector<int> parent(tiers.values[l].size(), kUnset);  // lower domain -> upper domain
  for (const auto& node : tiers.nodes) {
    if (node[l] < 0) continue;
    int& p = parent[static_cast<size_t>(node[l])];
    if (p == kUnset) {
      p = node[u];
    } else if (p != node[u]) {
      return false;
    }
  }
  return true;
}

// The tiers present, ordered by containment, the default order breaking ties: repeatedly the
// first tier (in default order) that no remaining tier lies strictly inside.
std::vector<FabricTier> ContainmentOrder(const InternedTiers& tiers) {
  std::vector<FabricTier> left;
  for (FabricTier t : kFabricTiers) {
    if (!tiers.values[TierIndex(t)].empty()) left.push_back(t);
  }
  std::vector<FabricTier> order;
  while (!left.empty()) {
    for (size_t i = 0; i < left.size(); ++i) {
      bool below_other = false;
      for (size_t j = 0; j < left.size(); ++j) {
        if (i != j && Nested(tiers, left[j], left[i]) && !Nested(tiers, left[i], left[j])) {
          below_other = true;
          break;
        }
      }
      if (!below_other) {
        order.push_back(left[i]);
        left.erase(left.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  return order;
}

// The fabric's domains and nodes: each node in its lowest domain, each domain under the one
// the first node that names it sits in one tier up ("any" at the top).
topology::FabricSpec FabricSpecOf(const std::vector<const GangCandidate*>& nodes,
                                  const InternedTiers& tiers,
                                  const std::vector<FabricTier>& order) {
  topology::FabricSpec spec;
  for (FabricTier t : order) spec.tiers.push_back({std::string(FabricTierName(t)), 0});
  spec.tiers.push_back({std::string(kAny), 0});
  const std::string any_domain = std::string(kAny);
  spec.domains.push_back({any_domain, static_cast<int>(order.size()), ""});
  std::array<std::vector<int>, kTierCount> made;  // per tier: value id -> index in spec.domains
  for (size_t t = 0; t < kTierCount; ++t) made[t].assign(tiers.values[t].size(), -1);
  auto set_parent = [&spec](int child, const std::string& parent) {
    std::string& p = spec.domains[static_cast<size_t>(child)].parent;
    if (p.empty()) p = parent;
  };
  spec.nodes.reserve(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    int lowest = -1;
    int child = -1;  // the domain made (or found) one tier down, whose parent is next
    for (size_t o = 0; o < order.size(); ++o) {
      const size_t t = TierIndex(order[o]);
      const int id = tiers.nodes[n][t];
      if (id < 0) continue;
      int& domain = made[t][static_cast<size_t>(id)];
      if (domain < 0) {
        domain = static_cast<int>(spec.domains.size());
        std::string name(FabricTierName(order[o]));
        name.append("/").append(tiers.values[t][static_cast<size_t>(id)]);
        spec.domains.push_back({std::move(name), static_cast<int>(o), ""});
      }
      if (lowest < 0) lowest = domain;
      if (child >= 0) set_parent(child, spec.domains[static_cast<size_t>(domain)].name);
      child = domain;
    }
    if (child >= 0) set_parent(child, any_domain);
    spec.nodes.push_back(
        {nodes[n]->name, lowest < 0 ? any_domain : spec.domains[static_cast<size_t>(lowest)].name});
  }
  return spec;
}

StatusOr<GangFabric> BuildFabric(const std::vector<const GangCandidate*>& nodes) {
  GangFabric out;
  const InternedTiers tiers = InternTiers(nodes);
  std::vector<FabricTier> order = ContainmentOrder(tiers);
  // A tier whose domains cross those of the next one cannot be part of a tree: leave the
  // higher one out.
  for (size_t i = 0; i + 1 < order.size();) {
    if (Nested(tiers, order[i], order[i + 1])) {
      ++i;
      continue;
    }
    out.notes.push_back("tier " + std::string(FabricTierName(order[i + 1])) +
                        " left out: its domains cut across those of tier " +
                        std::string(FabricTierName(order[i])));
    out.dropped.emplace_back(FabricTierName(order[i + 1]));
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(i + 1));
  }
  for (FabricTier t : order) out.tiers.emplace_back(FabricTierName(t));
  out.tiers.emplace_back(kAny);
  ASSIGN_OR_RETURN(out.fabric, topology::Fabric::Build(FabricSpecOf(nodes, tiers, order)));
  return out;
}

}  // namespace

std::string GangKey(const AcceleratorGang& gang) {
  return gang.metadata.namespace_name + "/" + gang.metadata.name;
}

StatusOr<GangFabric> BuildGangFabric(const std::vector<GangCandidate>& nodes) {
  std::vector<const GangCandidate*> pointers;
  pointers.reserve(nodes.size());
  for (const GangCandidate& n : nodes) pointers.push_back(&n);
  return BuildFabric(pointers);
}

StatusOr<GangNodeFacts> GangFactsOf(const api::NodeInventory& inventory) {
  GangNodeFacts facts;
  ASSIGN_OR_RETURN(facts.topology, api::NodeDescriptionFromInventory(inventory));
  for (const api::InventoryDevice& d : inventory.status.devices) {
    api::InventoryDevice slim;
    slim.name = d.name;
    slim.vendor = d.vendor;
    slim.model = d.model;
    slim.memory = d.memory;
    slim.health = d.health;
    for (const char* name : {"family", "bf16", "fp16", "fp8", "int8"}) {
      if (auto it = d.attributes.find(name); it != d.attributes.end()) {
        slim.attributes.emplace(it->first, it->second);
      }
    }
    facts.devices.push_back(std::move(slim));
  }
  facts.fabric = inventory.status.fabric;
  return facts;
}

GangOffer OfferOf(const GangNodeFacts& facts, const std::set<std::string>& allocated,
                  const Config& config, std::string_view device_class, std::string_view driver,
                  int k) {
  GangOffer offer;
  StatusOr<topology::Node> model = topology::Node::Build(facts.topology);
  if (!model.ok()) return offer;
  std::map<std::string, const api::InventoryDevice*> by_name;
  for (const api::InventoryDevice& d : facts.devices) by_name[d.name] = &d;
  topology::DeviceSet free;
  for (int id = 0; id < model->size(); ++id) {
    auto it = by_name.find(model->device(id).name);
    if (it == by_name.end()) continue;
    const api::InventoryDevice& d = *it->second;
    if (d.health != "Healthy" || allocated.contains(d.name)) continue;
    if (DeviceInClass(config, device_class, driver, d) == false) continue;
    free.Add(id);
  }
  if (free.size() < k) return offer;
  const topology::SolveResult best = topology::Solve(*model, free, k);
  if (!best.feasible) return offer;
  offer.free = free.size();
  for (int id : best.devices.Ids()) offer.devices.push_back(model->device(id).name);
  return offer;
}

GangOffer OfferOf(const api::NodeInventory& inventory, const std::set<std::string>& allocated,
                  const Config& config, std::string_view device_class, std::string_view driver,
                  int k) {
  StatusOr<GangNodeFacts> facts = GangFactsOf(inventory);
  if (!facts.ok()) return GangOffer{};
  return OfferOf(*facts, allocated, config, device_class, driver, k);
}

namespace {

bool Selected(const GangCandidate& node, const std::map<std::string, std::string>& selector) {
  for (const auto& [key, value] : selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  return true;
}

void SetCondition(AcceleratorGangStatus& status, const AcceleratorGang& gang, std::string_view type,
                  bool value, std::string reason, std::string message, const std::string& now) {
  api::Condition c;
  c.type = std::string(type);
  c.status = value ? "True" : "False";
  c.reason = std::move(reason);
  c.message = std::move(message);
  c.observed_generation = gang.metadata.generation;
  c.last_transition_time = now;
  for (api::Condition& old : status.conditions) {
    if (old.type != c.type) continue;
    api::CarryTransitionTime(old, &c);
    old = std::move(c);
    return;
  }
  status.conditions.push_back(std::move(c));
}

// Pending, holding nothing.
void ClearPlacement(AcceleratorGangStatus& status) {
  status.phase = "Pending";
  status.nodes.clear();
  status.rank_table.clear();
  status.tier.clear();
  status.domain.clear();
}

void SetPlacedCondition(AcceleratorGangStatus& status, const AcceleratorGang& gang, bool placed,
                        std::string reason, std::string message, const std::string& now) {
  SetCondition(status, gang, kPlacedCondition, placed, std::move(reason), std::move(message), now);
}

// The gang's devices that are not healthy, or whose scale-up links are down: "node/device
// (why)"; empty when all are well.
using InventoryOf = std::function<const api::NodeInventory*(const std::string&)>;

std::string UnwellDevices(const AcceleratorGangStatus& status, const InventoryOf& inventory_of) {
  std::string out;
  for (const GangNode& member : status.nodes) {
    const api::NodeInventory* found = inventory_of(member.name);
    if (found == nullptr) continue;
    const api::NodeInventory& inv = *found;
    std::set<std::string> link_down;
    for (const api::InventoryLink& l : inv.status.links) {
      if (l.state == "down") link_down.insert({l.a, l.b});
    }
    for (const std::string& name : member.devices) {
      std::string why;
      for (const api::InventoryDevice& d : inv.status.devices) {
        if (d.name != name) continue;
        if (d.health != "Healthy") why = d.health.empty() ? "Unknown" : d.health;
      }
      if (why.empty() && link_down.contains(name)) why = "link down";
      if (!why.empty()) {
        if (!out.empty()) out += ", ";
        out.append(member.name).append("/").append(name).append(" (").append(why).append(")");
      }
    }
  }
  return out;
}

void SetHealthCondition(AcceleratorGangStatus& status, const AcceleratorGang& gang,
                        const InventoryOf& inventory_of, const std::string& now) {
  const std::string unwell = UnwellDevices(status, inventory_of);
  if (unwell.empty()) {
    SetCondition(status, gang, "DevicesHealthy", true, "Healthy",
                 "every device of the gang is healthy", now);
  } else {
    SetCondition(status, gang, "DevicesHealthy", false, "DevicesUnhealthy", unwell, now);
  }
}

// The highest fabric tier index `max_tier` allows, or -1 when none: the tier itself when the
// fabric has it, else the longest run of tiers from the bottom whose default rank is below it.
int HighestTier(const GangFabric& f, const std::string& max_tier) {
  if (max_tier.empty() || max_tier == kAny) return f.fabric.tier_count() - 1;
  const std::string name = max_tier == "clique" ? "scaleUpDomain" : max_tier;
  for (int t = 0; t + 1 < f.fabric.tier_count(); ++t) {
    if (f.tiers[static_cast<size_t>(t)] == name) return t;
  }
  const int limit = NominalRank(name);
  int highest = -1;
  for (int t = 0; t + 1 < f.fabric.tier_count(); ++t) {
    if (NominalRank(f.tiers[static_cast<size_t>(t)]) > limit) break;
    highest = t;
  }
  return highest;
}

// The device's collective-network address: the vendor's device IP (Ascend's hccn address), else
// the address of the NIC paired with it.
std::string DeviceAddress(const api::NodeInventory& inventory, const std::string& device) {
  for (const api::InventoryDevice& d : inventory.status.devices) {
    if (d.name != device) continue;
    auto it = d.attributes.find("huawei.com/deviceIP");
    if (it != d.attributes.end() && it->second.string_value) return *it->second.string_value;
  }
  for (const api::InventoryNic& nic : inventory.status.nics) {
    if (nic.paired_device == device && !nic.ip_address.empty()) return nic.ip_address;
  }
  return "";
}

// What the CRD schema cannot say (exactly one class, label syntax): checked here, so that a gang
// the API server admitted but that asks for nothing sensible is never placed.
Status ValidateGangSpec(const AcceleratorGang& gang) {
  api::AcceleratorGang spec_only;
  spec_only.metadata.name = gang.metadata.name;
  spec_only.metadata.namespace_name = gang.metadata.namespace_name;
  spec_only.spec = gang.spec;
  return api::ValidateAcceleratorGang(spec_only);
}

// A member's inventory: the candidate's, else asked for (once per node).
class MemberInventories {
 public:
  explicit MemberInventories(const GangPlanInput& in) : in_(in) {
    live_.reserve(in.nodes.size());
    for (const GangCandidate& n : in.nodes) live_[n.name] = &n;
  }
  bool live(const std::string& node) const { return live_.contains(node); }
  const api::NodeInventory* Get(const std::string& node) {
    auto it = live_.find(node);
    if (it != live_.end() && it->second->inventory != nullptr) return it->second->inventory;
    if (!in_.inventory_of) return nullptr;
    auto& slot = asked_[node];
    if (!slot) slot = in_.inventory_of(node);
    return slot.get();
  }

 private:
  const GangPlanInput& in_;
  std::unordered_map<std::string_view, const GangCandidate*> live_;  // views of in_'s names
  std::map<std::string, std::shared_ptr<const api::NodeInventory>> asked_;
};

// A placed gang stays where it is while every member node is live (true: decided, its health
// condition refreshed), or fails when one is not and spec.onNodeFailure says so (true: decided);
// else it is placed again (plan.moved). `failed_nodes`: the members not live, ", "-separated.
bool PlacedGangDecided(GangPlan& plan, const AcceleratorGang& gang, MemberInventories& members,
                       const InventoryOf& inventory_of, const std::string& now,
                       std::string& failed_nodes) {
  AcceleratorGangStatus& status = plan.status;
  if (status.phase != "Placed" || status.nodes.empty()) return false;
  for (const GangNode& member : status.nodes) {
    if (!members.live(member.name)) {
      if (!failed_nodes.empty()) failed_nodes += ", ";
      failed_nodes += member.name;
    }
  }
  if (failed_nodes.empty()) {
    SetHealthCondition(status, gang, inventory_of, now);
    return true;
  }
  if (gang.spec.on_node_failure == "fail") {
    status.phase = "Failed";
    SetPlacedCondition(status, gang, false, "NodeFailed",
                       "member node " + failed_nodes +
                           " is gone or its plugin stopped; "
                           "spec.onNodeFailure is fail",
                       now);
    return true;
  }
  plan.moved = true;
  return false;
}

// The candidates by name, with what each offers the gang (0 and nothing when another gang holds
// it or the selector leaves it out). Pointers into the input, which outlives it: a placement over
// 65,000 candidates copies none of them.
struct CandidateOffers {
  std::vector<const GangCandidate*> nodes;
  std::vector<int> free;
  std::vector<const GangOffer*> offer;  // null: offers nothing
  std::deque<GangOffer> computed;       // the offers of candidates given with their inventory
  int offering = 0;                     // nodes that offer anything
};

CandidateOffers CollectOffers(const GangPlanInput& in, const AcceleratorGang& gang) {
  const std::string& cls = api::GangDeviceClass(gang.spec);
  const int k = static_cast<int>(gang.spec.devices_per_node);
  CandidateOffers out;
  out.nodes.reserve(in.nodes.size());
  for (const GangCandidate& n : in.nodes) out.nodes.push_back(&n);
  auto by_name = [](const GangCandidate* a, const GangCandidate* b) { return a->name < b->name; };
  // The reconciler gathers them in name order already.
  if (!std::is_sorted(out.nodes.begin(), out.nodes.end(), by_name)) {
    std::sort(out.nodes.begin(), out.nodes.end(), by_name);
  }
  out.free.assign(out.nodes.size(), 0);
  out.offer.assign(out.nodes.size(), nullptr);
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    const GangCandidate& n = *out.nodes[i];
    if (!n.held_by.empty() && n.held_by != gang.metadata.uid) continue;
    if (!Selected(n, gang.spec.node_selector)) continue;
    const GangOffer* offer = nullptr;
    if (n.offer) {
      offer = &*n.offer;
    } else if (n.inventory != nullptr) {
      offer = &out.computed.emplace_back(
          OfferOf(*n.inventory, n.allocated, *in.config, cls, in.driver, k));
    }
    if (offer == nullptr) continue;
    out.offer[i] = offer;
    out.free[i] = offer->free;
    if (offer->free > 0) ++out.offering;
  }
  return out;
}

// Why the gang cannot be placed on `fabric` within spec.maxTier ("" when it can be tried): the
// condition's reason and message.
std::optional<std::pair<std::string, std::string>> FabricVerdict(const AcceleratorGang& gang,
                                                                 const GangFabric& fabric) {
  const std::string limit = gang.spec.max_tier == "clique" ? "scaleUpDomain" : gang.spec.max_tier;
  if (std::find(fabric.dropped.begin(), fabric.dropped.end(), limit) != fabric.dropped.end()) {
    // Its domains are not a tree with the others': placing "within a leaf" cannot be judged.
    std::string why;
    for (const std::string& note : fabric.notes) {
      if (note.starts_with("tier " + limit + " ")) why = note;
    }
    return std::make_pair(std::string("FabricInconsistent"),
                          "the nodes' labels for tier " + limit + " are inconsistent (" + why +
                              "); fix the labels or choose another maxTier");
  }
  if (HighestTier(fabric, gang.spec.max_tier) < 0) {
    return std::make_pair(std::string("Unschedulable"),
                          "the fabric has no tier at or below " + gang.spec.max_tier);
  }
  return std::nullopt;
}

// Placed as `result` says: the members in rank order, each device's rank table entry.
void SetPlacement(AcceleratorGangStatus& status, const GangFabric& fabric,
                  const topology::GangResult& result, const CandidateOffers& offers,
                  const InventoryOf& inventory_of) {
  status.phase = "Placed";
  status.nodes.clear();
  status.rank_table.clear();
  status.tier = fabric.tiers[static_cast<size_t>(result.tier)];
  const std::string& domain = fabric.fabric.domain_name(result.domain);
  status.domain = domain.substr(domain.find('/') + 1);
  int64_t rank = 0;
  for (size_t r = 0; r < result.nodes.size(); ++r) {
    const size_t i = static_cast<size_t>(result.nodes[r]);
    const GangCandidate& n = *offers.nodes[i];
    static const std::vector<std::string> kNone;
    const std::vector<std::string>& chosen =
        offers.offer[i] != nullptr ? offers.offer[i]->devices : kNone;
    GangNode member;
    member.name = n.name;
    member.rank = static_cast<int64_t>(r);
    member.devices = chosen;
    member.address = n.address;
    const api::NodeInventory* inventory = inventory_of(n.name);
    const std::string super_pod = inventory != nullptr && inventory->status.fabric.has_value()
                                      ? inventory->status.fabric->super_pod_id
                                      : std::string();
    for (size_t d = 0; d < chosen.size(); ++d) {
      GangRank entry;
      entry.rank = rank++;
      entry.node = n.name;
      entry.device = chosen[d];
      entry.ip_address = inventory != nullptr ? DeviceAddress(*inventory, chosen[d]) : "";
      entry.local_rank = static_cast<int64_t>(d);
      entry.super_pod_id = super_pod;
      status.rank_table.push_back(std::move(entry));
    }
    status.nodes.push_back(std::move(member));
  }
}

// The Placed condition's message of a placement.
std::string PlacedMessage(const AcceleratorGang& gang, const AcceleratorGangStatus& status,
                          const std::string& failed_nodes) {
  std::string message = std::to_string(gang.spec.nodes) + " nodes x " +
                        std::to_string(gang.spec.devices_per_node) + " devices in " + status.tier +
                        " " + status.domain;
  if (!failed_nodes.empty()) {
    message = "member node " + failed_nodes + " failed; placed again: " + message;
  }
  if (!gang.spec.preferred_tier.empty() &&
      NominalRank(status.tier) > NominalRank(gang.spec.preferred_tier)) {
    message += " (above the preferred tier " + gang.spec.preferred_tier + ")";
  }
  return message;
}

}  // namespace

GangPlan PlanGang(const GangPlanInput& in) {
  const AcceleratorGang& gang = *in.gang;
  GangPlan plan;
  plan.status = gang.status;
  AcceleratorGangStatus& status = plan.status;
  status.observed_generation = gang.metadata.generation;
  status.resource_claim_name = gang.metadata.name + "-gang";
  if (status.phase == "Failed") return plan;
  if (Status valid = ValidateGangSpec(gang); !valid.ok()) {
    ClearPlacement(status);
    SetPlacedCondition(status, gang, false, "InvalidSpec", valid.message(), in.now);
    return plan;
  }
  MemberInventories members(in);
  const InventoryOf inventory_of = [&members](const std::string& node) {
    return members.Get(node);
  };
  std::string failed_nodes;
  if (PlacedGangDecided(plan, gang, members, inventory_of, in.now, failed_nodes)) return plan;

  const CandidateOffers offers = CollectOffers(in, gang);
  auto pending = [&](std::string reason, std::string message) {
    ClearPlacement(status);
    if (!failed_nodes.empty()) message = "member node " + failed_nodes + " failed; " + message;
    std::erase_if(status.conditions,
                  [](const api::Condition& c) { return c.type == "DevicesHealthy"; });
    SetPlacedCondition(status, gang, false, std::move(reason), std::move(message), in.now);
    return plan;
  };
  StatusOr<GangFabric> fabric = BuildFabric(offers.nodes);
  if (!fabric.ok()) return pending("FabricInvalid", fabric.status().message());
  plan.notes = fabric->notes;
  if (auto verdict = FabricVerdict(gang, *fabric)) {
    return pending(std::move(verdict->first), std::move(verdict->second));
  }
  const int k = static_cast<int>(gang.spec.devices_per_node);
  const topology::GangResult result =
      topology::PlaceGang(fabric->fabric, offers.free, static_cast<int>(gang.spec.nodes), k,
                          HighestTier(*fabric, gang.spec.max_tier));
  if (!result.feasible) {
    return pending("Unschedulable",
                   result.reason + "; " + std::to_string(offers.offering) + " of " +
                       std::to_string(offers.nodes.size()) + " live nodes can give " +
                       std::to_string(k) + " free devices of class " +
                       api::GangDeviceClass(gang.spec) + "; retried as capacity changes");
  }
  SetPlacement(status, *fabric, result, offers, inventory_of);
  SetPlacedCondition(status, gang, true, plan.moved ? "Replaced" : "Placed",
                     PlacedMessage(gang, status, failed_nodes), in.now);
  SetHealthCondition(status, gang, inventory_of, in.now);
  return plan;
}

}  // namespace xpu::controller
