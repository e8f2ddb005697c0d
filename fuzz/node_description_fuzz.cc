// Node descriptions (api/node_description.h), the JSON `xpuctl plan/topo --topology` reads:
// parse, build the topology model, and for small nodes solve and list aligned groups. When a
// description builds, its encoding must parse and build again and encode the same.
#include <cstddef>
#include <cstdint>

#include "api/node_description.h"
#include "fuzz/fuzz_util.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace {

// The solver is exhaustive in places; bigger nodes are left to the model checks.
constexpr int kMaxSolvedDevices = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using xpu::fuzz::Dump;
  std::optional<nlohmann::json> doc = xpu::fuzz::ParseJson(xpu::fuzz::AsText(data, size));
  if (!doc) return 0;
  xpu::StatusOr<xpu::topology::NodeSpec> spec = xpu::api::ParseNodeDescription(*doc);
  if (!spec.ok()) return 0;
  xpu::StatusOr<xpu::topology::Node> node = xpu::topology::Node::Build(*spec);
  if (!node.ok()) return 0;

  const nlohmann::json encoded = xpu::api::NodeDescriptionToJson(*spec);
  xpu::StatusOr<xpu::topology::NodeSpec> again = xpu::api::ParseNodeDescription(encoded);
  FUZZ_CHECK(again.ok(), again.status().ToString() + "\n" + Dump(encoded));
  FUZZ_CHECK(xpu::topology::Node::Build(*again).ok(), Dump(encoded));
  FUZZ_CHECK(xpu::api::NodeDescriptionToJson(*again) == encoded, Dump(encoded));

  if (node->size() > kMaxSolvedDevices) return 0;
  const xpu::topology::DeviceSet all = node->All();
  for (int count : {1, 2, node->size() / 2, node->size()}) {
    const xpu::topology::SolveResult result = xpu::topology::Solve(*node, all, count);
    if (!result.feasible) continue;
    FUZZ_CHECK(result.devices.size() == count, Dump(encoded));
    FUZZ_CHECK(xpu::topology::RuleAllows(*node, result.devices), Dump(encoded));
  }
  for (int group_size : {2, 4}) {
    for (xpu::topology::DeviceSet group : xpu::topology::AlignedGroups(*node, group_size)) {
      FUZZ_CHECK(group.size() == group_size, Dump(encoded));
    }
  }
  return 0;
}
