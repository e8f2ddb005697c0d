#include "kubeletplugin/discovery/server_models.h"

#include <utility>

namespace xpu::discovery {
namespace {

constexpr std::string_view kSource = "server-model";

// Bandwidths (GB/s, one direction). Where hardware.md has no published figure (§6) these are
// model values that rank the scale-up link above the PCIe model values (32 GB/s through a
// switch), as the vendors' collective libraries do.
constexpr double kHccs910 = 60;         // Ascend 910 HCCS: not published (hw §6)
constexpr double kHccs910B = 56;        // Ascend 910B HCCS per link: not published (hw §6)
constexpr double kSioA3 = 224;          // A3 die-to-die SIO: above the switch so pairs keep SIO
constexpr double kHccsSwitchA3 = 56;    // A3 in-node HCCS through the switch
constexpr double kNvSwitchHgx = 450;    // HGX H100/H200: 900 GB/s bidirectional (hw §2.1)
constexpr double kNvSwitchNvl72 = 900;  // GB200 NVL72: 1.8 TB/s per GPU (hw §2.1)
constexpr double kMluLinkCard = 200;    // MLU-Link on a card: no published figure
constexpr double kMluLinkRing = 50;     // MLU-Link card to card: no published figure
constexpr double kXgmiMi300 = 64;       // MI300X: 128 GB/s bidirectional per link (hw §3.8)

void Mesh(ServerModel& m, const std::vector<std::string>& members, std::string_view type,
          double gbps) {
  for (size_t i = 0; i < members.size(); ++i) {
    for (size_t j = i + 1; j < members.size(); ++j) {
      api::InventoryLink link;
      link.a = members[i];
      link.b = members[j];
      link.type = std::string(type);
      link.bandwidth_gbps = gbps;
      link.source = std::string(kSource);
      m.links.push_back(std::move(link));
    }
  }
}

void Link(ServerModel& m, const std::string& a, const std::string& b, std::string_view type,
          double gbps) {
  Mesh(m, {a, b}, type, gbps);
}

// Groups "<prefix>-<k>" of `size` consecutive devices.
std::vector<std::vector<std::string>> Blocks(ServerModel& m, const std::vector<std::string>& devs,
                                             std::string_view prefix, std::string_view kind,
                                             size_t size, bool scale_up, bool module) {
  std::vector<std::vector<std::string>> blocks;
  for (size_t b = 0; b * size < devs.size(); ++b) {
    api::InventoryGroup g;
    g.name = std::string(prefix) + "-" + std::to_string(b);
    g.kind = std::string(kind);
    g.source = std::string(kSource);
    for (size_t i = b * size; i < std::min(devs.size(), (b + 1) * size); ++i) {
      g.devices.push_back(devs[i]);
      if (scale_up) m.scale_up_domain[devs[i]] = g.name;
      if (module) m.module[devs[i]] = g.name;
    }
    blocks.push_back(g.devices);
    m.groups.push_back(std::move(g));
  }
  return blocks;
}

std::string Count(size_t n) { return std::to_string(n) + "x "; }

}  // namespace

ServerModel MatchServerModel(const ServerModelQuery& q) {
  ServerModel m;
  const std::vector<std::string>& d = q.devices;
  const size_t n = d.size();
  m.known = true;
  if (q.vendor == "huawei" && q.device_id == 0xd801 && n == 8) {
    // hw §1.1: Atlas 800 (model 9000), two HCCS rings of 4; §1.3 ring rules.
    m.description = "Huawei Atlas 800 training server (model 9000), 8x Ascend 910";
    m.rule_set = "ascend910-ring";
    for (const auto& ring : Blocks(m, d, "ring", "hccs-ring", 4, true, false)) {
      Mesh(m, ring, "hccs", kHccs910);
    }
    m.link_type = "hccs";
  } else if (q.vendor == "huawei" && q.device_id == 0xd802 && n == 8) {
    // hw §1.1: Atlas 800T A2, one HCCS domain, any 1..8.
    m.description = "Huawei Atlas 800T A2 training server, 8x Ascend 910B";
    m.rule_set = "any";
    for (const auto& domain : Blocks(m, d, "hccs", "link-domain", 8, true, false)) {
      Mesh(m, domain, "hccs", kHccs910B);
    }
    m.link_type = "hccs";
  } else if (q.vendor == "huawei" && q.device_id == 0xd802 && n == 16) {
    // hw §1.1: Atlas 200T A2 Box16, HCCS areas 0-7 and 8-15.
    m.description = "Huawei Atlas 200T A2 Box16, 16x Ascend 910B in two HCCS areas";
    m.rule_set = "ascend910b-box16";
    for (const auto& area : Blocks(m, d, "area", "hccs-area", 8, true, false)) {
      Mesh(m, area, "hccs", kHccs910B);
    }
    m.link_type = "hccs";
  } else if (q.vendor == "huawei" && q.device_id == 0xd803 && n == 16) {
    // hw §1.1: A3, SIO inside a HiAM module of 2 dies, HCCS between the 8 modules.
    m.description = "Huawei Atlas 800T A3, 8x Ascend 910C (16 dies in 8 HiAM modules)";
    m.rule_set = "ascend-a3";
    for (const auto& module : Blocks(m, d, "module", "hiam-module", 2, false, true)) {
      Mesh(m, module, "sio", kSioA3);
    }
    Mesh(m, d, "hccs-switch", kHccsSwitchA3);
    m.link_type = "hccs+sio";
  } else if (q.vendor == "nvidia" && q.model == "GB200" && n == 4) {
    // hw §2.1: GB200 NVL72 compute tray of 4 GPUs, NVLink switch trays, 1.8 TB/s per GPU.
    m.description = "NVIDIA GB200 NVL72 compute tray, 4x GB200";
    m.rule_set = "nvswitch";
    for (const auto& board : Blocks(m, d, "board", "nvswitch-board", n, true, false)) {
      Mesh(m, board, "nvswitch", kNvSwitchNvl72);
    }
    m.link_type = "nvswitch";
  } else if (q.vendor == "nvidia" && q.has_nvswitch && n == 8) {
    // hw §2.1: HGX H100/H200 8-GPU, 4 NVSwitch, any-to-any.
    m.description = "NVIDIA HGX " + std::string(q.model) + " 8-GPU, 4 NVSwitch";
    m.rule_set = "nvswitch";
    for (const auto& board : Blocks(m, d, "board", "nvswitch-board", n, true, false)) {
      Mesh(m, board, "nvswitch", kNvSwitchHgx);
    }
    m.link_type = "nvswitch";
  } else if (q.vendor == "cambricon" && q.model == "MLU370" && n == 8) {
    // hw §3.2: MLU370-X8, two chips per card, cards on an MLU-Link ring; rings only for 2, 4, 8.
    m.description = "8x Cambricon MLU370-X8 chips on 4 cards, MLU-Link ring";
    m.rule_set = "ring-sets";
    const auto cards = Blocks(m, d, "card", "card", 2, false, true);
    for (const auto& card : cards) Mesh(m, card, "mlulink", kMluLinkCard);
    for (size_t c = 0; c < 4; ++c) {
      Link(m, d[2 * c + 1], d[2 * ((c + 1) % 4)], "mlulink", kMluLinkRing);
    }
    Blocks(m, d, "mlulink", "link-domain", 8, true, false);
    for (const auto& card : cards) m.valid_sets.push_back(card);
    for (size_t c = 0; c < 4; ++c) {
      const size_t next = (c + 1) % 4;
      m.valid_sets.push_back({d[2 * c], d[2 * c + 1], d[2 * next], d[2 * next + 1]});
    }
    m.valid_sets.push_back(d);
    m.link_type = "mlulink";
  } else if (q.vendor == "amd" && n == 8) {
    // hw §3.8: MI300X-class platforms, 8 GPUs fully connected by xGMI.
    m.description = "AMD Instinct 8-GPU platform, 8x " + std::string(q.model);
    m.rule_set = "any";
    for (const auto& board : Blocks(m, d, "xgmi", "link-domain", n, true, false)) {
      Mesh(m, board, "xgmi", kXgmiMi300);
    }
    m.link_type = "xgmi";
  } else {
    // No published topology (hw §6 for Hygon, MetaX, Enflame, Biren, Moore Threads): the PCIe
    // tree decides.
    m = ServerModel();
    m.description = n == 0 ? "" : "PCIe server, " + Count(n) + std::string(q.model);
    m.rule_set = "pcie-tree";
    m.link_type = "pcie";
  }
  return m;
}

}  // namespace xpu::discovery
