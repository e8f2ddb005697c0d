#include "api/crds.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/node_inventory.h"
#include "api/openapi_schema.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "topology/testing/fixtures.h"

namespace xpu::api {
namespace {

using nlohmann::json;

// "a.b", or "b" at the root.
std::string Member(const std::string& path, const std::string& key) {
  if (path.empty()) return key;
  std::string out = path;
  out.append(".").append(key);
  return out;
}

// The property paths of a schema: "status.devices[].name", map values as "{}".
void SchemaPaths(const json& schema, const std::string& path, std::set<std::string>* out) {
  if (auto props = schema.find("properties"); props != schema.end()) {
    for (const auto& [key, sub] : props->items()) {
      const std::string p = Member(path, key);
      out->insert(p);
      SchemaPaths(sub, p, out);
    }
  }
  if (auto items = schema.find("items"); items != schema.end()) {
    SchemaPaths(*items, path + "[]", out);
  }
  if (auto add = schema.find("additionalProperties"); add != schema.end() && add->is_object()) {
    SchemaPaths(*add, path + "{}", out);
  }
}

// The member paths a value sets, spelled as SchemaPaths does; `schema` tells maps from structs.
void ValuePaths(const json& value, const json& schema, const std::string& path,
                std::set<std::string>* out) {
  if (value.is_object()) {
    const auto props = schema.find("properties");
    for (const auto& [key, member] : value.items()) {
      if (props != schema.end() && props->contains(key)) {
        const std::string p = Member(path, key);
        out->insert(p);
        ValuePaths(member, (*props)[key], p, out);
      } else if (auto add = schema.find("additionalProperties"); add != schema.end()) {
        ValuePaths(member, *add, path + "{}", out);
      }
    }
  } else if (value.is_array() && schema.contains("items")) {
    for (const json& item : value) ValuePaths(item, schema["items"], path + "[]", out);
  }
}

// The examples validate against the schema (nothing the codec writes is missing from the
// schema) and together set every property of the schema (nothing in the schema is missing from
// the codec). A property with no members of its own (NodeInventory's reserved spec) cannot be set.
void CheckExamplesCoverSchema(const std::vector<json>& examples, const json& schema) {
  std::set<std::string> got;
  for (const json& example : examples) {
    const Status valid = ValidateAgainstSchema(example, schema);
    INFO(valid.ToString());
    REQUIRE_OK(valid);
    ValuePaths(example, schema, "", &got);
  }
  std::set<std::string> want;
  SchemaPaths(schema, "", &want);
  for (const std::string& path : want) {
    INFO("schema property " << path << " is not set by the examples");
    CHECK((got.count(path) == 1 || path == "spec"));
  }
}

// The example node with partitionable devices, which neither full example has: a MIG device with
// a partition at a placement, a vNPU device with one by instance number.
NodeInventory PartitionedExample() {
  NodeInventory inventory = testing::ExampleNodeInventory();
  REQUIRE(inventory.status.devices.size() >= 2);
  InventoryPartitioning mig = testing::H200MigPartitioning();
  mig.partitions.push_back(
      {"1g.18gb", 6, 0, "MIG-4cb87259-21dd-5cca-9c06-13a08e48d65d", 13, nullptr});
  inventory.status.devices[0].partitioning = mig;
  InventoryPartitioning vnpu;
  vnpu.kind = "vnpu";
  vnpu.enabled = true;
  vnpu.capacity = {{"aicore", 20}};
  PartitionProfile vir;
  vir.name = "vir10_3c_32g";
  vir.counters = {{"aicore", 10}};
  vir.max_instances = 2;
  vnpu.profiles.push_back(vir);
  InventoryPartition instance;
  instance.profile = "vir10_3c_32g";
  instance.instance = 1;
  vnpu.partitions.push_back(instance);
  vnpu.fallback = "layout";
  vnpu.layout = "vir10_3c_32g*1";
  inventory.status.devices[1].partitioning = vnpu;
  const Status valid = ValidateNodeInventory(inventory);
  INFO(valid.ToString());
  REQUIRE_OK(valid);
  return inventory;
}

TEST_CASE("The CRD schemas are structural and use only keywords the checker knows") {
  for (const CrdManifest& m : Crds()) {
    INFO(m.file_name);
    const json& schema = m.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    const Status status = CheckStructuralSchema(schema);
    INFO(status.ToString());
    CHECK(status.ok());
  }
}

TEST_CASE("The full examples validate against their generated schema and set every property") {
  SECTION("NodeInventory") {
    // The example has an A3 rule set; a ring-sets node adds validSets; partitions come third.
    CheckExamplesCoverSchema(
        {ToJson(testing::ExampleNodeInventory()),
         ToJson(InventoryFromNodeDescription(topology::testing::CambriconMlu370X8())),
         ToJson(PartitionedExample())},
        NodeInventorySchema());
  }
  SECTION("AcceleratorGang") {
    // The example names a capability class; a second one takes a DeviceClass instead.
    AcceleratorGang by_class = testing::ExampleAcceleratorGang();
    by_class.spec.capability_class.clear();
    by_class.spec.device_class_name = "huawei.xpu.dra.dev";
    CheckExamplesCoverSchema({ToJson(testing::ExampleAcceleratorGang()), ToJson(by_class)},
                             AcceleratorGangSchema());
  }
}

TEST_CASE("The CRDs name their kinds, scopes and printer columns") {
  const json inv = NodeInventoryCrd();
  CHECK(inv["metadata"]["name"] == "nodeinventories.xpu.dra.dev");
  CHECK(inv["spec"]["scope"] == "Cluster");
  CHECK(inv["spec"]["names"]["shortNames"] == json{"ninv"});
  CHECK(inv["spec"]["names"]["listKind"] == "NodeInventoryList");
  const json gang = AcceleratorGangCrd();
  CHECK(gang["metadata"]["name"] == "acceleratorgangs.xpu.dra.dev");
  CHECK(gang["spec"]["scope"] == "Namespaced");
  CHECK(gang["spec"]["names"]["shortNames"] == json{"agang"});
  for (const json& crd : {inv, gang}) {
    const json& version = crd["spec"]["versions"][0];
    CHECK(version["name"] == "v1alpha1");
    CHECK(version["served"] == true);
    CHECK(version["storage"] == true);
    CHECK(version["subresources"] == json{{"status", json::object()}});
    // Every column points at a property of the schema.
    std::set<std::string> paths;
    SchemaPaths(version["schema"]["openAPIV3Schema"], "", &paths);
    for (const json& column : version["additionalPrinterColumns"]) {
      const std::string path = column["jsonPath"].get<std::string>().substr(1);
      INFO(path);
      CHECK((paths.count(path) == 1 || path == "metadata.creationTimestamp"));
    }
  }
}

TEST_CASE("The committed CRD manifests match the generator") {
  for (const CrdManifest& m : Crds()) {
    const std::string relative = "deploy/crds/" + m.file_name;
    std::ifstream in(std::string(XPU_SOURCE_DIR) + "/" + relative, std::ios::binary);
    std::stringstream committed;
    committed << in.rdbuf();
    if (committed.str() != ToYaml(m.crd)) {
      FAIL_CHECK(relative << " is missing or differs from the C++ types; regenerate it with "
                             "`build/bin/gen-crds deploy/crds`");
    }
  }
}

TEST_CASE("ToYaml writes block YAML, quoting what YAML would misread") {
  const json value = json::parse(R"js({
    "a": "plain text, (ok)", "b": "True", "c": "1", "d": ".spec.x", "e": "x: y",
    "f": [], "g": {}, "h": [1, {"k": "v", "l": [true]}], "i": {"j": null}
  })js");
  CHECK(ToYaml(value) ==
        "a: plain text, (ok)\n"
        "b: \"True\"\n"
        "c: \"1\"\n"
        "d: \".spec.x\"\n"
        "e: \"x: y\"\n"
        "f: []\n"
        "g: {}\n"
        "h:\n"
        "- 1\n"
        "- k: v\n"
        "  l:\n"
        "  - true\n"
        "i:\n"
        "  j: null\n");
}

}  // namespace
}  // namespace xpu::api
