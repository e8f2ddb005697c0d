#include "api/fabric_description.h"

#include <utility>

#include "api/internal/json_fields.h"

namespace xpu::api {
namespace {

using internal::AsBandwidth;
using internal::AsList;
using internal::AsString;
using internal::CheckConstant;
using internal::CheckObject;
using internal::Field;
using internal::IntAtLeast;
using internal::kUnbounded;
using internal::Number;
using internal::Optional;
using internal::Required;
using internal::UnknownName;
using nlohmann::json;
using topology::DomainSpec;
using topology::FabricNodeSpec;
using topology::FabricSpec;
using topology::TierSpec;

StatusOr<TierSpec> AsTier(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "bandwidthGBps"}));
  TierSpec tier;
  RETURN_IF_ERROR(Required(f.Member("name"), AsString, &tier.name));
  RETURN_IF_ERROR(Optional(f.Member("bandwidthGBps"), AsBandwidth, &tier.bandwidth_gbps));
  return tier;
}

// Tier names are what domains refer to, so they must be unique; Fabric::Build works on indexes
// and does not look at them.
Status CheckTierNames(const Field& f, const std::vector<TierSpec>& tiers) {
  for (size_t i = 0; i < tiers.size(); ++i) {
    const Field name = f.Element(i).Member("name");
    if (tiers[i].name.empty()) return name.Error("must not be empty");
    for (size_t j = 0; j < i; ++j) {
      if (tiers[j].name == tiers[i].name) return name.Error("duplicate tier " + tiers[i].name);
    }
  }
  return OkStatus();
}

// A tier name, as its index in `tiers`.
auto TierIndex(const std::vector<TierSpec>& tiers) {
  return [&tiers](const Field& f) -> StatusOr<int> {
    ASSIGN_OR_RETURN(std::string name, AsString(f));
    std::vector<std::string> known;
    for (size_t i = 0; i < tiers.size(); ++i) {
      if (tiers[i].name == name) return static_cast<int>(i);
      known.push_back(tiers[i].name);
    }
    return UnknownName(f, "tier", name, known);
  };
}

// A node and its free devices.
struct NodeEntry {
  FabricNodeSpec spec;
  int free_devices = 0;
};

StatusOr<NodeEntry> AsNode(const Field& f) {
  RETURN_IF_ERROR(CheckObject(f, {"name", "domain", "freeDevices"}));
  NodeEntry node;
  RETURN_IF_ERROR(Required(f.Member("name"), AsString, &node.spec.name));
  RETURN_IF_ERROR(Optional(f.Member("domain"), AsString, &node.spec.domain));
  RETURN_IF_ERROR(Optional(f.Member("freeDevices"), IntAtLeast(0), &node.free_devices));
  return node;
}

}  // namespace

StatusOr<FabricSpec> ParseFabricDescription(const json& doc, std::vector<int>* free_devices) {
  const Field root{&doc, ""};
  RETURN_IF_ERROR(CheckObject(root, {"apiVersion", "kind", "name", "tiers", "domains", "nodes"}));
  RETURN_IF_ERROR(CheckConstant(root.Member("apiVersion"), kFabricDescriptionApiVersion));
  RETURN_IF_ERROR(CheckConstant(root.Member("kind"), kFabricDescriptionKind));
  std::string name;
  RETURN_IF_ERROR(Required(root.Member("name"), AsString, &name));
  FabricSpec spec;
  const Field tiers = root.Member("tiers");
  RETURN_IF_ERROR(Required(
      tiers, [](const Field& f) { return AsList<TierSpec>(f, 0, kUnbounded, AsTier); },
      &spec.tiers));
  RETURN_IF_ERROR(CheckTierNames(tiers, spec.tiers));
  auto as_domain = [&spec](const Field& f) -> StatusOr<DomainSpec> {
    RETURN_IF_ERROR(CheckObject(f, {"name", "tier", "parent"}));
    DomainSpec domain;
    RETURN_IF_ERROR(Required(f.Member("name"), AsString, &domain.name));
    RETURN_IF_ERROR(Required(f.Member("tier"), TierIndex(spec.tiers), &domain.tier));
    RETURN_IF_ERROR(Optional(f.Member("parent"), AsString, &domain.parent));
    return domain;
  };
  RETURN_IF_ERROR(Required(
      root.Member("domains"),
      [&](const Field& f) { return AsList<DomainSpec>(f, 0, kUnbounded, as_domain); },
      &spec.domains));
  std::vector<NodeEntry> nodes;
  RETURN_IF_ERROR(Required(
      root.Member("nodes"),
      [](const Field& f) { return AsList<NodeEntry>(f, 0, kUnbounded, AsNode); }, &nodes));
  std::vector<int> free;
  free.reserve(nodes.size());
  for (NodeEntry& node : nodes) {
    spec.nodes.push_back(std::move(node.spec));
    free.push_back(node.free_devices);
  }
  if (free_devices != nullptr) *free_devices = std::move(free);
  return spec;
}

StatusOr<FabricSpec> ReadFabricDescriptionFile(const std::string& path,
                                               std::vector<int>* free_devices) {
  const std::string context = "read fabric " + path;
  ASSIGN_OR_RETURN(const json doc, internal::ReadJsonFile(path, context));
  StatusOr<FabricSpec> spec = ParseFabricDescription(doc, free_devices);
  if (!spec.ok()) return spec.status().WithContext(context);
  return spec;
}

json FabricDescriptionToJson(const FabricSpec& spec, std::span<const int> free_devices,
                             std::string_view name) {
  json doc = {{"apiVersion", std::string(kFabricDescriptionApiVersion)},
              {"kind", std::string(kFabricDescriptionKind)},
              {"name", std::string(name)}};
  json& tiers = doc["tiers"] = json::array();
  for (const TierSpec& t : spec.tiers) {
    json tier = {{"name", t.name}};
    if (t.bandwidth_gbps > 0) tier["bandwidthGBps"] = Number(t.bandwidth_gbps);
    tiers.push_back(std::move(tier));
  }
  json& domains = doc["domains"] = json::array();
  for (const DomainSpec& d : spec.domains) {
    const bool known_tier = d.tier >= 0 && static_cast<size_t>(d.tier) < spec.tiers.size();
    json domain = {{"name", d.name},
                   {"tier", known_tier ? spec.tiers[static_cast<size_t>(d.tier)].name : ""}};
    if (!d.parent.empty()) domain["parent"] = d.parent;
    domains.push_back(std::move(domain));
  }
  json& nodes = doc["nodes"] = json::array();
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    json node = {{"name", spec.nodes[i].name}};
    if (!spec.nodes[i].domain.empty()) node["domain"] = spec.nodes[i].domain;
    if (i < free_devices.size() && free_devices[i] > 0) node["freeDevices"] = free_devices[i];
    nodes.push_back(std::move(node));
  }
  return doc;
}

}  // namespace xpu::api
