// The published server models: for each server family, the scale-up links with their bandwidths,
// the vendor groups and the allocation rule set, laid over a list of device names in index
// order (docs/reference/hardware.md §1.1, §1.3, §2.1, §3.2, §3.7, §3.8). One source for both the
// hardware discovery (kubeletplugin/discovery, when no vendor library reports the topology) and the
// bundled node descriptions (topology/testing, e2e/fixtures/topologies/). Pure.
#ifndef XPU_TOPOLOGY_SERVER_MODELS_H_
#define XPU_TOPOLOGY_SERVER_MODELS_H_

#include <string>
#include <vector>

#include "topology/model.h"

namespace xpu::topology {

enum class ServerModelId {
  kAtlas800_9000,     // 8x Ascend 910: two HCCS rings of 4
  kAtlas800tA2,       // 8x Ascend 910B: one HCCS domain
  kAtlas200tA2Box16,  // 16x Ascend 910B: two HCCS areas of 8
  kAtlas800tA3,       // 16 Ascend 910C dies: 8 HiAM modules (SIO) over an HCCS switch
  kHgx8Gpu,           // 8 GPUs on an NVSwitch baseboard (HGX H100/H200)
  kGb200Tray,         // 4 GPUs of a GB200 NVL72 compute tray
  kMlu370X8,          // 8 MLU370 chips on 4 cards, MLU-Link ring
  kKunlun8,           // 8 Kunlunxin XPUs: two full-mesh quads with cross pairs
  kInstinct8Gpu,      // 8 AMD Instinct GPUs, xGMI all-to-all
};

// The links, groups and rule set of a model (no devices). Meshes are one LinkSpec over all
// members.
struct ServerModelLayout {
  RuleSetSpec rule_set;
  std::vector<LinkSpec> links;
  std::vector<GroupSpec> groups;
};

// The layout of `id` over `devices` (names in index order; the model's device count: 8, 16 or
// 4).
ServerModelLayout ServerModelLayoutOf(ServerModelId id, const std::vector<std::string>& devices);

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_SERVER_MODELS_H_
