#include "api/node_inventory.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/node_description.h"
#include "api/testing/codec_checks.h"
#include "api/testing/inventory_examples.h"
#include "api/testing/temp_file.h"
#include "base/testing/require_ok.h"
#include "topology/model.h"
#include "topology/solver.h"
#include "topology/testing/fixtures.h"

namespace xpu::api {
namespace {

using Catch::Matchers::StartsWith;
using nlohmann::json;
using topology::NodeSpec;

TEST_CASE("NodeInventory survives object -> JSON -> object") {
  const json doc = testing::CheckObjectRoundTrip(testing::ExampleNodeInventory());
  CHECK(doc["apiVersion"] == "xpu.dra.dev/v1alpha1");
  CHECK(doc["kind"] == "NodeInventory");
  CHECK(doc["metadata"]["ownerReferences"][0]["kind"] == "Node");
  CHECK(doc["status"]["devices"][0]["pcieRoot"] == "pci0000:10");
  CHECK(doc["status"]["devices"][0]["attributes"]["bf16"] == json{{"bool", true}});
  CHECK(doc["status"]["devices"][0]["sources"]["topology"] == "dcmi");
  CHECK(doc["status"]["pcieBandwidthGBps"]["crossNuma"] == 10.5);
  CHECK(doc["status"]["pcieBandwidthGBps"]["numa"].is_number_integer());
  CHECK_FALSE(doc.contains("spec"));  // empty spec is left out
}

TEST_CASE("NodeInventory keeps members it does not know") {
  json doc = ToJson(testing::ExampleNodeInventory());
  doc["status"]["devices"][1]["futureField"] = {{"x", 1}};
  doc["status"]["newTopLevel"] = "v2";
  doc["spec"] = {{"reserved", true}};
  const NodeInventory inv = testing::CheckJsonRoundTrip<NodeInventory>(doc);
  CHECK(inv.status.devices[1].unknown == json{{"futureField", {{"x", 1}}}});
}

TEST_CASE("An empty NodeInventory reads and writes") {
  StatusOr<NodeInventory> inv = FromJson<NodeInventory>(json{{"metadata", {{"name", "n1"}}}});
  REQUIRE_OK(inv);
  CHECK(inv->metadata.name == "n1");
  CHECK(inv->status == NodeInventoryStatus{});
  CHECK(ToJson(*inv) == json{{"apiVersion", "xpu.dra.dev/v1alpha1"},
                             {"kind", "NodeInventory"},
                             {"metadata", {{"name", "n1"}}}});
}

TEST_CASE("NodeInventory decoding names the JSON path of the problem") {
  const std::vector<testing::EditCase<json>> cases = {
      {[](json& d) { d["kind"] = "Node"; }, "kind"},
      {[](json& d) { d["status"]["devices"][1]["index"] = "one"; },
       "status.devices[1].index: expected an integer"},
      {[](json& d) { d["status"]["devices"][0].erase("name"); },
       "status.devices[0].name: missing required field"},
      {[](json& d) { d["status"]["links"][0]["bandwidthGBps"] = "fast"; },
       "status.links[0].bandwidthGBps: expected a number"},
      {[](json& d) { d["status"]["devices"][0]["attributes"]["index"]["int"] = "x"; },
       "status.devices[0].attributes.index.int: expected an integer"},
      {[](json& d) { d["status"]["versions"]["cann"] = 8; },
       "status.versions.cann: expected an object"},
      {[](json& d) { d["status"] = json::array(); }, "status: expected an object"},
  };
  testing::CheckEditsFail(ToJson(testing::ExampleNodeInventory()), cases, FromJson<NodeInventory>);
}

TEST_CASE("ValidateNodeInventory accepts the example and names the first broken rule") {
  REQUIRE_OK(ValidateNodeInventory(testing::ExampleNodeInventory()));
  const std::vector<testing::EditCase<NodeInventory>> cases = {
      {[](NodeInventory& i) { i.metadata.name = "Node_1"; }, "metadata.name: \"Node_1\""},
      {[](NodeInventory& i) { i.status.devices[0].name = "NPU-0"; },
       "status.devices[0].name: \"NPU-0\" does not match"},
      {[](NodeInventory& i) { i.status.devices[1].name = "npu-0"; },
       "status.devices[1]: duplicate entry"},
      {[](NodeInventory& i) { i.status.devices[0].health = "Sick"; },
       "status.devices[0].health: unsupported value \"Sick\"; expected one of Healthy"},
      {[](NodeInventory& i) { i.status.devices[0].index = -1; },
       "status.devices[0].index: must be at least 0"},
      {[](NodeInventory& i) { i.status.devices[0].memory = "64 GB"; },
       "status.devices[0].memory: \"64 GB\" does not match"},
      {[](NodeInventory& i) { i.status.devices[0].memory = "1.5"; }, "status.devices[0].memory:"},
      {[](NodeInventory& i) { i.status.devices[0].pcie_root = "pci0000:11"; },
       "status.devices[0].pcieRoot: \"pci0000:11\" differs from pciePath[0]"},
      {[](NodeInventory& i) { i.status.devices[0].sources["topology"] = "guess"; },
       "status.devices[0].sources[\"topology\"]: unsupported value \"guess\""},
      {[](NodeInventory& i) { i.status.devices[0].attributes["colour"].string_value = "red"; },
       "status.devices[0].attributes[\"colour\"]: unknown attribute \"colour\""},
      {[](NodeInventory& i) {
         i.status.devices[0].attributes["index"] = {{}, {}, "3", {}, {}};
       },
       "status.devices[0].attributes[\"index\"]: attribute \"index\" must be a int, got a string"},
      {[](NodeInventory& i) { i.status.devices[0].attributes["bf16"].int_value = 1; },
       "status.devices[0].attributes[\"bf16\"]: expected exactly one of"},
      {[](NodeInventory& i) { i.status.devices[0].attributes["driverVersion"].version = "v1"; },
       "status.devices[0].attributes[\"driverVersion\"].version:"},
      {[](NodeInventory& i) { i.status.links[0].type = "ethernet"; },
       "status.links[0].type: unsupported value \"ethernet\""},
      {[](NodeInventory& i) { i.status.links[0].b = "npu-7"; },
       "status.links[0].b: unknown device \"npu-7\""},
      {[](NodeInventory& i) { i.status.links[0].b = "npu-0"; },
       "status.links[0]: links a device to itself"},
      {[](NodeInventory& i) { i.status.links.push_back(i.status.links[0]); },
       "status.links[2]: duplicate sio link"},
      {[](NodeInventory& i) { i.status.links[0].bandwidth_gbps = 0; },
       "status.links[0].bandwidthGBps: must be greater than 0"},
      {[](NodeInventory& i) { i.status.groups[0].devices.emplace_back("gpu-0"); },
       "status.groups[0].devices[2]: unknown device \"gpu-0\""},
      {[](NodeInventory& i) { i.status.groups[0].kind = "ring"; },
       "status.groups[0].kind: unsupported value \"ring\""},
      {[](NodeInventory& i) { i.status.rule_set = "ascend910"; },
       "status.ruleSet: unsupported value \"ascend910\""},
      {[](NodeInventory& i) {
         i.status.valid_sets = {{"npu-0", "npu-1"}};
       },
       "status.validSets: only allowed with ruleSet ring-sets"},
      {[](NodeInventory& i) { i.status.nics[1].paired_device = "npu-9"; },
       "status.nics[1].pairedDevice: unknown device \"npu-9\""},
      {[](NodeInventory& i) { i.status.nics[1].pci_address = "20:00.0"; },
       "status.nics[1].pciAddress: \"20:00.0\" does not match"},
      {[](NodeInventory& i) { i.status.versions["cann"].semver = "8.0.RC3"; },
       "status.versions[\"cann\"].semver:"},
      {[](NodeInventory& i) { i.status.health = "Fine"; }, "status.health: unsupported value"},
      {[](NodeInventory& i) { i.status.conditions.push_back(i.status.conditions[0]); },
       "status.conditions[1]: duplicate entry"},
      {[](NodeInventory& i) { i.status.conditions[0].status = "Yes"; },
       "status.conditions[0].status: unsupported value \"Yes\""},
      {[](NodeInventory& i) { i.status.conditions[0].reason = ""; },
       "status.conditions[0].reason: must be at least 1 characters"},
      {[](NodeInventory& i) { i.status.devices[0].unknown["extra"] = 1; },
       "status.devices[0].extra: unknown field"},
  };
  testing::CheckEditsFail(testing::ExampleNodeInventory(), cases, ValidateNodeInventory);
}

TEST_CASE("The attribute vocabulary is that of docs/architecture.md") {
  const std::map<std::string, std::string> types = {{"vendor", "string"},
                                                    {"index", "int"},
                                                    {"toolkitVersion", "version"},
                                                    {"fp8", "bool"},
                                                    {"resource.kubernetes.io/pcieRoot", "string"},
                                                    {"scaleUpDomain", "string"}};
  for (const auto& [name, type] : types) {
    INFO(name);
    CHECK(VocabularyAttributeType(name) == type);
  }
  CHECK_FALSE(VocabularyAttributeType("memory").has_value());  // a capacity
  // Other domains may add their own attributes.
  NodeInventory inv = testing::ExampleNodeInventory();
  inv.status.devices[0].attributes["huawei.com/chipName"].string_value = "910C";
  CHECK(ValidateNodeInventory(inv).ok());
}

TEST_CASE("NodeDescriptionFromInventory projects the example") {
  StatusOr<NodeSpec> spec = NodeDescriptionFromInventory(testing::ExampleNodeInventory());
  REQUIRE_OK(spec);
  CHECK(spec->name == "node-a3-1");
  CHECK(spec->model == "Huawei Atlas 800T A3");
  CHECK(spec->rule_set.kind == topology::RuleSetKind::kAscendA3);
  REQUIRE(spec->devices.size() == 2);
  CHECK(spec->devices[1].memory_bytes == int64_t{64} << 30);
  CHECK(spec->devices[1].numa_node == 0);
  CHECK(spec->devices[1].pcie_path.size() == 3);
  // The down link and the derived numa group are left out.
  REQUIRE(spec->links.size() == 1);
  CHECK(spec->links[0].type == topology::LinkType::kSio);
  REQUIRE(spec->groups.size() == 1);
  CHECK(spec->groups[0].kind == topology::GroupKind::kHiamModule);
  CHECK(spec->pcie.cross_numa == 10.5);
  CHECK(topology::Node::Build(*spec).ok());
}

TEST_CASE("NodeDescriptionFromInventory names the bad status field") {
  NodeInventory inv = testing::ExampleNodeInventory();
  inv.status.rule_set.clear();
  CHECK(NodeDescriptionFromInventory(inv).status().message() ==
        "status.ruleSet: missing required field");
  inv = testing::ExampleNodeInventory();
  inv.status.links[0].type = "roce";
  CHECK(NodeDescriptionFromInventory(inv).status().message() ==
        "status.links[0].type: unknown link type \"roce\"");
  inv = testing::ExampleNodeInventory();
  inv.status.devices[1].memory = "lots";
  CHECK_THAT(NodeDescriptionFromInventory(inv).status().message(),
             StartsWith("status.devices[1].memory: "));
}

// The spec with each multi-device link (mesh) written as one link per pair, as inventories
// carry them.
NodeSpec ExpandMeshes(NodeSpec spec) {
  std::vector<topology::LinkSpec> pairs;
  for (const topology::LinkSpec& l : spec.links) {
    for (size_t i = 0; i < l.devices.size(); ++i) {
      for (size_t j = i + 1; j < l.devices.size(); ++j) {
        pairs.push_back({l.type, l.bandwidth_gbps, {l.devices[i], l.devices[j]}});
      }
    }
  }
  spec.links = std::move(pairs);
  return spec;
}

// Builds an inventory from `spec`, checks it, projects it back and compares the description, the
// compiled node and the solver's answers with those of `spec`.
void CheckProjection(const NodeSpec& spec) {
  const NodeInventory inv = InventoryFromNodeDescription(spec);
  const Status valid = ValidateNodeInventory(inv);
  INFO(valid.ToString());
  CHECK(valid.ok());
  // Through JSON too, as the controller reads it.
  StatusOr<NodeInventory> read = FromJson<NodeInventory>(ToJson(inv));
  REQUIRE_OK(read);
  REQUIRE(*read == inv);

  StatusOr<NodeSpec> projected = NodeDescriptionFromInventory(*read);
  REQUIRE_OK(projected);
  CHECK(NodeDescriptionToJson(*projected) == NodeDescriptionToJson(ExpandMeshes(spec)));

  StatusOr<topology::Node> want = topology::Node::Build(spec);
  StatusOr<topology::Node> got = topology::Node::Build(*projected);
  REQUIRE_OK(want);
  REQUIRE_OK(got);
  REQUIRE(got->size() == want->size());
  for (int a = 0; a < want->size(); ++a) {
    for (int b = 0; b < want->size(); ++b) {
      if (a == b) continue;
      CHECK(got->PairBandwidth(a, b) == want->PairBandwidth(a, b));
      CHECK(got->PairLinkType(a, b) == want->PairLinkType(a, b));
    }
  }
  // Every count from everything free, and from a node with its first device taken.
  const topology::DeviceSet all = want->All();
  topology::DeviceSet partly = all;
  partly.Remove(0);
  for (const topology::DeviceSet& free : {all, partly}) {
    for (int count = 1; count <= want->size(); ++count) {
      const topology::SolveResult a = topology::Solve(*want, free, count);
      const topology::SolveResult b = topology::Solve(*got, free, count);
      INFO("count " << count);
      CHECK(a.feasible == b.feasible);
      CHECK(a.devices == b.devices);
      CHECK(a.score == b.score);
      CHECK(a.reason == b.reason);
    }
  }
}

TEST_CASE("Every bundled model is a projection of its inventory, with the same solver answers") {
  for (const auto& model : topology::testing::BundledModels()) {
    INFO(model.name);
    CheckProjection(model.spec);
  }
}

TEST_CASE("Every committed topology fixture is a projection of its inventory") {
  const std::filesystem::path dir =
      std::filesystem::path(XPU_SOURCE_DIR) / "e2e" / "fixtures" / "topologies";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    StatusOr<NodeSpec> spec = ReadNodeDescriptionFile(entry.path().string());
    REQUIRE_OK(spec);
    CheckProjection(*spec);
    ++files;
  }
  CHECK(files >= 8);
}

TEST_CASE("ReadNodeDescriptionFile reads a NodeInventory as its projection") {
  const NodeSpec model = topology::testing::Atlas800_9000();
  testing::TempFile file(ToJson(InventoryFromNodeDescription(model)).dump(2));
  StatusOr<NodeSpec> spec = ReadNodeDescriptionFile(file.path());
  REQUIRE_OK(spec);
  CHECK(NodeDescriptionToJson(*spec) == NodeDescriptionToJson(ExpandMeshes(model)));

  NodeInventory bad = InventoryFromNodeDescription(model);
  bad.status.links[0].b = "npu-42";
  testing::TempFile bad_file(ToJson(bad).dump());
  CHECK(ReadNodeDescriptionFile(bad_file.path()).status().message() ==
        "read topology " + bad_file.path() + ": status.links[0].b: unknown device \"npu-42\"");
}

TEST_CASE("group devices: the aligned groups of each size, named by kind, size and order") {
  const NodeInventory inv = InventoryFromNodeDescription(topology::testing::Atlas800_9000());
  auto groups = GroupDevices(inv);
  REQUIRE_OK(groups);
  std::map<int, std::vector<GroupDevice>> by_size;
  for (const GroupDevice& g : *groups) by_size[g.size].push_back(g);
  // Two rings of four: pairs and quads inside a ring, and the whole board.
  REQUIRE(by_size.contains(4));
  REQUIRE(by_size[4].size() == 2);
  CHECK(by_size[4][0].name == "npu-x4-0");
  CHECK(by_size[4][1].name == "npu-x4-1");
  std::set<std::string> first(by_size[4][0].members.begin(), by_size[4][0].members.end());
  std::set<std::string> second(by_size[4][1].members.begin(), by_size[4][1].members.end());
  CHECK(first == std::set<std::string>{"npu-0", "npu-1", "npu-2", "npu-3"});
  CHECK(second == std::set<std::string>{"npu-4", "npu-5", "npu-6", "npu-7"});
  REQUIRE(by_size.contains(8));
  CHECK(by_size[8].size() == 1);
  CHECK_FALSE(by_size.contains(3));  // the 910 rule set allows 1, 2, 4 and 8
  for (const GroupDevice& g : *groups) CHECK(g.members.size() == static_cast<size_t>(g.size));
  // Equal inputs, equal names: the controller and the plugin agree.
  CHECK(*GroupDevices(inv) == *groups);
}

}  // namespace
}  // namespace xpu::api
