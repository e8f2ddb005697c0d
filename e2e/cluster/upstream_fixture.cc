#include "e2e/cluster/upstream_fixture.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include "base/testing/require_ok.h"

namespace xpu::e2e::upstream {
namespace {

// As in the test files: the same aliases in the same (anonymous) namespace of a unity batch.
namespace kc = api::client;
using nlohmann::json;

namespace upstream_fixture_cc {

// Before 1.36 the taint, partitionable-device, extended-resource and consumable-capacity fields
// are alpha: the tests turn them on, as a cluster that wants them must (the fallback test turns
// partitionable devices off).
std::string GatesOn() {
  const int minor = RequestedMinor();
  return minor != 0 && minor < 36 ? "DRADeviceTaints=true,DRAPartitionableDevices=true,"
                                    "DRAExtendedResource=true,DRAConsumableCapacity=true"
                                  : "";
}

}  // namespace upstream_fixture_cc
}  // namespace

std::optional<std::string> NoPartitionCounters() {
  if (Upstream().minor() >= 35) return std::nullopt;
  return "1.34's shapes cannot carry partition counters; not checked on " + Upstream().version();
}

// The process-wide upstream control plane, started on first use.
Cluster& Upstream() {
  static std::unique_ptr<Cluster> cluster;
  if (cluster == nullptr) {
    ClusterOptions options;
    options.kind = ClusterKind::kUpstream;
    options.feature_gates = upstream_fixture_cc::GatesOn();
    // With DRADeviceTaints on, the scheduler and the controller-manager watch DeviceTaintRules,
    // served before 1.36 only by the alpha version.
    if (!options.feature_gates.empty()) options.runtime_config = "resource.k8s.io/v1alpha3=true";
    if (const char* gates = std::getenv("XPU_UPSTREAM_FEATURE_GATES"); gates != nullptr) {
      options.feature_gates = gates;
    }
    auto started = Cluster::Start(options);
    if (!started.ok()) FAIL(started.status().ToString());
    cluster = std::move(*started);
  }
  return *cluster;
}

std::string WorkDir(const std::string& name) { return Upstream().dir() + "/work-" + name; }

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

int MetricsPort(const ChildProcess& process) {
  const std::string log = process.Log();
  const auto at = log.find("(port ");
  return at == std::string::npos ? 0 : std::atoi(log.c_str() + at + 6);
}

// The value of one series of a /metrics page; -1 when absent.
double Metric(int port, const std::string& series) {
  const std::string page = HttpGet(port, "/metrics");
  const auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::atof(page.c_str() + at + series.size() + 2);
}

// The devices of claim ns/name once the scheduler allocated it (empty, failing, if not in 120 s).
std::vector<std::string> AllocationOnceMade(kc::Client& client, const std::string& ns,
                                            const std::string& name) {
  std::vector<std::string> devices;
  CHECK(WaitFor(
      [&] {
        auto got = client.Get(kc::ResourceClaims(), ns, name);
        if (got.ok()) devices = AllocatedDevices(*got);
        return !devices.empty();
      },
      std::chrono::seconds(120)));
  return devices;
}

// The tests here were written for attributes mode, which from 1.36 is no longer the default of
// a config that names none (groups is): a config without a mode gets attributes. The default by
// release is tested in controller/publish_mode_test.cc and by the demo and runtime tiers.
std::string WithAttributesMode(const std::string& config_yaml) {
  if (config_yaml.empty()) return kBuiltInConfigAttributes;
  if (config_yaml.find("mode:") != std::string::npos) return config_yaml;
  if (const size_t at = config_yaml.find("publishing:\n"); at != std::string::npos) {
    std::string out = config_yaml;
    out.insert(at + std::string("publishing:\n").size(), "  mode: attributes\n");
    return out;
  }
  return "publishing:\n  mode: attributes\n" + config_yaml;
}

// The fleet of a test: nodes named "<prefix>-<host>", their plugins run with `plugin_flags`.
Fleet StartFleet(const std::string& prefix, const std::vector<std::string>& hosts,
                 const std::string& config_yaml, const std::vector<std::string>& plugin_flags) {
  Fleet fleet;
  auto harness = DriverHarness::Create(Upstream(), WorkDir(prefix));
  REQUIRE_OK(harness);
  fleet.harness = std::move(*harness);
  REQUIRE_OK(fleet.harness->StartController(WithAttributesMode(config_yaml)));
  for (const auto& host : hosts) {
    std::string node = prefix;
    node.append("-").append(host);
    fleet.host_of[node] = host;
    REQUIRE_OK(fleet.harness->AddNode(node, host, {}, plugin_flags));
  }
  for (const auto& [node, host] : fleet.host_of) {
    const Status published = fleet.harness->WaitPublished(node, 1);
    INFO(fleet.harness->controller()->Log());
    REQUIRE_OK(published);
  }
  return fleet;
}

topology::Node TopologyOf(kc::Client& client, const std::string& node) {
  auto topo = NodeTopology(client, node);
  REQUIRE_OK(topo);
  return std::move(*topo);
}

std::string VendorOf(const json& device) {
  return device.value("/attributes/vendor/string"_json_pointer, "");
}

// Creates claim + pod `name` in `ns`, waits for the scheduler's allocation; the allocated
// "pool/device" names (empty when not allocated in time).
std::vector<std::string> Allocate(kc::Client& client, const std::string& ns,
                                  const std::string& name, const json& claim,
                                  const std::string& node, bool* unschedulable,
                                  std::chrono::milliseconds timeout) {
  REQUIRE_OK(client.Create(kc::ResourceClaims(), ns, claim));
  REQUIRE_OK(client.Create(Pods(), ns, PodObject(ns, name, name, node)));
  std::vector<std::string> devices;
  bool refused = false;
  // A pod refused on a stale view (a release the scheduler had not seen yet) is retried on the
  // next claim or slice event; only a refusal that lasts counts.
  std::optional<std::chrono::steady_clock::time_point> refused_since;
  WaitFor(
      [&] {
        auto got = client.Get(kc::ResourceClaims(), ns, name);
        if (got.ok()) devices = AllocatedDevices(*got);
        if (!devices.empty() || unschedulable == nullptr) return !devices.empty();
        // The scheduler's verdict on the free state as it is: PodScheduled False, Unschedulable.
        auto pod = client.Get(Pods(), ns, name);
        if (!pod.ok()) return false;
        bool now_refused = false;
        for (const auto& c : pod->value("/status/conditions"_json_pointer, json::array())) {
          if (c.value("type", "") == "PodScheduled" && c.value("reason", "") == "Unschedulable") {
            now_refused = true;
          }
        }
        if (!now_refused) return false;
        if (!refused_since) refused_since = std::chrono::steady_clock::now();
        refused = std::chrono::steady_clock::now() - *refused_since > std::chrono::seconds(12);
        return refused;
      },
      timeout);
  if (unschedulable != nullptr) *unschedulable = refused && devices.empty();
  return devices;
}

// Deletes pods (at once) and their claims of the same names.
void Release(const std::string& ns, const std::vector<std::string>& names, kc::Client& client) {
  REQUIRE_OK(ReleaseClaims(Upstream(), client, ns, names));
}

std::string DeviceOf(const std::string& pool_device) {
  return pool_device.substr(pool_device.find('/') + 1);
}

std::unique_ptr<ChildProcess> StartAgent(DriverHarness& harness, const std::string& node) {
  auto agent = StartNodeAgent(harness, node);
  REQUIRE_OK(agent);
  return std::move(*agent);
}

bool PodPhaseIs(kc::Client& client, const std::string& ns, const std::string& name,
                const std::string& phase) {
  auto got = client.Get(Pods(), ns, name);
  return got.ok() && got->value("/status/phase"_json_pointer, "") == phase;
}

// The scaleUpDomain constraint of the examples: every device of the request in one domain.
json SameDomain() {
  return json::array({{{"requests", {"devs"}}, {"matchAttribute", "xpu.dra.dev/scaleUpDomain"}}});
}

// The controller counts a fallback for the dropped `field`, and publishes the `devices` devices of
// `node` without `member`.
void CheckFallback(DriverHarness& harness, const std::string& field, const std::string& node,
                   size_t devices, const std::string& member) {
  INFO(harness.controller()->Log());
  int port = 0;
  REQUIRE(WaitFor([&] { return (port = MetricsPort(*harness.controller())) > 0; }));
  CHECK(WaitFor([&] {
    return Metric(port, "xpu_dra_controller_fallbacks_total{field=\"" + field + "\"}") >= 1;
  }));
  CHECK(WaitFor([&] {
    auto published = harness.PublishedDevices(node);
    if (!published.ok() || published->size() != devices) return false;
    return std::none_of(published->begin(), published->end(),
                        [&](const json& d) { return d.contains(member); });
  }));
}

// groups mode: a request for `size` devices is one group device.
json GroupClaim(const std::string& ns, const std::string& name, const std::string& klass,
                int size) {
  json claim = ClaimObject(ns, name, klass, 1);
  claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
      json::array({{{"cel",
                     {{"expression", "device.attributes[\"xpu.dra.dev\"].groupSize == " +
                                         std::to_string(size)}}}}});
  return claim;
}

// `claim` (one request, ClaimObject) narrowed by a CEL selector over the driver's attributes.
json WithSelector(json claim, const std::string& expression) {
  claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
      json::array({{{"cel", {{"expression", expression}}}}});
  return claim;
}

}  // namespace xpu::e2e::upstream
