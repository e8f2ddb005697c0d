#include "controller/render_judge.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "api/node_inventory.h"
#include "base/enum_names.h"
#include "base/name_list.h"
#include "controller/device_classes.h"
#include "controller/slices.h"

namespace xpu::controller::render_internal {
namespace {

using topology::DeviceSet;

bool HasPrecisionAttribute(const api::InventoryDevice& device, const std::string& precision) {
  if (precision.empty()) return true;
  auto it = device.attributes.find(precision);
  return it != device.attributes.end() && it->second.bool_value == true;
}

// The string value of an inventory attribute, ints as decimal: what a matchAttribute compares.
std::optional<std::string> AttributeText(const api::InventoryDevice& device,
                                         const std::string& name) {
  auto it = device.attributes.find(name);
  if (it == device.attributes.end()) return std::nullopt;
  if (it->second.string_value) return *it->second.string_value;
  if (it->second.int_value) return std::to_string(*it->second.int_value);
  return std::nullopt;
}

std::string ServerNames(const std::vector<ServerView>& views, const std::vector<size_t>& which) {
  std::vector<std::string> names;
  for (size_t i : which) names.push_back(views[i].server->name);
  return JoinNames(names, ", ");
}

constexpr std::string_view kAmbiguous =
    " on one server model and not on another, which a selector cannot tell apart (";

// The parts joined: notes built in loops, without a temporary per `+`.
std::string Concat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out += part;
  return out;
}

// What the note says a config would need for a count no matchAttribute keeps.
std::string ModeNeeded(const Config& config) {
  return config.mode == PublishMode::kGroups
             ? " and groups mode publishes no group of that size (publishing.groupSizes)"
             : "; only groups mode can (publishing.mode is attributes)";
}

// The constraints a model's sets may keep the rules under, loosest first: after the scale-up
// link's own groupings, the PCIe tree's (on the A3 one NUMA node or root complex holds exactly
// two HCCS modules, so four dies sharing it are two whole modules, which the rules allow and no
// module or scaleUpDomain value can express).
constexpr SetKey kRuleKeys[] = {SetKey::kNone,     SetKey::kScaleUpDomain, SetKey::kModule,
                                SetKey::kNumaNode, SetKey::kPcieRoot,      SetKey::kPcieSwitch};

// Each valid model's loosest constraint and the servers it leaves a set on; models none keeps
// are left out of `out` (nullopt).
struct ModelConstraint {
  SetKey constraint = SetKey::kNone;
  std::vector<size_t> views;
};
std::optional<ModelConstraint> LoosestConstraint(const VendorVerdict& v, const std::string& model,
                                                 const std::vector<size_t>& valid) {
  for (SetKey key : kRuleKeys) {
    ModelConstraint c{key, {}};
    bool keeps = true;
    for (size_t i : valid) {
      const ServerView& view = v.views[i];
      const SetsJudged judged = JudgeSets(view, DevicesOf(view, {model}), v.count, {key}, false);
      keeps = keeps && judged.all_keep;
      if (judged.sets > 0) c.views.push_back(i);
    }
    // A server the constraint leaves no set on is one the model cannot land on under it: safe,
    // so the constraint still counts, as long as some server keeps a set.
    if (keeps && !c.views.empty()) return c;
  }
  return std::nullopt;
}

// Groups mode: one group device of the count, rule-valid by construction, on the servers of
// `valid` models that have aligned groups of that size. Returns the models it serves.
std::set<std::string> FindGroupDevice(VendorVerdict& v, const Config& config,
                                      const std::map<std::string, std::vector<size_t>>& valid) {
  std::set<std::string> grouped;
  const int k = v.count;
  if (!v.groups_mode || k < 2 ||
      std::find(config.group_sizes.begin(), config.group_sizes.end(), k) ==
          config.group_sizes.end()) {
    return grouped;
  }
  std::set<size_t> where;
  for (const auto& [model, servers] : valid) where.insert(servers.begin(), servers.end());
  for (size_t i : where) {
    if (topology::AlignedGroups(v.views[i].node, k).empty()) continue;
    v.group_views.push_back(i);
    grouped.insert(v.views[i].models.begin(), v.views[i].models.end());
  }
  v.group_device = !v.group_views.empty();
  return grouped;
}

}  // namespace

std::string_view SetKeyAttribute(SetKey key) {
  // In SetKey order.
  static constexpr std::string_view kAttributes[] = {
      "",        "scaleUpDomain", "module", kPcieSwitchAttribute, "resource.kubernetes.io/pcieRoot",
      "numaNode"};
  static_assert(NamesCover(kAttributes, SetKey::kNumaNode));
  return NameAt(kAttributes, key).value_or("");
}

std::string QualifiedAttribute(std::string_view attribute, std::string_view driver) {
  if (attribute.find('/') != std::string_view::npos) return std::string(attribute);
  return std::string(driver) + "/" + std::string(attribute);
}

std::vector<ServerView> ViewsOf(const std::vector<ReferenceServer>& servers, const Config& config,
                                const std::string& driver, const std::string& vendor,
                                const std::string& device_class, const std::string& precision) {
  std::vector<ServerView> views;
  for (const ReferenceServer& s : servers) {
    StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(s.inventory);
    if (!spec.ok()) continue;
    StatusOr<topology::Node> node = topology::Node::Build(*spec);
    if (!node.ok()) continue;
    ServerView view{.server = &s, .node = *std::move(node)};
    const std::map<std::string, std::string> domains = DeviceScaleUpDomains(s.inventory);
    auto& keys = view.keys;
    for (const api::InventoryDevice& d : s.inventory.status.devices) {
      if (d.vendor != vendor || DeviceInClass(config, device_class, driver, d) != true ||
          !HasPrecisionAttribute(d, precision)) {
        continue;
      }
      const std::optional<int> id = view.node.FindDevice(d.name);
      if (!id) continue;
      view.admitted.Add(*id);
      view.model[*id] = d.model;
      view.models.insert(d.model);
      // The values as controller/slices.cc publishes them.
      if (auto it = domains.find(d.name); it != domains.end()) {
        keys[static_cast<size_t>(SetKey::kScaleUpDomain)][*id] = it->second;
      }
      for (SetKey key : {SetKey::kModule, SetKey::kPcieRoot, SetKey::kNumaNode}) {
        if (auto value = AttributeText(d, std::string(SetKeyAttribute(key)))) {
          keys[static_cast<size_t>(key)][*id] = *value;
        }
      }
      if (std::string pcie_switch = DevicePcieSwitch(d); !pcie_switch.empty()) {
        keys[static_cast<size_t>(SetKey::kPcieSwitch)][*id] = std::move(pcie_switch);
      }
    }
    if (!view.admitted.empty()) views.push_back(std::move(view));
  }
  return views;
}

DeviceSet DevicesOf(const ServerView& view, const std::set<std::string>& models) {
  DeviceSet out;
  for (const auto& [id, model] : view.model) {
    if (models.contains(model)) out.Add(id);
  }
  return out;
}

SetsJudged JudgeSets(const ServerView& view, DeviceSet devices, int count,
                     const std::vector<SetKey>& keys, bool bandwidth) {
  // Devices by the values they share; a device that lacks one is in no set.
  std::map<std::string, std::vector<int>> parts;
  for (int id : devices.Ids()) {
    std::string value;
    bool has = true;
    for (SetKey key : keys) {
      if (key == SetKey::kNone) continue;
      const std::map<int, std::string>& values = view.keys[static_cast<size_t>(key)];
      auto it = values.find(id);
      if (it == values.end()) {
        has = false;
        break;
      }
      value += it->second;
      value += '\n';
    }
    if (has) parts[value].push_back(id);
  }
  SetsJudged out;
  for (const auto& [value, ids] : parts) {
    const bool all = topology::ForEachSubset(ids, count, [&](DeviceSet set) {
      ++out.sets;
      if (!topology::RuleAllows(view.node, set)) {
        out.all_keep = false;
        return false;
      }
      if (bandwidth) {
        out.worst_mbps =
            std::min(out.worst_mbps, topology::Evaluate(view.node, devices, set).bottleneck_mbps);
      }
      return true;
    });
    if (!all) break;
  }
  return out;
}

bool EverySetKeepsRules(const ServerView& view, DeviceSet devices, int count,
                        const std::vector<SetKey>& keys) {
  const SetsJudged judged = JudgeSets(view, devices, count, keys, false);
  return judged.all_keep && judged.sets > 0;
}

uint64_t ServableCounts(const VendorVerdict& v, const ServerView& view, DeviceSet devices) {
  uint64_t mask = 0;
  for (int k = 1; k <= devices.size(); ++k) {
    bool servable = std::any_of(std::begin(kRuleKeys), std::end(kRuleKeys), [&](SetKey key) {
      return EverySetKeepsRules(view, devices, k, {key});
    });
    if (!servable && v.groups_mode && k > 1 &&
        std::find(v.group_sizes.begin(), v.group_sizes.end(), k) != v.group_sizes.end()) {
      const std::vector<DeviceSet> aligned = topology::AlignedGroups(view.node, k);
      servable = std::any_of(aligned.begin(), aligned.end(),
                             [&](DeviceSet g) { return (g - devices).empty(); });
    }
    if (servable) mask |= uint64_t{1} << (k - 1);
  }
  return mask;
}

std::string AllowedCounts(const ServerView& view, DeviceSet devices) {
  std::string out;
  for (int k = 1; k <= devices.size(); ++k) {
    if (!topology::Solve(view.node, devices, k).feasible) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(k);
  }
  return out;
}

VendorVerdict JudgeVendor(const std::string& vendor, int64_t count, const std::string& class_name,
                          const std::string& precision, const RenderOptions& options,
                          const std::vector<ReferenceServer>& servers) {
  VendorVerdict v;
  v.vendor = vendor;
  v.device_class = class_name + "." + vendor;
  v.count = static_cast<int>(count);
  const Config& config = options.config;
  v.groups_mode = config.mode == PublishMode::kGroups;
  if (v.groups_mode) v.group_sizes = config.group_sizes;
  v.views = ViewsOf(servers, config, options.driver, vendor, v.device_class, precision);
  if (v.views.empty()) {
    v.refusal = Refusal::kNoDevices;
    v.why = vendor + ": no reference server has devices of class " + v.device_class +
            (precision.empty() ? "" : " with " + precision);
    return v;
  }
  const int k = v.count;
  const std::string devices = std::to_string(count) + " devices";
  // Each model's servers with at least k of its devices: those whose rules allow some k-set of
  // them, and those that allow none (the scheduler cannot put the set on the others at all).
  std::map<std::string, std::vector<size_t>> valid;
  std::map<std::string, std::vector<size_t>> invalid;
  std::vector<std::string> allows;  // per server, for the notes: "atlas800-9000 allows 1, 2, 4, 8"
  std::string allowed;              // all of them
  for (size_t i = 0; i < v.views.size(); ++i) {
    const ServerView& view = v.views[i];
    allows.push_back(view.server->name + " allows " + AllowedCounts(view, view.admitted));
    allowed += (allowed.empty() ? "" : "; ") + allows.back();
    for (const std::string& model : view.models) {
      const DeviceSet own = DevicesOf(view, {model});
      if (own.size() < k) continue;
      (topology::Solve(view.node, own, k).feasible ? valid : invalid)[model].push_back(i);
    }
  }
  if (valid.empty()) {
    v.refusal = invalid.empty() ? Refusal::kTooFew : Refusal::kRules;
    v.why = vendor + ": " + devices +
            (invalid.empty() ? " of the class are more than any server has ("
                             : " break the rules of every server that has as many (") +
            allowed + ")";
    return v;
  }
  for (const auto& [model, where] : invalid) {
    v.excluded.insert(model);
    if (valid.contains(model)) {
      if (v.why.empty()) {
        v.why = Concat({vendor, ": model ", model, " allows ", devices, kAmbiguous, allowed, ")"});
      }
      v.notes.push_back(Concat(
          {vendor, ": ", model, " left out: it allows ", devices, kAmbiguous, allowed, ")"}));
    } else {
      std::string on;
      for (size_t i : where) {
        if (!on.empty()) on += "; ";
        on += allows[i];
      }
      v.notes.push_back(
          Concat({vendor, ": ", model, " left out: ", devices, " break its rules (", on, ")"}));
    }
  }

  const std::set<std::string> grouped = FindGroupDevice(v, config, valid);

  // Every other model: the loosest constraint that keeps its rules on all its servers.
  std::map<SetKey, ModelGroup> by_key;
  std::vector<size_t> unkept;
  bool mode_refused = false;
  for (const auto& [model, where] : valid) {
    if (v.excluded.contains(model)) continue;
    if (std::optional<ModelConstraint> c = LoosestConstraint(v, model, where)) {
      ModelGroup& group = by_key[c->constraint];
      group.constraint = c->constraint;
      group.models.insert(model);
      for (size_t i : c->views) {
        if (std::find(group.views.begin(), group.views.end(), i) == group.views.end()) {
          group.views.push_back(i);
        }
      }
      continue;
    }
    unkept.insert(unkept.end(), where.begin(), where.end());
    if (grouped.contains(model)) continue;  // the group device serves it
    mode_refused = true;
    v.excluded.insert(model);
    v.notes.push_back(
        Concat({vendor, ": ", model, " left out: no matchAttribute keeps the rules for ", devices,
                " on ", ServerNames(v.views, where), ModeNeeded(config)}));
  }
  for (auto& [key, group] : by_key) {
    std::sort(group.views.begin(), group.views.end());
    v.groups.push_back(std::move(group));
  }
  if (!v.groups.empty() || v.group_device) {
    v.why.clear();
    return v;
  }
  if (mode_refused || v.why.empty()) {
    std::sort(unkept.begin(), unkept.end());
    unkept.erase(std::unique(unkept.begin(), unkept.end()), unkept.end());
    v.refusal = Refusal::kMode;
    v.why = vendor + ": no matchAttribute keeps the rules for " + devices + " on " +
            ServerNames(v.views, unkept) + ModeNeeded(config);
  } else {
    v.refusal = Refusal::kAmbiguous;
  }
  return v;
}

}  // namespace xpu::controller::render_internal
