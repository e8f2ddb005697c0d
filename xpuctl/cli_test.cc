// xpuctl's help and usage errors, and the commands over devices and fabrics: plan, topo, groups
// and gang, on the bundled node and fabric descriptions.
#include "xpuctl/cli.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/testing/skip.h"
#include "xpuctl/cli_test_support.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli {
namespace {

using namespace cli_testing;  // NOLINT(google-build-using-namespace): the tests' helpers

TEST_CASE("help lists the commands and their flags") {
  for (std::string flag : {"--help", "-h", "help"}) {
    Result r = Run({flag});
    CHECK(r.code == kExitOk);
    for (const char* text : {"plan", "gang", "topo", "groups", "Exit status"}) {
      CHECK_THAT(r.out, Contains(text));
    }
  }
  for (const std::vector<std::string>& args : {std::vector<std::string>{"plan", "--help"},
                                               {"help", "plan"},
                                               {"plan", "-h", "--count", "x"}}) {
    Result r = Run(args);
    CHECK(r.code == kExitOk);
    CHECK_THAT(r.out,
               StartsWith("usage: xpuctl plan [--topology FILE] [--inventory FILE] --count K "
                          "[--allocated d1,d2]"));
    CHECK_THAT(r.out, Contains("-o, --output json|yaml"));
    CHECK_THAT(r.out, Contains("(required)"));
  }
  CHECK_THAT(Run({"topo", "--help"}).out, Contains("--format dot|svg"));
  CHECK_THAT(Run({"groups", "--help"}).out, Contains("--size K"));
  CHECK_THAT(Run({"gang", "--help"}).out,
             StartsWith("usage: xpuctl gang --fabric FILE --nodes M --devices-per-node K "
                        "[--highest-tier NAME] [--output json|yaml]"));
  CHECK_THAT(Run({"topo", "--help"}).out,
             StartsWith("usage: xpuctl topo [--topology FILE] [--inventory FILE] [--fabric FILE]"));
  CHECK_THAT(Run({"discover", "--help"}).out,
             StartsWith("usage: xpuctl discover [--host-root DIR] [--vendor-lib-dir DIR] "
                        "[--node-name NAME] [--output json|yaml]"));
  CHECK_THAT(
      Run({"slices", "--help"}).out,
      StartsWith("usage: xpuctl slices --inventory FILE [--node-name NAME] "
                 "[--mode attributes|groups] [--kubernetes-version 1.34|1.35|1.36|1.37|1.38] "
                 "[--config FILE] [--label k=v,...] [--allocated DEV,...] "
                 "[--output json|yaml]"));
  // Without --kubernetes-version: the newest release supported, which publishes groups.
  for (const char* command : {"slices", "render", "autoscaler-template"}) {
    const Result help = Run({command, "--help"});
    INFO(command);
    CHECK_THAT(help.out, Contains("--kubernetes-version 1.34|1.35|1.36|1.37|1.38"));
    CHECK_THAT(help.out, Contains("groups from 1.36, attributes before (default 1.38, the "
                                  "newest supported)"));
  }
}

TEST_CASE("bad usage exits 2 with a message and a hint") {
  const std::string topo = Fixture("atlas800-9000");
  CheckUsageErrors({
      {{}, "xpuctl: the xpu-dra operator tool\n\nusage: xpuctl <command>"},
      {{"plna"}, "xpuctl: unknown command \"plna\"\nrun 'xpuctl --help'"},
      {{"help", "plna"}, "xpuctl: unknown command \"plna\""},
      {{"plan", "--topology", topo, "--cnt", "2"},
       "xpuctl plan: unknown flag --cnt\nrun 'xpuctl plan --help' for usage"},
      {{"plan", "--topology", topo, "--cnt=2"}, "xpuctl plan: unknown flag --cnt\n"},
      {{"plan", "-count", "2"}, "xpuctl plan: unknown flag -count\n"},
      {{"plan", "--count", "2"},
       "xpuctl plan: exactly one of --topology and --inventory is required"},
      {{"plan", "--topology", topo, "--inventory", topo, "--count", "2"},
       "xpuctl plan: exactly one of --topology and --inventory is required"},
      {{"plan", "--inventory", topo, "--count", "2"},
       "xpuctl plan: read inventory " + topo + ": kind is \"NodeDescription\""},
      {{"discover", "--host-root"}, "xpuctl discover: --host-root needs a value"},
      {{"discover", "--hostroot", "/"}, "xpuctl discover: unknown flag --hostroot"},
      {{"discover", "--host-root", "/nonexistent/xpu"},
       "xpuctl discover: host root /nonexistent/xpu: not a directory"},
      {{"discover", "--node-name", "Bad_Name"}, "xpuctl discover: node name: "},
      {{"discover", "-o", "xml"}, "xpuctl discover: --output: expected json or yaml"},
      {{"slices"}, "xpuctl slices: --inventory is required"},
      {{"slices", "--inventory", topo},
       "xpuctl slices: read inventory " + topo + ": kind is \"NodeDescription\""},
      {{"slices", "--inventory", "/nonexistent/inv.json"},
       "xpuctl slices: read inventory /nonexistent/inv.json: "},
      {{"slices", "--inventory", topo, "--mode", "pairs"},
       "xpuctl slices: --mode: expected attributes or groups"},
      {{"slices", "--inventory", topo, "--kubernetes-version", "1.33"},
       "xpuctl slices: --kubernetes-version: expected 1.34, 1.35, 1.36, 1.37 or 1.38, got "
       "\"1.33\""},
      {{"autoscaler-template", "--node-group", topo, "--kubernetes-version", "1.35.x"},
       "xpuctl autoscaler-template: --kubernetes-version: expected 1.34, 1.35, 1.36, 1.37 or "
       "1.38"},
      {{"plan", "--topology", topo, "--count"}, "xpuctl plan: --count needs a value"},
      {{"plan", "--topology", topo, "--count", "2", "extra"},
       "xpuctl plan: unexpected argument \"extra\""},
      {{"plan", "--topology", topo, "--count", "2", "--count=3"},
       "xpuctl plan: --count given twice"},
      {{"plan", "--help=yes"}, "xpuctl plan: --help takes no value"},
      {{"topo", "--topology", topo, "--count", "2"}, "xpuctl topo: unknown flag --count"},
  });
}

TEST_CASE("plan --count must be a positive integer") {
  for (std::string count : {"0", "-1", "x", "2x", "", " 2", "99999999999"}) {
    Result r = Run({"plan", "--topology", Fixture("atlas800-9000"), "--count", count});
    CHECK(r.code == kExitUsage);
    CHECK(r.err == "xpuctl plan: --count: expected a positive integer, got \"" + count + "\"\n");
  }
}

TEST_CASE("plan prints the chosen devices and the score") {
  const std::string topo = Fixture("atlas800-9000");
  Result r = Run({"plan", "--topology", topo, "--count", "4"});
  REQUIRE(r.code == kExitOk);
  const json doc = json::parse(r.out);
  CHECK(doc["feasible"] == true);
  CHECK(doc["node"] == "atlas800-9000");
  const std::vector<std::string> ring0 = {"npu-0", "npu-1", "npu-2", "npu-3"};
  const std::vector<std::string> ring1 = {"npu-4", "npu-5", "npu-6", "npu-7"};
  CHECK((PlannedDevices(r) == ring0 || PlannedDevices(r) == ring1));
  CHECK(doc["score"]["bottleneckGBps"].get<double>() > 0);
  CHECK(doc["score"]["totalGBps"].get<double>() >=
        doc["score"]["bottleneckGBps"].get<double>() * 6);
  CHECK(doc["score"]["fragmentation"].is_number_integer());
  CHECK(r.out == doc.dump(2) + "\n");
  // --flag=value is the same as --flag value.
  CHECK(Run({"plan", "--topology=" + topo, "--count=4"}).out == r.out);
}

TEST_CASE("plan follows the vendor rules of the bundled models") {
  // Atlas 800 9000: request 1 goes to the ring with one free device.
  Result one = Run({"plan", "--topology", Fixture("atlas800-9000"), "--count", "1", "--allocated",
                    "npu-0,npu-1,npu-2,npu-4"});
  CHECK(PlannedDevices(one) == std::vector<std::string>{"npu-3"});
  CHECK(json::parse(one.out)["score"]["bottleneckGBps"].is_null());
  // Atlas 800T A3: free {0,2,3,4}, request 2 takes the whole module {2,3}.
  std::string allocated = "npu-1";
  for (int i = 5; i < 16; ++i) allocated += ",npu-" + std::to_string(i);
  CHECK(PlannedDevices(Run({"plan", "--topology", Fixture("atlas800t-a3"), "--count", "2",
                            "--allocated", allocated})) ==
        std::vector<std::string>{"npu-2", "npu-3"});
  // HGX H200: 8 takes the board.
  CHECK(PlannedDevices(Run({"plan", "--topology", Fixture("hgx-h200"), "--count", "8"})).size() ==
        8);
}

TEST_CASE("plan reports an infeasible request on stdout with exit 3") {
  Result r = Run({"plan", "--topology", Fixture("atlas800-9000"), "--count", "3"});
  CHECK(r.code == kExitInfeasible);
  const json doc = json::parse(r.out);
  CHECK(doc["feasible"] == false);
  CHECK_FALSE(doc["reason"].get<std::string>().empty());
  CHECK(r.err.empty());
  CHECK(Run({"plan", "--topology", Fixture("hgx-h200"), "--count", "9"}).code == kExitInfeasible);
  CHECK(Run({"plan", "--topology", Fixture("hgx-h200"), "--count", "2", "--allocated",
             "gpu-0,gpu-1,gpu-2,gpu-3,gpu-4,gpu-5,gpu-6"})
            .code == kExitInfeasible);
}

TEST_CASE("plan -o yaml prints the same document as YAML") {
  const std::string topo = Fixture("atlas800-9000");
  Result json_out = Run({"plan", "--topology", topo, "--count", "2"});
  Result yaml_out = Run({"plan", "--topology", topo, "--count", "2", "-o", "yaml"});
  REQUIRE(yaml_out.code == kExitOk);
  CHECK(yaml_out.out == internal::ToYaml(json::parse(json_out.out)));
  CHECK_THAT(yaml_out.out, StartsWith("devices: [npu-"));
  CHECK_THAT(yaml_out.out,
             Contains("\nfeasible: true\nnode: atlas800-9000\nscore:\n  bottleneckGBps: "));
  CHECK(Run({"plan", "--topology", topo, "--count", "2", "--output=yaml"}).out == yaml_out.out);
  Result bad = Run({"plan", "--topology", topo, "--count", "2", "-o", "xml"});
  CHECK(bad.code == kExitUsage);
  CHECK(bad.err == "xpuctl plan: --output: expected json or yaml, got \"xml\"\n");
}

TEST_CASE("ToYaml writes block mappings, flow lists and safe scalars") {
  const json doc = json::parse(R"({
    "devices": ["npu-0", "npu-1"], "feasible": true, "reason": "count 3: not allowed",
    "score": {"bottleneckGBps": null, "totalGBps": 12.5, "fragmentation": 2},
    "groups": [["a", "b"], []], "items": [{"k": "true"}, 7], "empty": {}, "two words": "Yes"
  })");
  CHECK(internal::ToYaml(doc) ==
        "devices: [npu-0, npu-1]\n"
        "empty: {}\n"
        "feasible: true\n"
        "groups:\n"
        "  - [a, b]\n"
        "  - []\n"
        "items:\n"
        "  -\n"
        "    k: \"true\"\n"
        "  - 7\n"
        "reason: \"count 3: not allowed\"\n"
        "score:\n"
        "  bottleneckGBps: null\n"
        "  fragmentation: 2\n"
        "  totalGBps: 12.5\n"
        "\"two words\": \"Yes\"\n");
  CHECK(internal::ToYaml(json::array()) == "[]\n");
}

TEST_CASE("bad node descriptions exit 2 naming the file and the field") {
  TempDir dir;
  struct Case {
    std::string contents;
    std::string message;  // after "xpuctl plan: read topology <file>: "
  };
  const std::vector<Case> cases = {
      {R"({"devices": 7})", "name: missing required field"},
      {R"({"name": "n", "ruleSet": {"kind": "any"}, "devices": 7})",
       "devices: expected an array, got number 7"},
      {R"({"name": "n", "ruleSet": {"kind": "any"}, "devices": [{"name": "gpu-0", "kind": "gpu", "index": -1}]})",
       "devices[0].index: expected a non-negative integer, got number -1"},
      {R"({"name": "n", "ruleSet": {"kind": "any"}, "devices": [{"name": "gpu-0", "kind": "gpu", "index": 0}],
           "links": [{"type": "nvlink", "bandwidthGBps": 50, "devices": ["gpu-0", "gpu-9"]}]})",
       "links[0].devices[1]: unknown device gpu-9"},
      {"{\"name\": ", "invalid JSON at byte 10: "},
  };
  std::vector<UsageError> runs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = dir.Write("bad" + std::to_string(i) + ".json", cases[i].contents);
    runs.push_back({{"plan", "--topology", file, "--count", "1"},
                    "xpuctl plan: read topology " + file + ": " + cases[i].message});
  }
  CheckUsageErrors(runs);
  Result missing = Run({"plan", "--topology", dir.Path("none.json"), "--count", "1"});
  CHECK(missing.code == kExitUsage);
  CHECK(missing.err ==
        "xpuctl plan: read topology " + dir.Path("none.json") + ": no such file or directory\n");
  Result unknown = Run(
      {"plan", "--topology", Fixture("hgx-h200"), "--count", "1", "--allocated", "gpu-0,gpu-99"});
  CHECK(unknown.code == kExitUsage);
  CHECK_THAT(unknown.err, StartsWith("xpuctl plan: --allocated: device gpu-99"));
  // Device and node lists: a repeated or an empty name is a mistake, named, in every command.
  const std::string fabric = FabricFixture("superpod-demo");
  CheckUsageErrors(
      {{{"plan", "--topology", Fixture("hgx-h200"), "--count", "1", "--allocated", "gpu-0,gpu-0"},
        "xpuctl plan: --allocated: \"gpu-0\" is listed twice in \"gpu-0,gpu-0\""},
       {{"plan", "--topology", Fixture("hgx-h200"), "--count", "1", "--allocated", "gpu-0,,gpu-1"},
        "xpuctl plan: --allocated: empty name at position 2 of \"gpu-0,,gpu-1\""},
       {{"topo", "--topology", Fixture("hgx-h200"), "--highlight", "gpu-1,gpu-1"},
        "xpuctl topo: --highlight: \"gpu-1\" is listed twice"},
       {{"topo", "--fabric", fabric, "--highlight", "node-00,"},
        "xpuctl topo: --highlight: empty name at position 2"},
       {{"slices", "--inventory",
         std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts-expected/atlas800-9000.json",
         "--allocated", "npu-1,npu-1"},
        "xpuctl slices: --allocated: \"npu-1\" is listed twice"}});
}

TEST_CASE("topo draws the node as DOT, SVG or into a file") {
  const std::string topo = Fixture("atlas800t-a3");
  Result dot = Run({"topo", "--topology", topo, "--highlight", "npu-2,npu-3", "--format", "dot"});
  REQUIRE(dot.code == kExitOk);
  CHECK_THAT(dot.out, Contains("graph"));
  CHECK_THAT(dot.out, Contains("npu-2"));
  CHECK(Run({"topo", "--topology", topo, "--highlight", "npu-2,npu-3"}).out == dot.out);

  CHECK(RunToFile({"topo", "--topology", topo, "--highlight=npu-2,npu-3"}, "a3.dot") == dot.out);

  Result bad_format = Run({"topo", "--topology", topo, "--format", "png"});
  CHECK(bad_format.code == kExitUsage);
  CHECK(bad_format.err == "xpuctl topo: --format: expected dot or svg, got \"png\"\n");
  Result bad_device = Run({"topo", "--topology", topo, "--highlight", "gpu-0"});
  CHECK(bad_device.code == kExitUsage);
  CHECK_THAT(bad_device.err, StartsWith("xpuctl topo: --highlight: device gpu-0"));

  SECTION("svg through graphviz") {
    if (::system("command -v dot >/dev/null 2>&1") != 0) {
      XPU_SKIP("graphviz 'dot' is not installed: no SVG rendering check");
    }
    Result svg = Run({"topo", "--topology", topo, "--format", "svg"});
    CHECK(svg.code == kExitOk);
    CHECK_THAT(svg.out, Contains("<svg"));
    CHECK_THAT(svg.out, Contains("</svg>"));
  }
  SECTION("svg without graphviz") {
    TempDir dir;  // an empty directory as the PATH
    const std::string path = std::getenv("PATH") == nullptr ? "" : std::getenv("PATH");
    ::setenv("PATH", dir.Path("").c_str(), 1);
    Result svg = Run({"topo", "--topology", topo, "--format", "svg"});
    ::setenv("PATH", path.c_str(), 1);
    CHECK(svg.code == kExitError);
    CHECK(svg.out.empty());
    CHECK(svg.err == "xpuctl topo: graphviz 'dot' not found on PATH; use --format dot\n");
  }
}

TEST_CASE("groups lists aligned groups of the size") {
  Result r = Run({"groups", "--topology", Fixture("atlas800-9000"), "--size", "4"});
  REQUIRE(r.code == kExitOk);
  const json doc = json::parse(r.out);
  CHECK(doc["size"] == 4);
  REQUIRE_FALSE(doc["groups"].empty());
  for (const json& group : doc["groups"]) CHECK(group.size() == 4);
  CHECK_THAT(
      Run({"groups", "--topology", Fixture("atlas800-9000"), "--size", "4", "-o", "yaml"}).out,
      StartsWith("groups:\n  - [npu-"));
  CHECK(Run({"groups", "--topology", Fixture("atlas800-9000"), "--size", "0"}).code == kExitUsage);
}

// superpod-demo: leaf-0 {00..03: 8 8 8 8}, leaf-1 {04..07: 8 0 8 4} under spine-0; leaf-2
// {08..11: 8 8 8 2}, leaf-3 {12..15: 0 0 8 8} under spine-1.
TEST_CASE("gang fits a leaf: the fullest leaf that holds it, ranks in fabric order") {
  const std::string fabric = FabricFixture("superpod-demo");
  Result r = Run({"gang", "--fabric", fabric, "--nodes", "3", "--devices-per-node", "8"});
  INFO(r.err);
  REQUIRE(r.code == kExitOk);
  CHECK(r.err.empty());
  const json doc = json::parse(r.out);
  CHECK(r.out == doc.dump(2) + "\n");
  CHECK(doc == json::parse(R"({
    "feasible": true, "tier": "leaf", "domain": "leaf-2",
    "nodes": ["node-08", "node-09", "node-10"],
    "ranks": [{"rank": 0, "node": "node-08"}, {"rank": 1, "node": "node-09"},
              {"rank": 2, "node": "node-10"}],
    "freeDevicesLeft": 2
  })"));
  // Smaller requests see more eligible nodes: 4 nodes of 4 fit leaf-1 (8 0 8 4).
  const json small =
      json::parse(Run({"gang", "--fabric=" + fabric, "--nodes=3", "--devices-per-node=4"}).out);
  CHECK(small["domain"] == "leaf-1");
  CHECK(small["nodes"] == json{"node-04", "node-06", "node-07"});
}

TEST_CASE("gang spans a spine, or the superpod, when no leaf holds it") {
  const std::string fabric = FabricFixture("superpod-demo");
  // spine-1 has 5 eligible nodes and fewer free devices than spine-0: all of leaf-2's, then the
  // tightest leaf that holds the rest.
  Result five = Run({"gang", "--fabric", fabric, "--nodes", "5", "--devices-per-node", "8"});
  REQUIRE(five.code == kExitOk);
  const json doc = json::parse(five.out);
  CHECK(doc["tier"] == "spine");
  CHECK(doc["domain"] == "spine-1");
  CHECK(doc["nodes"] == json{"node-08", "node-09", "node-10", "node-14", "node-15"});
  REQUIRE(doc["ranks"].size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(doc["ranks"][i]["rank"] == i);
    CHECK(doc["ranks"][i]["node"] == doc["nodes"][i]);
  }
  CHECK(doc["freeDevicesLeft"] == 26 + 16 - 40);
  // Only spine-0 holds 6: whole leaf-0, then 2 of leaf-1.
  const json six =
      json::parse(Run({"gang", "--fabric", fabric, "--nodes", "6", "--devices-per-node", "8"}).out);
  CHECK(six["domain"] == "spine-0");
  CHECK(six["nodes"] == json{"node-00", "node-01", "node-02", "node-03", "node-04", "node-06"});
  // 7 needs both spines.
  const json seven = json::parse(Run({"gang", "--fabric", fabric, "--nodes", "7",
                                      "--devices-per-node", "8", "--highest-tier", "superpod"})
                                     .out);
  CHECK(seven["tier"] == "superpod");
  CHECK(seven["domain"] == "superpod-0");
  CHECK(seven["nodes"].size() == 7);
}

TEST_CASE("gang reports an infeasible gang on stdout with exit 3") {
  const std::string fabric = FabricFixture("superpod-demo");
  Result leaf = Run({"gang", "--fabric", fabric, "--nodes", "5", "--devices-per-node", "8",
                     "--highest-tier", "leaf"});
  CHECK(leaf.code == kExitInfeasible);
  CHECK(leaf.err.empty());
  const json expected = {
      {"feasible", false},
      {"reason",
       "no domain up to tier leaf has 5 nodes with 8 free devices (the most any has is 4)"}};
  CHECK(json::parse(leaf.out) == expected);
  Result spine = Run({"gang", "--fabric", fabric, "--nodes", "7", "--devices-per-node", "8",
                      "--highest-tier=spine", "-o", "yaml"});
  CHECK(spine.code == kExitInfeasible);
  CHECK(spine.out ==
        "feasible: false\nreason: \"no domain up to tier spine has 7 nodes with 8 free devices "
        "(the most any has is 6)\"\n");
  CHECK(Run({"gang", "--fabric", fabric, "--nodes", "12", "--devices-per-node", "8"}).code ==
        kExitInfeasible);
  CHECK(Run({"gang", "--fabric", fabric, "--nodes", "1", "--devices-per-node", "9"}).code ==
        kExitInfeasible);
}

TEST_CASE("gang -o yaml prints the same document as YAML") {
  const std::vector<std::string> args = {"gang",    "--fabric", FabricFixture("superpod-demo"),
                                         "--nodes", "5",        "--devices-per-node",
                                         "8"};
  Result json_out = Run(args);
  std::vector<std::string> yaml_args = args;
  yaml_args.insert(yaml_args.end(), {"-o", "yaml"});
  Result yaml_out = Run(yaml_args);
  REQUIRE(yaml_out.code == kExitOk);
  CHECK(yaml_out.out == internal::ToYaml(json::parse(json_out.out)));
  CHECK_THAT(yaml_out.out,
             StartsWith("domain: spine-1\nfeasible: true\nfreeDevicesLeft: 2\n"
                        "nodes: [node-08, node-09, node-10, node-14, node-15]\nranks:\n"));
  CHECK_THAT(yaml_out.out, Contains("\ntier: spine\n"));
}

TEST_CASE("gang rejects bad flags and bad fabric files with exit 2") {
  const std::string fabric = FabricFixture("superpod-demo");
  CheckUsageErrors({
      {{"gang", "--fabric", fabric, "--nodes", "5", "--devices-per-node", "8", "--highest-tier",
        "rack"},
       "xpuctl gang: --highest-tier: unknown tier \"rack\"; expected one of leaf, spine, "
       "superpod\n"},
      {{"gang", "--fabric", fabric, "--nodes", "0", "--devices-per-node", "8"},
       "xpuctl gang: --nodes: expected a positive integer, got \"0\"\n"},
      {{"gang", "--fabric", fabric, "--nodes", "2", "--devices-per-node", "x"},
       "xpuctl gang: --devices-per-node: expected a positive integer, got \"x\"\n"},
      {{"gang", "--fabric", fabric, "--nodes", "2"},
       "xpuctl gang: --devices-per-node is required\n"},
      {{"gang", "--nodes", "2", "--devices-per-node", "8"}, "xpuctl gang: --fabric is required\n"},
  });

  TempDir dir;
  const std::string head = R"({"name": "f", "tiers": [{"name": "leaf"}, {"name": "spine"}], )";
  const std::vector<std::pair<std::string, std::string>> files = {
      {head + R"("domains": [{"name": "l", "tier": "lef"}], "nodes": []})",
       "domains[0].tier: unknown tier \"lef\"; expected one of leaf, spine"},
      {head + R"("domains": [{"name": "l", "tier": "leaf", "parent": "s"}], "nodes": []})",
       "domains[0].parent: unknown domain s"},
      {head + R"("domains": [], "nodes": [{"name": "n", "freeDevices": -8}]})",
       "nodes[0].freeDevices: expected a non-negative integer, got number -8"},
      {"[", "invalid JSON at byte 2: "},
  };
  std::vector<UsageError> runs;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string file = dir.Write("f" + std::to_string(i) + ".json", files[i].first);
    const std::string error = ": read fabric " + file + ": " + files[i].second;
    runs.push_back({{"gang", "--fabric", file, "--nodes", "1", "--devices-per-node", "1"},
                    "xpuctl gang" + error});
    runs.push_back({{"topo", "--fabric", file}, "xpuctl topo" + error});
  }
  CheckUsageErrors(runs);
  Result missing =
      Run({"gang", "--fabric", dir.Path("none.json"), "--nodes", "1", "--devices-per-node", "1"});
  CHECK(missing.code == kExitUsage);
  CHECK(missing.err ==
        "xpuctl gang: read fabric " + dir.Path("none.json") + ": no such file or directory\n");
}

TEST_CASE("topo --fabric draws the domains with the chosen nodes filled") {
  const std::string fabric = FabricFixture("superpod-demo");
  Result dot = Run({"topo", "--fabric", fabric, "--highlight", "node-08,node-14"});
  REQUIRE(dot.code == kExitOk);
  CHECK_THAT(dot.out, StartsWith("graph fabric {"));
  CheckContainsAll(
      dot.out,
      {"label=\"spine: spine-1 (200 GB/s)\"", "\"node-08\" [shape=box, style=\"filled,bold\"",
       "\"node-14\" [shape=box, style=\"filled,bold\"", "\"node-09\" [shape=box, style=solid]"});
  CHECK(
      Run({"topo", "--fabric", fabric, "--highlight", "node-08,node-14", "--format", "dot"}).out ==
      dot.out);

  CHECK(RunToFile({"topo", "--fabric=" + fabric, "--highlight=node-08,node-14"}, "f.dot") ==
        dot.out);

  Result unknown = Run({"topo", "--fabric", fabric, "--highlight", "node-08,node-99"});
  CHECK(unknown.code == kExitUsage);
  CHECK(unknown.err == "xpuctl topo: --highlight: node node-99 is not in the fabric\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"topo"},
        {"topo", "--format", "dot"},
        {"topo", "--fabric", fabric, "--topology", Fixture("hgx-h200")}}) {
    Result r = Run(args);
    CHECK(r.code == kExitUsage);
    CHECK(r.err ==
          "xpuctl topo: exactly one of --topology, --inventory and --fabric is required\n");
  }

  SECTION("svg through graphviz") {
    if (::system("command -v dot >/dev/null 2>&1") != 0) {
      XPU_SKIP("graphviz 'dot' is not installed: no SVG rendering check");
    }
    Result svg = Run({"topo", "--fabric", fabric, "--highlight", "node-08", "--format", "svg"});
    CHECK(svg.code == kExitOk);
    CHECK_THAT(svg.out, Contains("<svg"));
    CHECK_THAT(svg.out, Contains("<title>node&#45;15</title>"));
  }
}

}  // namespace
}  // namespace xpu::cli
