// The driver as the chart runs it (a test of chart_test; the shared fixture is in
// chart_fixture.h): the controller and two plugins as the chart's service accounts, with tokens
// bound to Pods on their nodes, not as admin, publish and prepare the examples of
// deploy/examples/ in both modes, with no request refused by RBAC or the admission policies.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "api/client/client.h"
#include "base/testing/require_ok.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/chart_fixture.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"

namespace xpu::e2e::chart {
namespace {

namespace kc = api::client;
using nlohmann::json;

// ---- The driver as the chart runs it ------------------------------------------------------------

// The allocated devices ("pool/device") and the request names of the claim the Job's pod got,
// once the pod runs (the node agent has had our plugin prepare it).
struct JobRun {
  std::string node;
  std::vector<std::string> devices;
  std::set<std::string> requests;
};

JobRun RunExample(DriverHarness& harness, const std::string& ns, const std::string& file,
                  const std::string& job) {
  const std::string path = SourceDir() + "/deploy/examples/" + file;
  REQUIRE_OK(Upstream().Kubectl({"create", "-n", ns, "-f", path}));
  kc::Client& client = harness.client();
  json pod;
  const bool running = WaitFor(
      [&] {
        kc::ListOptions options;
        options.label_selector = "batch.kubernetes.io/job-name=" + job;
        auto pods = client.List(Pods(), ns, options);
        if (!pods.ok() || pods->items.size() != 1) return false;
        pod = pods->items[0];
        return pod.value("/status/phase"_json_pointer, "") == "Running";
      },
      std::chrono::seconds(120));
  INFO(file << ": " << pod.dump(1));
  REQUIRE(running);
  JobRun run;
  run.node = pod.value("/spec/nodeName"_json_pointer, "");
  const std::string claim =
      pod.value("/status/resourceClaimStatuses/0/resourceClaimName"_json_pointer, "");
  auto got = client.Get(kc::ResourceClaims(), ns, claim);
  REQUIRE_OK(got);
  run.devices = AllocatedDevices(*got);
  for (const auto& r :
       got->value("/status/allocation/devices/results"_json_pointer, json::array())) {
    run.requests.insert(r.value("request", ""));
  }
  // Gone again, with the pod (unprepared by the agent) and its claim, before the next example.
  REQUIRE_OK(Upstream().Kubectl({"delete", "-n", ns, "-f", path, "--wait=true"}));
  CHECK(WaitFor(
      [&] {
        auto left = client.List(kc::ResourceClaims(), ns);
        auto pods = client.List(Pods(), ns);
        return left.ok() && left->items.empty() && pods.ok() && pods->items.empty();
      },
      std::chrono::seconds(90)));
  return run;
}

// The /metrics page of one of our binaries (its port is in its log: "metrics on ... (port N)").
std::string MetricsPage(const ChildProcess& process) {
  const std::string log = process.Log();
  const auto at = log.find("(port ");
  REQUIRE(at != std::string::npos);
  return HttpGet(std::atoi(log.c_str() + at + 6), "/metrics");
}

// The series of `metric` (an api_requests_total{verb,code}) that count refused requests: 401,
// 403 (RBAC) or 422 (admission policies).
std::vector<std::string> Refused(const std::string& page, const std::string& metric) {
  std::vector<std::string> out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(metric + "{", 0) != 0) continue;
    for (const char* code : {"code=\"401\"", "code=\"403\"", "code=\"422\""}) {
      if (line.find(code) != std::string::npos) out.push_back(line);
    }
  }
  return out;
}

// The value of one series; -1 when absent.
double Series(const std::string& page, const std::string& series) {
  const auto at = page.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(page.c_str() + at + series.size() + 2);
}

bool Mentions(const std::string& log, const std::vector<std::string>& words) {
  std::string lower = log;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& w) { return lower.find(w) != std::string::npos; });
}

TEST_CASE("chart: the controller and two plugins run as the chart's service accounts", "[chart]") {
  EnsureChartApplied();
  auto made = DriverHarness::Create(Upstream(), WorkDir("driver"));
  REQUIRE_OK(made);
  DriverHarness& harness = **made;
  kc::Client& admin = harness.client();
  const std::map<std::string, std::string> hosts = {{"chart-a2", "atlas800t-a2"},
                                                    {"chart-h200", "hgx-h200"}};
  // The identities the chart's Pods would hold: the plugins' bound to Pods on their nodes.
  Identity ctl = MakeIdentity("xpu-dra-controller-test", kControllerSa, "");
  std::map<std::string, Identity> plugins;
  for (const auto& [node, host] : hosts) {
    plugins[node] = MakeIdentity("xpu-dra-plugin-" + node, kPluginSa, node);
    harness.SetPluginKubeconfig(node, plugins[node].kubeconfig);
  }
  harness.SetControllerKubeconfig(ctl.kubeconfig);
  // The controller on the chart's ConfigMap (defaults: attributes mode).
  const auto docs = Documents(Render("defaults", {}));
  const std::string attributes_config = Find(docs, "ConfigMap", "xpu-dra-controller-config")
                                            .value("/data/config.yaml"_json_pointer, "");
  REQUIRE_OK(harness.StartController(attributes_config));
  for (const auto& [node, host] : hosts) REQUIRE_OK(harness.AddNode(node, host));
  for (const auto& [node, host] : hosts) {
    const Status published = harness.WaitPublished(node, 8);
    INFO(harness.controller()->Log() << "\n" << harness.plugin(node)->Log());
    REQUIRE_OK(published);
  }
  // What they wrote under their own names: each node's inventory (owned by its Node) and
  // Lease, the leader Lease, the config's 34 DeviceClasses.
  for (const auto& [node, host] : hosts) {
    auto inventory = admin.Get(kc::NodeInventories(), "", node);
    REQUIRE_OK(inventory);
    CHECK(inventory->value("/metadata/ownerReferences/0/name"_json_pointer, "") == node);
    auto lease = admin.Get(kc::Leases(), kNs, "xpu-dra-plugin-" + node);
    REQUIRE_OK(lease);
    CHECK(lease->value("/spec/holderIdentity"_json_pointer, "") == node);
  }
  auto leader = admin.Get(kc::Leases(), kNs, "xpu-dra-controller");
  REQUIRE_OK(leader);
  CHECK(!leader->value("/spec/holderIdentity"_json_pointer, "").empty());
  kc::ListOptions managed;
  managed.label_selector = "app.kubernetes.io/managed-by=xpu-dra-controller";
  CHECK(WaitFor([&] {
    auto classes = admin.List(kc::DeviceClasses(), "", managed);
    return classes.ok() &&
           classes->items.size() == 38;  // vendors, capability classes, gang, partitions
  }));

  // The examples, through a node agent per node (the kubelet's part): allocated by the
  // scheduler over the controller's slices, prepared by the plugins (which read the claims as
  // their service account).
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (const auto& [node, host] : hosts) {
    auto agent = StartNodeAgent(harness, node);
    REQUIRE_OK(agent);
    agents.push_back(std::move(*agent));
  }
  const std::string ns = "chart-examples";
  REQUIRE_OK(EnsureNamespace(admin, ns));
  auto pools = [](const JobRun& run) {
    std::set<std::string> out;
    for (const auto& d : run.devices) out.insert(d.substr(0, d.find('/')));
    return out;
  };
  JobRun npus = RunExample(harness, ns, "npu-8-attributes.yaml", "npu-8-attributes");
  CHECK(npus.node == "chart-a2");
  CHECK(npus.devices.size() == 8);
  CHECK(pools(npus) == std::set<std::string>{"chart-a2"});
  JobRun gpus = RunExample(harness, ns, "gpu-4-nvlink.yaml", "gpu-4-nvlink");
  CHECK(gpus.node == "chart-h200");
  CHECK(gpus.devices.size() == 4);
  CHECK(pools(gpus) == std::set<std::string>{"chart-h200"});
  JobRun first = RunExample(harness, ns, "mixed-first-available.yaml", "accel-first-available");
  CHECK(first.devices.size() == 4);
  CHECK(first.requests == std::set<std::string>{"accel/nvidia"});
  JobRun capability = RunExample(harness, ns, "capability-class.yaml", "training-large-memory");
  CHECK(capability.devices.size() == 1);
  CHECK((capability.node == "chart-a2" || capability.node == "chart-h200"));

  // The first controller's API answers: its writes went through (201 Created), none refused.
  const std::string controller_page = MetricsPage(*harness.controller());
  INFO(controller_page);
  CHECK(Series(controller_page,
               "xpu_dra_controller_api_requests_total{verb=\"create\",code=\"201\"}") > 0);
  CHECK(Refused(controller_page, "xpu_dra_controller_api_requests_total").empty());

  // groups mode: the controller restarted on the groups rendering's config publishes the
  // aligned groups; the group example gets one group device of eight.
  const auto groups_docs = Documents(Render("groups", {"publishing.mode=groups"}));
  REQUIRE_OK(harness.StartController(Find(groups_docs, "ConfigMap", "xpu-dra-controller-config")
                                         .value("/data/config.yaml"_json_pointer, "")));
  const bool grouped = WaitFor(
      [&] {
        auto devices = harness.PublishedDevices("chart-a2");
        return devices.ok() && std::any_of(devices->begin(), devices->end(), [](const json& d) {
                 return d.value("/attributes/groupSize/int"_json_pointer, 0) == 8;
               });
      },
      std::chrono::seconds(90));
  INFO(harness.controller()->Log());
  REQUIRE(grouped);
  JobRun group = RunExample(harness, ns, "npu-8-groups.yaml", "npu-8-groups");
  CHECK(group.node == "chart-a2");
  CHECK(group.devices.size() == 1);
  CHECK(pools(group) == std::set<std::string>{"chart-a2"});

  // Nothing was refused along the way: RBAC and the policies let through all the code does.
  // The plugins prepared the claims (reading them as their service account).
  for (const auto& [node, host] : hosts) {
    const std::string page = MetricsPage(*harness.plugin(node));
    INFO(node << "\n" << page);
    CHECK(Refused(page, "xpu_dra_plugin_api_requests_total").empty());
    CHECK(Series(page, "xpu_dra_plugin_prepare_claims_total{result=\"ok\"}") >= 2);
    CHECK(Series(page, "xpu_dra_plugin_prepare_claims_total{result=\"error\"}") <= 0);
  }
  const std::string groups_page = MetricsPage(*harness.controller());
  INFO(groups_page);
  CHECK(Refused(groups_page, "xpu_dra_controller_api_requests_total").empty());
  for (auto& agent : agents) CHECK(agent->Stop() == 0);
  const std::vector<std::string> refusals = {"forbidden", "denied request", " 403 "};
  INFO(harness.controller()->Log());
  CHECK_FALSE(Mentions(harness.controller()->Log(), refusals));
  for (const auto& [node, host] : hosts) {
    INFO(node << ": " << harness.plugin(node)->Log());
    CHECK_FALSE(Mentions(harness.plugin(node)->Log(), refusals));
  }
  // The first controller's log, from before the restart.
  const std::string first_log = ReadFile(WorkDir("driver") + "/controller-1.log");
  INFO(first_log);
  CHECK_FALSE(Mentions(first_log, refusals));
  REQUIRE_OK(Upstream().Kubectl({"delete", "namespace", ns, "--wait=false"}));
}

}  // namespace
}  // namespace xpu::e2e::chart
