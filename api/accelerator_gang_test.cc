#include "api/accelerator_gang.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "api/testing/codec_checks.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"

namespace xpu::api {
namespace {

using nlohmann::json;

TEST_CASE("AcceleratorGang survives object -> JSON -> object") {
  const json doc = testing::CheckObjectRoundTrip(testing::ExampleAcceleratorGang());
  CHECK(doc["apiVersion"] == "xpu.dra.dev/v1alpha1");
  CHECK(doc["kind"] == "AcceleratorGang");
  CHECK(doc["spec"] == json{{"nodes", 2},
                            {"devicesPerNode", 2},
                            {"capabilityClass", "training-large-memory"},
                            {"maxTier", "spine"},
                            {"preferredTier", "leaf"},
                            {"onNodeFailure", "replace"},
                            {"nodeSelector", {{"xpu.dra.dev/pool", "a3"}}}});
  CHECK(doc["status"]["rankTable"][3] == json{{"rank", 3},
                                              {"node", "node-a3-2"},
                                              {"device", "npu-3"},
                                              {"ipAddress", "192.168.1.13"},
                                              {"localRank", 1},
                                              {"superPodId", "sp-0"}});
}

TEST_CASE("A new AcceleratorGang has a spec and no status") {
  const json doc = json::parse(R"({
    "apiVersion": "xpu.dra.dev/v1alpha1", "kind": "AcceleratorGang",
    "metadata": {"name": "g", "namespace": "default"},
    "spec": {"nodes": 4, "devicesPerNode": 8, "capabilityClass": "h200"},
    "extra": {"kept": true}
  })");
  // No empty status written; unknown members kept.
  AcceleratorGang gang = testing::CheckJsonRoundTrip<AcceleratorGang>(doc);
  CHECK(gang.spec.nodes == 4);
  CHECK(gang.status == AcceleratorGangStatus{});
  // The API server would prune the unknown member; validation rejects it.
  CHECK(ValidateAcceleratorGang(gang).message() == "extra: unknown field");
  gang.unknown = json::object();
  CHECK(ValidateAcceleratorGang(gang).ok());
}

TEST_CASE("AcceleratorGang decoding names the JSON path of the problem") {
  const std::vector<testing::EditCase<json>> cases = {
      {[](json& d) { d.erase("spec"); }, "spec: missing required field"},
      {[](json& d) { d["spec"].erase("devicesPerNode"); },
       "spec.devicesPerNode: missing required field"},
      {[](json& d) { d["spec"]["nodes"] = 2.5; }, "spec.nodes: expected an integer"},
      {[](json& d) { d["status"]["nodes"][1]["devices"][0] = 3; },
       "status.nodes[1].devices[0]: expected a string"},
      {[](json& d) { d["apiVersion"] = "xpu.dra.dev/v1"; }, "apiVersion"},
  };
  testing::CheckEditsFail(ToJson(testing::ExampleAcceleratorGang()), cases,
                          FromJson<AcceleratorGang>);
}

TEST_CASE("ValidateAcceleratorGang accepts the example and names the first broken rule") {
  REQUIRE_OK(ValidateAcceleratorGang(testing::ExampleAcceleratorGang()));
  const std::vector<testing::EditCase<AcceleratorGang>> cases = {
      {[](AcceleratorGang& g) { g.metadata.name = "Train"; }, "metadata.name: \"Train\""},
      {[](AcceleratorGang& g) { g.metadata.name = std::string(59, 'a'); },
       "metadata.name: must be at most 58 bytes"},
      {[](AcceleratorGang& g) { g.metadata.namespace_name = "team.a"; },
       "metadata.namespace: \"team.a\""},
      {[](AcceleratorGang& g) { g.spec.nodes = 0; }, "spec.nodes: must be at least 1, got 0"},
      {[](AcceleratorGang& g) { g.spec.devices_per_node = 65; },
       "spec.devicesPerNode: must be at most 64, got 65"},
      {[](AcceleratorGang& g) { g.spec.capability_class = "Big_GPU"; },
       "spec.capabilityClass: \"Big_GPU\""},
      {[](AcceleratorGang& g) { g.spec.max_tier = "Spine"; },
       "spec.maxTier: unsupported value \"Spine\""},
      {[](AcceleratorGang& g) { g.spec.device_class_name = "gpu.example.com"; },
       "spec: exactly one of capabilityClass and deviceClassName"},
      {[](AcceleratorGang& g) { g.spec.capability_class.clear(); },
       "spec: exactly one of capabilityClass and deviceClassName"},
      {[](AcceleratorGang& g) {
         g.spec.capability_class.clear();
         g.spec.device_class_name = "Bad_Class";
       },
       "spec.deviceClassName: \"Bad_Class\""},
      {[](AcceleratorGang& g) { g.spec.on_node_failure = "retry"; },
       "spec.onNodeFailure: unsupported value \"retry\""},
      {[](AcceleratorGang& g) { g.spec.node_selector["bad key!"] = "x"; },
       "spec.nodeSelector[\"bad key!\"]"},
      {[](AcceleratorGang& g) { g.status.phase = "Running"; },
       "status.phase: unsupported value \"Running\"; expected one of Pending, Placed, Failed"},
      {[](AcceleratorGang& g) { g.status.nodes[1].name = "node-a3-1"; },
       "status.nodes[1]: duplicate entry"},
      {[](AcceleratorGang& g) { g.status.nodes[1].rank = 0; },
       "status.nodes[1].rank: 0 is out of range or taken"},
      {[](AcceleratorGang& g) { g.status.nodes[1].rank = 2; },
       "status.nodes[1].rank: 2 is out of range or taken"},
      {[](AcceleratorGang& g) { g.status.nodes[1].devices.pop_back(); },
       "status.nodes[1].devices: expected 2 devices, got 1"},
      {[](AcceleratorGang& g) { g.status.nodes.pop_back(); },
       "status.nodes: expected 2 nodes when Placed, got 1"},
      {[](AcceleratorGang& g) { g.status.nodes[0].devices[1] = "npu-0"; },
       "status.nodes[0].devices[1]: duplicate entry"},
      {[](AcceleratorGang& g) { g.status.rank_table[2].rank = 0; },
       "status.rankTable[2]: duplicate entry"},
      {[](AcceleratorGang& g) { g.status.rank_table[3].rank = 7; },
       "status.rankTable[3].rank: 7 is out of range or taken"},
      {[](AcceleratorGang& g) { g.status.rank_table[0].node = "node-x"; },
       "status.rankTable[0].node: \"node-x\" is not in status.nodes"},
      {[](AcceleratorGang& g) { g.status.rank_table[0].device = "npu-3"; },
       "status.rankTable[0].device: \"npu-3\" is not a device of node-a3-1"},
      {[](AcceleratorGang& g) { g.status.rank_table[1].device = "npu-0"; },
       "status.rankTable[1]: device node-a3-1/npu-0 has two ranks"},
      {[](AcceleratorGang& g) { g.status.conditions[0].last_transition_time.clear(); },
       "status.conditions[0].lastTransitionTime"},
  };
  testing::CheckEditsFail(testing::ExampleAcceleratorGang(), cases, ValidateAcceleratorGang);
}

TEST_CASE("A pending or failed gang needs no nodes") {
  AcceleratorGang gang = testing::ExampleAcceleratorGang();
  gang.status = {};
  gang.status.phase = "Failed";
  CHECK(ValidateAcceleratorGang(gang).ok());
  gang.metadata.name.clear();
  gang.metadata.generate_name = "train-";
  CHECK(ValidateAcceleratorGang(gang).ok());
}

}  // namespace
}  // namespace xpu::api
