// The upstream tier, allocation by the real kube-scheduler: every vendor fixture, the Ascend ring
// rule, firstAvailable, capability classes, device taints and groups mode. The shared fixture is
// in upstream_fixture.h.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "api/partitions.h"
#include "api/testing/resource_examples.h"
#include "base/name_list.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "controller/config.h"
#include "controller/device_classes.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "e2e/cluster/upstream_fixture.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::e2e::upstream {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

// ---- Allocation by the real kube-scheduler --------------------------------------------------

const std::vector<std::string>& AllHosts() {
  static const std::vector<std::string> hosts = {
      "atlas800-9000", "atlas800t-a2",        "atlas800t-a3",  "atlas200t-a2-box16",
      "hgx-h200",      "pcie-2numa-8gpu",     "gb200-tray",    "hygon-dcu-8",
      "metax-c500-8",  "cambricon-mlu370-x8", "enflame-s60-8", "mixed-gpu-nic"};
  return hosts;
}

TEST_CASE("upstream: one device, then a whole node, on every vendor fixture", "[allocation]") {
  Fleet fleet = StartFleet("v", AllHosts());
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "vendors"));
  int n = 0;
  for (const auto& [node, host] : fleet.host_of) {
    auto devices = fleet.harness->PublishedDevices(node);
    REQUIRE_OK(devices);
    // The fabric tiers of the Node's labels (e2e/fixtures/node-labels.json) on every device.
    auto labels = FixtureNodeLabels(host);
    REQUIRE_OK(labels);
    for (const auto& [label, attribute] : std::vector<std::pair<std::string, std::string>>{
             {"topology.xpu.dra.dev/leaf", "leaf"}, {"topology.xpu.dra.dev/spine", "spine"}}) {
      const auto want = labels->find(label);
      if (want == labels->end()) continue;
      for (const auto& d : *devices) {
        INFO(node << " " << d.value("name", "") << " attribute " << attribute);
        CHECK(d.value(json::json_pointer("/attributes/" + attribute + "/string"), "") ==
              want->second);
      }
    }
    std::map<std::string, int> per_vendor;
    for (const auto& d : *devices) ++per_vendor[VendorOf(d)];
    for (const auto& [vendor, count] : per_vendor) {
      INFO(node << " (" << host << "), vendor " << vendor << ", " << count << " devices");
      const std::string klass = vendor + ".xpu.dra.dev";
      const std::string one = "one-" + std::to_string(++n);
      auto got = Allocate(client, "vendors", one, ClaimObject("vendors", one, klass, 1), node);
      REQUIRE(got.size() == 1);
      CHECK(got[0].rfind(node + "/", 0) == 0);
      Release("vendors", {one}, client);
      const std::string all = "all-" + std::to_string(n);
      got = Allocate(client, "vendors", all, ClaimObject("vendors", all, klass, 0), node);
      CHECK(static_cast<int>(got.size()) == count);
      Release("vendors", {all}, client);
    }
  }
}

TEST_CASE("upstream: the Ascend 910 ring rule through attributes-mode ordering", "[allocation]") {
  Fleet fleet = StartFleet("ring", {"atlas800-9000"});
  kc::Client& client = fleet.harness->client();
  const std::string node = "ring-atlas800-9000";
  REQUIRE_OK(EnsureNamespace(client, "ring"));
  auto klass = "huawei.xpu.dra.dev";
  auto a = Allocate(client, "ring", "a", ClaimObject("ring", "a", klass, 2, SameDomain()), node);
  auto b = Allocate(client, "ring", "b", ClaimObject("ring", "b", klass, 4, SameDomain()), node);
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 4);
  auto ring = [](const std::vector<std::string>& set) {
    std::set<int> rings;
    for (const auto& d : set) rings.insert(std::atoi(d.c_str() + d.rfind('-') + 1) / 4);
    return rings;
  };
  CHECK(ring(a).size() == 1);
  CHECK(ring(b).size() == 1);
  CHECK(ring(a) != ring(b));
  // Eight without a domain constraint: none free enough while a and b hold six.
  Release("ring", {"a", "b"}, client);
  auto c = Allocate(client, "ring", "c", ClaimObject("ring", "c", klass, 8), node);
  CHECK(c.size() == 8);
  Release("ring", {"c"}, client);
}

// A capability class with an extended resource name, for the firstAvailable and
// extendedResourceName tests: 64Gi and bf16 leave the 910 (32Gi, no bf16) out and take H200s.
constexpr const char* kCapabilityConfig = R"(capabilityClasses:
- name: training-large-memory
  vendors: [huawei, nvidia]
  minMemory: 64Gi
  precisions: [bf16]
  extendedResourceName: example.com/training-large-memory
)";

TEST_CASE("upstream: firstAvailable falls back across vendors", "[allocation]") {
  Fleet fleet = StartFleet("fa", {"atlas800-9000", "hgx-h200"}, kCapabilityConfig);
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "fallback"));
  json claim = ClaimObject("fallback", "big", "unused", 1);
  claim["spec"]["devices"]["requests"][0] = {
      {"name", "devs"},
      {"firstAvailable",
       {{{"name", "huawei"}, {"deviceClassName", "training-large-memory.huawei"}, {"count", 8}},
        {{"name", "nvidia"}, {"deviceClassName", "training-large-memory.nvidia"}, {"count", 4}}}}};
  REQUIRE_OK(client.Create(kc::ResourceClaims(), "fallback", claim));
  REQUIRE_OK(client.Create(Pods(), "fallback", PodObject("fallback", "big", "big")));
  json allocated;
  REQUIRE(WaitFor([&] {
    auto got = client.Get(kc::ResourceClaims(), "fallback", "big");
    if (got.ok()) allocated = *got;
    return got.ok() && !AllocatedDevices(*got).empty();
  }));
  const auto results =
      allocated.value("/status/allocation/devices/results"_json_pointer, json::array());
  REQUIRE(results.size() == 4);
  for (const auto& r : results) {
    CHECK(r.value("request", "") == "devs/nvidia");
    CHECK(r.value("pool", "") == "fa-hgx-h200");
  }
  Release("fallback", {"big"}, client);
}

// Every template `xpuctl render` writes, on the demo's fleet (and an A2), is allocated by the
// real scheduler to a set that keeps the vendor's rules on the node it lands on.
TEST_CASE("upstream: rendered capability requests land on rule-keeping sets", "[allocation]") {
  const std::vector<std::string> hosts = {
      "atlas800-9000", "atlas800t-a2",    "atlas800t-a3", "atlas200t-a2-box16",
      "hgx-h200",      "pcie-2numa-8gpu", "hygon-dcu-8",  "cambricon-mlu370-x8"};
  Fleet fleet = StartFleet("rr", hosts);
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "render"));
  struct Case {
    std::string capability_class;
    int count;
    std::vector<std::string> vendors;
  };
  const std::vector<Case> cases = {
      {"training-large-memory", 8, {}},       {"inference", 8, {}},
      {"inference", 2, {"huawei"}},           {"inference", 3, {"huawei"}},
      {"inference", 4, {"huawei"}},           {"inference", 16, {"huawei"}},
      {"inference", 2, {"cambricon"}},        {"inference", 4, {"cambricon"}},
      {"training-large-memory", 3, {"hygon"}}};
  std::map<std::string, topology::Node> topologies;
  int n = 0;
  for (const Case& c : cases) {
    controller::CapabilityRequest request;
    request.name = "r" + std::to_string(++n);
    request.ns = "render";
    request.capability_class = c.capability_class;
    request.count = c.count;
    request.topology = "single-node";
    StatusOr<controller::Rendered> rendered =
        controller::Render(request, controller::RenderOptions{.vendors = c.vendors});
    INFO(c.capability_class << " x" << c.count << " " << JoinNames(c.vendors));
    REQUIRE_OK(rendered);
    const json& tpl = rendered->objects.at(0);
    REQUIRE(tpl["kind"] == "ResourceClaimTemplate");
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", request.name}, {"namespace", "render"}}},
                  {"spec", tpl["spec"]["spec"]}};
    const std::vector<std::string> got = Allocate(client, "render", request.name, claim, "");
    REQUIRE(static_cast<int>(got.size()) == c.count);
    const std::string pool = got[0].substr(0, got[0].find('/'));
    if (!topologies.contains(pool)) topologies.emplace(pool, TopologyOf(client, pool));
    const topology::Node& node = topologies.at(pool);
    topology::DeviceSet set;
    for (const std::string& d : got) {
      CHECK(d.substr(0, d.find('/')) == pool);
      const std::optional<int> id = node.FindDevice(DeviceOf(d));
      REQUIRE(id.has_value());
      set.Add(*id);
    }
    INFO("on " << pool << ": " << JoinNames(node.Names(set)));
    CHECK(topology::RuleAllows(node, set));
    Release("render", {request.name}, client);
  }
}

TEST_CASE("upstream: a capability class's extendedResourceName schedules a plain pod",
          "[allocation]") {
  if (Upstream().minor() < 36) {
    XPU_SKIP("DRAExtendedResource is not on by default before 1.36; not checked on " +
             Upstream().version());
  }
  Fleet fleet = StartFleet("er", {"atlas800-9000", "hgx-h200"}, kCapabilityConfig);
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "extended"));
  // No claim: the pod asks for the class's extended resource, the scheduler makes the claim.
  json pod = PodObject("extended", "plain", "");
  pod["spec"].erase("resourceClaims");
  pod["spec"]["containers"][0]["resources"] = {
      {"limits", {{"example.com/training-large-memory", "2"}}}};
  REQUIRE_OK(client.Create(Pods(), "extended", pod));
  json scheduled;
  const bool bound = WaitFor([&] {
    auto got = client.Get(Pods(), "extended", "plain");
    if (got.ok()) scheduled = *got;
    return got.ok() && !got->value("/spec/nodeName"_json_pointer, "").empty() &&
           got->contains("/status/extendedResourceClaimStatus/resourceClaimName"_json_pointer);
  });
  INFO(scheduled.dump(1));
  REQUIRE(bound);
  CHECK(scheduled.value("/spec/nodeName"_json_pointer, "") == "er-hgx-h200");
  const std::string claim =
      scheduled.value("/status/extendedResourceClaimStatus/resourceClaimName"_json_pointer, "");
  auto got = client.Get(kc::ResourceClaims(), "extended", claim);
  REQUIRE_OK(got);
  const auto devices = AllocatedDevices(*got);
  CHECK(devices.size() == 2);
  for (const auto& d : devices) CHECK(d.rfind("er-hgx-h200/", 0) == 0);
  REQUIRE_OK(DeletePodsNow(Upstream(), "extended", {"plain"}));
}

TEST_CASE("upstream: an unhealthy device is tainted and new claims avoid it", "[allocation]") {
  // The fake NVML of the fixture reports an XID 79 on one GPU.
  const std::string host = SourceDir() + "/e2e/fixtures/hosts/hgx-h200-unhealthy";
  ::setenv("XPU_FAKE_NVML_JSON", (host + "/fake-vendor/nvml.json").c_str(), 1);
  Fleet fleet;
  auto harness = DriverHarness::Create(Upstream(), WorkDir("taint"));
  REQUIRE_OK(harness);
  fleet.harness = std::move(*harness);
  REQUIRE_OK(fleet.harness->StartController(kBuiltInConfigAttributes));
  const std::string node = "taint-hgx-h200";
  REQUIRE_OK(fleet.harness->AddNode(node, "hgx-h200-unhealthy", {},
                                    {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR}));
  ::unsetenv("XPU_FAKE_NVML_JSON");
  std::string sick;
  REQUIRE(WaitFor([&] {
    auto devices = fleet.harness->PublishedDevices(node);
    if (!devices.ok() || devices->size() != 8) return false;
    for (const auto& d : *devices) {
      for (const auto& t : d.value("taints", json::array())) {
        if (t.value("key", "") == "xpu.dra.dev/unhealthy") sick = d.value("name", "");
      }
    }
    return !sick.empty();
  }));
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "taints"));
  // Seven GPUs fit around it; eight do not.
  auto seven = Allocate(client, "taints", "seven",
                        ClaimObject("taints", "seven", "nvidia.xpu.dra.dev", 7), node);
  REQUIRE(seven.size() == 7);
  for (const auto& d : seven) CHECK(DeviceOf(d) != sick);
  Release("taints", {"seven"}, client);
  bool refused = false;
  auto eight = Allocate(client, "taints", "eight",
                        ClaimObject("taints", "eight", "nvidia.xpu.dra.dev", 8), node, &refused);
  CHECK(eight.empty());
  CHECK(refused);
  Release("taints", {"eight"}, client);
}

TEST_CASE("upstream: a device failing under a running pod evicts it (NoExecute)", "[allocation]") {
  // A copy of the host root, so that the test can take a device node away as a dead chip does.
  const std::string work = WorkDir("evict");
  const std::string root = work + "/hosts/atlas800-9000";
  std::error_code ec;
  fs::create_directories(work + "/hosts", ec);
  fs::copy(SourceDir() + "/e2e/fixtures/hosts/atlas800-9000", root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  INFO(ec.message());
  REQUIRE(!ec);
  auto harness = DriverHarness::Create(Upstream(), work);
  REQUIRE_OK(harness);
  REQUIRE_OK((*harness)->StartController(
      "publishing:\n  mode: attributes\n  unhealthyEffect: NoExecute\n"));
  const std::string node = "evict-atlas800-9000";
  REQUIRE_OK((*harness)->AddNode(node, root));
  REQUIRE_OK((*harness)->WaitPublished(node, 8));
  auto agent = StartAgent(**harness, node);
  kc::Client& client = (*harness)->client();
  REQUIRE_OK(EnsureNamespace(client, "evict"));
  REQUIRE_OK(client.Create(kc::ResourceClaims(), "evict",
                           ClaimObject("evict", "one", "huawei.xpu.dra.dev", 1)));
  REQUIRE_OK(client.Create(Pods(), "evict", PodObject("evict", "one", "one", node)));
  REQUIRE(WaitFor([&] { return PodPhaseIs(client, "evict", "one", "Running"); },
                  std::chrono::seconds(90)));
  auto claim = client.Get(kc::ResourceClaims(), "evict", "one");
  REQUIRE_OK(claim);
  const auto allocated = AllocatedDevices(*claim);
  REQUIRE(allocated.size() == 1);
  const std::string device = DeviceOf(allocated[0]);
  auto published = (*harness)->PublishedDevice(node, device);
  REQUIRE_OK(published);
  const int index = published->value("/attributes/index/int"_json_pointer, -1);
  REQUIRE(index >= 0);
  // The chip goes: its device node disappears. The plugin's next probe reports it, the controller
  // taints it NoExecute, and upstream's device-taint eviction controller deletes the pod; the
  // node agent unprepares and removes it, as the kubelet would.
  REQUIRE(fs::remove(root + "/dev/davinci" + std::to_string(index)));
  const Status tainted =
      (*harness)->WaitDeviceTaint(node, device, "xpu.dra.dev/unhealthy", "NoExecute");
  INFO(tainted.ToString());
  CHECK(tainted.ok());
  CHECK(WaitFor(
      [&] { return client.Get(Pods(), "evict", "one").status().code() == StatusCode::kNotFound; },
      std::chrono::seconds(90)));
  auto events = Upstream().Kubectl({"get", "events", "-n", "evict", "-o", "json"});
  REQUIRE_OK(events);
  CHECK(events->find("DeviceTaintManagerEviction") != std::string::npos);
  // The claim outlives its pod (it is not from a template); with no consumer left, the
  // resourceclaim controller deallocates it.
  CHECK(WaitFor([&] {
    auto got = client.Get(kc::ResourceClaims(), "evict", "one");
    return got.ok() && got->value("/status/allocation"_json_pointer, json()).is_null();
  }));
  INFO((*harness)->controller()->Log());
  CHECK(agent->Stop() == 0);
}

TEST_CASE("upstream: with DRADeviceTaints off, tainted devices are left out of the slices",
          "[fallback]") {
  // From 1.38 no server drops taints: there is nothing to fall back from.
  if (std::string locked = GatesLockedOn("DRADeviceTaints and DRADeviceTaintRules", "taints");
      !locked.empty()) {
    XPU_SKIP(std::move(locked));
  }
  ClusterOptions options;
  options.kind = ClusterKind::kUpstream;
  // From 1.36 DeviceTaintRules have their own gate, which needs DRADeviceTaints.
  options.feature_gates = RequestedMinor() == 0 || RequestedMinor() >= 36
                              ? "DRADeviceTaints=false,DRADeviceTaintRules=false"
                              : "DRADeviceTaints=false";
  auto cluster = Cluster::Start(options);
  REQUIRE_OK(cluster);
  auto harness = DriverHarness::Create(**cluster, (*cluster)->dir() + "/work");
  REQUIRE_OK(harness);
  REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
  // The fake NVML of the fixture reports an XID 79 on one GPU.
  const std::string host = SourceDir() + "/e2e/fixtures/hosts/hgx-h200-unhealthy";
  ::setenv("XPU_FAKE_NVML_JSON", (host + "/fake-vendor/nvml.json").c_str(), 1);
  const std::string node = "fb-hgx-h200";
  REQUIRE_OK((*harness)->AddNode(node, "hgx-h200-unhealthy", {},
                                 {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR}));
  ::unsetenv("XPU_FAKE_NVML_JSON");
  // The server drops the taint; the controller sees that, counts it, and leaves the device out:
  // a scheduler that does not read taints cannot hand it out.
  CheckFallback(**harness, "taints", node, 7, "taints");
}

TEST_CASE("upstream: groups mode keeps 910 rings, A3 modules and Box16 areas", "[allocation]") {
  Fleet fleet = StartFleet("grp", {"atlas800-9000", "atlas800t-a3", "atlas200t-a2-box16"},
                           "publishing:\n  mode: groups\n");
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "groups"));
  int n = 0;
  for (const auto& [node, host] : fleet.host_of) {
    const topology::Node topo = TopologyOf(client, node);
    auto published = fleet.harness->PublishedDevices(node);
    REQUIRE_OK(published);
    std::set<int> sizes;
    for (const auto& d : *published) {
      sizes.insert(d.value("/attributes/groupSize/int"_json_pointer, 1));
    }
    for (int size : sizes) {
      if (size == 1) continue;
      const std::string name = "g" + std::to_string(++n);
      auto got = Allocate(client, "groups", name,
                          GroupClaim("groups", name, "huawei.xpu.dra.dev", size), node);
      INFO(node << " (" << host << ") group of " << size);
      REQUIRE(got.size() == 1);
      // The group device's members obey the node's rule set.
      const std::string group = DeviceOf(got[0]);
      bool found = false;
      for (const auto& d : *published) {
        if (d.value("name", "") != group) continue;
        found = true;
        std::vector<std::string> members;
        for (const auto& c : d.at("consumesCounters")) {
          for (const auto& [member, v] : c.at("counters").items()) members.push_back(member);
        }
        CHECK(static_cast<int>(members.size()) == size);
        auto set = topo.ParseDeviceList(JoinNames(members));
        REQUIRE_OK(set);
        CHECK(topology::RuleAllows(topo, *set));
      }
      CHECK(found);
      Release("groups", {name}, client);
    }
  }
}

// The allocator against the solver: random allocations and releases on a node; after each
// allocation, the real pick is compared with the solver's best set on the same free state.

}  // namespace
}  // namespace xpu::e2e::upstream
