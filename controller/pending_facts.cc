#include "controller/pending_facts.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include "api/node_description.h"
#include "controller/device_classes.h"
#include "topology/solver.h"

namespace xpu::controller {
namespace {
namespace pending_facts_cc {

// The alternative's device count for the rules: All asks for at least one.
int Wanted(const ClaimAlternative& a) { return a.all ? 1 : static_cast<int>(a.count); }

std::string Describe(const ClaimAlternative& a) {
  return (a.all ? std::string("all") : std::to_string(a.count)) + " of " + a.device_class;
}

// What DeviceInClass reads of a device: vendor, model, memory, the family and the boolean
// (precision) attributes. Health is kept per node, the rest (uuid, PCI address) not at all.
api::InventoryDevice Slim(const api::InventoryDevice& d) {
  api::InventoryDevice slim;
  slim.name = d.name;
  slim.vendor = d.vendor;
  slim.model = d.model;
  slim.memory = d.memory;
  for (const auto& [name, a] : d.attributes) {
    if (name == "family" || a.bool_value.has_value()) slim.attributes.emplace(name, a);
  }
  return slim;
}

nlohmann::json SlimKey(const api::InventoryDevice& d) {
  nlohmann::json key = {d.name, d.vendor, d.model, d.memory};
  for (const auto& [name, a] : d.attributes) {
    key.push_back(name + "=" + a.string_value.value_or("") +
                  (a.bool_value.has_value() ? (*a.bool_value ? "1" : "0") : "-"));
  }
  return key;
}

// A model's devices of one class: how many, and their topology ids.
struct ClassFacts {
  bool ours = true;  // false: a class this config does not generate
  int in_class = 0;
  topology::DeviceSet ids;
};

enum class Refusal { kNone, kNoTopology, kNoDevice, kTooFew, kNotAllFree, kNoRuleSet };

struct Outcome {
  Refusal refusal = Refusal::kNone;
  int free = 0;
  int in_class = 0;
};

using AltKey = std::tuple<std::string, bool, int64_t>;
AltKey KeyOf(const ClaimAlternative& a) { return {a.device_class, a.all, a.all ? 0 : a.count}; }

// The judgment of alternatives on nodes, with what it has worked out kept for the next node of
// the same model: class membership per (model, class), Solve per (model, free set, count).
class Judge {
 public:
  Judge(const Config& config, std::string_view driver) : config_(config), driver_(driver) {}

  Outcome Decide(const PendingModel& model, topology::DeviceSet healthy,
                 topology::DeviceSet allocated, const ClaimAlternative& a) {
    if (!model.topology) return {.refusal = Refusal::kNoTopology};
    const ClassFacts& cls = ClassOf(model, a.device_class);
    if (!cls.ours) return {};
    const topology::DeviceSet free = (cls.ids & healthy) - allocated;
    Outcome o{.refusal = Refusal::kNone, .free = free.size(), .in_class = cls.in_class};
    const int want = Wanted(a);
    if (cls.in_class == 0) {
      o.refusal = Refusal::kNoDevice;
    } else if (free.size() < want) {
      o.refusal = Refusal::kTooFew;
    } else if (a.all) {
      if (free.size() != cls.in_class) o.refusal = Refusal::kNotAllFree;
    } else if (!Feasible(model, free, want)) {
      o.refusal = Refusal::kNoRuleSet;
    }
    return o;
  }

  // The same words as CannotServe on the decoded inventory.
  static std::optional<std::string> Explain(const Outcome& o, const PendingModel& model,
                                            const ClaimAlternative& a) {
    const std::string& c = a.device_class;
    switch (o.refusal) {
      case Refusal::kNone:
        return std::nullopt;
      case Refusal::kNoTopology:
        return "its inventory has no usable topology: " + model.topology_error;
      case Refusal::kNoDevice:
        return "no device of class " + c;
      case Refusal::kTooFew:
        return std::to_string(o.free) + " of its " + std::to_string(o.in_class) + " " + c +
               " devices free, " + std::to_string(Wanted(a)) + " wanted";
      case Refusal::kNotAllFree:
        return "not all of its " + c + " devices are free";
      case Refusal::kNoRuleSet:
        return "its free " + c + " devices hold no set of " + std::to_string(Wanted(a)) +
               " its rules allow";
    }
    return std::nullopt;
  }

  std::optional<std::string> Why(const PendingModel& model, topology::DeviceSet healthy,
                                 topology::DeviceSet allocated, const ClaimAlternative& a) {
    return Explain(Decide(model, healthy, allocated, a), model, a);
  }

 private:
  const ClassFacts& ClassOf(const PendingModel& model, const std::string& device_class) {
    auto [it, fresh] = classes_.try_emplace({&model, device_class});
    if (!fresh) return it->second;
    ClassFacts& f = it->second;
    for (size_t i = 0; i < model.devices.size(); ++i) {
      const std::optional<bool> in =
          DeviceInClass(config_, device_class, driver_, model.devices[i]);
      if (!in.has_value()) {
        f = ClassFacts{.ours = false, .in_class = 0, .ids = {}};
        break;
      }
      if (!*in) continue;
      ++f.in_class;
      if (model.ids[i] >= 0) f.ids.Add(model.ids[i]);
    }
    return f;
  }

  bool Feasible(const PendingModel& model, topology::DeviceSet free, int want) {
    auto [it, fresh] = solves_.try_emplace({&model, free.mask(), want}, false);
    if (fresh) it->second = topology::Solve(*model.topology, free, want).feasible;
    return it->second;
  }

  const Config& config_;
  const std::string_view driver_;
  std::map<std::pair<const PendingModel*, std::string>, ClassFacts> classes_;
  std::map<std::tuple<const PendingModel*, uint64_t, int>, bool> solves_;
};

// Why a new node of `group` (nothing held) cannot serve any alternative of `claim`, or what it
// offers.
GroupVerdict JudgeGroup(const PendingClaimInput& claim, const NodeGroupProfile& group,
                        const PendingNode& node, Judge& judge) {
  GroupVerdict v{.group = group.name, .fits = true, .reason = ""};
  for (const ClaimDemand& d : claim.demands) {
    std::string why;
    bool any = false;
    for (const ClaimAlternative& a : d.alternatives) {
      std::optional<std::string> no = judge.Why(*node.model, node.healthy, {}, a);
      if (!no) {
        any = true;
        v.reason += (v.reason.empty() ? "" : "; ") + d.request + ": " + Describe(a) + " on a new " +
                    group.inventory.status.server_model;
        break;
      }
      why += (why.empty() ? "" : "; ") + *no;
    }
    if (!any) {
      v.fits = false;
      v.reason = d.request + ": " + why;
      return v;
    }
  }
  return v;
}

// A set of distinct node states, one bit each.
using Bits = std::vector<uint64_t>;

bool AnyBit(const Bits& b) {
  return std::any_of(b.begin(), b.end(), [](uint64_t w) { return w != 0; });
}

struct NodeState {
  const PendingModel* model;
  topology::DeviceSet healthy;
  topology::DeviceSet allocated;
};

}  // namespace pending_facts_cc
}  // namespace

namespace pfc = pending_facts_cc;  // this file's helpers

std::optional<int> PendingModel::IdOf(std::string_view device) const {
  if (!topology) return std::nullopt;
  return topology->FindDevice(device);
}

PendingNode PendingModels::Of(const api::NodeInventory& inventory) {
  PendingModel m;
  StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(inventory);
  nlohmann::json key = nlohmann::json::object();
  if (spec.ok()) {
    key = api::NodeDescriptionToJson(*spec);
    key.erase("name");
  }
  for (const api::InventoryDevice& d : inventory.status.devices) {
    m.devices.push_back(pfc::Slim(d));
    key["devices*"].push_back(pfc::SlimKey(m.devices.back()));
  }
  // A model without a topology is the node's own: its error may name it.
  if (spec.ok()) m.content = key.dump();
  std::shared_ptr<const PendingModel> shared;
  if (!m.content.empty()) {
    if (auto it = by_content_.find(m.content); it != by_content_.end()) shared = it->second.lock();
  }
  if (!shared) {
    StatusOr<topology::Node> node =
        spec.ok() ? topology::Node::Build(*spec) : StatusOr<topology::Node>(spec.status());
    if (node.ok()) {
      m.topology = std::move(node).value();
    } else {
      m.topology_error = node.status().message();
    }
    for (const api::InventoryDevice& d : m.devices) m.ids.push_back(m.IdOf(d.name).value_or(-1));
    auto made = std::make_shared<const PendingModel>(std::move(m));
    if (!made->content.empty()) by_content_[made->content] = made;
    shared = std::move(made);
  }
  PendingNode out{.model = shared, .healthy = {}};
  const std::vector<api::InventoryDevice>& devices = inventory.status.devices;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].health == "Healthy" && shared->ids[i] >= 0) out.healthy.Add(shared->ids[i]);
  }
  return out;
}

void PendingModels::Prune() {
  std::erase_if(by_content_, [](const auto& entry) { return entry.second.expired(); });
}

std::optional<std::string> CannotServe(const PendingModel& model, topology::DeviceSet healthy,
                                       topology::DeviceSet allocated,
                                       const ClaimAlternative& alternative, const Config& config,
                                       std::string_view driver) {
  pfc::Judge judge(config, driver);
  return judge.Why(model, healthy, allocated, alternative);
}

std::vector<PendingReport> JudgePendingClaims(const std::vector<PendingClaimInput>& claims,
                                              const std::vector<PendingNodeInput>& nodes,
                                              const std::vector<NodeGroupProfile>& groups,
                                              const Config& config, std::string_view driver) {
  // ClassesAreOurs, each class looked up once.
  std::map<std::string, bool> ours;
  const api::InventoryDevice any_device;
  auto is_ours = [&](const ClaimAlternative& a) {
    auto [it, fresh] = ours.try_emplace(a.device_class, false);
    if (fresh) it->second = DeviceInClass(config, a.device_class, driver, any_device).has_value();
    return it->second;
  };
  std::vector<const PendingClaimInput*> open;
  for (const PendingClaimInput& c : claims) {
    bool judged = !c.demands.empty();
    for (const ClaimDemand& d : c.demands) {
      judged &= !d.alternatives.empty() &&
                std::all_of(d.alternatives.begin(), d.alternatives.end(), is_ours);
    }
    if (judged) open.push_back(&c);
  }
  if (open.empty()) return {};
  // Nodes of one model, health and holdings answer alike: each such state is judged once.
  std::map<std::tuple<const PendingModel*, uint64_t, uint64_t>, size_t> index;
  std::vector<pfc::NodeState> states;
  int live = 0;
  for (const PendingNodeInput& n : nodes) {
    if (n.facts.model == nullptr) continue;
    ++live;
    auto [it, fresh] = index.try_emplace(
        {n.facts.model.get(), n.facts.healthy.mask(), n.allocated.mask()}, states.size());
    if (fresh) states.push_back({n.facts.model.get(), n.facts.healthy, n.allocated});
  }
  pfc::Judge judge(config, driver);
  const size_t words = (states.size() + 63) / 64;
  std::map<pfc::AltKey, pfc::Bits> served;  // per distinct alternative, the states that serve it
  auto served_by = [&](const ClaimAlternative& a) -> const pfc::Bits& {
    auto [it, fresh] = served.try_emplace(pfc::KeyOf(a), pfc::Bits(words, 0));
    if (!fresh) return it->second;
    for (size_t s = 0; s < states.size(); ++s) {
      const pfc::NodeState& st = states[s];
      if (judge.Decide(*st.model, st.healthy, st.allocated, a).refusal == pfc::Refusal::kNone) {
        it->second[s / 64] |= uint64_t{1} << (s % 64);
      }
    }
    return it->second;
  };
  // A claim is served where one node state serves an alternative of each of its requests.
  std::erase_if(open, [&](const PendingClaimInput* c) {
    pfc::Bits all(words, ~uint64_t{0});
    if (!states.empty() && states.size() % 64 != 0) {
      all.back() = (uint64_t{1} << (states.size() % 64)) - 1;
    }
    for (const ClaimDemand& d : c->demands) {
      pfc::Bits any(words, 0);
      for (const ClaimAlternative& a : d.alternatives) {
        const pfc::Bits& by = served_by(a);
        for (size_t w = 0; w < words; ++w) any[w] |= by[w];
      }
      for (size_t w = 0; w < words; ++w) all[w] &= any[w];
    }
    return pfc::AnyBit(all);
  });
  PendingModels templates;
  std::vector<PendingNode> group_nodes;
  if (!open.empty()) {
    for (const NodeGroupProfile& g : groups) group_nodes.push_back(templates.Of(g.inventory));
  }
  // Claims asking alike get one verdict per group.
  std::vector<std::map<std::string, GroupVerdict>> verdicts(groups.size());
  std::vector<PendingReport> out;
  for (const PendingClaimInput* c : open) {
    std::string shape;
    for (const ClaimDemand& d : c->demands) {
      shape.append(d.request) += '\n';
      for (const ClaimAlternative& a : d.alternatives) {
        shape.append(a.device_class) +=
            a.all ? std::string("*;") : "=" + std::to_string(a.count) + ";";
      }
      shape += '\n';
    }
    PendingReport r;
    r.ns = c->ns;
    r.name = c->name;
    r.created = c->created;
    r.reason = live == 0 ? "no live node of this driver"
                         : "none of the " + std::to_string(live) + " live nodes can serve it";
    for (size_t g = 0; g < groups.size(); ++g) {
      auto [it, fresh] = verdicts[g].try_emplace(shape);
      if (fresh) it->second = pfc::JudgeGroup(*c, groups[g], group_nodes[g], judge);
      r.groups.push_back(it->second);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace xpu::controller
