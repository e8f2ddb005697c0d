#include "xpuctl/cli.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "xpuctl/internal/commands.h"

namespace xpu::cli {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result Run(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = RunXpuctl(args, out, err);
  return {code, out.str(), err.str()};
}

std::string Fixture(const std::string& name) {
  return std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/topologies/" + name + ".json";
}

std::string FabricFixture(const std::string& name) {
  return std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/fabrics/" + name + ".json";
}

// Sorted device names of a plan's output.
std::vector<std::string> PlannedDevices(const Result& r) {
  INFO(r.out << r.err);
  REQUIRE(r.code == kExitOk);
  std::vector<std::string> devices = json::parse(r.out).at("devices");
  std::sort(devices.begin(), devices.end());
  return devices;
}

// A path under a fresh temporary directory, removed with everything in it at the end.
class TempDir {
 public:
  TempDir()
      : dir_(std::filesystem::temp_directory_path() /
             ("xpuctl-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::ofstream(Path(name)) << contents;
    return Path(name);
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
};

// A command line that must exit 2 with nothing on stdout and stderr starting with `message`.
struct UsageError {
  std::vector<std::string> args;
  std::string message;
};

void CheckUsageErrors(const std::vector<UsageError>& cases) {
  for (const UsageError& c : cases) {
    Result r = Run(c.args);
    INFO(r.err);
    CHECK(r.code == kExitUsage);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, StartsWith(c.message));
  }
}

// Runs `args` with `--out <name>` in a fresh directory: the command prints nothing and writes
// the file, whose contents are returned.
std::string RunToFile(std::vector<std::string> args, const std::string& name) {
  TempDir dir;
  args.insert(args.end(), {"--out", dir.Path(name)});
  const Result r = Run(args);
  INFO(r.err);
  CHECK(r.code == kExitOk);
  CHECK(r.out.empty());
  std::stringstream written;
  written << std::ifstream(dir.Path(name)).rdbuf();
  return written.str();
}

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
  CHECK_THAT(Run({"slices", "--help"}).out,
             StartsWith("usage: xpuctl slices --inventory FILE [--node-name NAME] "
                        "[--mode attributes|groups] [--kubernetes-version 1.34|1.35|1.36|1.37] "
                        "[--config FILE] [--label k=v,...] [--allocated DEV,...] "
                        "[--output json|yaml]"));
  // Without --kubernetes-version: the newest release supported, which publishes groups.
  for (const char* command : {"slices", "render", "autoscaler-template"}) {
    const Result help = Run({command, "--help"});
    INFO(command);
    CHECK_THAT(help.out, Contains("--kubernetes-version 1.34|1.35|1.36|1.37"));
    CHECK_THAT(help.out, Contains("groups from 1.36, attributes before (default 1.37, the "
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
       "xpuctl slices: --kubernetes-version: expected 1.34, 1.35, 1.36 or 1.37, got \"1.33\""},
      {{"autoscaler-template", "--node-group", topo, "--kubernetes-version", "1.35.x"},
       "xpuctl autoscaler-template: --kubernetes-version: expected 1.34, 1.35, 1.36 or 1.37"},
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
      WARN("graphviz 'dot' is not installed; skipping the SVG rendering check");
      return;
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
  CHECK_THAT(dot.out, Contains("label=\"spine: spine-1 (200 GB/s)\""));
  CHECK_THAT(dot.out, Contains("\"node-08\" [shape=box, style=\"filled,bold\""));
  CHECK_THAT(dot.out, Contains("\"node-14\" [shape=box, style=\"filled,bold\""));
  CHECK_THAT(dot.out, Contains("\"node-09\" [shape=box, style=solid]"));
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
      WARN("graphviz 'dot' is not installed; skipping the SVG rendering check");
      return;
    }
    Result svg = Run({"topo", "--fabric", fabric, "--highlight", "node-08", "--format", "svg"});
    CHECK(svg.code == kExitOk);
    CHECK_THAT(svg.out, Contains("<svg"));
    CHECK_THAT(svg.out, Contains("<title>node&#45;15</title>"));
  }
}

TEST_CASE("discover prints the NodeInventory of a host root") {
  const std::string hosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";
  Result r = Run({"discover", "--host-root", hosts + "atlas800-9000", "--node-name", "node-a",
                  "--vendor-lib-dir", "/nonexistent/a", "--vendor-lib-dir=/nonexistent/b"});
  INFO(r.err);
  REQUIRE(r.code == kExitOk);
  const json inv = json::parse(r.out);
  CHECK(inv.at("kind") == "NodeInventory");
  CHECK(inv.at("metadata").at("name") == "node-a");
  CHECK(inv.at("status").at("devices").size() == 8);
  CHECK(inv.at("status").at("ruleSet") == "ascend910-ring");
  Result yaml = Run({"discover", "--host-root", hosts + "atlas800-9000", "-o", "yaml"});
  CHECK(yaml.code == kExitOk);
  CHECK_THAT(yaml.out, StartsWith("apiVersion: xpu.dra.dev/v1alpha1\nkind: NodeInventory\n"));

  // The inventory feeds plan, groups and topo.
  TempDir dir;
  const std::string file = dir.Write("inv.json", r.out);
  CHECK(PlannedDevices(Run({"plan", "--inventory", file, "--count", "4"})) ==
        PlannedDevices(Run({"plan", "--topology", Fixture("atlas800-9000"), "--count", "4"})));
  CHECK(Run({"groups", "--inventory", file, "--size", "4"}).out ==
        Run({"groups", "--topology", Fixture("atlas800-9000"), "--size", "4"}).out);
  Result dot = Run({"topo", "--inventory", file});
  CHECK(dot.code == kExitOk);
  CHECK_THAT(dot.out, Contains("npu-7"));
}

TEST_CASE("discover on an empty host root exits 0 with no devices") {
  TempDir dir;
  std::filesystem::create_directories(dir.Path("root"));
  Result r = Run({"discover", "--host-root", dir.Path("root"), "--node-name", "empty"});
  INFO(r.err);
  REQUIRE(r.code == kExitOk);
  const json status = json::parse(r.out).at("status");
  CHECK_FALSE(status.contains("devices"));
}

TEST_CASE("slices prints the ResourceSlices of an inventory") {
  const std::string fixtures = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/";
  const std::string inventory = fixtures + "hosts-expected/atlas800-9000.json";
  SECTION("attributes mode by default on 1.35, with the node name and labels") {
    Result r = Run({"slices", "--inventory", inventory, "--node-name", "n1", "--label",
                    "topology.xpu.dra.dev/leaf=leaf-3,topology.xpu.dra.dev/spine=s1",
                    "--kubernetes-version", "1.35"});
    INFO(r.err);
    REQUIRE(r.code == kExitOk);
    const json list = json::parse(r.out);
    CHECK(list.at("apiVersion") == "v1");
    CHECK(list.at("kind") == "List");
    REQUIRE(list.at("items").size() == 1);
    const json& slice = list.at("items")[0];
    CHECK(slice.at("kind") == "ResourceSlice");
    CHECK(slice.at("metadata").at("generateName") == "n1-xpu.dra.dev-");
    CHECK(slice.at("metadata").at("ownerReferences")[0].at("name") == "n1");
    CHECK(slice.at("spec").at("nodeName") == "n1");
    CHECK(slice.at("spec").at("pool") ==
          json({{"name", "n1"}, {"generation", 1}, {"resourceSliceCount", 1}}));
    const json& devices = slice.at("spec").at("devices");
    REQUIRE(devices.size() == 8);
    CHECK(devices[0].at("attributes").at("leaf") == json({{"string", "leaf-3"}}));
    CHECK(devices[0].at("attributes").at("spine") == json({{"string", "s1"}}));
  }
  SECTION("devices held by claims move the free ones' order") {
    auto order = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> args = {"slices", "--inventory", inventory, "--mode", "attributes"};
      args.insert(args.end(), extra.begin(), extra.end());
      Result r = Run(args);
      INFO(r.err);
      REQUIRE(r.code == kExitOk);
      std::vector<std::string> names;
      const json list = json::parse(r.out);
      for (const auto& d : list.at("items")[0].at("spec").at("devices")) {
        names.push_back(d.at("name"));
      }
      return names;
    };
    const auto free = order({});
    // With three NPUs of ring 0 held, its last free NPU goes first: a single NPU should take
    // the ring with one free, as the 910 rule prefers.
    const auto held = order({std::string("--allocated"), std::string("npu-0,npu-1,npu-2")});
    REQUIRE(held.size() == 8);
    CHECK(held != free);
    CHECK(held[0] == "npu-3");
    Result bad = Run({"slices", "--inventory", inventory, "--allocated", "npu-0,gpu-9"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Contains("--allocated: \"gpu-9\" is not a device of the pool of"));
  }
  SECTION("groups mode in both shapes") {
    Result r135 = Run(
        {"slices", "--inventory", inventory, "--mode", "groups", "--kubernetes-version", "1.35"});
    INFO(r135.err);
    REQUIRE(r135.code == kExitOk);
    const json items = json::parse(r135.out).at("items");
    REQUIRE(items.size() == 2);
    CHECK_FALSE(items[0].at("spec").contains("devices"));  // 1.35+: counters only
    CHECK(items[0].at("spec").at("sharedCounters")[0].at("name") == "npu-members");
    // The same output as the committed golden.
    std::ifstream golden(fixtures + "slices-expected/atlas800-9000.groups.json");
    CHECK(json::parse(golden) == json::parse(r135.out));

    Result r134 = Run({"slices", "--inventory", inventory, "--mode=groups", "--kubernetes-version",
                       "1.34", "-o", "yaml"});
    REQUIRE(r134.code == kExitOk);
    CHECK_THAT(r134.out, StartsWith("apiVersion: v1\nitems:\n"));
    CHECK_THAT(r134.out, Contains("sharedCounters:"));
    CHECK_THAT(r134.out, Contains("resourceSliceCount: 1\n"));
  }
  SECTION("bad labels") {
    Result r = Run({"slices", "--inventory", inventory, "--label", "leaf"});
    CHECK(r.code == kExitUsage);
    CHECK_THAT(r.err, Contains("--label: expected key=value"));
  }
}

// The group devices of a List of objects: devices with groupSize > 1 or that consume counters.
int GroupDevices(const Result& r) {
  INFO(r.err);
  REQUIRE(r.code == kExitOk);
  const json list = json::parse(r.out);
  int groups = 0;
  for (const json& item : list.at("items")) {
    if (item.at("kind") != "ResourceSlice") continue;
    for (const json& d : item.at("spec").value("devices", json::array())) {
      const int size = d.value(json::json_pointer("/attributes/groupSize/int"), 1);
      groups += size > 1 || d.contains("consumesCounters");
    }
  }
  return groups;
}

TEST_CASE("the default publishing mode follows --kubernetes-version, and a configured one wins") {
  const std::string fixtures = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/";
  const std::string inventory = fixtures + "hosts-expected/hgx-h200.json";
  TempDir dir;
  const std::string attributes = dir.Write("attributes.yaml", "publishing: {mode: attributes}\n");
  const std::string groups = dir.Write("groups.yaml", "publishing: {mode: groups}\n");
  const auto slices = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"slices", "--inventory", inventory, "--node-name",
                                     "n1",     "-o",          "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return GroupDevices(Run(args));
  };
  SECTION("slices") {
    // Counters are on by default from 1.36: groups; alpha and off before: attributes.
    CHECK(slices({"--kubernetes-version", "1.34"}) == 0);
    CHECK(slices({"--kubernetes-version", "1.35"}) == 0);
    const int at136 = slices({"--kubernetes-version", "1.36"});
    CHECK(at136 > 0);
    CHECK(slices({"--kubernetes-version", "1.37"}) == at136);
    CHECK(slices({}) == at136);  // the newest supported, 1.37
    // The config's mode, or --mode, wins on every version.
    CHECK(slices({"--kubernetes-version", "1.37", "--config", attributes}) == 0);
    CHECK(slices({"--kubernetes-version", "1.36", "--mode", "attributes"}) == 0);
    CHECK(slices({"--kubernetes-version", "1.35", "--config", groups}) == at136);
    CHECK(slices({"--config", groups, "--mode", "attributes"}) == 0);
  }
  SECTION("render") {
    const std::string req = dir.Write(
        "req.yaml",
        "name: llm\naccelerator: {class: training-large-memory, count: 8, precision: bf16}\n");
    const std::string config = dir.Write(
        "attributes-class.yaml",
        "publishing: {mode: attributes}\ncapabilityClasses: [{name: training-large-memory, "
        "minMemory: 64Gi, precisions: [bf16]}]\n");
    const auto render = [&](std::vector<std::string> extra) {
      std::vector<std::string> args = {"render", "--request", req, "-o", "json"};
      args.insert(args.end(), extra.begin(), extra.end());
      const Result r = Run(args);
      INFO(r.err);
      REQUIRE(r.code == kExitOk);
      return r.out;
    };
    // Groups mode asks for one group device of the count.
    const std::string group = "groupSize == 8";
    CHECK_THAT(render({}), Contains(group));
    CHECK_THAT(render({"--kubernetes-version", "1.36"}), Contains(group));
    CHECK_THAT(render({"--kubernetes-version", "1.35"}), !Contains("groupSize"));
    CHECK_THAT(render({"--config", config}), !Contains("groupSize"));
    const Result bad = Run({"render", "--request", req, "--kubernetes-version", "1.38"});
    CHECK(bad.code == kExitUsage);
    CHECK_THAT(bad.err, Contains("--kubernetes-version: expected 1.34, 1.35, 1.36 or 1.37"));
  }
  SECTION("autoscaler-template") {
    const std::string group = fixtures + "nodegroups/hgx-h200.yaml";
    CHECK(GroupDevices(Run({"autoscaler-template", "--node-group", group})) > 0);
    CHECK(GroupDevices(Run({"autoscaler-template", "--node-group", group, "--kubernetes-version",
                            "1.35"})) == 0);
    CHECK(GroupDevices(
              Run({"autoscaler-template", "--node-group", group, "--config", attributes})) == 0);
  }
}

TEST_CASE("doctor prints the checklist of a fixture host as JSON") {
  const std::string host = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2";
  Result r = Run({"doctor", "--host-root", host, "-o", "json"});
  INFO(r.err << r.out);
  REQUIRE(r.code == kExitOk);  // warnings only: no vendor library here
  const json doc = json::parse(r.out);
  CHECK(doc.at("node") == "atlas800t-a2");
  const json& checks = doc.at("checks");
  CHECK(checks.size() >= 8);
  int fails = 0;
  for (const json& c : checks) {
    CHECK_FALSE(c.at("evidence").get<std::string>().empty());
    fails += c.at("status") == "fail";
  }
  CHECK(doc.at("summary").at("fail") == fails);
  CHECK(fails == 0);
  CHECK(checks[0].at("name") == "kernel");
  // The default config has an empty support matrix: every device passes it.
  bool support_seen = false;
  for (const json& c : checks) {
    if (c.at("name") != "support-matrix") continue;
    support_seen = true;
    CHECK(c.at("status") == "pass");
    CHECK_THAT(c.at("evidence").get<std::string>(), Contains("default config"));
  }
  CHECK(support_seen);
}

TEST_CASE("doctor exits 3 when a check fails") {
  const std::string hosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";
  Result broken = Run({"doctor", "--host-root", hosts + "atlas800t-a2-dcmi-broken"});
  CHECK(broken.code == kExitInfeasible);
  CHECK_THAT(broken.out, StartsWith("node atlas800t-a2-dcmi-broken\n"));
  CHECK_THAT(broken.out, Contains("fail  kubelet "));
  CHECK_THAT(broken.out, Contains("fail  container-runtime "));
  CHECK_THAT(broken.out, Contains("/dev/davinci6 missing"));

  // An old kubelet given by flag fails a host that passes otherwise.
  Result old =
      Run({"doctor", "--host-root", hosts + "atlas800t-a2", "--kubelet-version", "1.31.2"});
  CHECK(old.code == kExitInfeasible);
  CHECK_THAT(old.out, Contains("fail  kubelet "));

  // A support matrix the devices' driver is outside of.
  TempDir dir;
  const std::string config =
      dir.Write("config.json",
                R"({"apiVersion": "xpu.dra.dev/v1alpha1", "kind": "ControllerConfig",
          "supportMatrix": [{"vendor": "huawei", "family": "ascend910b", "driver": ">=25.0.0"}]})");
  Result unsupported = Run({"doctor", "--host-root", hosts + "atlas800t-a2", "--config", config});
  CHECK(unsupported.code == kExitInfeasible);
  CHECK_THAT(unsupported.out, Contains("fail  support-matrix "));
  CHECK_THAT(unsupported.out, Contains("driverVersion 24.1.0-rc3 outside >=25.0.0"));
}

TEST_CASE("doctor rejects a bad config, host root or output format with exit 2") {
  const std::string host = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2";
  TempDir dir;
  const std::string config =
      dir.Write("bad.yaml", "supportMatrix: [{vendor: huawei, driver: x}]\n");
  Result bad_config = Run({"doctor", "--host-root", host, "--config", config});
  CHECK(bad_config.code == kExitUsage);
  CHECK_THAT(bad_config.err, Contains("read config " + config));
  Result bad_root = Run({"doctor", "--host-root", dir.Path("missing")});
  CHECK(bad_root.code == kExitUsage);
  CHECK_THAT(bad_root.err, Contains("missing"));
  Result bad_format = Run({"doctor", "--host-root", host, "-o", "yaml"});
  CHECK(bad_format.code == kExitUsage);
  CHECK_THAT(bad_format.err, Contains("--output: expected text or json"));
  Result help = Run({"help", "doctor"});
  CHECK(help.code == kExitOk);
  CHECK_THAT(help.out, Contains("--kubelet-version X.Y.Z"));
}

// A request file under the temp dir.
std::string RequestFile(const std::string& name, const std::string& text) {
  std::string path = std::filesystem::temp_directory_path() / ("xpuctl-" + name + ".yaml");
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("render turns a request into a template, flavors and legacy classes") {
  const std::string req = RequestFile(
      "render",
      "name: llm\naccelerator: {class: training-large-memory, count: 8, precision: bf16}\n");
  // 1.35: attributes mode, whose subrequests carry the matchAttribute constraints.
  Result yaml = Run({"render", "--request", req, "--kubernetes-version", "1.35"});
  REQUIRE(yaml.code == kExitOk);
  CHECK_THAT(yaml.out, Contains("kind: ResourceClaimTemplate"));
  CHECK_THAT(yaml.out, Contains("kind: ResourceFlavor"));
  CHECK_THAT(yaml.out, Contains("extendedResourceName: nvidia.com/gpu"));
  CHECK_THAT(yaml.out, Contains("#   huawei: training-large-memory.huawei, matchAttribute"));
  Result js = Run({"render", "--request", req, "-o", "json", "--vendor", "huawei",
                   "--kubernetes-version", "1.35"});
  REQUIRE(js.code == kExitOk);
  const json list = json::parse(js.out);
  CHECK(list["kind"] == "List");
  const json& subs = list["items"][0]["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"];
  REQUIRE(subs.size() == 1);
  CHECK(subs[0]["name"] == "huawei");

  const std::string bad =
      RequestFile("render-bad", "name: llm\naccelerator: {class: no-such-class, count: 8}\n");
  Result unknown = Run({"render", "--request", bad});
  CHECK(unknown.code == kExitUsage);
  CHECK_THAT(unknown.err, Contains("accelerator.class") && Contains("no-such-class"));
  Result missing = Run({"render", "--request", "/nonexistent/req.yaml"});
  CHECK(missing.code == kExitUsage);
  CHECK_THAT(missing.err, Contains("/nonexistent/req.yaml"));

  // Driver files on (the default): no RuntimeClass anywhere; off for NVIDIA: the note names it.
  CHECK_THAT(yaml.out, !Contains("RuntimeClass"));
  Result off = Run({"render", "--request", req, "--cdi-driver-files", "nvidia=off"});
  REQUIRE(off.code == kExitOk);
  CHECK_THAT(off.out, Contains("#   nvidia: training-large-memory.nvidia") &&
                          Contains("RuntimeClass nvidia"));
  CHECK_THAT(off.out, Contains("# note: nvidia: driver files are off") &&
                          Contains("runtimeClassName: nvidia"));
  CHECK_THAT(off.out, !Contains("huawei: driver files are off"));
  Result bad_policy = Run({"render", "--request", req, "--cdi-driver-files", "acme=off"});
  CHECK(bad_policy.code == kExitUsage);
  CHECK_THAT(bad_policy.err, Contains("--cdi-driver-files") && Contains("acme"));
}

TEST_CASE("autoscaler-template prints slices, Cluster API annotations and the bindings") {
  const std::string group = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/nodegroups/hgx-h200.yaml";
  Result r = Run({"autoscaler-template", "--node-group", group});
  REQUIRE(r.code == kExitOk);
  const json list = json::parse(r.out);
  std::map<std::string, int> kinds;
  for (const json& item : list["items"]) ++kinds[item["kind"]];
  CHECK(kinds["ResourceSlice"] >= 1);
  CHECK(kinds["MachineDeployment"] == 1);
  CHECK(kinds["ResourceSliceTemplates"] == 1);
  Result bad = Run({"autoscaler-template", "--node-group", "/nonexistent/g.yaml"});
  CHECK(bad.code == kExitUsage);
  CHECK_THAT(bad.err, Contains("read node group /nonexistent/g.yaml"));
}

TEST_CASE("replay prints the solver policies' table and JSON, and writes the report") {
  TempDir dir;
  const std::string fleet = dir.Write("fleet.yaml", "nodes: [{model: atlas800-9000, count: 2}]\n");
  const std::string trace =
      dir.Write("jobs.csv", "#id,arrival,shape,duration\na,0,1,100\nb,0,4,100\nc,5,8+8,10\n");
  const Result text = Run({"replay", "--trace", trace, "--fleet", fleet, "--policy", "solver",
                           "--policy", "solver-node"});
  REQUIRE(text.code == kExitOk);
  CHECK_THAT(text.out, Contains("solver-node"));
  CHECK_THAT(text.out, Contains("fleet: 2 x atlas800-9000"));
  const std::string report = dir.Path("replay.html");
  const Result j = Run({"replay", "--trace", trace, "--fleet", fleet, "-o", "json", "--report",
                        report, "--write-trace", dir.Path("out.csv")});
  REQUIRE(j.code == kExitOk);
  const json doc = json::parse(j.out);
  CHECK(doc["policies"]["solver"]["placements"] == 3);
  CHECK(doc["policies"]["solver"]["queueDelayP95"] == 95.0);  // the gang waits for a and b
  std::ifstream html(report);
  std::stringstream page;
  page << html.rdbuf();
  CHECK_THAT(page.str(), Contains("<svg"));
  CHECK(std::filesystem::exists(dir.Path("out.csv")));
  const Result synthetic =
      Run({"replay", "--synthetic", "200", "--seed", "7", "--fleet", fleet, "-o", "json"});
  REQUIRE(synthetic.code == kExitOk);
  CHECK(json::parse(synthetic.out)["jobs"] == 200);
  CHECK(Run({"replay", "--synthetic", "200", "--seed", "7", "--fleet", fleet, "-o", "json"}).out ==
        synthetic.out);
}

TEST_CASE("replay names the trace line, and says what the stock policies need") {
  TempDir dir;
  const std::string fleet = dir.Write("fleet.yaml", "nodes: [{model: hgx-h200, count: 1}]\n");
  const std::string bad =
      dir.Write("bad.csv", "#id,arrival,shape,duration\n1,0,8,100\n2,5,8+x,100\n");
  const Result r = Run({"replay", "--trace", bad, "--fleet", fleet});
  CHECK(r.code == kExitUsage);
  CHECK_THAT(r.err, Contains("line 3, column shape"));
  const Result stock = Run({"replay", "--synthetic", "10", "--fleet", fleet, "--policy",
                            "stock-xpu", "--stock-allocator", "/nonexistent/stock-allocator"});
  CHECK(stock.code != kExitOk);
  CHECK_THAT(stock.err, Contains("/nonexistent/stock-allocator"));
  CHECK_THAT(stock.err, Contains("scripts/build-upstream"));
  CHECK(Run({"replay", "--synthetic", "10", "--trace", bad, "--fleet", fleet}).code == kExitUsage);
  CHECK(Run({"replay", "--synthetic", "10", "--fleet", fleet, "--policy", "best"}).code ==
        kExitUsage);
  CHECK(Run({"replay", "--synthetic", "10", "--fleet", fleet, "--node-order", "random"}).code ==
        kExitUsage);
  const Result missing = Run({"replay", "--synthetic", "10", "--fleet", dir.Path("none.yaml")});
  CHECK(missing.code == kExitUsage);
  CHECK_THAT(missing.err, Contains("read fleet"));
}

TEST_CASE("replay --partitions: partition jobs on a fleet discovered in MIG mode") {
  TempDir dir;
  const Result inventory =
      Run({"discover", "--host-root",
           std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/hgx-h200-mig", "-o", "json"});
  REQUIRE(inventory.code == kExitOk);
  dir.Write("mig.json", inventory.out);
  const std::string fleet = dir.Write(
      "fleet.yaml", "nodes: [{inventory: mig.json, count: 2}, {model: hgx-h200, count: 1}]\n");
  const Result r = Run({"replay", "--synthetic", "300", "--partitions", "0.7", "--fleet", fleet,
                        "--policy", "solver", "--policy", "solver-node", "-o", "json"});
  REQUIRE(r.code == kExitOk);
  const json doc = json::parse(r.out);
  CHECK(doc["trace"] == "synthetic 300 (seed 1, load 0.9, partitions 0.7)");
  CHECK(doc["policies"]["solver"]["partitionPlacements"].get<int>() > 150);
  CHECK(doc["policies"]["solver"]["rejected"] == 0);
  const Result text =
      Run({"replay", "--synthetic", "300", "--partitions", "0.7", "--fleet", fleet});
  CHECK_THAT(text.out, Contains("solver  partitions: "));

  const std::string plain = dir.Write("plain.yaml", "nodes: [{model: hgx-h200, count: 1}]\n");
  const Result none = Run({"replay", "--synthetic", "10", "--partitions", "0.5", "--fleet", plain});
  CHECK(none.code == kExitUsage);
  CHECK_THAT(none.err, Contains("--partitions: the fleet has no partitionable device"));
  CHECK(Run({"replay", "--synthetic", "10", "--partitions", "1.5", "--fleet", fleet}).code ==
        kExitUsage);
  const std::string trace = dir.Write("t.csv", "a,0,partition:1g.18gb,10\n");
  CHECK(Run({"replay", "--trace", trace, "--partitions", "0.5", "--fleet", fleet}).code ==
        kExitUsage);
  const Result file = Run({"replay", "--trace", trace, "--fleet", fleet, "-o", "json"});
  REQUIRE(file.code == kExitOk);
  CHECK(json::parse(file.out)["policies"]["solver"]["partitionPlacements"] == 1);
}

}  // namespace
}  // namespace xpu::cli
