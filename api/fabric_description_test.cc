#include "api/fabric_description.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "api/testing/codec_checks.h"
#include "api/testing/temp_file.h"
#include "base/testing/require_ok.h"
#include "topology/fabric.h"

namespace xpu::api {
namespace {

using nlohmann::json;
using topology::FabricSpec;

// Two leaves under one spine, a node in no domain, and every optional field.
json ValidDoc() {
  return json::parse(R"({
    "apiVersion": "xpu.dra.dev/v1alpha1",
    "kind": "FabricDescription",
    "name": "two-leaves",
    "tiers": [{"name": "leaf", "bandwidthGBps": 400}, {"name": "spine", "bandwidthGBps": 12.5},
              {"name": "superpod"}],
    "domains": [
      {"name": "spine-0", "tier": "spine"},
      {"name": "leaf-0", "tier": "leaf", "parent": "spine-0"},
      {"name": "leaf-1", "tier": "leaf", "parent": "spine-0"}
    ],
    "nodes": [
      {"name": "node-0", "domain": "leaf-0", "freeDevices": 8},
      {"name": "node-1", "domain": "leaf-0"},
      {"name": "node-2", "domain": "leaf-1", "freeDevices": 4},
      {"name": "loose"}
    ]
  })");
}

using testing::TempFile;

TEST_CASE("ParseFabricDescription reads every field and resolves tier names") {
  std::vector<int> free;
  StatusOr<FabricSpec> spec = ParseFabricDescription(ValidDoc(), &free);
  REQUIRE_OK(spec);
  REQUIRE(spec->tiers.size() == 3);
  CHECK(spec->tiers[0].name == "leaf");
  CHECK(spec->tiers[0].bandwidth_gbps == 400);
  CHECK(spec->tiers[1].bandwidth_gbps == 12.5);
  CHECK(spec->tiers[2].bandwidth_gbps == 0);
  REQUIRE(spec->domains.size() == 3);
  CHECK(spec->domains[0].name == "spine-0");
  CHECK(spec->domains[0].tier == 1);
  CHECK(spec->domains[0].parent.empty());
  CHECK(spec->domains[2].tier == 0);
  CHECK(spec->domains[2].parent == "spine-0");
  REQUIRE(spec->nodes.size() == 4);
  CHECK(spec->nodes[2].name == "node-2");
  CHECK(spec->nodes[2].domain == "leaf-1");
  CHECK(spec->nodes[3].domain.empty());
  CHECK(free == std::vector<int>{8, 0, 4, 0});

  StatusOr<topology::Fabric> fabric = topology::Fabric::Build(*spec);
  REQUIRE_OK(fabric);
  CHECK(fabric->NodeDomain(2, 1) == 0);
  // The free devices may be left out.
  CHECK(ParseFabricDescription(ValidDoc(), nullptr).ok());
}

TEST_CASE("FabricDescriptionToJson round trips and leaves out empty fields") {
  std::vector<int> free;
  StatusOr<FabricSpec> spec = ParseFabricDescription(ValidDoc(), &free);
  REQUIRE_OK(spec);
  const json written = FabricDescriptionToJson(*spec, free, "two-leaves");
  CHECK(written == ValidDoc());
  std::vector<int> free_again;
  StatusOr<FabricSpec> again = ParseFabricDescription(written, &free_again);
  REQUIRE_OK(again);
  CHECK(free_again == free);
  CHECK(FabricDescriptionToJson(*again, free_again, "two-leaves").dump(2) == written.dump(2));

  // Missing free-device entries are 0; whole bandwidths are integers.
  FabricSpec minimal;
  minimal.tiers = {{"nvl72", 900.0}};
  minimal.domains = {{"rack-0", 0, ""}};
  minimal.nodes = {{"a", "rack-0"}, {"b", "rack-0"}};
  CHECK(FabricDescriptionToJson(minimal, std::vector<int>{2}, "rack") == json::parse(R"({
    "apiVersion": "xpu.dra.dev/v1alpha1", "kind": "FabricDescription", "name": "rack",
    "tiers": [{"name": "nvl72", "bandwidthGBps": 900}],
    "domains": [{"name": "rack-0", "tier": "nvl72"}],
    "nodes": [{"name": "a", "domain": "rack-0", "freeDevices": 2},
              {"name": "b", "domain": "rack-0"}]
  })"));
  CHECK(FabricDescriptionToJson(minimal, {}, "rack").dump().find("\"bandwidthGBps\":900,") !=
        std::string::npos);
}

TEST_CASE("The bundled superpod fabric parses and builds") {
  const std::string path = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/fabrics/superpod-demo.json";
  std::vector<int> free;
  StatusOr<FabricSpec> spec = ReadFabricDescriptionFile(path, &free);
  INFO(spec.status().ToString());
  REQUIRE_OK(spec);
  StatusOr<topology::Fabric> fabric = topology::Fabric::Build(*spec);
  INFO(fabric.status().ToString());
  REQUIRE_OK(fabric);
  CHECK(fabric->node_count() == 16);
  CHECK(fabric->domain_count() == 7);
  CHECK(fabric->tier_count() == 3);
  CHECK(free.size() == 16);
}

TEST_CASE("Malformed fabric descriptions are rejected naming the field") {
  const std::vector<testing::EditCase<json>> cases = {
      {[](json& d) { d = json::array(); }, "expected an object, got array"},
      {[](json& d) { d["kind"] = "NodeDescription"; },
       "kind: expected \"FabricDescription\", got string \"NodeDescription\""},
      {[](json& d) { d["apiVersion"] = "v1"; }, "apiVersion: expected \"xpu.dra.dev/v1alpha1\""},
      {[](json& d) { d.erase("name"); }, "name: missing required field"},
      {[](json& d) { d["racks"] = json::array(); },
       "racks: unknown field; expected one of apiVersion, kind, name, tiers, domains, nodes"},
      {[](json& d) { d.erase("tiers"); }, "tiers: missing required field"},
      {[](json& d) { d["tiers"] = "leaf"; }, "tiers: expected an array, got string \"leaf\""},
      {[](json& d) { d["tiers"][1]["bandwidth"] = 200; },
       "tiers[1].bandwidth: unknown field; expected one of name, bandwidthGBps"},
      {[](json& d) { d["tiers"][0]["bandwidthGBps"] = 0; },
       "tiers[0].bandwidthGBps: expected a bandwidth in GB/s, > 0 and at most 1000000, got "
       "number 0"},
      {[](json& d) { d["tiers"][2]["name"] = ""; }, "tiers[2].name: must not be empty"},
      {[](json& d) { d["tiers"][2]["name"] = "leaf"; }, "tiers[2].name: duplicate tier leaf"},
      {[](json& d) { d["domains"][1]["tier"] = "spin"; },
       "domains[1].tier: unknown tier \"spin\"; expected one of leaf, spine, superpod"},
      {[](json& d) { d["domains"][1]["tier"] = 0; },
       "domains[1].tier: expected a string, got number 0"},
      {[](json& d) { d["domains"][0].erase("tier"); }, "domains[0].tier: missing required field"},
      {[](json& d) { d["domains"][2]["parent"] = nullptr; },
       "domains[2].parent: expected a string, got null"},
      {[](json& d) { d["domains"] = json::object(); }, "domains: expected an array, got object"},
      {[](json& d) { d["nodes"][0]["freeDevices"] = -1; },
       "nodes[0].freeDevices: expected a non-negative integer, got number -1"},
      {[](json& d) { d["nodes"][0]["freeDevices"] = 2.5; },
       "nodes[0].freeDevices: expected a non-negative integer, got number 2.5"},
      {[](json& d) { d["nodes"][1]["leaf"] = "leaf-0"; },
       "nodes[1].leaf: unknown field; expected one of name, domain, freeDevices"},
      {[](json& d) { d["nodes"][3] = "loose"; },
       "nodes[3]: expected an object, got string \"loose\""},
      {[](json& d) { d.erase("nodes"); }, "nodes: missing required field"},
  };
  testing::CheckEditsFail(ValidDoc(), cases, [](const json& doc) {
    std::vector<int> free = {42};
    StatusOr<FabricSpec> spec = ParseFabricDescription(doc, &free);
    CHECK(free == std::vector<int>{42});  // untouched on error
    return spec;
  });
}

TEST_CASE("Structural errors come from Fabric::Build and name the field") {
  const std::vector<testing::EditCase<json>> cases = {
      {[](json& d) { d["domains"][1]["parent"] = "spine-9"; },
       "domains[1].parent: unknown domain spine-9"},
      {[](json& d) { d["domains"][0]["parent"] = "leaf-0"; },
       "domains[0].parent: leaf-0 is not in a higher tier than spine-0"},
      {[](json& d) { d["nodes"][2]["domain"] = "leaf-7"; },
       "nodes[2].domain: unknown domain leaf-7"},
      {[](json& d) { d["nodes"][1]["name"] = "node-0"; }, "nodes[1].name: duplicate node node-0"},
      // With no tiers the domains' tier names cannot resolve; drop them to reach Build.
      {[](json& d) { d["tiers"] = d["domains"] = d["nodes"] = json::array(); },
       "tiers: a fabric needs at least one tier"},
  };
  testing::CheckEditsFail(ValidDoc(), cases, [](const json& doc) {
    StatusOr<FabricSpec> spec = ParseFabricDescription(doc, nullptr);
    REQUIRE_OK(spec);
    return topology::Fabric::Build(*spec);
  });
}

TEST_CASE("ReadFabricDescriptionFile names the file in every error") {
  SECTION("a valid file") {
    TempFile file(ValidDoc().dump(2));
    std::vector<int> free;
    StatusOr<FabricSpec> spec = ReadFabricDescriptionFile(file.path(), &free);
    REQUIRE_OK(spec);
    CHECK(spec->nodes.size() == 4);
    CHECK(free.size() == 4);
  }
  SECTION("a missing file") {
    StatusOr<FabricSpec> spec = ReadFabricDescriptionFile("/nonexistent/f.json", nullptr);
    CHECK(spec.status().code() == StatusCode::kNotFound);
    CHECK(spec.status().message() == "read fabric /nonexistent/f.json: no such file or directory");
  }
  SECTION("a bad field") {
    json doc = ValidDoc();
    doc["nodes"][2]["freeDevices"] = "four";
    TempFile file(doc.dump());
    StatusOr<FabricSpec> spec = ReadFabricDescriptionFile(file.path(), nullptr);
    CHECK(spec.status().message() ==
          "read fabric " + file.path() +
              ": nodes[2].freeDevices: expected a non-negative integer, got string \"four\"");
  }
}

}  // namespace
}  // namespace xpu::api
