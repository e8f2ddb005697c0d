#include "topology/dot.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"
#include "topology/testing/fixtures.h"

namespace xpu::topology {
namespace {

bool Balanced(const std::string& dot) {
  return std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}');
}

TEST_CASE("node pictures show devices, groups, links and the chosen set") {
  StatusOr<Node> node = Node::Build(testing::Atlas800tA3());
  REQUIRE_OK(node);
  const std::string dot = ToDot(*node, DeviceSet::Of({2, 3}));
  CHECK(dot.rfind("graph \"atlas800t-a3\" {", 0) == 0);
  CHECK(Balanced(dot));
  for (int id = 0; id < node->size(); ++id) {
    CHECK(dot.find("\"" + node->device(id).name + "\"") != std::string::npos);
  }
  CHECK(dot.find("subgraph cluster_1 {\n    label=\"module-1 (hiam-module)\"") !=
        std::string::npos);
  CHECK(dot.find("\"npu-2\" -- \"npu-3\" [label=\"sio\\n224 GB/s\", color=\"#d32f2f\"") !=
        std::string::npos);
  CHECK(dot.find("\"npu-2\" [shape=box, style=\"rounded,filled,bold\"") != std::string::npos);
  CHECK(dot.find("\"npu-0\" [shape=box, style=rounded,") != std::string::npos);
  CHECK(dot.find("\"NUMA 0\" -- \"root pci") != std::string::npos);
  // The 16-die HCCS switch mesh is one hub, not 120 edges.
  CHECK(dot.find("\"hub 0\" [shape=diamond, style=filled, fillcolor=\"#bbdefb\", "
                 "label=\"hccs-switch\\n56 GB/s\"]") != std::string::npos);
  CHECK(dot.find("\"npu-0\" -- \"npu-5\"") == std::string::npos);
}

TEST_CASE("names with quotes are escaped") {
  NodeSpec spec;
  spec.name = "odd \"name\"";
  spec.devices = {DeviceSpec{"gpu-0", "gpu", 0, 0, -1, {}}};
  StatusOr<Node> node = Node::Build(spec);
  REQUIRE_OK(node);
  CHECK(ToDot(*node).rfind("graph \"odd \\\"name\\\"\" {", 0) == 0);
}

TEST_CASE("fabric pictures nest domains and highlight the gang") {
  FabricSpec spec;
  spec.tiers = {{"leaf", 400}, {"spine", 0}};
  spec.domains = {{"spine-0", 1, ""}, {"leaf-0", 0, "spine-0"}, {"leaf-1", 0, "spine-0"}};
  spec.nodes = {{"a", "leaf-0"}, {"b", "leaf-1"}, {"c", ""}};
  StatusOr<Fabric> f = Fabric::Build(spec);
  REQUIRE_OK(f);
  const std::string dot = ToDot(*f, {1});
  CHECK(Balanced(dot));
  CHECK(dot.find("label=\"leaf: leaf-0 (400 GB/s)\"") != std::string::npos);
  CHECK(dot.find("\"b\" [shape=box, style=\"filled,bold\"") != std::string::npos);
  CHECK(dot.find("\"a\" [shape=box, style=solid]") != std::string::npos);
  CHECK(dot.find("\"c\" [shape=box") != std::string::npos);
}

}  // namespace
}  // namespace xpu::topology
