#include "topology/testing/fixtures.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xpu::topology::testing {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

using DeviceSets = std::vector<std::vector<std::string>>;

std::string DeviceName(std::string_view kind, int index) {
  return std::string(kind) + "-" + std::to_string(index);
}

// Names of the devices with indices first .. first + count - 1.
std::vector<std::string> Range(std::string_view kind, int first, int count) {
  std::vector<std::string> names;
  for (int i = first; i < first + count; ++i) names.push_back(DeviceName(kind, i));
  return names;
}

// One name list per index list, e.g. Sets("mlu", {{0, 1}, {2, 3}}).
DeviceSets Sets(std::string_view kind, std::initializer_list<std::initializer_list<int>> sets) {
  DeviceSets out;
  for (const auto& set : sets) {
    std::vector<std::string>& names = out.emplace_back();
    for (int index : set) names.push_back(DeviceName(kind, index));
  }
  return out;
}

std::string Bdf(int bus, int device) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0000:%02x:%02x.0", bus, device);
  return buf;
}

std::string RootComplex(int bus) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "pci0000:%02x", bus);
  return buf;
}

// Where the devices sit, in index order: `devices_per_switch` devices behind each PCIe switch,
// `switches_per_root` switches (each on its own root port) under each root complex,
// `roots_per_numa` root complexes per NUMA node.
struct PcieLayout {
  int roots_per_numa = 1;
  int switches_per_root = 2;
  int devices_per_switch = 2;
};

// `count` devices "<kind>-<i>" with `memory_bytes` each, placed by `layout`. Root complexes
// are spread over the bus range like a multi-socket host (2 roots: 0x10, 0x90); under a root,
// each switch takes root port 0x0<s+1>, an upstream bus, a downstream-port bus and one bus per
// device. Path: root, root port, switch upstream port, switch downstream port, device.
std::vector<DeviceSpec> Devices(std::string_view kind, int count, int64_t memory_bytes,
                                PcieLayout layout) {
  const int per_root = layout.switches_per_root * layout.devices_per_switch;
  const int roots = (count + per_root - 1) / per_root;
  std::vector<DeviceSpec> devices;
  for (int i = 0; i < count; ++i) {
    const int root = i / per_root;
    const int sw = i % per_root / layout.devices_per_switch;
    const int port = i % layout.devices_per_switch;
    const int root_bus = 0x10 + root * (0x100 / roots);
    const int upstream_bus = root_bus + 1 + sw * (2 + layout.devices_per_switch);
    DeviceSpec& d = devices.emplace_back();
    d.name = DeviceName(kind, i);
    d.kind = std::string(kind);
    d.index = i;
    d.memory_bytes = memory_bytes;
    d.numa_node = root / layout.roots_per_numa;
    d.pcie_path = {RootComplex(root_bus), Bdf(root_bus, sw + 1), Bdf(upstream_bus, 0),
                   Bdf(upstream_bus + 1, port), Bdf(upstream_bus + 2 + port, 0)};
  }
  return devices;
}

// Groups of `size` consecutive devices "<prefix>-0", "<prefix>-1", ..., members in index order.
std::vector<GroupSpec> Blocks(std::string_view prefix, GroupKind kind, std::string_view device_kind,
                              int count, int size) {
  std::vector<GroupSpec> groups;
  for (int b = 0; b * size < count; ++b) {
    groups.push_back(
        {std::string(prefix) + "-" + std::to_string(b), kind, Range(device_kind, b * size, size)});
  }
  return groups;
}

// A full mesh of `type` over the members of each group.
std::vector<LinkSpec> MeshPerGroup(LinkType type, double gbps,
                                   const std::vector<GroupSpec>& groups) {
  std::vector<LinkSpec> links;
  for (const GroupSpec& g : groups) links.push_back({type, gbps, g.members});
  return links;
}

// Every pair of devices joined by one of `links`, in link order.
DeviceSets LinkedPairs(const std::vector<LinkSpec>& links) {
  DeviceSets pairs;
  for (const LinkSpec& link : links) {
    for (size_t a = 0; a < link.devices.size(); ++a) {
      for (size_t b = a + 1; b < link.devices.size(); ++b) {
        pairs.push_back({link.devices[a], link.devices[b]});
      }
    }
  }
  return pairs;
}

NodeSpec Spec(std::string name, std::string model, RuleSetKind rule_set,
              std::vector<DeviceSpec> devices, std::vector<LinkSpec> links,
              std::vector<GroupSpec> groups) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.model = std::move(model);
  spec.rule_set.kind = rule_set;
  spec.devices = std::move(devices);
  spec.links = std::move(links);
  spec.groups = std::move(groups);
  return spec;
}

}  // namespace

NodeSpec Atlas800_9000() {
  std::vector<GroupSpec> rings = Blocks("ring", GroupKind::kHccsRing, "npu", 8, 4);
  // Model value: HCCS bandwidth of the Ascend 910 is not published (hardware.md §6); any value
  // above the PCIe model values (32 GB/s through a switch) ranks the ring above PCIe, as HCCL does.
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kHccs, 60, rings);
  return Spec("atlas800-9000", "Huawei Atlas 800 training server (model 9000), 8x Ascend 910",
              RuleSetKind::kAscend910Ring, Devices("npu", 8, 32 * kGiB, {}), std::move(links),
              std::move(rings));
}

NodeSpec Atlas800tA2() {
  std::vector<GroupSpec> domain = Blocks("hccs", GroupKind::kLinkDomain, "npu", 8, 8);
  // Model value: per-link HCCS bandwidth of the 910B is not published (hardware.md §6).
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kHccs, 56, domain);
  return Spec("atlas800t-a2", "Huawei Atlas 800T A2 training server, 8x Ascend 910B",
              RuleSetKind::kAny, Devices("npu", 8, 64 * kGiB, {}), std::move(links),
              std::move(domain));
}

NodeSpec Atlas200tA2Box16() {
  std::vector<GroupSpec> areas = Blocks("area", GroupKind::kHccsArea, "npu", 16, 8);
  // Model value: per-link HCCS bandwidth of the 910B is not published (hardware.md §6).
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kHccs, 56, areas);
  return Spec("atlas200t-a2-box16", "Huawei Atlas 200T A2 Box16, 16x Ascend 910B in two HCCS areas",
              RuleSetKind::kAscend910BBox16,
              Devices("npu", 16, 64 * kGiB, {.devices_per_switch = 4}), std::move(links),
              std::move(areas));
}

NodeSpec Atlas800tA3() {
  std::vector<GroupSpec> modules = Blocks("module", GroupKind::kHiamModule, "npu", 16, 2);
  // Model values: no published per-link SIO or in-node HCCS-switch bandwidth (hardware.md §6);
  // SIO is set above the switch so each HiAM pair keeps SIO as its best link.
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kSio, 224, modules);
  links.push_back({LinkType::kHccsSwitch, 56, Range("npu", 0, 16)});
  return Spec("atlas800t-a3", "Huawei Atlas 800T A3, 8x Ascend 910C (16 dies in 8 HiAM modules)",
              RuleSetKind::kAscendA3, Devices("npu", 16, 64 * kGiB, {}), std::move(links),
              std::move(modules));
}

NodeSpec HgxH200() {
  std::vector<GroupSpec> board = Blocks("board", GroupKind::kNvSwitchBoard, "gpu", 8, 8);
  // 900 GB/s bidirectional any-to-any through the 4 NVSwitches (hardware.md §2.1).
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kNvSwitch, 450, board);
  // NVML's total on a real H200: 143,771 MiB (docs/hardware-records/2026-11-29-h200).
  return Spec("hgx-h200", "NVIDIA HGX H200 8-GPU, 4 NVSwitch", RuleSetKind::kNvSwitch,
              Devices("gpu", 8, 143771 * kMiB, {.roots_per_numa = 2, .switches_per_root = 1}),
              std::move(links), std::move(board));
}

NodeSpec Pcie2Numa8Gpu() {
  return Spec("pcie-2numa-8gpu", "Generic 2-socket PCIe server, 8x L40S-class GPU",
              RuleSetKind::kPcieTree, Devices("gpu", 8, 48 * kGiB, {}), {}, {});
}

NodeSpec CambriconMlu370X8() {
  std::vector<GroupSpec> groups = Blocks("card", GroupKind::kCard, "mlu", 8, 2);
  // Model values: no published MLU-Link bandwidths. On-card link above the card-to-card bridge.
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kMluLink, 200, groups);
  for (int card = 0; card < 4; ++card) {  // chip 1 of card c faces chip 0 of card c+1 (mod 4)
    const std::string chip1 = DeviceName("mlu", 2 * card + 1);
    const std::string next_chip0 = DeviceName("mlu", 2 * ((card + 1) % 4));
    links.push_back({LinkType::kMluLink, 50, {chip1, next_chip0}});
  }
  groups.push_back({"mlulink-0", GroupKind::kLinkDomain, Range("mlu", 0, 8)});
  NodeSpec spec =
      Spec("cambricon-mlu370-x8", "8x Cambricon MLU370-X8 chips on 4 cards, MLU-Link ring",
           RuleSetKind::kRingSets, Devices("mlu", 8, 24 * kGiB, {}), std::move(links),
           std::move(groups));
  // Rings only for 2, 4, 8 (hardware.md §3.2): a card, two ring-adjacent cards, all.
  spec.rule_set.valid_sets = {
      {2, Sets("mlu", {{0, 1}, {2, 3}, {4, 5}, {6, 7}})},
      {4, Sets("mlu", {{0, 1, 2, 3}, {2, 3, 4, 5}, {4, 5, 6, 7}, {6, 7, 0, 1}})},
      {8, {Range("mlu", 0, 8)}},
  };
  return spec;
}

NodeSpec Kunlun8() {
  std::vector<GroupSpec> quads = Blocks("quad", GroupKind::kLinkDomain, "xpu", 8, 4);
  // Model value: no published Kunlunxin link bandwidth.
  std::vector<LinkSpec> links = MeshPerGroup(LinkType::kXpuLink, 50, quads);
  for (int i = 0; i < 4; ++i) {
    links.push_back({LinkType::kXpuLink, 50, {DeviceName("xpu", i), DeviceName("xpu", i + 4)}});
  }
  DeviceSets pairs = LinkedPairs(links);
  NodeSpec spec = Spec("kunlun-8", "8x Kunlunxin XPU, two full-mesh quads with cross pairs",
                       RuleSetKind::kRingSets, Devices("xpu", 8, 32 * kGiB, {}), std::move(links),
                       std::move(quads));
  spec.rule_set.valid_sets = {
      // Inference: HAMi documents only the 4-sets; every directly linked pair is allowed.
      {2, std::move(pairs)},
      // hardware.md §3.7.
      {4,
       Sets("xpu",
            {{0, 1, 4, 5}, {2, 3, 6, 7}, {0, 2, 4, 6}, {1, 3, 5, 7}, {0, 3, 4, 7}, {1, 2, 5, 6}})},
      {8, {Range("xpu", 0, 8)}},
  };
  return spec;
}

std::vector<BundledModel> BundledModels() {
  std::vector<BundledModel> models;
  for (NodeSpec& spec :
       std::vector<NodeSpec>{Atlas800_9000(), Atlas800tA2(), Atlas200tA2Box16(), Atlas800tA3(),
                             HgxH200(), Pcie2Numa8Gpu(), CambriconMlu370X8(), Kunlun8()}) {
    std::string name = spec.name;  // the file name is the spec's name
    models.push_back({std::move(name), std::move(spec)});
  }
  return models;
}

}  // namespace xpu::topology::testing
