#include "api/node_description.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/testing/codec_checks.h"
#include "api/testing/temp_file.h"
#include "base/testing/require_ok.h"
#include "topology/model.h"
#include "topology/testing/fixtures.h"

namespace xpu::api {
namespace {

using nlohmann::json;
using topology::NodeSpec;

// A small valid description that uses every field.
json ValidNodeDoc() {
  return json::parse(R"({
    "apiVersion": "xpu.dra.dev/v1alpha1",
    "kind": "NodeDescription",
    "name": "test-node",
    "model": "two MLUs on a card",
    "ruleSet": {"kind": "ring-sets", "validSets": {"2": [["mlu-0", "mlu-1"]]}},
    "devices": [
      {"name": "mlu-0", "kind": "mlu", "index": 0, "memory": "24Gi", "numaNode": 0,
       "pciePath": ["pci0000:10", "0000:10:01.0", "0000:11:00.0"]},
      {"name": "mlu-1", "kind": "mlu", "index": 1, "memory": "80G"}
    ],
    "links": [{"type": "mlulink", "bandwidthGBps": 12.5, "devices": ["mlu-0", "mlu-1"]}],
    "groups": [{"name": "card-0", "kind": "card", "members": ["mlu-0", "mlu-1"]}],
    "pcieBandwidthGBps": {"numa": 20}
  })");
}

using testing::TempFile;

TEST_CASE("ParseNodeDescription reads every field") {
  StatusOr<NodeSpec> spec = ParseNodeDescription(ValidNodeDoc());
  REQUIRE_OK(spec);
  CHECK(spec->name == "test-node");
  CHECK(spec->model == "two MLUs on a card");
  CHECK(spec->rule_set.kind == topology::RuleSetKind::kRingSets);
  REQUIRE(spec->rule_set.valid_sets.size() == 1);
  CHECK(spec->rule_set.valid_sets.at(2) ==
        std::vector<std::vector<std::string>>{{"mlu-0", "mlu-1"}});
  REQUIRE(spec->devices.size() == 2);
  CHECK(spec->devices[0].name == "mlu-0");
  CHECK(spec->devices[0].kind == "mlu");
  CHECK(spec->devices[0].memory_bytes == int64_t{24} << 30);
  CHECK(spec->devices[0].numa_node == 0);
  CHECK(spec->devices[0].pcie_path.size() == 3);
  CHECK(spec->devices[1].index == 1);
  CHECK(spec->devices[1].memory_bytes == 80'000'000'000);
  CHECK(spec->devices[1].numa_node == -1);
  CHECK(spec->devices[1].pcie_path.empty());
  REQUIRE(spec->links.size() == 1);
  CHECK(spec->links[0].type == topology::LinkType::kMluLink);
  CHECK(spec->links[0].bandwidth_gbps == 12.5);
  REQUIRE(spec->groups.size() == 1);
  CHECK(spec->groups[0].kind == topology::GroupKind::kCard);
  CHECK(spec->groups[0].members == std::vector<std::string>{"mlu-0", "mlu-1"});
  CHECK(spec->pcie.numa == 20);
  CHECK(spec->pcie.pcie_switch == topology::PcieBandwidths().pcie_switch);
  CHECK(topology::Node::Build(*spec).ok());
}

TEST_CASE("NodeDescriptionToJson writes the documented shape and leaves out empty fields") {
  CHECK(NodeDescriptionToJson(*ParseNodeDescription(ValidNodeDoc())) == ValidNodeDoc());

  NodeSpec minimal;
  minimal.name = "one";
  topology::DeviceSpec& device = minimal.devices.emplace_back();
  device.name = "gpu-0";
  device.kind = "gpu";
  minimal.links.push_back({topology::LinkType::kNvLink, 30.0, {"gpu-0", "gpu-0"}});
  CHECK(NodeDescriptionToJson(minimal) == json::parse(R"({
    "apiVersion": "xpu.dra.dev/v1alpha1", "kind": "NodeDescription", "name": "one",
    "ruleSet": {"kind": "any"},
    "devices": [{"name": "gpu-0", "kind": "gpu", "index": 0}],
    "links": [{"type": "nvlink", "bandwidthGBps": 30, "devices": ["gpu-0", "gpu-0"]}]
  })"));
  // Whole bandwidths are written as integers so that the files read "30", not "30.0".
  CHECK(NodeDescriptionToJson(minimal).dump().find("\"bandwidthGBps\":30,") != std::string::npos);
}

TEST_CASE("Every bundled model survives spec -> JSON -> spec -> JSON") {
  for (const auto& model : topology::testing::BundledModels()) {
    INFO(model.name);
    const json first = NodeDescriptionToJson(model.spec);
    StatusOr<NodeSpec> parsed = ParseNodeDescription(first);
    REQUIRE_OK(parsed);
    CHECK(NodeDescriptionToJson(*parsed) == first);
    CHECK(topology::Node::Build(*parsed).ok());
  }
}

TEST_CASE("The committed fixtures match the C++ builders") {
  for (const auto& model : topology::testing::BundledModels()) {
    const std::string relative = "e2e/fixtures/topologies/" + model.name + ".json";
    const std::string path = std::string(XPU_SOURCE_DIR) + "/" + relative;
    std::ifstream in(path, std::ios::binary);
    std::stringstream committed;
    committed << in.rdbuf();
    if (committed.str() != NodeDescriptionToJson(model.spec).dump(2) + "\n") {
      FAIL_CHECK(relative << " is missing or differs from topology/testing/fixtures.cc; "
                          << "regenerate it with `build/bin/gen-topology-fixtures "
                             "e2e/fixtures/topologies`");
      continue;
    }
    StatusOr<NodeSpec> read = ReadNodeDescriptionFile(path);
    REQUIRE_OK(read);
    CHECK(NodeDescriptionToJson(*read) == NodeDescriptionToJson(model.spec));
  }
}

TEST_CASE("Malformed descriptions are rejected naming the field") {
  const std::vector<testing::EditCase<json>> cases = {
      {[](json& d) { d = json::array(); }, "expected an object, got array"},
      {[](json& d) { d["devices"] = 7; }, "devices: expected an array, got number 7"},
      {[](json& d) { d["devices"] = json::object(); }, "devices: expected an array, got object"},
      {[](json& d) { d["devices"] = json::array(); }, "devices: expected 1 to 64 entries, got 0"},
      {[](json& d) { d["devices"] = std::vector<json>(65, d["devices"][1]); },
       "devices: expected 1 to 64 entries, got 65"},
      {[](json& d) { d["devices"][1] = "mlu-1"; },
       "devices[1]: expected an object, got string \"mlu-1\""},
      {[](json& d) { d["devices"][1].erase("name"); }, "devices[1].name: missing required field"},
      {[](json& d) { d["devices"][1]["kind"] = nullptr; },
       "devices[1].kind: expected a string, got null"},
      {[](json& d) { d["devices"][1]["index"] = -1; },
       "devices[1].index: expected a non-negative integer, got number -1"},
      {[](json& d) { d["devices"][1]["index"] = 1.0; },
       "devices[1].index: expected a non-negative integer, got number 1.0"},
      {[](json& d) { d["devices"][1]["index"] = int64_t{1} << 40; },
       "devices[1].index: expected a non-negative integer"},
      {[](json& d) { d["devices"][1]["memory"] = "1.5Gi"; },
       "devices[1].memory: invalid quantity \"1.5Gi\": fractions are not supported"},
      {[](json& d) { d["devices"][1]["memory"] = 1024; },
       "devices[1].memory: expected a quantity string such as \"64Gi\", got number 1024"},
      {[](json& d) { d["devices"][1]["numaNode"] = -2; },
       "devices[1].numaNode: expected an integer >= -1, got number -2"},
      {[](json& d) { d["devices"][0]["pciePath"][1] = 16; },
       "devices[0].pciePath[1]: expected a string, got number 16"},
      {[](json& d) { d["devices"][0]["nmae"] = "x"; },
       "devices[0].nmae: unknown field; expected one of name, kind, index, memory, numaNode, "
       "pciePath"},
      {[](json& d) { d["devcies"] = json::array(); }, "devcies: unknown field"},
      {[](json& d) { d["links"][0]["type"] = "nvlinkk"; },
       "links[0].type: unknown link type \"nvlinkk\"; expected one of nvswitch, nvlink, hccs"},
      {[](json& d) { d["links"][0]["bandwidthGBps"] = 0; },
       "links[0].bandwidthGBps: expected a bandwidth in GB/s, > 0 and at most 1000000, got "
       "number 0"},
      {[](json& d) { d["links"][0]["bandwidthGBps"] = "30"; },
       "links[0].bandwidthGBps: expected a bandwidth in GB/s"},
      {[](json& d) { d["links"][0]["devices"] = {"mlu-0"}; },
       "links[0].devices: expected at least 2 entries, got 1"},
      {[](json& d) { d["links"] = json::object(); }, "links: expected an array, got object"},
      {[](json& d) { d["groups"][0]["kind"] = "numa"; },
       "groups[0].kind: unknown group kind \"numa\"; expected one of hccs-ring, hccs-area, "
       "hiam-module, nvswitch-board, link-domain, card"},
      {[](json& d) { d["groups"][0]["members"] = "mlu-0"; },
       "groups[0].members: expected an array, got string \"mlu-0\""},
      {[](json& d) { d["groups"][0]["members"] = json::array(); },
       "groups[0].members: expected at least 1 entries, got 0"},
      {[](json& d) { d["ruleSet"]["validSets"]["two"] = json::array(); },
       "ruleSet.validSets[two]: key must be a set size from 1 to 64 in decimal"},
      {[](json& d) { d["ruleSet"]["validSets"]["02"] = json::array(); },
       "ruleSet.validSets[02]: key must be a set size"},
      {[](json& d) { d["ruleSet"]["validSets"]["2"][0].push_back("mlu-2"); },
       "ruleSet.validSets[2][0]: expected 2 entries, got 3"},
      {[](json& d) { d["ruleSet"]["kind"] = "any"; },
       "ruleSet.validSets: only allowed with kind ring-sets"},
      {[](json& d) { d["ruleSet"].erase("validSets"); },
       "ruleSet.validSets: missing required field"},
      {[](json& d) { d["ruleSet"]["kind"] = "ascend"; },
       "ruleSet.kind: unknown rule set kind \"ascend\"; expected one of any, ascend910-ring"},
      {[](json& d) { d.erase("ruleSet"); }, "ruleSet: missing required field"},
      {[](json& d) { d["name"] = 5; }, "name: expected a string, got number 5"},
      {[](json& d) { d["apiVersion"] = "v1"; },
       "apiVersion: expected \"xpu.dra.dev/v1alpha1\", got string \"v1\""},
      {[](json& d) { d["kind"] = "Node"; }, "kind: expected \"NodeDescription\""},
      {[](json& d) { d["pcieBandwidthGBps"]["numa"] = -1; },
       "pcieBandwidthGBps.numa: expected a bandwidth in GB/s"},
      {[](json& d) { d["pcieBandwidthGBps"]["nvme"] = 1; },
       "pcieBandwidthGBps.nvme: unknown field; expected one of pcieSwitch, hostBridge, numa, "
       "crossNuma"},
  };
  testing::CheckEditsFail(ValidNodeDoc(), cases, ParseNodeDescription);
}

TEST_CASE("ReadNodeDescriptionFile names the file in every error") {
  SECTION("a valid file") {
    TempFile file(ValidNodeDoc().dump(2));
    StatusOr<NodeSpec> spec = ReadNodeDescriptionFile(file.path());
    REQUIRE_OK(spec);
    CHECK(spec->name == "test-node");
  }
  SECTION("a missing file") {
    StatusOr<NodeSpec> spec = ReadNodeDescriptionFile("/nonexistent/x.json");
    CHECK(spec.status().code() == StatusCode::kNotFound);
    CHECK(spec.status().message() ==
          "read topology /nonexistent/x.json: no such file or directory");
  }
  SECTION("a bad field") {
    json doc = ValidNodeDoc();
    doc["devices"][1]["index"] = "one";
    TempFile file(doc.dump());
    StatusOr<NodeSpec> spec = ReadNodeDescriptionFile(file.path());
    CHECK(spec.status().message() ==
          "read topology " + file.path() +
              ": devices[1].index: expected a non-negative integer, got string \"one\"");
  }
}

}  // namespace
}  // namespace xpu::api
