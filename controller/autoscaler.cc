#include "controller/autoscaler.h"

#include <algorithm>
#include <map>
#include <utility>

#include "controller/device_classes.h"
#include "topology/solver.h"

namespace xpu::controller {
namespace {

// The alternative's device count for the rules: All asks for at least one.
int Wanted(const ClaimAlternative& a) { return a.all ? 1 : static_cast<int>(a.count); }

std::string Describe(const ClaimAlternative& a) {
  return (a.all ? std::string("all") : std::to_string(a.count)) + " of " + a.device_class;
}

bool ClassIsOurs(const std::string& device_class, const Config& config, std::string_view driver) {
  // DeviceInClass answers for the classes this config generates, whatever the device.
  return DeviceInClass(config, device_class, driver, api::InventoryDevice{}).has_value();
}

// Why `server` (a group's template inventory, nothing held) cannot serve any alternative of
// `claim`, or what it offers.
GroupVerdict JudgeGroup(const PendingClaimInput& claim, const NodeGroupProfile& group,
                        const Config& config, std::string_view driver) {
  GroupVerdict v{.group = group.name, .fits = true, .reason = ""};
  for (const ClaimDemand& d : claim.demands) {
    std::string why;
    bool any = false;
    for (const ClaimAlternative& a : d.alternatives) {
      std::optional<std::string> no = CannotServe(group.inventory, {}, a, config, driver);
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

}  // namespace

std::optional<std::string> CannotServe(const api::NodeInventory& inventory,
                                       const std::set<std::string>& allocated,
                                       const ClaimAlternative& alternative, const Config& config,
                                       std::string_view driver) {
  StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(inventory);
  StatusOr<topology::Node> node =
      spec.ok() ? topology::Node::Build(*spec) : StatusOr<topology::Node>(spec.status());
  if (!node.ok()) return "its inventory has no usable topology: " + node.status().message();
  topology::DeviceSet free;
  int in_class = 0;
  for (const api::InventoryDevice& d : inventory.status.devices) {
    const std::optional<bool> in = DeviceInClass(config, alternative.device_class, driver, d);
    if (!in.has_value()) return std::nullopt;  // not ours to judge
    if (!*in) continue;
    ++in_class;
    if (allocated.contains(d.name) || d.health != "Healthy") continue;
    if (const std::optional<int> id = node->FindDevice(d.name)) free.Add(*id);
  }
  const int want = Wanted(alternative);
  if (in_class == 0) return "no device of class " + alternative.device_class;
  if (free.size() < want) {
    return std::to_string(free.size()) + " of its " + std::to_string(in_class) + " " +
           alternative.device_class + " devices free, " + std::to_string(want) + " wanted";
  }
  if (alternative.all) {
    return free.size() == in_class
               ? std::nullopt
               : std::optional<std::string>("not all of its " + alternative.device_class +
                                            " devices are free");
  }
  if (!topology::Solve(*node, free, want).feasible) {
    return "its free " + alternative.device_class + " devices hold no set of " +
           std::to_string(want) + " its rules allow";
  }
  return std::nullopt;
}

bool ClassesAreOurs(const PendingClaimInput& claim, const Config& config, std::string_view driver) {
  if (claim.demands.empty()) return false;
  for (const ClaimDemand& d : claim.demands) {
    if (d.alternatives.empty()) return false;
    for (const ClaimAlternative& a : d.alternatives) {
      if (!ClassIsOurs(a.device_class, config, driver)) return false;
    }
  }
  return true;
}

std::vector<PendingReport> PendingClaims(const std::vector<PendingClaimInput>& claims,
                                         const std::function<bool(LiveNode*)>& next,
                                         const std::vector<NodeGroupProfile>& groups,
                                         const Config& config, std::string_view driver) {
  // Per claim still unserved: per request, the reasons nodes gave (the last one kept).
  std::vector<const PendingClaimInput*> open;
  for (const PendingClaimInput& c : claims) {
    if (ClassesAreOurs(c, config, driver)) open.push_back(&c);
  }
  std::map<const PendingClaimInput*, int> refusals;
  int live = 0;
  LiveNode node;
  while (!open.empty() && next(&node)) {
    if (node.inventory == nullptr) continue;
    ++live;
    std::erase_if(open, [&](const PendingClaimInput* c) {
      for (const ClaimDemand& d : c->demands) {
        const bool served =
            std::any_of(d.alternatives.begin(), d.alternatives.end(), [&](const auto& a) {
              return !CannotServe(*node.inventory, node.allocated, a, config, driver);
            });
        if (!served) {
          ++refusals[c];
          return false;
        }
      }
      return true;
    });
  }
  std::vector<PendingReport> out;
  for (const PendingClaimInput* c : open) {
    PendingReport r;
    r.ns = c->ns;
    r.name = c->name;
    r.created = c->created;
    r.reason = live == 0 ? "no live node of this driver"
                         : "none of the " + std::to_string(live) + " live nodes can serve it";
    for (const NodeGroupProfile& g : groups) r.groups.push_back(JudgeGroup(*c, g, config, driver));
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json PendingJson(const std::vector<PendingReport>& reports,
                           const std::vector<NodeGroupProfile>& groups) {
  nlohmann::json pending = nlohmann::json::array();
  for (const PendingReport& r : reports) {
    nlohmann::json verdicts = nlohmann::json::array();
    for (const GroupVerdict& g : r.groups) {
      verdicts.push_back({{"name", g.group}, {"fits", g.fits}, {"reason", g.reason}});
    }
    pending.push_back({{"namespace", r.ns},
                       {"name", r.name},
                       {"created", r.created},
                       {"reason", r.reason},
                       {"nodeGroups", verdicts}});
  }
  nlohmann::json names = nlohmann::json::array();
  for (const NodeGroupProfile& g : groups) names.push_back(g.name);
  return {{"pending", pending}, {"nodeGroups", names}};
}

std::vector<std::string> TemplateDrift(const DesiredPool& live, const DesiredPool& tmpl,
                                       size_t limit) {
  const auto runtime = [](const std::string& attr) {
    return attr == "gang" || IsRuntimeAttribute(attr);
  };
  std::map<std::string, const api::resource::Device*> want;
  for (const auto& slice : tmpl.slices) {
    for (const auto& d : slice.devices) want[d.name] = &d;
  }
  std::map<std::string, const api::resource::Device*> have;
  for (const auto& slice : live.slices) {
    for (const auto& d : slice.devices) have[d.name] = &d;
  }
  std::vector<std::string> out;
  auto add = [&](std::string line) {
    if (out.size() < limit) out.push_back(std::move(line));
  };
  // "<device>: attribute <name> <what>".
  auto attribute = [&](const std::string& device, const std::string& attr, std::string_view what) {
    std::string line = device;
    line += ": attribute ";
    line += attr;
    line += what;
    add(std::move(line));
  };
  for (const auto& [name, device] : want) {
    auto it = have.find(name);
    if (it == have.end()) {
      add("device " + name + " missing");
      continue;
    }
    for (const auto& [attr, value] : device->attributes) {
      if (runtime(attr)) continue;
      auto got = it->second->attributes.find(attr);
      if (got == it->second->attributes.end()) {
        attribute(name, attr, " missing");
      } else if (!(got->second == value)) {
        attribute(name, attr, " differs");
      }
    }
    for (const auto& [attr, value] : it->second->attributes) {
      if (!runtime(attr) && !device->attributes.contains(attr)) {
        attribute(name, attr, " not in the template");
      }
    }
    if (!(device->capacity == it->second->capacity)) add(name + ": capacity differs");
  }
  for (const auto& [name, device] : have) {
    if (!want.contains(name)) add("device " + name + " not in the template");
  }
  return out;
}

}  // namespace xpu::controller
