#include "topology/model.h"

#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"
#include "topology/testing/fixtures.h"

namespace xpu::topology {
namespace {

NodeSpec TwoGpus() {
  NodeSpec spec;
  spec.name = "two";
  spec.rule_set.kind = RuleSetKind::kAny;
  spec.devices = {
      DeviceSpec{"gpu-1", "gpu", 1, 0, 0, {"pci0000:00", "0000:00:01.0", "0000:01:00.0"}},
      DeviceSpec{"gpu-0", "gpu", 0, 0, 0, {"pci0000:00", "0000:00:01.0", "0000:02:00.0"}}};
  return spec;
}

std::string BuildError(const NodeSpec& spec) {
  StatusOr<Node> node = Node::Build(spec);
  REQUIRE_FALSE(node.ok());
  CHECK(node.status().code() == StatusCode::kInvalidArgument);
  return node.status().message();
}

TEST_CASE("every bundled model builds") {
  for (const auto& model : testing::BundledModels()) {
    StatusOr<Node> node = Node::Build(model.spec);
    INFO(model.name << ": " << node.status().ToString());
    CHECK(node.ok());
  }
}

TEST_CASE("devices are ordered by vendor index") {
  StatusOr<Node> node = Node::Build(TwoGpus());
  REQUIRE_OK(node);
  CHECK(node->device(0).name == "gpu-0");
  CHECK(node->FindDevice("gpu-1") == 1);
  CHECK_FALSE(node->FindDevice("gpu-9").has_value());
  StatusOr<DeviceSet> list = node->ParseDeviceList("gpu-1,gpu-0");
  REQUIRE_OK(list);
  CHECK(list->size() == 2);
  CHECK(node->ParseDeviceList("gpu-0,gpu-7").status().message() ==
        "device gpu-7 is not on node two");
  CHECK(node->ParseDeviceList("gpu-0,gpu-0").status().message() ==
        "\"gpu-0\" is listed twice in \"gpu-0,gpu-0\"");
  CHECK(node->ParseDeviceList("gpu-0,,gpu-1").status().code() == StatusCode::kInvalidArgument);
  REQUIRE_OK(node->ParseDeviceList(""));
  CHECK(node->ParseDeviceList("")->empty());
}

TEST_CASE("PCIe relations are derived from paths and NUMA nodes") {
  NodeSpec spec = TwoGpus();
  auto relation = [&]() {
    StatusOr<Node> node = Node::Build(spec);
    REQUIRE_OK(node);
    return node->PairLinkType(0, 1);
  };
  CHECK(relation() == LinkType::kPcieSwitch);
  spec.devices[0].pcie_path = {"pci0000:00", "0000:00:02.0", "0000:03:00.0"};
  CHECK(relation() == LinkType::kHostBridge);
  spec.devices[0].pcie_path = {"pci0000:80", "0000:80:02.0", "0000:81:00.0"};
  CHECK(relation() == LinkType::kNuma);
  spec.devices[0].numa_node = 1;
  CHECK(relation() == LinkType::kCrossNuma);
  // A direct link beats every PCIe relation.
  spec.links.push_back(LinkSpec{LinkType::kNvLink, 300, {"gpu-0", "gpu-1"}});
  CHECK(relation() == LinkType::kNvLink);
  StatusOr<Node> node = Node::Build(spec);
  REQUIRE_OK(node);
  CHECK(node->PairBandwidth(0, 1) == 300000);
  CHECK(node->Links().size() == 2);
}

TEST_CASE("bad node descriptions name the field") {
  NodeSpec spec = TwoGpus();
  spec.devices[1].name = "gpu-1";
  CHECK(BuildError(spec) == "devices[1].name: duplicate device name gpu-1");
  spec = TwoGpus();
  spec.devices[1].index = 1;
  CHECK(BuildError(spec) == "devices[1].index: duplicate index 1 for kind gpu");
  spec = TwoGpus();
  spec.devices[0].index = -2;
  CHECK(BuildError(spec) == "devices[0].index: must not be negative");
  spec = TwoGpus();
  spec.links.push_back(LinkSpec{LinkType::kNvLink, 10, {"gpu-0", "gpu-5"}});
  CHECK(BuildError(spec) == "links[0].devices[1]: unknown device gpu-5");
  spec.links[0] = LinkSpec{LinkType::kNvLink, 0, {"gpu-0", "gpu-1"}};
  CHECK(BuildError(spec) == "links[0].bandwidthGBps: must be a positive number");
  spec.links[0] = LinkSpec{LinkType::kNvLink, 10, {"gpu-0"}};
  CHECK(BuildError(spec) == "links[0].devices: a link needs at least 2 devices");
  spec = TwoGpus();
  spec.groups.push_back(GroupSpec{"g", GroupKind::kCard, {"gpu-0", "gpu-0"}});
  CHECK(BuildError(spec) == "groups[0].members[1]: device gpu-0 listed twice");
  spec = TwoGpus();
  spec.devices.clear();
  CHECK(BuildError(spec) == "devices: a node needs at least one device");
  spec = TwoGpus();
  for (int i = 2; i < 70; ++i) {
    spec.devices.push_back(DeviceSpec{"gpu-" + std::to_string(i), "gpu", i, 0, -1, {}});
  }
  CHECK(BuildError(spec) == "devices: 70 devices; at most 64 per node");
}

TEST_CASE("rule sets check the groups they need") {
  NodeSpec spec = testing::Atlas800_9000();
  spec.groups.pop_back();  // ring-1 gone
  CHECK(BuildError(spec) ==
        "ruleSet: ascend910-ring needs hccs-ring groups covering every device; npu-4 is in none");
  spec = testing::Atlas800tA3();
  spec.groups[0].members.emplace_back("npu-2");
  CHECK_THAT(BuildError(spec), Catch::Contains("do not overlap"));
  spec = testing::Atlas200tA2Box16();
  spec.groups[1].members.pop_back();
  CHECK_THAT(BuildError(spec), Catch::Contains("hccs-area"));
  spec = testing::Kunlun8();
  spec.rule_set.valid_sets[4].push_back({"xpu-0", "xpu-1", "xpu-9", "xpu-3"});
  CHECK_THAT(BuildError(spec), Catch::Contains("unknown device xpu-9"));
  spec = testing::Kunlun8();
  spec.rule_set.valid_sets[4].push_back({"xpu-0", "xpu-1", "xpu-1", "xpu-3"});
  CHECK_THAT(BuildError(spec), Catch::Contains("has 3 distinct devices, want 4"));
}

TEST_CASE("symmetry classes follow bandwidths and groups") {
  StatusOr<Node> hgx = Node::Build(testing::HgxH200());
  REQUIRE_OK(hgx);
  // GPUs behind one PCIe switch are interchangeable; across switches they are not.
  const auto& cls = hgx->singles().unit_class;
  CHECK(cls[0] == cls[1]);
  CHECK(cls[0] != cls[2]);
  StatusOr<Node> kunlun = Node::Build(testing::Kunlun8());
  REQUIRE_OK(kunlun);
  // Ring sets name devices: every device is its own class.
  CHECK(kunlun->singles().unit_class == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  StatusOr<Node> a3 = Node::Build(testing::Atlas800tA3());
  REQUIRE_OK(a3);
  CHECK(a3->modules().units.size() == 8);
  StatusOr<Node> box = Node::Build(testing::Atlas200tA2Box16());
  REQUIRE_OK(box);
  REQUIRE(box->positions().units.size() == 8);
  CHECK(box->positions().units[3] == DeviceSet::Of({3, 11}));
}

TEST_CASE("names round-trip") {
  for (int t = 0; t < kLinkTypeCount; ++t) {
    const auto type = static_cast<LinkType>(t);
    CHECK(ParseLinkType(LinkTypeName(type)) == type);
  }
  CHECK(ParseRuleSetKind("ascend-a3") == RuleSetKind::kAscendA3);
  CHECK(ParseGroupKind("hiam-module") == GroupKind::kHiamModule);
  CHECK_FALSE(ParseLinkType("warp-drive").has_value());
}

}  // namespace
}  // namespace xpu::topology
