#include "topology/testing/fixtures.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/server_models.h"

namespace xpu::topology::testing {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

std::string DeviceName(std::string_view kind, int index) {
  return std::string(kind) + "-" + std::to_string(index);
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

// The devices with the published layout of `id` (topology/server_models.h) over them.
NodeSpec Spec(std::string name, std::string model, ServerModelId id,
              std::vector<DeviceSpec> devices) {
  std::vector<std::string> names;
  for (const DeviceSpec& d : devices) names.push_back(d.name);
  ServerModelLayout layout = ServerModelLayoutOf(id, names);
  NodeSpec spec;
  spec.name = std::move(name);
  spec.model = std::move(model);
  spec.rule_set = std::move(layout.rule_set);
  spec.devices = std::move(devices);
  spec.links = std::move(layout.links);
  spec.groups = std::move(layout.groups);
  return spec;
}

}  // namespace

NodeSpec Atlas800_9000() {
  return Spec("atlas800-9000", "Huawei Atlas 800 training server (model 9000), 8x Ascend 910",
              ServerModelId::kAtlas800_9000, Devices("npu", 8, 32 * kGiB, {}));
}

NodeSpec Atlas800tA2() {
  return Spec("atlas800t-a2", "Huawei Atlas 800T A2 training server, 8x Ascend 910B",
              ServerModelId::kAtlas800tA2, Devices("npu", 8, 64 * kGiB, {}));
}

NodeSpec Atlas200tA2Box16() {
  return Spec("atlas200t-a2-box16", "Huawei Atlas 200T A2 Box16, 16x Ascend 910B in two HCCS areas",
              ServerModelId::kAtlas200tA2Box16,
              Devices("npu", 16, 64 * kGiB, {.devices_per_switch = 4}));
}

NodeSpec Atlas800tA3() {
  return Spec("atlas800t-a3", "Huawei Atlas 800T A3, 8x Ascend 910C (16 dies in 8 HiAM modules)",
              ServerModelId::kAtlas800tA3, Devices("npu", 16, 64 * kGiB, {}));
}

NodeSpec HgxH200() {
  // NVML's total on a real H200: 143,771 MiB (docs/hardware-records/2026-11-29-h200).
  return Spec("hgx-h200", "NVIDIA HGX H200 8-GPU, 4 NVSwitch", ServerModelId::kHgx8Gpu,
              Devices("gpu", 8, 143771 * kMiB, {.roots_per_numa = 2, .switches_per_root = 1}));
}

NodeSpec Pcie2Numa8Gpu() {
  NodeSpec spec;
  spec.name = "pcie-2numa-8gpu";
  spec.model = "Generic 2-socket PCIe server, 8x L40S-class GPU";
  spec.rule_set.kind = RuleSetKind::kPcieTree;
  spec.devices = Devices("gpu", 8, 48 * kGiB, {});
  return spec;
}

NodeSpec CambriconMlu370X8() {
  return Spec("cambricon-mlu370-x8", "8x Cambricon MLU370-X8 chips on 4 cards, MLU-Link ring",
              ServerModelId::kMlu370X8, Devices("mlu", 8, 24 * kGiB, {}));
}

NodeSpec Kunlun8() {
  return Spec("kunlun-8", "8x Kunlunxin XPU, two full-mesh quads with cross pairs",
              ServerModelId::kKunlun8, Devices("xpu", 8, 32 * kGiB, {}));
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
