#include "topology/server_models.h"

#include <algorithm>
#include <utility>

namespace xpu::topology {
namespace {

// Bandwidths (GB/s, one direction). Where hardware.md has no published figure (§6) these are
// model values that rank the scale-up link above the PCIe model values (32 GB/s through a
// switch), as the vendors' collective libraries do.
constexpr double kHccs910 = 60;  // Ascend 910 HCCS: not published (docs/reference/hardware.md §6)
constexpr double kHccs910B =
    56;  // Ascend 910B HCCS per link: not published (docs/reference/hardware.md §6)
constexpr double kSioA3 = 224;        // A3 die-to-die: above the switch, so pairs keep SIO
constexpr double kHccsSwitchA3 = 56;  // A3 in-node HCCS through the switch: not published
constexpr double kNvSwitchHgx =
    450;  // HGX H100/H200: 900 GB/s bidirectional (docs/reference/hardware.md §2.1)
constexpr double kNvSwitchNvl72 =
    900;  // GB200 NVL72: 1.8 TB/s per GPU (docs/reference/hardware.md §2.1)
constexpr double kMluLinkCard = 200;  // MLU-Link on a card: not published
constexpr double kMluLinkRing = 50;   // MLU-Link card to card: not published
constexpr double kXpuLink = 50;       // Kunlunxin: not published
constexpr double kXgmiInstinct =
    64;  // MI300X: 128 GB/s bidirectional per link (docs/reference/hardware.md §3.8)

using Names = std::vector<std::string>;

// Groups "<prefix>-<k>" of `size` consecutive devices.
std::vector<GroupSpec> Blocks(const Names& devices, const std::string& prefix, GroupKind kind,
                              size_t size) {
  std::vector<GroupSpec> groups;
  for (size_t b = 0; b * size < devices.size(); ++b) {
    GroupSpec& g = groups.emplace_back();
    g.name = prefix + "-" + std::to_string(b);
    g.kind = kind;
    const size_t end = std::min(devices.size(), (b + 1) * size);
    g.members.assign(devices.begin() + static_cast<std::ptrdiff_t>(b * size),
                     devices.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return groups;
}

// A full mesh of `type` over the members of each group.
void MeshPerGroup(std::vector<LinkSpec>& links, LinkType type, double gbps,
                  const std::vector<GroupSpec>& groups) {
  for (const GroupSpec& g : groups) links.push_back({type, gbps, g.members});
}

Names Pick(const Names& devices, std::initializer_list<size_t> indices) {
  Names out;
  for (size_t i : indices) {
    if (i < devices.size()) out.push_back(devices[i]);
  }
  return out;
}

}  // namespace

ServerModelLayout ServerModelLayoutOf(ServerModelId id, const std::vector<std::string>& d) {
  ServerModelLayout m;
  switch (id) {
    case ServerModelId::kAtlas800_9000:  // docs/reference/hardware.md §1.1, §1.3
      m.rule_set.kind = RuleSetKind::kAscend910Ring;
      m.groups = Blocks(d, "ring", GroupKind::kHccsRing, 4);
      MeshPerGroup(m.links, LinkType::kHccs, kHccs910, m.groups);
      break;
    case ServerModelId::kAtlas800tA2:  // docs/reference/hardware.md §1.1: any 1..8
      m.rule_set.kind = RuleSetKind::kAny;
      m.groups = Blocks(d, "hccs", GroupKind::kLinkDomain, 8);
      MeshPerGroup(m.links, LinkType::kHccs, kHccs910B, m.groups);
      break;
    case ServerModelId::kAtlas200tA2Box16:  // docs/reference/hardware.md §1.1: areas 0-7 and 8-15
      m.rule_set.kind = RuleSetKind::kAscend910BBox16;
      m.groups = Blocks(d, "area", GroupKind::kHccsArea, 8);
      MeshPerGroup(m.links, LinkType::kHccs, kHccs910B, m.groups);
      break;
    case ServerModelId::kAtlas800tA3:  // docs/reference/hardware.md §1.1: HiAM modules of 2 dies
      m.rule_set.kind = RuleSetKind::kAscendA3;
      m.groups = Blocks(d, "module", GroupKind::kHiamModule, 2);
      MeshPerGroup(m.links, LinkType::kSio, kSioA3, m.groups);
      m.links.push_back({LinkType::kHccsSwitch, kHccsSwitchA3, d});
      break;
    case ServerModelId::kHgx8Gpu:  // docs/reference/hardware.md §2.1
      m.rule_set.kind = RuleSetKind::kNvSwitch;
      m.groups = Blocks(d, "board", GroupKind::kNvSwitchBoard, d.size());
      MeshPerGroup(m.links, LinkType::kNvSwitch, kNvSwitchHgx, m.groups);
      break;
    case ServerModelId::kGb200Tray:  // docs/reference/hardware.md §2.1
      m.rule_set.kind = RuleSetKind::kNvSwitch;
      m.groups = Blocks(d, "board", GroupKind::kNvSwitchBoard, d.size());
      MeshPerGroup(m.links, LinkType::kNvSwitch, kNvSwitchNvl72, m.groups);
      break;
    case ServerModelId::kMlu370X8: {  // docs/reference/hardware.md §3.2: rings only for 2, 4, 8
      m.rule_set.kind = RuleSetKind::kRingSets;
      m.groups = Blocks(d, "card", GroupKind::kCard, 2);
      MeshPerGroup(m.links, LinkType::kMluLink, kMluLinkCard, m.groups);
      const size_t cards = d.size() / 2;
      for (size_t c = 0; c < cards; ++c) {  // chip 1 of card c faces chip 0 of card c+1
        m.links.push_back(
            {LinkType::kMluLink, kMluLinkRing, Pick(d, {2 * c + 1, 2 * ((c + 1) % cards)})});
      }
      for (const GroupSpec& card : m.groups) m.rule_set.valid_sets[2].push_back(card.members);
      for (size_t c = 0; c < cards; ++c) {
        const size_t next = (c + 1) % cards;
        m.rule_set.valid_sets[4].push_back(Pick(d, {2 * c, 2 * c + 1, 2 * next, 2 * next + 1}));
      }
      m.rule_set.valid_sets[static_cast<int>(d.size())].push_back(d);
      m.groups.push_back({"mlulink-0", GroupKind::kLinkDomain, d});
      break;
    }
    case ServerModelId::kKunlun8: {  // docs/reference/hardware.md §3.7
      m.rule_set.kind = RuleSetKind::kRingSets;
      m.groups = Blocks(d, "quad", GroupKind::kLinkDomain, 4);
      MeshPerGroup(m.links, LinkType::kXpuLink, kXpuLink, m.groups);
      for (size_t i = 0; i < 4; ++i) {
        m.links.push_back({LinkType::kXpuLink, kXpuLink, Pick(d, {i, i + 4})});
      }
      // Inference: HAMi documents only the 4-sets; every directly linked pair is allowed.
      for (const LinkSpec& link : m.links) {
        for (size_t a = 0; a < link.devices.size(); ++a) {
          for (size_t b = a + 1; b < link.devices.size(); ++b) {
            m.rule_set.valid_sets[2].push_back({link.devices[a], link.devices[b]});
          }
        }
      }
      m.rule_set.valid_sets[4] = {Pick(d, {0, 1, 4, 5}), Pick(d, {2, 3, 6, 7}),
                                  Pick(d, {0, 2, 4, 6}), Pick(d, {1, 3, 5, 7}),
                                  Pick(d, {0, 3, 4, 7}), Pick(d, {1, 2, 5, 6})};
      m.rule_set.valid_sets[8] = {d};
      break;
    }
    case ServerModelId::kInstinct8Gpu:  // docs/reference/hardware.md §3.8: 8 GPUs fully connected
      m.rule_set.kind = RuleSetKind::kAny;
      m.groups = Blocks(d, "xgmi", GroupKind::kLinkDomain, d.size());
      MeshPerGroup(m.links, LinkType::kXgmi, kXgmiInstinct, m.groups);
      break;
  }
  return m;
}

}  // namespace xpu::topology
