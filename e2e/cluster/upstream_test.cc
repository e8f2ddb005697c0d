// The driver against the real Kubernetes control plane (scripts/cluster: etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager built from pinned sources), and, where it makes sense,
// the same checks against kube-sim. One control plane serves every test case of a process; ctest
// runs one process per tag ([admission], [allocation], [liveness], [e2e]).
//
// XPU_UPSTREAM_VERSION picks the release (default: the newest pinned). Results that the README
// reports (the allocator's agreement with the solver) go to $XPU_UPSTREAM_REPORT_DIR (default
// the working directory) as upstream-agreement-<version>.json.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
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

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "api/partitions.h"
#include "api/testing/resource_examples.h"
#include "base/name_list.h"
#include "base/testing/require_ok.h"
#include "controller/config.h"
#include "controller/device_classes.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::e2e {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

// ---- Shared fixtures ---------------------------------------------------------------------------

// The minor version asked for with XPU_UPSTREAM_VERSION ("1.34.4" -> 34); 0 for the newest.
int RequestedMinor() {
  const char* v = std::getenv("XPU_UPSTREAM_VERSION");
  if (v == nullptr || std::string(v).find('.') == std::string::npos) return 0;
  return std::atoi(std::strchr(v, '.') + 1);
}

// Before 1.36 the taint, partitionable-device, extended-resource and consumable-capacity fields
// are alpha: the tests turn them on, as a cluster that wants them must (the fallback test turns
// partitionable devices off).
std::string GatesOn() {
  const int minor = RequestedMinor();
  return minor != 0 && minor < 36 ? "DRADeviceTaints=true,DRAPartitionableDevices=true,"
                                    "DRAExtendedResource=true,DRAConsumableCapacity=true"
                                  : "";
}

// The process-wide upstream control plane, started on first use.
Cluster& Upstream() {
  static std::unique_ptr<Cluster> cluster;
  if (cluster == nullptr) {
    ClusterOptions options;
    options.kind = ClusterKind::kUpstream;
    options.feature_gates = GatesOn();
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

// The first place where `sent` is not in `got` (every key and array element of `sent` must be
// there with the same value; keys the server added, its defaults, are ignored); "" when none.
std::string Missing(const json& sent, const json& got, const std::string& path = "") {
  if (sent.is_object()) {
    if (!got.is_object()) return path + " (not an object)";
    for (const auto& [k, v] : sent.items()) {
      std::string at = path;
      at.append("/").append(k);
      if (!got.contains(k)) return at + " dropped";
      if (auto m = Missing(v, got.at(k), at); !m.empty()) return m;
    }
    return "";
  }
  if (sent.is_array()) {
    if (!got.is_array() || got.size() != sent.size()) return path + " (array length)";
    for (size_t i = 0; i < sent.size(); ++i) {
      if (auto m = Missing(sent[i], got[i], path + "/" + std::to_string(i)); !m.empty()) return m;
    }
    return "";
  }
  return sent == got ? "" : path + ": sent " + sent.dump() + ", got " + got.dump();
}

// Checks that the server kept everything sent (see Missing), naming the first difference.
void CheckKept(const json& sent, const json& got) {
  const std::string missing = Missing(sent, got);
  INFO(missing);
  CHECK(missing.empty());
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

// ---- Admission -------------------------------------------------------------------------------

// Whether the server's shapes carry partition counters (1.35+); warns when not.
bool PartitionCountersServed() {
  if (Upstream().minor() >= 35) return true;
  WARN("1.34's shapes cannot carry partition counters; not checked on " << Upstream().version());
  return false;
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

TEST_CASE("upstream: the pinned control plane serves resource.k8s.io/v1", "[admission]") {
  Cluster& cluster = Upstream();
  auto client = cluster.NewClient();
  REQUIRE_OK(client);
  auto version = (*client)->GetPath("/version");
  REQUIRE_OK(version);
  CHECK(version->value("gitVersion", "") == cluster.version());
  CHECK(cluster.minor() >= 34);
  auto served = (*client)->ResourceApiVersion();
  REQUIRE_OK(served);
  CHECK(*served == api::resource::ResourceVersion::kV1);
  // The components that make it a control plane, each answering as itself.
  auto kubectl = cluster.Kubectl({"get", "--raw", "/readyz?verbose"});
  REQUIRE_OK(kubectl);
  CHECK(kubectl->find("readyz check passed") != std::string::npos);
}

TEST_CASE("upstream: our CRDs are admitted, and a fixture NodeInventory validates against them",
          "[admission]") {
  Cluster& cluster = Upstream();
  auto applied = cluster.Kubectl({"apply", "--server-side", "-f", SourceDir() + "/deploy/crds/"});
  REQUIRE_OK(applied);
  auto established =
      cluster.Kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                       "crd/nodeinventories.xpu.dra.dev", "crd/acceleratorgangs.xpu.dra.dev"});
  REQUIRE_OK(established);
  auto client = cluster.NewClient();
  REQUIRE_OK(client);
  // Every committed inventory golden is admitted by the CRD's schema, status included.
  int admitted = 0;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/e2e/fixtures/hosts-expected")) {
    if (entry.path().extension() != ".json") continue;
    json inventory = ReadJson(entry.path());
    const std::string name = "adm-" + entry.path().stem().string();
    inventory["metadata"] = {{"name", name}};
    json status = inventory["status"];
    auto created = (*client)->Create(kc::NodeInventories(), "", inventory);
    INFO(entry.path().filename().string());
    REQUIRE_OK(created);
    (*created)["status"] = status;
    auto updated = (*client)->UpdateStatus(kc::NodeInventories(), "", *created);
    REQUIRE_OK(updated);
    CheckKept(status, updated->value("status", json::object()));
    CHECK((*client)->Delete(kc::NodeInventories(), "", name).ok());
    ++admitted;
  }
  CHECK(admitted >= 12);
}

// Creates every slice of every golden (both modes) and checks that nothing was dropped; deletes
// them again. Run on both kinds of cluster.
void CheckGoldenSlicesAdmitted(kc::Client& client, const std::string& where) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/e2e/fixtures/slices-expected")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const json list = ReadJson(entry.path());
    std::vector<std::string> created_names;
    for (json slice : list.at("items")) {
      // Not owned by a real Node here; the garbage collector would remove it mid-check.
      slice["metadata"].erase("ownerReferences");
      const json spec = slice["spec"];
      auto created = client.Create(kc::ResourceSlices(), "", slice);
      INFO(where << ": " << entry.path().filename().string());
      REQUIRE_OK(created);
      CheckKept(spec, created->value("spec", json::object()));
      created_names.push_back(created->at("metadata").value("name", ""));
    }
    for (const auto& name : created_names) {
      CHECK(client.Delete(kc::ResourceSlices(), "", name).ok());
    }
  }
  CHECK(files >= 30);
}

TEST_CASE("upstream: the controller's slices for every fixture host, both modes, are admitted",
          "[admission]") {
  // The goldens are the 1.35 shapes (a counter set in a slice of its own); 1.34 gets its own
  // shape from the controller, which the allocation tests publish.
  if (Upstream().minor() < 35) {
    WARN("the 1.35 golden shapes are not checked on " << Upstream().version());
    return;
  }
  auto client = Upstream().NewClient();
  REQUIRE_OK(client);
  CheckGoldenSlicesAdmitted(**client, "upstream " + Upstream().version());
}

TEST_CASE("kube-sim admits the same slices", "[kubesim]") {
  auto sim = Cluster::Start({});
  REQUIRE_OK(sim);
  auto client = (*sim)->NewClient();
  REQUIRE_OK(client);
  CheckGoldenSlicesAdmitted(**client, "kube-sim");
}

TEST_CASE("upstream: example claims, templates and classes are admitted", "[admission]") {
  auto client = Upstream().NewClient();
  REQUIRE_OK(client);
  // The example claim asks for admin access, which the API server allows only in a namespace
  // labelled for it.
  REQUIRE_OK((*client)->Create(
      kc::Namespaces(), "",
      {{"apiVersion", "v1"},
       {"kind", "Namespace"},
       {"metadata",
        {{"name", "examples"}, {"labels", {{"resource.kubernetes.io/admin-access", "true"}}}}}}));
  json klass = ToJson(api::testing::ExampleDeviceClass());
  json claim = ToJson(api::testing::ExampleResourceClaim());
  json templ = ToJson(api::testing::ExampleResourceClaimTemplate());
  claim["metadata"]["namespace"] = "examples";
  templ["metadata"]["namespace"] = "examples";
  // Server-set fields do not go into a create (the API server refuses a resourceVersion).
  for (json* o : {&klass, &claim, &templ}) {
    o->erase("status");
    for (const char* f : {"resourceVersion", "uid", "creationTimestamp", "generation"}) {
      (*o)["metadata"].erase(f);
    }
  }
  auto k = (*client)->Create(kc::DeviceClasses(), "", klass);
  REQUIRE_OK(k);
  CheckKept(klass["spec"], k->value("spec", json::object()));
  auto c = (*client)->Create(kc::ResourceClaims(), "examples", claim);
  REQUIRE_OK(c);
  CheckKept(claim["spec"], c->value("spec", json::object()));
  auto t = (*client)->Create(kc::ResourceClaimTemplates(), "examples", templ);
  REQUIRE_OK(t);
  CheckKept(templ["spec"], t->value("spec", json::object()));
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

TEST_CASE("upstream tests: kBuiltInConfigAttributes is the built-in config in attributes mode",
          "[admission]") {
  StatusOr<controller::Config> parsed = controller::ParseConfig(kBuiltInConfigAttributes);
  REQUIRE_OK(parsed);
  controller::Config want = controller::DefaultConfig();
  want.mode = controller::PublishMode::kAttributes;
  CHECK(*parsed == want);
}

TEST_CASE("upstream: the controller's DeviceClasses are admitted, their CEL compiled",
          "[admission]") {
  // What the controller's built-in defaults ask for, each to be found on the real server with
  // the selectors as written (a CEL expression the server cannot compile is rejected).
  const auto desired = controller::DesiredDeviceClasses(controller::DefaultConfig(), "xpu.dra.dev");
  REQUIRE(desired.size() >= 12);
  auto harness = DriverHarness::Create(Upstream(), WorkDir("classes"));
  REQUIRE_OK(harness);
  REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
  kc::Client& client = (*harness)->client();
  for (const auto& klass : desired) {
    const json want = ToJson(klass);
    const std::string name = want.at("metadata").value("name", "");
    StatusOr<json> got = NotFoundError(name);
    WaitFor([&] {
      got = client.Get(kc::DeviceClasses(), "", name);
      return got.ok();
    });
    INFO(name << "\n" << (*harness)->controller()->Log());
    REQUIRE_OK(got);
    CheckKept(want.at("spec"), got->value("spec", json::object()));
  }
  CHECK((*harness)->controller()->Log().find("deviceclass") == std::string::npos);
}

// ---- Allocation by the real kube-scheduler --------------------------------------------------

// One fixture host per node, our plugin on each, the controller in one mode.
struct Fleet {
  std::unique_ptr<DriverHarness> harness;
  std::map<std::string, std::string> host_of;  // node -> fixture host
};

const std::vector<std::string>& AllHosts() {
  static const std::vector<std::string> hosts = {
      "atlas800-9000", "atlas800t-a2",        "atlas800t-a3",  "atlas200t-a2-box16",
      "hgx-h200",      "pcie-2numa-8gpu",     "gb200-tray",    "hygon-dcu-8",
      "metax-c500-8",  "cambricon-mlu370-x8", "enflame-s60-8", "mixed-gpu-nic"};
  return hosts;
}

// The fleet of a test: nodes named "<prefix>-<host>", their plugins run with `plugin_flags`.
Fleet StartFleet(const std::string& prefix, const std::vector<std::string>& hosts,
                 const std::string& config_yaml = "",
                 const std::vector<std::string>& plugin_flags = {}) {
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
                                  const std::string& node, bool* unschedulable = nullptr,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
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

// The scaleUpDomain constraint of the examples: every device of the request in one domain.
json SameDomain() {
  return json::array({{{"requests", {"devs"}}, {"matchAttribute", "xpu.dra.dev/scaleUpDomain"}}});
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
    WARN("DRAExtendedResource is not on by default before 1.36; not checked on "
         << Upstream().version());
    return;
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

TEST_CASE("upstream: with DRADeviceTaints off, tainted devices are left out of the slices",
          "[fallback]") {
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
struct Agreement {
  int placements = 0;                // requests the solver could place
  int as_good = 0;                   // allocated, rule-valid and scored as well as the solver's set
  int rules_hold = 0;                // allocated sets that obey the vendor rules
  int unschedulable = 0;             // refused by the scheduler although the solver found a set
  json differences = json::array();  // where the allocator's set was worse: free, picked, solver
};

// The controller re-orders a pool after an allocation or a release (debounced), and a burst of
// claims may outrun it: each claim must meet the order its free state asks for.
bool WaitReordered(DriverHarness& harness, const std::string& node, bool groups,
                   const std::set<std::string>& held) {
  const Status s = harness.WaitPublishedOrder(node, groups, held, std::chrono::seconds(10));
  INFO(s.ToString());
  return s.ok();
}

Agreement RunSequence(Fleet& fleet, const std::string& node, const std::string& ns, bool groups,
                      int steps, uint32_t seed) {
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, ns));
  const topology::Node topo = TopologyOf(client, node);
  const int total = topo.size();
  // A request that fits one scale-up domain asks for one (as the examples do); a larger one,
  // such as all eight NPUs of two 910 rings, cannot.
  std::map<std::string, int> domain_sizes;
  auto published = fleet.harness->PublishedDevices(node);
  REQUIRE_OK(published);
  for (const auto& d : *published) {
    if (d.value("/attributes/groupSize/int"_json_pointer, 1) != 1) continue;
    ++domain_sizes[d.value("/attributes/scaleUpDomain/string"_json_pointer, "")];
  }
  int largest_domain = 0;
  for (const auto& [domain, size] : domain_sizes) largest_domain = std::max(largest_domain, size);
  std::mt19937 rng(seed);
  auto inventory = client.Get(kc::NodeInventories(), "", node);
  REQUIRE_OK(inventory);
  std::map<std::string, topology::DeviceSet> held;             // claim -> physical devices
  std::map<std::string, std::vector<std::string>> held_names;  // claim -> allocated devices
  auto held_devices = [&] {
    std::set<std::string> names;
    for (const auto& [claim, list] : held_names) names.insert(list.begin(), list.end());
    return names;
  };
  topology::DeviceSet used;
  Agreement result;
  for (int step = 0; step < steps; ++step) {
    const int free_count = total - used.size();
    std::vector<int> counts;
    for (int c : {1, 2, 4, 8}) {
      if (c > free_count || c > total) continue;
      if (topology::Solve(topo, topo.All() - used, c).feasible) counts.push_back(c);
    }
    if (counts.empty() || (!held.empty() && rng() % 3 == 0)) {
      auto it = held.begin();
      std::advance(it, static_cast<long>(rng() % held.size()));  // NOLINT(google-runtime-int)
      used = used - it->second;
      Release(ns, {it->first}, client);
      held_names.erase(it->first);
      held.erase(it);
      CHECK(WaitReordered(*fleet.harness, node, groups, held_devices()));
      continue;
    }
    const int count = counts[rng() % counts.size()];
    const topology::DeviceSet free = topo.All() - used;
    const auto best = topology::Solve(topo, free, count);
    const std::string name = "s" + std::to_string(step);
    json claim = groups && count > 1
                     ? GroupClaim(ns, name, "huawei.xpu.dra.dev", count)
                     : ClaimObject(ns, name, "huawei.xpu.dra.dev", count,
                                   count <= largest_domain ? SameDomain() : json::array());
    bool refused = false;
    auto got = Allocate(client, ns, name, claim, node, &refused);
    INFO(node << " step " << step << " count " << count);
    ++result.placements;
    if (refused) {  // groups mode: no aligned group of that size is wholly free
      ++result.unschedulable;
      Release(ns, {name}, client);
      continue;
    }
    REQUIRE(!got.empty());
    std::vector<std::string> devices;
    for (const auto& g : got) devices.push_back(DeviceOf(g));
    if (groups && count > 1) {  // expand the group device into its members
      for (const auto& d : *published) {
        if (d.value("name", "") != devices[0]) continue;
        devices.clear();
        for (const auto& c : d.at("consumesCounters")) {
          for (const auto& [member, v] : c.at("counters").items()) devices.push_back(member);
        }
      }
    }
    auto picked = topo.ParseDeviceList(JoinNames(devices));
    REQUIRE_OK(picked);
    REQUIRE(picked->size() == count);
    CHECK((*picked & used).empty());
    const bool rules = topology::RuleAllows(topo, *picked);
    result.rules_hold += rules ? 1 : 0;
    const bool good = rules && !best.score.BetterThan(topology::Evaluate(topo, free, *picked));
    result.as_good += good ? 1 : 0;
    if (!good) {
      result.differences.push_back({{"step", step},
                                    {"count", count},
                                    {"free", JoinNames(topo.Names(free))},
                                    {"allocator", JoinNames(topo.Names(*picked))},
                                    {"solver", JoinNames(topo.Names(best.devices))}});
    }
    used = used | *picked;
    held[name] = *picked;
    for (const auto& g : got) held_names[name].push_back(DeviceOf(g));
    CHECK(WaitReordered(*fleet.harness, node, groups, held_devices()));
  }
  std::vector<std::string> left;
  for (const auto& [name, set] : held) left.push_back(name);
  Release(ns, left, client);
  return result;
}

void Report(const std::string& key, const Agreement& a) {
  const char* dir = std::getenv("XPU_UPSTREAM_REPORT_DIR");
  const std::string path = std::string(dir != nullptr ? dir : ".") + "/upstream-agreement-" +
                           Upstream().version() + ".json";
  json all = json::object();
  if (std::ifstream in(path); in.good()) all = json::parse(in, nullptr, false);
  if (all.is_discarded()) all = json::object();
  all[key] = {{"placements", a.placements},
              {"asGoodAsSolver", a.as_good},
              {"rulesHold", a.rules_hold},
              {"unschedulable", a.unschedulable},
              {"differences", a.differences}};
  std::ofstream(path) << all.dump(2) << "\n";
  WARN(key << ": " << a.as_good << "/" << a.placements << " as good as the solver, rules held "
           << a.rules_hold << "/" << (a.placements - a.unschedulable) << ", unschedulable "
           << a.unschedulable);
}

TEST_CASE("upstream: partly used Ascend nodes, the allocator against the solver", "[allocation]") {
  const std::vector<std::string> hosts = {"atlas800-9000", "atlas800t-a3", "atlas200t-a2-box16"};
  for (const char* mode : {"attributes", "groups"}) {
    Fleet fleet = StartFleet(std::string("seq") + mode[0], hosts,
                             std::string("publishing:\n  mode: ") + mode + "\n");
    for (const auto& [node, host] : fleet.host_of) {
      const Agreement a =
          RunSequence(fleet, node, "seq-" + std::string(mode), mode[0] == 'g', 24, 7);
      Report(host + "/" + mode, a);
      CHECK(a.placements > 0);
      CHECK(a.rules_hold == a.placements - a.unschedulable);
      if (mode[0] == 'a') CHECK(a.unschedulable == 0);
    }
  }
}

// `claim` (one request, ClaimObject) narrowed by a CEL selector over the driver's attributes.
json WithSelector(json claim, const std::string& expression) {
  claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
      json::array({{{"cel", {{"expression", expression}}}}});
  return claim;
}

std::string AttributeOf(const json& device, const std::string& name) {
  const json a = device.value("attributes", json::object()).value(name, json::object());
  if (a.contains("string")) return a.at("string").get<std::string>();
  if (a.contains("int")) return std::to_string(a.at("int").get<int64_t>());
  return "";
}

TEST_CASE(
    "upstream: MIG partitions allocate from the parent's counters, and whole and partitioned use "
    "exclude each other",
    "[allocation]") {
  if (!PartitionCountersServed()) return;
  // The MIG fixture host: its fake NVML has MIG on for gpu-0..3, with GPU instances on gpu-1 and
  // gpu-3 and none on gpu-0.
  const std::string host = SourceDir() + "/e2e/fixtures/hosts/hgx-h200-mig";
  ::setenv("XPU_FAKE_NVML_JSON", (host + "/fake-vendor/nvml.json").c_str(), 1);
  auto started = DriverHarness::Create(Upstream(), WorkDir("mig"));
  REQUIRE_OK(started);
  DriverHarness& harness = **started;
  REQUIRE_OK(harness.StartController(kBuiltInConfigAttributes));
  const std::string node = "mig-hgx-h200";
  const Status added =
      harness.AddNode(node, "hgx-h200-mig", {}, {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR});
  ::unsetenv("XPU_FAKE_NVML_JSON");
  REQUIRE_OK(added);

  // What is published: gpu-0 whole, consuming its whole counter set, and its 18 MIG placements,
  // which carry the partition attributes and no vendor.
  std::vector<json> devices;
  const bool published = WaitFor(
      [&] {
        auto got = harness.PublishedDevices(node);
        if (got.ok()) devices = std::move(*got);
        return std::any_of(devices.begin(), devices.end(),
                           [](const json& d) { return d.value("name", "") == "gpu-0-1g-18gb-6"; });
      },
      std::chrono::seconds(90));
  {
    INFO(harness.controller()->Log());
    REQUIRE(published);
  }
  int gpu0_parts = 0;
  int whole = 0;
  for (const auto& d : devices) {
    const std::string name = d.value("name", "");
    INFO(d.dump());
    if (AttributeOf(d, "parent") == "gpu-0") {
      ++gpu0_parts;
      CHECK(AttributeOf(d, "partitionKind") == "mig");
      CHECK(VendorOf(d).empty());
      REQUIRE(d.value("consumesCounters", json::array()).size() == 1);
      CHECK(d["consumesCounters"][0].value("counterSet", "") == "gpu-0-parts");
    }
    if (AttributeOf(d, "partitionKind").empty()) {
      ++whole;
      CHECK(VendorOf(d) == "nvidia");
    }
    if (name == "gpu-0") {
      REQUIRE(d.value("consumesCounters", json::array()).size() == 1);
      CHECK(d["consumesCounters"][0].value("counterSet", "") == "gpu-0-parts");
      CHECK(d["consumesCounters"][0].value("counters", json::object()).size() == 9);
    }
  }
  CHECK(gpu0_parts == 18);
  CHECK(whole == 8);

  kc::Client& client = harness.client();
  const std::string ns = "mig";
  REQUIRE_OK(EnsureNamespace(client, ns));
  const std::string attrs = "device.attributes['xpu.dra.dev']";
  auto small_on = [&](const std::string& parent) {
    return attrs + ".profile == '1g.18gb' && " + attrs + ".parent == '" + parent + "'";
  };
  const json one_small =
      WithSelector(ClaimObject(ns, "part", "mig.xpu.dra.dev", 1), small_on("gpu-0"));

  // (a) One 1g.18gb on gpu-0: the real scheduler allocates a partition device, the highest
  // placement first.
  const auto part = Allocate(client, ns, "part", one_small, node);
  REQUIRE(part.size() == 1);
  CHECK(part[0] == node + "/gpu-0-1g-18gb-6");

  // (b) While it is held: a sibling 1g.18gb fits beside it, in another slot of gpu-0; the
  // 7g.141gb, which needs every slot, does not; nor does gpu-0 whole.
  json sibling_claim = one_small;
  sibling_claim["metadata"]["name"] = "sibling";
  const auto sibling = Allocate(client, ns, "sibling", sibling_claim, node);
  REQUIRE(sibling.size() == 1);
  CHECK(sibling[0].rfind(node + "/gpu-0-1g-18gb-", 0) == 0);
  CHECK(sibling[0] != part[0]);
  Release(ns, {"sibling"}, client);

  bool refused = false;
  const auto full =
      Allocate(client, ns, "full",
               WithSelector(ClaimObject(ns, "full", "mig.xpu.dra.dev", 1),
                            attrs + ".profile == '7g.141gb' && " + attrs + ".parent == 'gpu-0'"),
               node, &refused);
  CHECK(full.empty());
  CHECK(refused);
  Release(ns, {"full"}, client);

  const std::string gpu0 = attrs + ".index == 0";
  refused = false;
  const auto blocked = Allocate(
      client, ns, "whole", WithSelector(ClaimObject(ns, "whole", "nvidia.xpu.dra.dev", 1), gpu0),
      node, &refused);
  CHECK(blocked.empty());
  CHECK(refused);

  // (c) The partition's pod and claim go: the waiting pod's claim gets gpu-0 whole.
  Release(ns, {"part"}, client);
  const std::vector<std::string> whole_now = AllocationOnceMade(client, ns, "whole");
  CHECK(whole_now == std::vector<std::string>{node + "/gpu-0"});

  // (d) The reverse: while gpu-0 is held whole, no partition of it is allocated; one of gpu-1
  // (free slots 0-3 beside its existing 3g.71gb) is.
  refused = false;
  const auto under_whole =
      Allocate(client, ns, "part-under-whole",
               WithSelector(ClaimObject(ns, "part-under-whole", "mig.xpu.dra.dev", 1),
                            attrs + ".parent == 'gpu-0'"),
               node, &refused);
  CHECK(under_whole.empty());
  CHECK(refused);
  const auto beside = Allocate(
      client, ns, "part-gpu1",
      WithSelector(ClaimObject(ns, "part-gpu1", "mig.xpu.dra.dev", 1), small_on("gpu-1")), node);
  REQUIRE(beside.size() == 1);
  CHECK(beside[0].rfind(node + "/gpu-1-1g-18gb-", 0) == 0);
  Release(ns, {"part-under-whole", "part-gpu1", "whole"}, client);

  // With nothing held: gpu-1, whose existing 3g.71gb holds slots 4-7 (taken out of its counter
  // set), is not free whole; gpu-5, MIG off, is.
  refused = false;
  const auto busy_whole = Allocate(
      client, ns, "whole-gpu1",
      WithSelector(ClaimObject(ns, "whole-gpu1", "nvidia.xpu.dra.dev", 1), attrs + ".index == 1"),
      node, &refused);
  CHECK(busy_whole.empty());
  CHECK(refused);
  const auto plain = Allocate(
      client, ns, "whole-gpu5",
      WithSelector(ClaimObject(ns, "whole-gpu5", "nvidia.xpu.dra.dev", 1), attrs + ".index == 5"),
      node);
  CHECK(plain == std::vector<std::string>{node + "/gpu-5"});
  Release(ns, {"whole-gpu1", "whole-gpu5"}, client);
}

TEST_CASE("upstream: with DRAPartitionableDevices off, groups mode falls back to attributes",
          "[fallback]") {
  ClusterOptions options;
  options.kind = ClusterKind::kUpstream;
  options.feature_gates = "DRAPartitionableDevices=false";
  auto cluster = Cluster::Start(options);
  REQUIRE_OK(cluster);
  auto harness = DriverHarness::Create(**cluster, (*cluster)->dir() + "/work");
  REQUIRE_OK(harness);
  REQUIRE_OK((*harness)->StartController("publishing:\n  mode: groups\n"));
  const std::string node = "fb-atlas800-9000";
  REQUIRE_OK((*harness)->AddNode(node, "atlas800-9000"));
  REQUIRE_OK((*harness)->WaitPublished(node, 8));
  // Then every device is a single one again, with no counters.
  CheckFallback(**harness, "counters", node, 8, "consumesCounters");
}

// The MIG host's node, its plugin loading the fake NVML, under a controller of `harness`; the
// published gpu-0-1g-18gb-6 (empty, failing, when it never is).
json PublishMigNode(DriverHarness& harness, const std::string& node) {
  const std::string host = SourceDir() + "/e2e/fixtures/hosts/hgx-h200-mig";
  ::setenv("XPU_FAKE_NVML_JSON", (host + "/fake-vendor/nvml.json").c_str(), 1);
  const Status added =
      harness.AddNode(node, "hgx-h200-mig", {}, {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR});
  ::unsetenv("XPU_FAKE_NVML_JSON");
  REQUIRE_OK(added);
  json device;
  CHECK(WaitFor(
      [&] {
        auto got = harness.PublishedDevice(node, "gpu-0-1g-18gb-6");
        if (got.ok()) device = *got;
        return got.ok();
      },
      std::chrono::seconds(90)));
  return device;
}

// The partitionTypeAttribute of node's slices that have devices consuming counters.
std::set<std::string> PartitionTypeAttributes(kc::Client& client, const std::string& node) {
  std::set<std::string> out;
  kc::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  auto page = client.ListAll(kc::ResourceSlices(), "", options);
  REQUIRE_OK(page);
  for (const json& slice : page->items) {
    const json spec = slice.value("spec", json::object());
    bool consuming = false;
    for (const json& d : spec.value("devices", json::array())) {
      consuming = consuming || d.contains("consumesCounters");
    }
    if (consuming) out.insert(spec.value("partitionTypeAttribute", "(none)"));
  }
  return out;
}

TEST_CASE(
    "upstream: 1.37 keeps partitionTypeAttribute where its gate is on, and the controller stops "
    "naming it where the server drops it",
    "[fallback]") {
  if (RequestedMinor() != 0 && RequestedMinor() < 37) {
    WARN("partitionTypeAttribute is 1.37's; not checked on " << Upstream().version());
    return;
  }
  SECTION("gate on: the server keeps it, and each counter-consuming device names its type") {
    ClusterOptions options;
    options.kind = ClusterKind::kUpstream;
    // The gate needs DRAResourcePoolStatus, whose ResourcePoolStatusRequest is v1alpha3.
    options.feature_gates = "DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true";
    options.runtime_config = "resource.k8s.io/v1alpha3=true";
    auto cluster = Cluster::Start(options);
    REQUIRE_OK(cluster);
    auto harness = DriverHarness::Create(**cluster, (*cluster)->dir() + "/work");
    REQUIRE_OK(harness);
    REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
    const std::string node = "pt-hgx-h200-mig";
    const json device = PublishMigNode(**harness, node);
    INFO((*harness)->controller()->Log());
    CHECK(device.value("/attributes/partitionType/string"_json_pointer, "") == "1g.18gb");
    auto whole = (*harness)->PublishedDevice(node, "gpu-0");
    REQUIRE_OK(whole);
    CHECK(whole->value("/attributes/partitionType/string"_json_pointer, "") == "whole");
    CHECK(PartitionTypeAttributes((*harness)->client(), node) ==
          std::set<std::string>{"xpu.dra.dev/partitionType"});
    const int port = MetricsPort(*(*harness)->controller());
    // Never dropped: the series is absent (-1) or 0.
    CHECK(Metric(port, "xpu_dra_controller_fallbacks_total{field=\"partitionType\"}") <= 0);
  }
  SECTION("gate off (1.37's default): dropped once, then neither the field nor the attribute") {
    auto harness = DriverHarness::Create(Upstream(), WorkDir("partition-type"));
    REQUIRE_OK(harness);
    REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
    const std::string node = "ptoff-hgx-h200-mig";
    PublishMigNode(**harness, node);
    INFO((*harness)->controller()->Log());
    int port = 0;
    REQUIRE(WaitFor([&] { return (port = MetricsPort(*(*harness)->controller())) > 0; }));
    CHECK(WaitFor([&] {
      return Metric(port, "xpu_dra_controller_fallbacks_total{field=\"partitionType\"}") >= 1;
    }));
    CHECK(WaitFor([&] {
      auto d = (*harness)->PublishedDevice(node, "gpu-0-1g-18gb-6");
      return d.ok() && !d->contains("/attributes/partitionType"_json_pointer) &&
             PartitionTypeAttributes((*harness)->client(), node) == std::set<std::string>{"(none)"};
    }));
  }
}

// ---- End to end: pods through node agents --------------------------------------------------

TEST_CASE("upstream: pods reach Running through the node agent, and deletion unprepares", "[e2e]") {
  Fleet fleet = StartFleet("e2e", {"atlas800-9000", "hgx-h200"});
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, "jobs"));
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (const auto& [node, host] : fleet.host_of) agents.push_back(StartAgent(*fleet.harness, node));
  // A claim from a template, as workloads use them: the resourceclaim controller makes the
  // claim, the scheduler allocates it, the agent has our plugin prepare it.
  const json templ = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaimTemplate"},
      {"metadata", {{"name", "four-npus"}, {"namespace", "jobs"}}},
      {"spec",
       {{"spec", ClaimObject("jobs", "x", "huawei.xpu.dra.dev", 4, SameDomain()).at("spec")}}}};
  REQUIRE_OK(client.Create(kc::ResourceClaimTemplates(), "jobs", templ));
  json pod = PodObject("jobs", "train", "", "");
  pod["spec"]["resourceClaims"] =
      json::array({{{"name", "devs"}, {"resourceClaimTemplateName", "four-npus"}}});
  pod["spec"]["terminationGracePeriodSeconds"] = 30;
  REQUIRE_OK(client.Create(Pods(), "jobs", pod));
  json running;
  const bool ran = WaitFor(
      [&] {
        auto got = client.Get(Pods(), "jobs", "train");
        if (got.ok()) running = *got;
        return got.ok() && got->value("/status/phase"_json_pointer, "") == "Running";
      },
      std::chrono::seconds(90));
  INFO(running.dump(1));
  REQUIRE(ran);
  const std::string node = running.value("/spec/nodeName"_json_pointer, "");
  CHECK(node == "e2e-atlas800-9000");
  const std::string claim =
      running.value("/status/resourceClaimStatuses/0/resourceClaimName"_json_pointer, "");
  REQUIRE(!claim.empty());
  auto allocated = client.Get(kc::ResourceClaims(), "jobs", claim);
  REQUIRE_OK(allocated);
  CHECK(AllocatedDevices(*allocated).size() == 4);
  const std::string uid = allocated->value("/metadata/uid"_json_pointer, "");
  // The agent's record: the CDI ids our plugin answered; the plugin's CDI spec on disk.
  const std::string dir = fleet.harness->NodeDir(node);
  const json record = ReadJson(dir + "/agent/pods/jobs_train.json");
  std::vector<std::string> ids;
  for (const auto& c : record.at("claims")) {
    for (const auto& d : c.at("devices")) {
      for (const auto& id : d.at("cdiDeviceIds")) ids.push_back(id.get<std::string>());
    }
  }
  CHECK(ids.size() == 4);
  int specs = 0;
  for (const auto& f : fs::directory_iterator(dir + "/cdi")) {
    specs += f.path().string().find(uid) != std::string::npos ? 1 : 0;
  }
  CHECK(specs == 1);
  // Deleting the pod: the agent unprepares (the spec goes), then removes the pod; the claim,
  // owned by the pod, is deleted by the resourceclaim controller.
  REQUIRE_OK(client.Delete(Pods(), "jobs", "train"));
  CHECK(WaitFor(
      [&] { return client.Get(Pods(), "jobs", "train").status().code() == StatusCode::kNotFound; },
      std::chrono::seconds(60)));
  CHECK(WaitFor([&] {
    for (const auto& f : fs::directory_iterator(dir + "/cdi")) {
      if (f.path().string().find(uid) != std::string::npos) return false;
    }
    return true;
  }));
  CHECK(WaitFor([&] {
    return client.Get(kc::ResourceClaims(), "jobs", claim).status().code() == StatusCode::kNotFound;
  }));
  CHECK(!fs::exists(dir + "/agent/pods/jobs_train.json"));
  // The node Lease the agent keeps.
  auto lease = client.Get(kc::Leases(), "kube-node-lease", node);
  REQUIRE_OK(lease);
  CHECK(lease->value("/spec/holderIdentity"_json_pointer, "") == node);
  for (auto& a : agents) CHECK(a->Stop() == 0);
}

// One partition kind end to end on the upstream control plane: a fixture host whose plugin
// loads a fake vendor library that keeps what the plugin creates and destroys in a file of the
// node's folder, read here.
struct PartitionRun {
  std::string kind;          // "vnpu"
  std::string host;          // the fixture host
  std::string library;       // the fake's variables: XPU_FAKE_<library>_JSON and _STATE
  std::string fixture;       // its JSON, under the host's fake-vendor/
  std::string parent;        // the device partitioned, "npu-2"
  int64_t parent_index = 0;  // its index, for the whole-device claim
  std::string profile;       // the profile asked for
  std::string whole_class;   // the parent's whole-device class
  std::string expected_id;   // the vendor id the partition gets
  // The vendor ids on the parent in the fake's state file `doc`.
  std::function<std::vector<std::string>(const json& doc)> made;
  // What the claim's CDI spec must contain for partition `id`.
  std::function<std::vector<std::string>(const std::string& id)> spec_has;
};

// (a) A pod whose claim asks for the profile on the parent runs, on a partition device of it;
// (b) prepare created the partition with the expected id, and the claim's CDI spec hands it to
// the container; (c) while it is held, the parent whole, which takes all of its counters, is
// refused; (d) the pod goes: the agent unprepares, which destroys the partition and removes the
// spec, and with the claim deleted too, the waiting claim gets the parent whole.
void RunPartitionEndToEnd(const PartitionRun& run) {
  const std::string node = run.kind + "-" + run.host;
  const std::string state = WorkDir(run.kind) + "/" + node + "/vendor-state.json";
  const std::string json_env = "XPU_FAKE_" + run.library + "_JSON";
  const std::string state_env = "XPU_FAKE_" + run.library + "_STATE";
  ::setenv(
      json_env.c_str(),
      (SourceDir() + "/e2e/fixtures/hosts/" + run.host + "/fake-vendor/" + run.fixture).c_str(), 1);
  ::setenv(state_env.c_str(), state.c_str(), 1);
  Fleet fleet = StartFleet(run.kind, {run.host}, "", {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR});
  ::unsetenv(json_env.c_str());
  ::unsetenv(state_env.c_str());
  kc::Client& client = fleet.harness->client();
  const std::string& ns = run.kind;
  REQUIRE_OK(EnsureNamespace(client, ns));
  auto agent = StartAgent(*fleet.harness, node);
  const std::string attrs = "device.attributes['xpu.dra.dev']";

  REQUIRE_OK(client.Create(kc::ResourceClaims(), ns,
                           WithSelector(ClaimObject(ns, "part", run.kind + ".xpu.dra.dev", 1),
                                        attrs + ".profile == '" + run.profile + "' && " + attrs +
                                            ".parent == '" + run.parent + "'")));
  json pod = PodObject(ns, "part", "part", node);
  pod["spec"]["terminationGracePeriodSeconds"] = 30;  // the agent unprepares, then deletes it
  REQUIRE_OK(client.Create(Pods(), ns, pod));
  {
    const bool ran = WaitFor([&] { return PodPhaseIs(client, ns, "part", "Running"); },
                             std::chrono::seconds(90));
    INFO(fleet.harness->plugin(node)->Log());
    REQUIRE(ran);
  }
  auto claim = client.Get(kc::ResourceClaims(), ns, "part");
  REQUIRE_OK(claim);
  const auto devices = AllocatedDevices(*claim);
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].rfind(node + "/" + run.parent + "-" + api::ProfileLabel(run.profile) + "-", 0) ==
        0);
  const std::string uid = claim->value("/metadata/uid"_json_pointer, "");
  REQUIRE(!uid.empty());

  auto made = [&] {
    std::ifstream in(state);
    return run.made(in ? json::parse(in) : json::object());
  };
  CHECK(made() == std::vector<std::string>{run.expected_id});
  auto spec_of_claim = [&] {
    for (const auto& f : fs::directory_iterator(fleet.harness->NodeDir(node) + "/cdi")) {
      if (f.path().string().find(uid) == std::string::npos) continue;
      std::ifstream in(f.path());
      return std::string(std::istreambuf_iterator<char>(in), {});
    }
    return std::string();
  };
  const std::string spec = spec_of_claim();
  for (const std::string& want : run.spec_has(run.expected_id)) {
    CHECK_THAT(spec, Catch::Contains(want));
  }

  bool refused = false;
  const auto blocked =
      Allocate(client, ns, "whole",
               WithSelector(ClaimObject(ns, "whole", run.whole_class, 1),
                            attrs + ".index == " + std::to_string(run.parent_index)),
               node, &refused);
  CHECK(blocked.empty());
  CHECK(refused);

  REQUIRE_OK(client.Delete(Pods(), ns, "part"));
  CHECK(WaitFor([&] { return made().empty(); }));
  CHECK(WaitFor([&] { return spec_of_claim().empty(); }));
  REQUIRE_OK(client.Delete(kc::ResourceClaims(), ns, "part"));
  const std::vector<std::string> whole = AllocationOnceMade(client, ns, "whole");
  CHECK(whole == std::vector<std::string>{node + "/" + run.parent});
  Release(ns, {"whole"}, client);
  CHECK(agent->Stop() == 0);
}

TEST_CASE(
    "upstream: a vNPU claim is allocated by the scheduler, created at prepare and destroyed when "
    "the pod goes",
    "[e2e]") {
  if (!PartitionCountersServed()) return;
  // No vNPU on npu-2; the fake DCMI records what it created (by logic id) and destroyed. The
  // vNPU gets the first of npu-2's ids, 100 + 16 * 2.
  RunPartitionEndToEnd(
      {"vnpu", "atlas800t-a2-vnpu", "DCMI", "dcmi.json", "npu-2", 2, "vir10_3c_32g",
       "huawei.xpu.dra.dev", "132",
       [](const json& doc) {
         std::vector<std::string> ids;
         for (const json& v : doc.value("created", json::array())) {
           if (v.value("logicId", -1) == 2 && v.value("name", "") == "vir10_3c_32g") {
             ids.push_back(std::to_string(v.value("vdevId", -1)));
           }
         }
         return ids;
       },
       [](const std::string& id) {
         return std::vector<std::string>{"ASCEND_VISIBLE_DEVICES=" + id, "/dev/vdavinci" + id};
       }});
}

TEST_CASE(
    "upstream: a vHCU claim is allocated by the scheduler, created at prepare and destroyed when "
    "the pod goes",
    "[e2e]") {
  if (!PartitionCountersServed()) return;
  // No vHCU on dcu-0; the fake DMI keeps the node's vHCUs in its state file. DMI gives the
  // lowest free id of the node: the fixture's vHCUs hold 0-2.
  RunPartitionEndToEnd({"vhcu", "hygon-dcu-8-vhcu", "HYDMI", "hydmi.json", "dcu-0", 0, "40cu.32gb",
                        "hygon.xpu.dra.dev", "3",
                        [](const json& doc) {
                          std::vector<std::string> ids;
                          for (const json& v : doc.value("vdevices", json::array())) {
                            if (v.value("device", -1) == 0) {
                              ids.push_back(std::to_string(v.value("id", -1)));
                            }
                          }
                          return ids;
                        },
                        [](const std::string& id) {
                          return std::vector<std::string>{"/etc/vdev/vdev" + id + ".conf",
                                                          "/etc/vdev/docker/vdev" + id + ".conf",
                                                          "/dev/kfd"};
                        }});
}

// ---- Gangs -------------------------------------------------------------------------------------

TEST_CASE("upstream: a 4 x 8 gang lands in one super-pod, its members run with their ranks",
          "[gang]") {
  // Six Atlas 800T A2: super-pod pod-a holds leaves a1 (g-1, g-2) and a2 (g-3, g-4); pod-b holds
  // leaf b1 (g-5, g-6); one spine over both.
  auto harness = DriverHarness::Create(Upstream(), WorkDir("gang"));
  REQUIRE_OK(harness);
  DriverHarness& h = **harness;
  REQUIRE_OK(h.StartController(kBuiltInConfigAttributes, {"--log-level", "debug"}));
  std::vector<std::string> nodes;
  for (int i = 1; i <= 6; ++i) {
    const std::string node = "g-" + std::to_string(i);
    const std::string leaf = i <= 2 ? "a1" : i <= 4 ? "a2" : "b1";
    REQUIRE_OK(h.AddNode(node, "atlas800t-a2",
                         {{"topology.xpu.dra.dev/leaf", leaf},
                          {"topology.xpu.dra.dev/superpod", i <= 4 ? "pod-a" : "pod-b"},
                          {"topology.xpu.dra.dev/spine", "spine-0"}}));
    nodes.push_back(node);
  }
  for (const auto& node : nodes) REQUIRE_OK(h.WaitPublished(node, 1));
  kc::Client& client = h.client();
  REQUIRE_OK(EnsureNamespace(client, "train"));
  const json gang = {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                     {"kind", "AcceleratorGang"},
                     {"metadata", {{"name", "llm"}, {"namespace", "train"}}},
                     {"spec",
                      {{"nodes", 4},
                       {"devicesPerNode", 8},
                       {"capabilityClass", "huawei.xpu.dra.dev"},
                       {"maxTier", "superpod"}}}};
  REQUIRE_OK(client.Create(kc::AcceleratorGangs(), "train", gang));
  json placed;
  const bool ok = WaitFor([&] {
    auto got = client.Get(kc::AcceleratorGangs(), "train", "llm");
    if (got.ok()) placed = *got;
    return got.ok() && placed.value("/status/phase"_json_pointer, "") == "Placed";
  });
  INFO(placed.dump(1) << "\n" << h.controller()->Log());
  REQUIRE(ok);
  CHECK(placed.value("/status/tier"_json_pointer, "") == "superpod");
  CHECK(placed.value("/status/domain"_json_pointer, "") == "pod-a");
  std::map<int64_t, std::string> rank_of_node;
  std::set<std::string> chosen;
  for (const auto& n : placed.at("status").at("nodes")) {
    rank_of_node[n.at("rank").get<int64_t>()] = n.at("name").get<std::string>();
    chosen.insert(n.at("name").get<std::string>());
  }
  CHECK(chosen == std::set<std::string>{"g-1", "g-2", "g-3", "g-4"});

  // The members: each references the shared claim and its own claim from the gang's template.
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (const auto& node : nodes) agents.push_back(StartAgent(h, node));
  for (int m = 0; m < 4; ++m) {
    json pod = PodObject("train", "llm-" + std::to_string(m), "llm-gang", "");
    pod["spec"]["containers"][0]["resources"]["claims"] =
        json::array({{{"name", "gang"}}, {{"name", "devs"}}});
    pod["spec"]["resourceClaims"] =
        json::array({{{"name", "gang"}, {"resourceClaimName", "llm-gang"}},
                     {{"name", "devs"}, {"resourceClaimTemplateName", "llm-member"}}});
    REQUIRE_OK(client.Create(Pods(), "train", pod));
  }
  std::map<std::string, std::string> node_of_pod;
  const bool ran = WaitFor(
      [&] {
        for (int m = 0; m < 4; ++m) {
          const std::string name = "llm-" + std::to_string(m);
          auto got = client.Get(Pods(), "train", name);
          if (!got.ok() || got->value("/status/phase"_json_pointer, "") != "Running") return false;
          node_of_pod[name] = got->value("/spec/nodeName"_json_pointer, "");
        }
        return true;
      },
      std::chrono::seconds(120));
  INFO(h.controller()->Log());
  REQUIRE(ran);
  std::set<std::string> used;
  for (const auto& [pod, node] : node_of_pod) {
    INFO(pod << " on " << node);
    CHECK(chosen.contains(node));
    used.insert(node);
  }
  CHECK(used == chosen);  // one member per chosen node

  // What a container would read: the rank table its node's plugin wrote for the shared claim.
  auto shared = client.Get(kc::ResourceClaims(), "train", "llm-gang");
  REQUIRE_OK(shared);
  const std::string uid = shared->value("/metadata/uid"_json_pointer, "");
  for (const auto& node : chosen) {
    INFO(node);
    const json table = ReadJson(h.NodeDir(node) + "/state/gangs/" + uid + "/rank_table.json");
    CHECK(table.at("server_count") == "4");
    REQUIRE(table.at("server_list").size() == 4);
    for (const auto& [rank, name] : rank_of_node) {
      const json& server = table.at("server_list").at(static_cast<size_t>(rank));
      CHECK(server.at("server_id") == name);
      REQUIRE(server.at("device").size() == 8);
      for (size_t d = 0; d < 8; ++d) {
        CHECK(server.at("device")[d].at("rank_id") == std::to_string(rank * 8 + d));
      }
    }
  }
  // Each member's own claim: eight devices of its node.
  for (const auto& [pod, node] : node_of_pod) {
    auto got = client.Get(Pods(), "train", pod);
    REQUIRE_OK(got);
    for (const auto& st : got->value("/status/resourceClaimStatuses"_json_pointer, json::array())) {
      if (st.value("name", "") != "devs") continue;
      auto claim = client.Get(kc::ResourceClaims(), "train", st.value("resourceClaimName", ""));
      REQUIRE_OK(claim);
      const auto devices = AllocatedDevices(*claim);
      CHECK(devices.size() == 8);
      for (const auto& d : devices) CHECK(d.rfind(node + "/", 0) == 0);
    }
  }
  std::vector<std::string> pods;
  for (const auto& [pod, node] : node_of_pod) pods.push_back(pod);
  REQUIRE_OK(DeletePodsNow(Upstream(), "train", pods));
  REQUIRE_OK(client.Delete(kc::AcceleratorGangs(), "train", "llm"));
  CHECK(WaitFor([&] {
    return client.Get(kc::ResourceClaimTemplates(), "train", "llm-member").status().code() ==
           StatusCode::kNotFound;
  }));

  // A member node fails before the pods start: its plugin stops, its Lease runs out, and the
  // gang is placed again without it; the gang device follows.
  json small = gang;
  small["metadata"]["name"] = "small";
  small["spec"]["nodes"] = 2;
  small["spec"]["maxTier"] = "leaf";
  REQUIRE_OK(client.Create(kc::AcceleratorGangs(), "train", small));
  auto members = [&] {
    std::vector<std::string> out;
    auto got = client.Get(kc::AcceleratorGangs(), "train", "small");
    if (!got.ok() || got->value("/status/phase"_json_pointer, "") != "Placed") return out;
    for (const auto& n : got->at("status").at("nodes")) out.push_back(n.value("name", ""));
    return out;
  };
  REQUIRE(WaitFor([&] { return members().size() == 2; }));
  const std::string lost = members()[0];
  REQUIRE_OK(h.StopPlugin(lost));
  const bool replaced = WaitFor(
      [&] {
        const auto now = members();
        return now.size() == 2 && std::find(now.begin(), now.end(), lost) == now.end();
      },
      std::chrono::seconds(60));
  INFO(h.controller()->Log());
  REQUIRE(replaced);
  auto after = client.Get(kc::AcceleratorGangs(), "train", "small");
  REQUIRE_OK(after);
  CHECK(after->value("/status/conditions/0/reason"_json_pointer, "") == "Replaced");
  const bool followed = WaitFor([&] {
    auto slice = client.Get(kc::ResourceSlices(), "", "xpu-dra-gang.train.small");
    if (!slice.ok()) return false;
    const auto values = slice->value(
        "/spec/nodeSelector/nodeSelectorTerms/0/matchExpressions/0/values"_json_pointer,
        json::array());
    for (const auto& v : values) {
      if (v == lost) return false;
    }
    return values.size() == 2;
  });
  const std::string log = h.controller()->Log();
  INFO(log.substr(log.size() > 6000 ? log.size() - 6000 : 0));
  CHECK(followed);
  REQUIRE_OK(client.Delete(kc::AcceleratorGangs(), "train", "small"));
  for (auto& a : agents) a->Stop();
}

// ---- Liveness ---------------------------------------------------------------------------------

TEST_CASE("upstream: a stopped plugin's pool is withdrawn, a deleted Node's pool collected",
          "[liveness]") {
  Fleet fleet = StartFleet("live", {"hgx-h200", "hygon-dcu-8"});
  kc::Client& client = fleet.harness->client();
  // The plugin stops renewing its Lease: the controller withdraws the slices at expiry.
  REQUIRE_OK(fleet.harness->StopPlugin("live-hgx-h200"));
  CHECK(WaitFor(
      [&] {
        auto d = fleet.harness->PublishedDevices("live-hgx-h200");
        return d.ok() && d->empty();
      },
      std::chrono::seconds(60)));
  // The Node goes: its slices and NodeInventory are owned by it, and the real garbage
  // collector removes them.
  fleet.harness->StopController();
  REQUIRE_OK(fleet.harness->StopPlugin("live-hygon-dcu-8"));
  REQUIRE_OK(client.Delete(kc::Nodes(), "", "live-hygon-dcu-8"));
  CHECK(WaitFor(
      [&] {
        auto d = fleet.harness->PublishedDevices("live-hygon-dcu-8");
        return d.ok() && d->empty();
      },
      std::chrono::seconds(60)));
  CHECK(WaitFor([&] {
    return client.Get(kc::NodeInventories(), "", "live-hygon-dcu-8").status().code() ==
           StatusCode::kNotFound;
  }));
}

TEST_CASE("upstream: controller leader election on real Leases", "[liveness]") {
  auto harness = DriverHarness::Create(Upstream(), WorkDir("leader"));
  REQUIRE_OK(harness);
  kc::Client& client = (*harness)->client();
  const std::vector<std::string> timing = {"--lease-duration", "4s",   "--renew-deadline", "3s",
                                           "--retry-period",   "500ms"};
  std::vector<std::string> first = timing;
  first.insert(first.end(), {"--identity", "first"});
  REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes, first));
  std::string holder;
  auto holder_is = [&](const std::string& want) {
    auto lease = client.Get(kc::Leases(), DriverHarness::kNamespace, "xpu-dra-controller");
    holder = lease.ok() ? lease->value("/spec/holderIdentity"_json_pointer, "") : "";
    return holder == want;
  };
  REQUIRE(WaitFor([&] { return holder_is("first"); }));
  // A second candidate waits; when the leader dies without releasing, it takes over at expiry.
  std::vector<std::string> second = timing;
  second.insert(second.end(), {"--identity", "second", "--metrics-addr", "127.0.0.1:0"});
  auto other = ChildProcess::Start(
      XPU_CONTROLLER_BINARY,
      [&] {
        std::vector<std::string> a = {"--kubeconfig", Upstream().kubeconfig(), "--namespace",
                                      DriverHarness::kNamespace};
        a.insert(a.end(), second.begin(), second.end());
        return a;
      }(),
      WorkDir("leader") + "/second.log");
  REQUIRE_OK(other);
  CHECK(holder_is("first"));
  (*harness)->controller()->Kill();
  CHECK(WaitFor([&] { return holder_is("second"); }, std::chrono::seconds(30)));
  INFO("holder " << holder);
  (*other)->Stop();
}

}  // namespace
}  // namespace xpu::e2e
