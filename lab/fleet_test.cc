#include "lab/fleet.h"

#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"
#include "lab/testing/hand_cases.h"

namespace xpu::lab {
namespace {

TEST_CASE("fleet of reference servers names its nodes per model and builds a default fabric") {
  auto fleet = ParseFleet(
      "nodes:\n- {model: atlas800-9000, count: 3}\n- {model: hgx-h200, count: 2}\n"
      "- {model: atlas800-9000, count: 1}\n",
      "");
  REQUIRE_OK(fleet);
  REQUIRE(fleet->models.size() == 2);
  CHECK(fleet->models[0].name == "atlas800-9000");
  CHECK(fleet->models[0].vendor == "huawei");
  CHECK(fleet->models[1].vendor == "nvidia");
  REQUIRE(fleet->nodes.size() == 6);
  CHECK(fleet->nodes[0].name == "atlas800-9000-0");
  CHECK(fleet->nodes[3].name == "hgx-h200-0");
  CHECK(fleet->nodes[5].name == "atlas800-9000-3");
  CHECK(fleet->nodes[5].model == 0);
  CHECK(fleet->devices == 48);
  CHECK(fleet->summary == "3 x atlas800-9000, 2 x hgx-h200, 1 x atlas800-9000");
  REQUIRE(fleet->fabric->node_count() == 6);
  CHECK(fleet->fabric->tier_count() == 2);
  CHECK(fleet->fabric->node_name(4) == "hgx-h200-1");
}

TEST_CASE("fleet leafSize sets the leaves of the default fabric") {
  auto fleet = ParseFleet("nodes: [{model: hgx-h200, count: 5}]\nfabric: {leafSize: 2}\n", "");
  REQUIRE_OK(fleet);
  const topology::Fabric& f = *fleet->fabric;
  CHECK(f.NodeDomain(0, 0) == f.NodeDomain(1, 0));
  CHECK(f.NodeDomain(1, 0) != f.NodeDomain(2, 0));
  CHECK(f.domain_name(f.NodeDomain(4, 0)) == "leaf-2");
  CHECK(f.NodeDomain(0, 1) == f.NodeDomain(4, 1));
}

TEST_CASE("fleet takes a fabric description file that places its nodes") {
  const std::string dir = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/fabrics";
  auto bad = ParseFleet("nodes: [{model: hgx-h200, count: 2}]\nfabric: superpod-demo.json\n", dir);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("hgx-h200-0") != std::string::npos);
}

TEST_CASE("fleet errors name the field") {
  auto expect = [](const std::string& text, const std::string& part) {
    auto fleet = ParseFleet(text, "");
    REQUIRE_FALSE(fleet.ok());
    INFO(fleet.status().message());
    CHECK(fleet.status().message().find(part) != std::string::npos);
  };
  expect("nodes: []\n", "nodes: required");
  expect("nodes: [{model: no-such-server, count: 1}]\n", "nodes[0]: model: unknown server model");
  expect("nodes: [{model: hgx-h200}]\n", "nodes[0].count: required");
  expect("nodes: [{model: hgx-h200, count: 0}]\n", "nodes[0].count: must be between 1");
  expect("nodes: [{model: hgx-h200, count: 1, colour: red}]\n", "nodes[0].colour: unknown field");
  expect("nodes: [{count: 1}]\n", "give exactly one of model");
  expect("nodes: [{model: hgx-h200, count: 1}]\nfabric: {leafSize: -1}\n", "fabric.leafSize");
  expect("nodes: [{model: hgx-h200, count: 1}]\nfabrik: {}\n", "fabrik: unknown field");
  expect("nodes: [{inventory: missing.json, count: 1}]\n",
         "nodes[0]: inventory: read missing.json");
}

TEST_CASE("fleet reads an inventory file relative to the fleet file") {
  const std::string dir = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts-expected";
  auto fleet = ParseFleet("nodes: [{inventory: metax-c500-8.json, count: 2}]\n", dir);
  REQUIRE_OK(fleet);
  CHECK(fleet->models[0].vendor == "metax");
  CHECK(fleet->nodes[1].name == fleet->models[0].name + "-1");
}

TEST_CASE("a fleet's partition offers: each partitionable device draws the same, small first") {
  const xpu::testing::TempDir dir;
  const Fleet fleet = testing::MigFleet(dir, 4, 2);
  REQUIRE(fleet.models.size() == 1);
  CHECK(fleet.models[0].partitionable.size() == 4);
  CHECK(fleet.models[0].partitionable[0].name == "gpu-0");
  CHECK(fleet.models[0].partitionable[0].kind == "mig");
  const std::vector<PartitionOffer> offers = PartitionOffers(fleet);
  REQUIRE(offers.size() == 6);
  CHECK(offers.front().profile == "1g.18gb");
  CHECK(offers.front().device_share == Approx(1.0 / 7));  // one of 7 compute slices
  CHECK(offers.back().profile == "7g.141gb");
  CHECK(offers.back().device_share == 1);
  double total = 0;
  for (const PartitionOffer& o : offers) total += o.weight;
  CHECK(total == Approx(8));  // 2 nodes x 4 partitionable GPUs
  CHECK(offers.front().weight == Approx(8 * 32.0 / 63));
}

}  // namespace
}  // namespace xpu::lab
