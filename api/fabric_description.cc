#include "api/fabric_description.h"

#include <utility>

#include "api/codec/codec.h"
#include "api/internal/description_fields.h"

namespace xpu::api {
namespace {

using codec::Field;
using internal::Bandwidth;
using internal::kUnbounded;
using nlohmann::json;
using topology::DomainSpec;
using topology::FabricNodeSpec;
using topology::FabricSpec;
using topology::TierSpec;

// A node and its free devices.
struct NodeEntry {
  FabricNodeSpec spec;
  int free_devices = 0;
};

// The whole file.
struct FabricDocument {
  std::string api_version;
  std::string kind;
  std::string name;
  std::vector<TierSpec> tiers;
  std::vector<DomainSpec> domains;
  std::vector<NodeEntry> nodes;
};

struct TierFields {
  template <typename V, typename S>
  void operator()(V& v, S& tier) const {
    v.Required("name", tier.name);
    v.Optional("bandwidthGBps", tier.bandwidth_gbps, Bandwidth{});
  }
};

// The tiers. Their names are what domains refer to, so they must be unique; Fabric::Build works
// on indexes and does not look at them.
struct TierList {
  internal::Entries<internal::Fields<TierFields>> entries =
      internal::StructList(0, kUnbounded, TierFields{});

  Status Read(const Field& f, std::vector<TierSpec>* tiers) const {
    RETURN_IF_ERROR(entries.Read(f, tiers));
    for (size_t i = 0; i < tiers->size(); ++i) {
      const Field name = f.Element(i).Member("name");
      const std::string& tier = (*tiers)[i].name;
      if (tier.empty()) return name.Error("must not be empty");
      for (size_t j = 0; j < i; ++j) {
        if ((*tiers)[j].name == tier) return name.Error("duplicate tier " + tier);
      }
    }
    return OkStatus();
  }
  json Write(const std::vector<TierSpec>& tiers) const { return entries.Write(tiers); }
};

// A tier by name, as its index in `tiers`.
struct TierName {
  const std::vector<TierSpec>* tiers;

  Status Read(const Field& f, int* out) const {
    std::string name;
    RETURN_IF_ERROR(codec::Read(f, &name));
    std::vector<std::string> known;
    for (size_t i = 0; i < tiers->size(); ++i) {
      if ((*tiers)[i].name == name) {
        *out = static_cast<int>(i);
        return OkStatus();
      }
      known.push_back((*tiers)[i].name);
    }
    return codec::UnknownName(f, "tier", name, known);
  }
  json Write(int tier) const {
    const bool known = tier >= 0 && static_cast<size_t>(tier) < tiers->size();
    return known ? (*tiers)[static_cast<size_t>(tier)].name : "";
  }
};

struct DomainFields {
  const std::vector<TierSpec>* tiers;

  template <typename V, typename S>
  void operator()(V& v, S& domain) const {
    v.Required("name", domain.name);
    v.Required("tier", domain.tier, TierName{tiers});
    v.Optional("parent", domain.parent);
  }
};

struct NodeFields {
  template <typename V, typename S>
  void operator()(V& v, S& node) const {
    v.Required("name", node.spec.name);
    v.Optional("domain", node.spec.domain);
    v.Optional("freeDevices", node.free_devices, internal::IntAtLeast{0});
  }
};

struct FabricDocumentFields {
  template <typename V, typename S>
  void operator()(V& v, S& doc) const {
    v.Optional("apiVersion", doc.api_version, internal::Constant{kFabricDescriptionApiVersion});
    v.Optional("kind", doc.kind, internal::Constant{kFabricDescriptionKind});
    v.Required("name", doc.name);
    v.Required("tiers", doc.tiers, TierList{});
    v.Required("domains", doc.domains,
               internal::StructList(0, kUnbounded, DomainFields{&doc.tiers}));
    v.Required("nodes", doc.nodes, internal::StructList(0, kUnbounded, NodeFields{}));
  }
};

}  // namespace

StatusOr<FabricSpec> ParseFabricDescription(const json& doc, std::vector<int>* free_devices) {
  FabricDocument read;
  RETURN_IF_ERROR(codec::ReadFields(Field{&doc, ""}, &read, FabricDocumentFields{}));
  FabricSpec spec{std::move(read.tiers), std::move(read.domains), {}};
  std::vector<int> free;
  free.reserve(read.nodes.size());
  for (NodeEntry& node : read.nodes) {
    spec.nodes.push_back(std::move(node.spec));
    free.push_back(node.free_devices);
  }
  if (free_devices != nullptr) *free_devices = std::move(free);
  return spec;
}

StatusOr<FabricSpec> ReadFabricDescriptionFile(const std::string& path,
                                               std::vector<int>* free_devices) {
  const std::string context = "read fabric " + path;
  ASSIGN_OR_RETURN(const json doc, codec::ReadJsonFile(path, context));
  StatusOr<FabricSpec> spec = ParseFabricDescription(doc, free_devices);
  if (!spec.ok()) return spec.status().WithContext(context);
  return spec;
}

json FabricDescriptionToJson(const FabricSpec& spec, std::span<const int> free_devices,
                             std::string_view name) {
  FabricDocument doc{"", "", std::string(name), spec.tiers, spec.domains, {}};
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    doc.nodes.push_back({spec.nodes[i], i < free_devices.size() ? free_devices[i] : 0});
  }
  return codec::WriteFields(doc, FabricDocumentFields{});
}

}  // namespace xpu::api
