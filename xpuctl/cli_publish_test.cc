// xpuctl's commands over a host and what gets published, applied and replayed: discover, slices,
// the publishing mode, doctor, render, autoscaler-template and replay.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "xpuctl/cli.h"
#include "xpuctl/cli_test_support.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli {
namespace {

using namespace cli_testing;  // NOLINT(google-build-using-namespace): the tests' helpers

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
    CHECK(slices({"--kubernetes-version", "1.38"}) == at136);
    CHECK(slices({}) == at136);  // the newest supported, 1.38
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
    CHECK_THAT(render({"--kubernetes-version", "1.38"}), Contains(group));
    CHECK_THAT(render({"--kubernetes-version", "1.35"}), !Contains("groupSize"));
    CHECK_THAT(render({"--config", config}), !Contains("groupSize"));
    const Result bad = Run({"render", "--request", req, "--kubernetes-version", "1.39"});
    CHECK(bad.code == kExitUsage);
    CHECK_THAT(bad.err, Contains("--kubernetes-version: expected 1.34, 1.35, 1.36, 1.37 or 1.38"));
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

// A request file in a folder of this test binary's own, removed when it ends.
std::string RequestFile(const std::string& name, const std::string& text) {
  static const TempDir dir;
  return dir.Write("xpuctl-" + name + ".yaml", text);
}

TEST_CASE("render turns a request into a template, flavors and legacy classes") {
  const std::string req = RequestFile(
      "render",
      "name: llm\naccelerator: {class: training-large-memory, count: 8, precision: bf16}\n");
  // 1.35: attributes mode, whose subrequests carry the matchAttribute constraints.
  Result yaml = Run({"render", "--request", req, "--kubernetes-version", "1.35"});
  REQUIRE(yaml.code == kExitOk);
  CheckContainsAll(yaml.out, {"kind: ResourceClaimTemplate", "kind: ResourceFlavor",
                              "extendedResourceName: nvidia.com/gpu",
                              "#   huawei: training-large-memory.huawei, matchAttribute"});
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
