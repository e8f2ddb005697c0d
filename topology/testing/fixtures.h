// C++ builders of the bundled server models. The JSON node descriptions in
// e2e/fixtures/topologies/<name>.json are generated from these (`xpuctl fixtures`-style
// generator in api/), and a test checks the files on disk still match.
#ifndef XPU_TOPOLOGY_TESTING_FIXTURES_H_
#define XPU_TOPOLOGY_TESTING_FIXTURES_H_

#include <string>
#include <vector>

#include "topology/model.h"

namespace xpu::topology::testing {

struct BundledModel {
  std::string name;  // file name without .json, e.g. "atlas800-9000"
  NodeSpec spec;
};

// Every bundled model, in a fixed order: atlas800-9000, atlas800t-a2, atlas200t-a2-box16,
// atlas800t-a3, hgx-h200, pcie-2numa-8gpu, cambricon-mlu370-x8, kunlun-8.
std::vector<BundledModel> BundledModels();

NodeSpec Atlas800_9000();      // 8x Ascend 910, two HCCS rings of 4
NodeSpec Atlas800tA2();        // 8x Ascend 910B, one HCCS domain
NodeSpec Atlas200tA2Box16();   // 16x Ascend 910B in two HCCS areas of 8
NodeSpec Atlas800tA3();        // 16 Ascend 910C dies in 8 HiAM modules
NodeSpec HgxH200();            // 8x H200, 4 NVSwitch
NodeSpec Pcie2Numa8Gpu();      // 8 PCIe GPUs, 2 NUMA nodes, 4 PCIe switches
NodeSpec CambriconMlu370X8();  // 8 MLU370 on an MLU-Link ring board
NodeSpec Kunlun8();            // two full-mesh quads with cross pairs

}  // namespace xpu::topology::testing

#endif  // XPU_TOPOLOGY_TESTING_FIXTURES_H_
