// xpuctl accept: the command group's help, its flags and bad input, and `accept render`'s output
// against the goldens in xpuctl/accept/testdata/ (XPU_UPDATE_GOLDENS=1 rewrites them).
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/golden.h"
#include "xpuctl/cli.h"
#include "xpuctl/cli_test_support.h"

namespace xpu::cli {
namespace {

using namespace cli_testing;  // NOLINT(google-build-using-namespace): the tests' helpers

// The acceptance script's config: one class over two vendors, an image each.
constexpr std::string_view kAcceptConfig =
    "capabilityClasses:\n"
    "- {name: training-large-memory, vendors: [nvidia, huawei], minMemory: 64Gi, precisions: "
    "[bf16],\n"
    "   images: {nvidia: registry.example.com/acc/torch:cuda, huawei: "
    "registry.example.com/acc/torch:cann}}\n";

// `text` equals the golden testdata/<name> (XPU_UPDATE_GOLDENS=1 rewrites it).
void CheckAcceptGolden(const std::string& text, const std::string& name) {
  xpu::testing::CheckGolden(std::string(XPU_SOURCE_DIR) + "/xpuctl/accept/testdata/" + name, text,
                            "build/bin/xpuctl_test \"[accept]\"");
}

TEST_CASE("xpuctl accept: the group's help lists render, run and report", "[accept]") {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"accept", "--help"}, {"accept", "-h"}, {"help", "accept"}}) {
    const Result r = Run(args);
    CHECK(r.code == kExitOk);
    CHECK_THAT(r.out, StartsWith("usage: xpuctl accept <command> [flags]\n"));
    CheckContainsAll(r.out, {"\n  render    write a Job per vendor", "\n  run       apply the Jobs",
                             "\n  report    compare results"});
  }
  const Result bare = Run({"accept"});
  CHECK(bare.code == kExitUsage);
  CHECK(bare.out.empty());
  CHECK_THAT(bare.err, StartsWith("usage: xpuctl accept <command>"));
  // The main usage names the group once, not its commands.
  const std::string main = Run({"--help"}).out;
  CHECK_THAT(main, Contains("\n  accept    the acceptance kit"));
  CHECK_THAT(main, !Contains("accept render"));

  const Result render = Run({"accept", "render", "--help"});
  CHECK(render.code == kExitOk);
  CHECK_THAT(
      render.out,
      StartsWith("usage: xpuctl accept render --class NAME [--config FILE] [--vendors V,...] "
                 "[--stages S,...] [--gang M] [--count K] [--policy FILE] [--namespace NS] "
                 "[--name PREFIX] [--run-id ID] [--pod-patch FILE] "
                 "[--kubernetes-version 1.34|1.35|1.36|1.37|1.38] [--output yaml|json]\n"));
  CHECK(Run({"help", "accept", "render"}).out == render.out);
  const std::string run = Run({"accept", "run", "--help"}).out;
  CheckContainsAll(
      run, {"[--kubeconfig FILE]", "[--context NAME]", "--timeout DURATION", "[--results-dir DIR]",
            "[--label-nodes]", "[--keep]", "-o, --output text|json", "--pod-patch"});
  const std::string report = Run({"help", "accept", "report"}).out;
  CHECK_THAT(report, StartsWith("usage: xpuctl accept report [--baseline VENDOR] [--config FILE] "
                                "[--output html|json|text] [--out FILE] RESULT.json...\n"));
}

TEST_CASE("xpuctl accept: bad input exits 2 naming the field", "[accept]") {
  TempDir dir;
  const std::string config = dir.Write("cfg.yaml", std::string(kAcceptConfig));
  const std::string policy = dir.Write("bad-policy.yaml", "bogusThreshold: 1\n");
  const std::string list = dir.Write("list.yaml", "[1, 2]\n");
  const std::string cls = "training-large-memory";
  CheckUsageErrors({
      {{"accept", "bogus"}, "xpuctl accept: unknown command \"bogus\""},
      {{"accept", "render"}, "xpuctl accept render: --class is required"},
      {{"accept", "render", "--class", "no-such-class", "-o", "yaml"},
       "xpuctl accept render: --class: unknown capability class \"no-such-class\"; the config "
       "has training-large-memory, training-standard, inference"},
      {{"accept", "render", "--class", cls, "--config", config, "--vendors", "cambricon"},
       "xpuctl accept render: --vendors: \"cambricon\" is not allowed by class "
       "training-large-memory (allowed: nvidia, huawei)"},
      {{"accept", "render", "--class", cls, "--config", config, "--policy", policy},
       "xpuctl accept render: policy " + policy +
           ": bogusThreshold: unknown key; expected one of policyVersion, operators"},
      {{"accept", "render", "--class", cls, "--config", config, "--stages", "operators,gpu"},
       "xpuctl accept render: --stages: unknown stage \"gpu\""},
      {{"accept", "render", "--class", cls, "--config", config, "--gang", "1"},
       "xpuctl accept render: --gang: expected at least 2 nodes, got 1"},
      {{"accept", "render", "--class", cls, "--config", config, "--count", "0"},
       "xpuctl accept render: --count: expected a positive integer"},
      {{"accept", "render", "--class", cls, "--config", config, "--pod-patch", list},
       "xpuctl accept render: read pod patch " + list + ": expected a mapping"},
      {{"accept", "render", "--class", cls, "--config", config, "--policy", dir.Path("none")},
       "xpuctl accept render: read policy " + dir.Path("none") + ": cannot open the file"},
      {{"accept", "render", "--class", cls, "stray"},
       "xpuctl accept render: unexpected argument \"stray\""},
      {{"accept", "render", "--class", cls, "-o", "html"},
       "xpuctl accept render: --output: expected yaml or json"},
      {{"accept", "run", "--class", cls, "--config", config, "--kubeconfig", config, "--context",
        "nope"},
       "xpuctl accept run: load kubeconfig " + config + ": context \"nope\""},
      {{"accept", "report"}, "xpuctl accept report: at least one RESULT.json is required"},
      {{"accept", "report", "a.json", "--bogus"}, "xpuctl accept report: unknown flag --bogus"},
  });
}

TEST_CASE("xpuctl accept render: the acceptance script's class, as the goldens", "[accept]") {
  TempDir dir;
  const std::string config = dir.Write("cfg.yaml", std::string(kAcceptConfig));
  const std::vector<std::string> base = {"accept",   "render", "--class", "training-large-memory",
                                         "--config", config};
  const auto render = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    Result r = Run(args);
    INFO(r.err);
    REQUIRE(r.code == kExitOk);
    CHECK(r.err.empty());
    return r.out;
  };
  const std::string single = render({});
  CHECK_THAT(single, StartsWith("# accept training-large-memory: 2 Jobs in namespace default, run "
                                "render, stages environment,operators,convergence,performance,"
                                "power,stability,collectives\n"));
  CheckAcceptGolden(single, "render-single.yaml");
  CheckAcceptGolden(render({"--gang", "2", "--stages", "collectives,environment"}),
                    "render-gang.yaml");

  // JSON: a List of the same objects.
  const json list = json::parse(render({"-o", "json"}));
  CHECK(list.at("kind") == "List");
  REQUIRE(list.at("items").size() == 4);
  CHECK(list.at("items")[2].at("kind") == "Job");

  // A pod patch in YAML, and the flags that name things.
  const std::string patch = dir.Write("patch.yaml",
                                      "volumes: [{name: data, hostPath: {path: /data}}]\n"
                                      "nodeSelector: {pool: acceptance}\n"
                                      "containers:\n"
                                      "- name: workload\n"
                                      "  env: [{name: XPU_ACCEPT_DEVICE, value: cpu}]\n"
                                      "  volumeMounts: [{name: data, mountPath: /data}]\n");
  const json patched =
      json::parse(render({"--vendors", "huawei", "--pod-patch", patch, "--name", "site",
                          "--namespace", "acc", "--run-id", "r1", "-o", "json"}));
  REQUIRE(patched.at("items").size() == 2);
  const json& job = patched.at("items")[1];
  CHECK(job.at("metadata").at("name") == "site-huawei");
  CHECK(job.at("metadata").at("namespace") == "acc");
  CHECK(job.at("metadata").at("labels").at("xpu.dra.dev/accept-run") == "r1");
  const json& pod = job.at("spec").at("template").at("spec");
  CHECK(pod.at("nodeSelector") == json({{"pool", "acceptance"}}));
  CHECK(pod.at("volumes")[0].at("hostPath").at("path") == "/data");
  REQUIRE(pod.at("containers").size() == 1);  // merged into render's container by name
  const json& c = pod.at("containers")[0];
  CHECK(c.at("name") == "workload");
  CHECK(c.at("command") == json({"python3", "-m", "xpu_acceptance"}));
  CHECK(c.at("env").size() == 9);
  CHECK(c.at("env")[8] == json({{"name", "XPU_ACCEPT_DEVICE"}, {"value", "cpu"}}));
  CHECK(c.at("volumeMounts")[0].at("mountPath") == "/data");

  // A patch that takes the workload's claim away is refused.
  const std::string bad =
      dir.Write("bad.yaml", "resourceClaims: [{name: accelerators, resourceClaimName: mine}]\n");
  const Result refused = Run({"accept", "render", "--class", "training-large-memory", "--config",
                              config, "--pod-patch", bad});
  CHECK(refused.code != kExitOk);
  CHECK_THAT(refused.err,
             Catch::Matchers::Contains("--pod-patch: resourceClaims: the patch replaces claim "
                                       "\"accelerators\", which container \"workload\" uses"));
}

}  // namespace
}  // namespace xpu::cli
