#include "api/node_description.h"

#include <array>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "api/internal/json_fields.h"
#include "api/node_inventory.h"
#include "api/quantity.h"

namespace xpu::api {
namespace {

using internal::AsBandwidth;
using internal::AsList;
using internal::AsString;
using internal::CheckConstant;
using internal::CheckObject;
using internal::Expected;
using internal::Field;
using internal::IntAtLeast;
using internal::kUnbounded;
using internal::Number;
using internal::Optional;
using internal::Required;
using internal::StringList;
using internal::UnknownName;
using nlohmann::json;
using topology::DeviceSpec;
using topology::GroupKind;
using topology::GroupSpec;
using topology::LinkSpec;
using topology::LinkType;
using topology::NodeSpec;
using topology::PcieBandwidths;
using topology::RuleSetKind;
using topology::RuleSetSpec;

// The JSON keys of the PCIe bandwidth overrides, shared by the parser and the writer.
constexpr std::array<std::pair<std::string_view, double PcieBandwidths::*>, 4> kPcieFields = {{
    {"pcieSwitch", &PcieBandwidths::pcie_switch},
    {"hostBridge", &PcieBandwidths::host_bridge},
    {"numa", &PcieBandwidths::numa},
    {"crossNuma", &PcieBandwidths::cross_numa},
}};

StatusOr<int64_t> AsQuantity(const Field& f) {
  if (!f.value->is_string()) return Expected(f, "a quantity string such as \"64Gi\"");
  StatusOr<int64_t> bytes = ParseQuantityBytes(f.value->get_ref<const std::string&>());
  if (!bytes.ok()) return f.Error(bytes.status().message());
  return bytes;
}

// One of the names of the first `count` enumerators of E (later ones, such as the derived group
// kinds, are not allowed in a description).
template <typename E>
StatusOr<E> AsEnum(const Field& f, std::optional<E> (*parse)(std::string_view),
                   std::string_view (*name)(E), int count, std::string_view what) {
  ASSIGN_OR_RETURN(std::string text, AsString(f));
  std::optional<E> value = parse(text);
  if (value && static_cast<int>(*value) < count) return *value;
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.emplace_back(name(static_cast<E>(i)));
  return UnknownName(f, what, text, names);
}

StatusOr<LinkType> AsLinkType(const Field& f) {
  return AsEnum(f, topology::ParseLinkType, topology::LinkTypeName, topology::kLinkTypeCount,
                "link type");
}
StatusOr<GroupKind> AsGroupKind(const Field& f) {
  return AsEnum(f, topology::ParseGroupKind, topology::GroupKindName,
                static_cast<int>(GroupKind::kCard) + 1, "group kind");
}
StatusOr<RuleSetKind> AsRuleSetKind(const Field& f) {
  return AsEnum(f, topology::ParseRuleSetKind, topology::RuleSetKindName,
                topology::kRuleSetKindCount, "rule set kind");
}

// A valid-set size key: canonical decimal, 1..kMaxDevices.
std::optional<int> ParseSizeKey(std::string_view key) {
  if (key.empty() || key.size() > 2 || key[0] == '0') return std::nullopt;
  int size = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    size = size * 10 + (c - '0');
  }
  if (size > topology::kMaxDevices) return std::nullopt;
  return size;
}

StatusOr<std::map<int, std::vector<std::vector<std::string>>>> AsValidSets(const Field& f) {
  if (!f.value->is_object()) return Expected(f, "an object");
  std::map<int, std::vector<std::vector<std::string>>> out;
  for (const auto& [key, sets] : f.value->items()) {
    const Field field{&sets, f.path + "[" + key + "]"};
    const std::optional<int> size = ParseSizeKey(key);
    if (!size) {
      return field.Error("key must be a set size from 1 to " +
                         std::to_string(topology::kMaxDevices) + " in decimal, e.g. \"2\"");
    }
    const size_t n = static_cast<size_t>(*size);
    ASSIGN_OR_RETURN(out[*size],
                     AsList<std::vector<std::string>>(field, 0, kUnbounded, StringList(n, n)));
  }
  return out;
}

StatusOr<RuleSetSpec> AsRuleSet(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"kind", "validSets"}));
  RuleSetSpec rules;
  RETURN_IF_ERROR(Required(f.Member("kind"), AsRuleSetKind, &rules.kind));
  const Field sets = f.Member("validSets");
  if (rules.kind != RuleSetKind::kRingSets) {
    if (sets.value != nullptr) return sets.Error("only allowed with kind ring-sets");
    return rules;
  }
  RETURN_IF_ERROR(Required(sets, AsValidSets, &rules.valid_sets));
  return rules;
}

StatusOr<DeviceSpec> AsDevice(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "kind", "index", "memory", "numaNode", "pciePath"}));
  DeviceSpec d;
  RETURN_IF_ERROR(Required(f.Member("name"), AsString, &d.name));
  RETURN_IF_ERROR(Required(f.Member("kind"), AsString, &d.kind));
  RETURN_IF_ERROR(Required(f.Member("index"), IntAtLeast(0), &d.index));
  RETURN_IF_ERROR(Optional(f.Member("memory"), AsQuantity, &d.memory_bytes));
  RETURN_IF_ERROR(Optional(f.Member("numaNode"), IntAtLeast(-1), &d.numa_node));
  RETURN_IF_ERROR(Optional(f.Member("pciePath"), StringList(0), &d.pcie_path));
  return d;
}

StatusOr<LinkSpec> AsLink(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"type", "bandwidthGBps", "devices"}));
  LinkSpec l;
  RETURN_IF_ERROR(Required(f.Member("type"), AsLinkType, &l.type));
  RETURN_IF_ERROR(Required(f.Member("bandwidthGBps"), AsBandwidth, &l.bandwidth_gbps));
  RETURN_IF_ERROR(Required(f.Member("devices"), StringList(2), &l.devices));
  return l;
}

StatusOr<GroupSpec> AsGroup(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "kind", "members"}));
  GroupSpec g;
  RETURN_IF_ERROR(Required(f.Member("name"), AsString, &g.name));
  RETURN_IF_ERROR(Required(f.Member("kind"), AsGroupKind, &g.kind));
  RETURN_IF_ERROR(Required(f.Member("members"), StringList(1), &g.members));
  return g;
}

StatusOr<PcieBandwidths> AsPcie(const Field& f) {
  std::vector<std::string_view> keys;
  keys.reserve(kPcieFields.size());
  for (const auto& [key, member] : kPcieFields) keys.push_back(key);
  RETURN_IF_ERROR(CheckObject(f, keys));
  PcieBandwidths pcie;
  for (const auto& [key, member] : kPcieFields) {
    RETURN_IF_ERROR(Optional(f.Member(key), AsBandwidth, &(pcie.*member)));
  }
  return pcie;
}

}  // namespace

StatusOr<NodeSpec> ParseNodeDescription(const json& doc) {
  const Field root{&doc, ""};
  RETURN_IF_ERROR(CheckObject(root, {"apiVersion", "kind", "name", "model", "ruleSet", "devices",
                                     "links", "groups", "pcieBandwidthGBps"}));
  RETURN_IF_ERROR(CheckConstant(root.Member("apiVersion"), kNodeDescriptionApiVersion));
  RETURN_IF_ERROR(CheckConstant(root.Member("kind"), kNodeDescriptionKind));
  NodeSpec spec;
  RETURN_IF_ERROR(Required(root.Member("name"), AsString, &spec.name));
  RETURN_IF_ERROR(Optional(root.Member("model"), AsString, &spec.model));
  RETURN_IF_ERROR(Required(root.Member("ruleSet"), AsRuleSet, &spec.rule_set));
  RETURN_IF_ERROR(Required(
      root.Member("devices"),
      [](const Field& f) {
        return AsList<DeviceSpec>(f, 1, static_cast<size_t>(topology::kMaxDevices), AsDevice);
      },
      &spec.devices));
  RETURN_IF_ERROR(Optional(
      root.Member("links"),
      [](const Field& f) { return AsList<LinkSpec>(f, 0, kUnbounded, AsLink); }, &spec.links));
  RETURN_IF_ERROR(Optional(
      root.Member("groups"),
      [](const Field& f) { return AsList<GroupSpec>(f, 0, kUnbounded, AsGroup); }, &spec.groups));
  RETURN_IF_ERROR(Optional(root.Member("pcieBandwidthGBps"), AsPcie, &spec.pcie));
  return spec;
}

StatusOr<NodeSpec> ReadNodeDescriptionFile(const std::string& path) {
  const std::string context = "read topology " + path;
  ASSIGN_OR_RETURN(const json doc, internal::ReadJsonFile(path, context));
  if (doc.is_object() && doc.value("kind", json()) == kNodeInventoryKind) {
    StatusOr<NodeInventory> inventory = FromJson<NodeInventory>(doc);
    if (!inventory.ok()) return inventory.status().WithContext(context);
    if (Status valid = ValidateNodeInventory(*inventory); !valid.ok()) {
      return valid.WithContext(context);
    }
    StatusOr<NodeSpec> spec = NodeDescriptionFromInventory(*inventory);
    if (!spec.ok()) return spec.status().WithContext(context);
    return spec;
  }
  StatusOr<NodeSpec> spec = ParseNodeDescription(doc);
  if (!spec.ok()) return spec.status().WithContext(context);
  return spec;
}

json NodeDescriptionToJson(const NodeSpec& spec) {
  json doc = {{"apiVersion", std::string(kNodeDescriptionApiVersion)},
              {"kind", std::string(kNodeDescriptionKind)},
              {"name", spec.name}};
  if (!spec.model.empty()) doc["model"] = spec.model;

  json& rules = doc["ruleSet"];
  rules["kind"] = std::string(topology::RuleSetKindName(spec.rule_set.kind));
  if (spec.rule_set.kind == RuleSetKind::kRingSets) {
    json& sets = rules["validSets"] = json::object();
    for (const auto& [size, lists] : spec.rule_set.valid_sets) sets[std::to_string(size)] = lists;
  }

  json& devices = doc["devices"] = json::array();
  for (const DeviceSpec& d : spec.devices) {
    json device = {{"name", d.name}, {"kind", d.kind}, {"index", d.index}};
    if (d.memory_bytes > 0) device["memory"] = FormatQuantityBytes(d.memory_bytes);
    if (d.numa_node >= 0) device["numaNode"] = d.numa_node;
    if (!d.pcie_path.empty()) device["pciePath"] = d.pcie_path;
    devices.push_back(std::move(device));
  }
  for (const LinkSpec& l : spec.links) {
    doc["links"].push_back({{"type", std::string(topology::LinkTypeName(l.type))},
                            {"bandwidthGBps", Number(l.bandwidth_gbps)},
                            {"devices", l.devices}});
  }
  for (const GroupSpec& g : spec.groups) {
    doc["groups"].push_back({{"name", g.name},
                             {"kind", std::string(topology::GroupKindName(g.kind))},
                             {"members", g.members}});
  }
  const PcieBandwidths defaults;
  for (const auto& [key, member] : kPcieFields) {
    if (spec.pcie.*member != defaults.*member) {
      doc["pcieBandwidthGBps"][std::string(key)] = Number(spec.pcie.*member);
    }
  }
  return doc;
}

}  // namespace xpu::api
