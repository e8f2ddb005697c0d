#include "kubeletplugin/discovery/server_models.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "topology/server_models.h"

namespace xpu::discovery {
namespace {

using topology::ServerModelId;

constexpr std::string_view kSource = "server-model";

// Which published model a host is (docs/reference/hardware.md §1.1, §2.1, §3.2, §3.8), with its
// description and its linkType attribute: one row a model, the first row that fits wins.
struct Match {
  ServerModelId id;
  std::string_view description;  // "{model}" stands for the accelerators' model name
  std::string_view link_type;
  // Group kinds whose groups are the scale-up domain, and the module (hard pairing unit).
  topology::GroupKind scale_up;
  std::optional<topology::GroupKind> module;
};

// What a host must show to be a model.
struct ModelKey {
  std::string_view vendor;
  uint16_t device_id = 0;  // 0: any
  std::string_view model;  // "": any
  bool needs_nvswitch = false;
  size_t devices = 0;
};

struct ModelRow {
  ModelKey key;
  Match match;
};

using topology::GroupKind;
constexpr std::array<ModelRow, 8> kModels = {{
    {{"huawei", 0xd801, "", false, 8},
     {ServerModelId::kAtlas800_9000, "Huawei Atlas 800 training server (model 9000), 8x Ascend 910",
      "hccs", GroupKind::kHccsRing, std::nullopt}},
    {{"huawei", 0xd802, "", false, 8},
     {ServerModelId::kAtlas800tA2, "Huawei Atlas 800T A2 training server, 8x Ascend 910B", "hccs",
      GroupKind::kLinkDomain, std::nullopt}},
    {{"huawei", 0xd802, "", false, 16},
     {ServerModelId::kAtlas200tA2Box16,
      "Huawei Atlas 200T A2 Box16, 16x Ascend 910B in two HCCS areas", "hccs", GroupKind::kHccsArea,
      std::nullopt}},
    {{"huawei", 0xd803, "", false, 16},
     {ServerModelId::kAtlas800tA3,
      "Huawei Atlas 800T A3, 8x Ascend 910C (16 dies in 8 HiAM modules)", "hccs+sio",
      GroupKind::kLinkDomain, GroupKind::kHiamModule}},
    {{"nvidia", 0, "GB200", false, 4},
     {ServerModelId::kGb200Tray, "NVIDIA GB200 NVL72 compute tray, 4x GB200", "nvswitch",
      GroupKind::kNvSwitchBoard, std::nullopt}},
    {{"nvidia", 0, "", true, 8},
     {ServerModelId::kHgx8Gpu, "NVIDIA HGX {model} 8-GPU, 4 NVSwitch", "nvswitch",
      GroupKind::kNvSwitchBoard, std::nullopt}},
    {{"cambricon", 0, "MLU370", false, 8},
     {ServerModelId::kMlu370X8, "8x Cambricon MLU370-X8 chips on 4 cards, MLU-Link ring", "mlulink",
      GroupKind::kLinkDomain, GroupKind::kCard}},
    {{"amd", 0, "", false, 8},
     {ServerModelId::kInstinct8Gpu, "AMD Instinct 8-GPU platform, 8x {model}", "xgmi",
      GroupKind::kLinkDomain, std::nullopt}},
}};

bool Fits(const ModelKey& key, const ServerModelQuery& q) {
  return q.vendor == key.vendor && (key.device_id == 0 || q.device_id == key.device_id) &&
         (key.model.empty() || q.model == key.model) && (!key.needs_nvswitch || q.has_nvswitch) &&
         q.devices.size() == key.devices;
}

const Match* Find(const ServerModelQuery& q) {
  for (const ModelRow& row : kModels) {
    if (Fits(row.key, q)) return &row.match;
  }
  return nullptr;
}

// The row's description with "{model}" replaced by the query's model.
std::string Describe(std::string_view description, std::string_view model) {
  constexpr std::string_view kModel = "{model}";
  std::string out(description);
  if (const size_t at = out.find(kModel); at != std::string::npos) {
    out.replace(at, kModel.size(), model);
  }
  return out;
}

}  // namespace

ServerModel MatchServerModel(const ServerModelQuery& q) {
  ServerModel m;
  const Match* match = Find(q);
  if (match == nullptr) {
    // No published topology (docs/reference/hardware.md §6 for Hygon, MetaX, Enflame, Biren, Moore
    // Threads): the PCIe tree decides.
    if (!q.devices.empty()) {
      m.description =
          "PCIe server, " + std::to_string(q.devices.size()) + "x " + std::string(q.model);
    }
    m.rule_set = "pcie-tree";
    m.link_type = "pcie";
    return m;
  }
  const topology::ServerModelLayout layout = topology::ServerModelLayoutOf(match->id, q.devices);
  m.known = true;
  m.description = Describe(match->description, q.model);
  m.link_type = std::string(match->link_type);
  m.rule_set = std::string(topology::RuleSetKindName(layout.rule_set.kind));
  for (const auto& [size, sets] : layout.rule_set.valid_sets) {
    for (const std::vector<std::string>& set : sets) m.valid_sets.push_back(set);
  }
  // A mesh becomes one link per pair, in (i, j) order, as InventoryFromNodeDescription does.
  for (const topology::LinkSpec& link : layout.links) {
    for (size_t i = 0; i < link.devices.size(); ++i) {
      for (size_t j = i + 1; j < link.devices.size(); ++j) {
        api::InventoryLink& l = m.links.emplace_back();
        l.a = link.devices[i];
        l.b = link.devices[j];
        l.type = std::string(topology::LinkTypeName(link.type));
        l.bandwidth_gbps = link.bandwidth_gbps;
        l.source = std::string(kSource);
      }
    }
  }
  for (const topology::GroupSpec& g : layout.groups) {
    api::InventoryGroup& group = m.groups.emplace_back();
    group.name = g.name;
    group.kind = std::string(topology::GroupKindName(g.kind));
    group.devices = g.members;
    group.source = std::string(kSource);
    for (const std::string& d : g.members) {
      if (g.kind == match->scale_up) m.scale_up_domain[d] = g.name;
      if (match->module && g.kind == *match->module) m.module[d] = g.name;
    }
  }
  return m;
}

}  // namespace xpu::discovery
