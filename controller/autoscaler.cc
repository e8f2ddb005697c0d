#include "controller/autoscaler.h"

#include <algorithm>
#include <map>
#include <utility>

#include "controller/device_classes.h"
#include "controller/pending_facts.h"

namespace xpu::controller {
namespace {

bool ClassIsOurs(const std::string& device_class, const Config& config, std::string_view driver) {
  // DeviceInClass answers for the classes this config generates, whatever the device.
  return DeviceInClass(config, device_class, driver, api::InventoryDevice{}).has_value();
}

}  // namespace

std::optional<std::string> CannotServe(const api::NodeInventory& inventory,
                                       const std::set<std::string>& allocated,
                                       const ClaimAlternative& alternative, const Config& config,
                                       std::string_view driver) {
  PendingModels models;
  const PendingNode node = models.Of(inventory);
  return CannotServe(*node.model, node.healthy, DeviceIds(*node.model, allocated), alternative,
                     config, driver);
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
  // Each node's facts, taken while its inventory is decoded; equal models are shared.
  PendingModels models;
  std::vector<PendingNodeInput> nodes;
  LiveNode node;
  while (next(&node)) {
    if (node.inventory == nullptr) continue;
    PendingNodeInput in{.facts = models.Of(*node.inventory), .allocated = {}};
    in.allocated = DeviceIds(*in.facts.model, node.allocated);
    nodes.push_back(std::move(in));
    node.inventory.reset();
  }
  return JudgePendingClaims(claims, nodes, groups, config, driver);
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
