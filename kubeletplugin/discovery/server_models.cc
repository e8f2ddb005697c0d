#include "kubeletplugin/discovery/server_models.h"

#include <optional>
#include <utility>

#include "topology/server_models.h"

namespace xpu::discovery {
namespace {

using topology::ServerModelId;

constexpr std::string_view kSource = "server-model";

// Which published model a host is (docs/reference/hardware.md §1.1, §2.1, §3.2, §3.8), with its
// description and its linkType attribute.
struct Match {
  ServerModelId id;
  std::string description;
  std::string link_type;
  // Group kinds whose groups are the scale-up domain, and the module (hard pairing unit).
  topology::GroupKind scale_up;
  std::optional<topology::GroupKind> module;
};

std::optional<Match> Find(const ServerModelQuery& q) {
  using topology::GroupKind;
  const size_t n = q.devices.size();
  if (q.vendor == "huawei" && q.device_id == 0xd801 && n == 8) {
    return Match{ServerModelId::kAtlas800_9000,
                 "Huawei Atlas 800 training server (model 9000), 8x Ascend 910", "hccs",
                 GroupKind::kHccsRing, std::nullopt};
  }
  if (q.vendor == "huawei" && q.device_id == 0xd802 && n == 8) {
    return Match{ServerModelId::kAtlas800tA2,
                 "Huawei Atlas 800T A2 training server, 8x Ascend 910B", "hccs",
                 GroupKind::kLinkDomain, std::nullopt};
  }
  if (q.vendor == "huawei" && q.device_id == 0xd802 && n == 16) {
    return Match{ServerModelId::kAtlas200tA2Box16,
                 "Huawei Atlas 200T A2 Box16, 16x Ascend 910B in two HCCS areas", "hccs",
                 GroupKind::kHccsArea, std::nullopt};
  }
  if (q.vendor == "huawei" && q.device_id == 0xd803 && n == 16) {
    return Match{ServerModelId::kAtlas800tA3,
                 "Huawei Atlas 800T A3, 8x Ascend 910C (16 dies in 8 HiAM modules)", "hccs+sio",
                 GroupKind::kLinkDomain, GroupKind::kHiamModule};
  }
  if (q.vendor == "nvidia" && q.model == "GB200" && n == 4) {
    return Match{ServerModelId::kGb200Tray, "NVIDIA GB200 NVL72 compute tray, 4x GB200", "nvswitch",
                 GroupKind::kNvSwitchBoard, std::nullopt};
  }
  if (q.vendor == "nvidia" && q.has_nvswitch && n == 8) {
    return Match{ServerModelId::kHgx8Gpu,
                 "NVIDIA HGX " + std::string(q.model) + " 8-GPU, 4 NVSwitch", "nvswitch",
                 GroupKind::kNvSwitchBoard, std::nullopt};
  }
  if (q.vendor == "cambricon" && q.model == "MLU370" && n == 8) {
    return Match{ServerModelId::kMlu370X8, "8x Cambricon MLU370-X8 chips on 4 cards, MLU-Link ring",
                 "mlulink", GroupKind::kLinkDomain, GroupKind::kCard};
  }
  if (q.vendor == "amd" && n == 8) {
    return Match{ServerModelId::kInstinct8Gpu,
                 "AMD Instinct 8-GPU platform, 8x " + std::string(q.model), "xgmi",
                 GroupKind::kLinkDomain, std::nullopt};
  }
  return std::nullopt;
}

}  // namespace

ServerModel MatchServerModel(const ServerModelQuery& q) {
  ServerModel m;
  const std::optional<Match> match = Find(q);
  if (!match) {
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
  m.description = match->description;
  m.link_type = match->link_type;
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
