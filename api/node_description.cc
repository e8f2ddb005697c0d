#include "api/node_description.h"

#include <array>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "api/codec/codec.h"
#include "api/internal/description_fields.h"
#include "api/node_inventory.h"

namespace xpu::api {
namespace {

using codec::Field;
using internal::Bandwidth;
using internal::EnumName;
using internal::IntAtLeast;
using internal::kUnbounded;
using nlohmann::json;
using topology::GroupKind;
using topology::LinkType;
using topology::NodeSpec;
using topology::PcieBandwidths;
using topology::RuleSetKind;
using topology::RuleSetSpec;

const EnumName<LinkType> kLinkType = {topology::ParseLinkType, topology::LinkTypeName,
                                      topology::kLinkTypeCount, "link type"};
const EnumName<GroupKind> kGroupKind = {topology::ParseGroupKind, topology::GroupKindName,
                                        static_cast<int>(GroupKind::kCard) + 1, "group kind"};
const EnumName<RuleSetKind> kRuleSetKind = {topology::ParseRuleSetKind, topology::RuleSetKindName,
                                            topology::kRuleSetKindCount, "rule set kind"};

// The JSON keys of the PCIe bandwidth overrides.
constexpr std::array<std::pair<std::string_view, double PcieBandwidths::*>, 4> kPcieFields = {{
    {"pcieSwitch", &PcieBandwidths::pcie_switch},
    {"hostBridge", &PcieBandwidths::host_bridge},
    {"numa", &PcieBandwidths::numa},
    {"crossNuma", &PcieBandwidths::cross_numa},
}};

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

Status ReadValidSets(const Field& f, std::map<int, std::vector<std::vector<std::string>>>* out) {
  if (!f.value->is_object()) return codec::Expected(f, "an object");
  for (const auto& [key, sets] : f.value->items()) {
    const Field field{&sets, f.path + "[" + key + "]"};
    const std::optional<int> size = ParseSizeKey(key);
    if (!size) {
      return field.Error("key must be a set size from 1 to " +
                         std::to_string(topology::kMaxDevices) + " in decimal, e.g. \"2\"");
    }
    const size_t n = static_cast<size_t>(*size);
    const internal::Entries<internal::Entries<internal::Strings>> lists = {
        0, kUnbounded, internal::StringList(n, n)};
    RETURN_IF_ERROR(lists.Read(field, &(*out)[*size]));
  }
  return OkStatus();
}

// ruleSet: the kind, and validSets exactly when the kind is ring-sets.
struct RuleSetField {
  Status Read(const Field& f, RuleSetSpec* out) const {
    RETURN_IF_ERROR(codec::CheckObject(f, {"kind", "validSets"}));
    const Field kind = f.Member("kind");
    if (kind.value == nullptr) return kind.Error("missing required field");
    RETURN_IF_ERROR(kRuleSetKind.Read(kind, &out->kind));
    const Field sets = f.Member("validSets");
    if (out->kind != RuleSetKind::kRingSets) {
      if (sets.value != nullptr) return sets.Error("only allowed with kind ring-sets");
      return OkStatus();
    }
    if (sets.value == nullptr) return sets.Error("missing required field");
    return ReadValidSets(sets, &out->valid_sets);
  }
  json Write(const RuleSetSpec& rules) const {
    json out = {{"kind", kRuleSetKind.Write(rules.kind)}};
    if (rules.kind == RuleSetKind::kRingSets) {
      json& sets = out["validSets"] = json::object();
      for (const auto& [size, lists] : rules.valid_sets) sets[std::to_string(size)] = lists;
    }
    return out;
  }
};

// pcieBandwidthGBps: overrides of the model bandwidths, written where they differ from them.
struct PcieField {
  Status Read(const Field& f, PcieBandwidths* out) const {
    std::vector<std::string_view> keys;
    keys.reserve(kPcieFields.size());
    for (const auto& [key, member] : kPcieFields) keys.push_back(key);
    RETURN_IF_ERROR(codec::CheckObject(f, keys));
    for (const auto& [key, member] : kPcieFields) {
      const Field m = f.Member(key);
      if (m.value != nullptr) RETURN_IF_ERROR(Bandwidth().Read(m, &(out->*member)));
    }
    return OkStatus();
  }
  json Write(const PcieBandwidths& pcie) const {
    const PcieBandwidths defaults;
    json out = json::object();
    for (const auto& [key, member] : kPcieFields) {
      if (pcie.*member != defaults.*member) out[std::string(key)] = codec::Number(pcie.*member);
    }
    return out;
  }
  bool IsSet(const PcieBandwidths& pcie) const { return !Write(pcie).empty(); }
};

// ---- Field lists (docs/node-description.md) ----

struct DeviceFields {
  template <typename V, typename S>
  void operator()(V& v, S& d) const {
    v.Required("name", d.name);
    v.Required("kind", d.kind);
    v.Required("index", d.index, IntAtLeast{0});
    v.Optional("memory", d.memory_bytes, internal::QuantityBytes{});
    v.Optional("numaNode", d.numa_node, IntAtLeast{-1});
    v.Optional("pciePath", d.pcie_path, internal::StringList(0));
  }
};

struct LinkFields {
  template <typename V, typename S>
  void operator()(V& v, S& l) const {
    v.Required("type", l.type, kLinkType);
    v.Required("bandwidthGBps", l.bandwidth_gbps, Bandwidth{});
    v.Required("devices", l.devices, internal::StringList(2));
  }
};

struct GroupFields {
  template <typename V, typename S>
  void operator()(V& v, S& g) const {
    v.Required("name", g.name);
    v.Required("kind", g.kind, kGroupKind);
    v.Required("members", g.members, internal::StringList(1));
  }
};

// The whole file: apiVersion and kind, then the node.
struct NodeDocument {
  std::string api_version;
  std::string kind;
  NodeSpec spec;
};

struct NodeDocumentFields {
  template <typename V, typename S>
  void operator()(V& v, S& doc) const {
    auto& spec = doc.spec;
    v.Optional("apiVersion", doc.api_version, internal::Constant{kNodeDescriptionApiVersion});
    v.Optional("kind", doc.kind, internal::Constant{kNodeDescriptionKind});
    v.Required("name", spec.name);
    v.Optional("model", spec.model);
    v.Required("ruleSet", spec.rule_set, RuleSetField{});
    v.Required("devices", spec.devices,
               internal::StructList(1, static_cast<size_t>(topology::kMaxDevices), DeviceFields{}));
    v.Optional("links", spec.links, internal::StructList(0, kUnbounded, LinkFields{}));
    v.Optional("groups", spec.groups, internal::StructList(0, kUnbounded, GroupFields{}));
    v.Optional("pcieBandwidthGBps", spec.pcie, PcieField{});
  }
};

}  // namespace

StatusOr<NodeSpec> ParseNodeDescription(const json& doc) {
  NodeDocument out;
  RETURN_IF_ERROR(codec::ReadFields(Field{&doc, ""}, &out, NodeDocumentFields{}));
  return std::move(out.spec);
}

StatusOr<NodeSpec> ReadNodeDescriptionFile(const std::string& path) {
  const std::string context = "read topology " + path;
  ASSIGN_OR_RETURN(const json doc, codec::ReadJsonFile(path, context));
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
  return codec::WriteFields(NodeDocument{"", "", spec}, NodeDocumentFields{});
}

}  // namespace xpu::api
