// xpu-dra-controller end to end: the real binary against the real kube-sim, with the objects the
// plugin writes (Node, NodeInventory, plugin Lease) made directly; and the controller core
// in-process for the 1,000-node run under injected API faults.
#include "controller/controller.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "api/core.h"
#include "api/resource_validation.h"
#include "api/testing/claim_json.h"
#include "base/atomic_file.h"
#include "base/log.h"
#include "base/metrics/metrics.h"
#include "base/testing/require_ok.h"
#include "base/testing/sanitizers.h"
#include "base/testing/temp_dir.h"
#include "controller/device_classes.h"
#include "controller/testing/cluster.h"
#include "controller/testing/slice_examples.h"
#include "e2e/client/child_process.h"
#include "e2e/client/claims.h"

namespace xpu::controller {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using api::resource::ResourceSlice;
using std::chrono::milliseconds;
using testing::Eventually;

using testing::kDriver;

struct Cluster : testing::SimCluster {
  explicit Cluster(const std::vector<std::string>& flags = {})
      : SimCluster(xpu::testing::RequireValue(
            testing::StartControllerCluster(XPU_KUBE_SIM_BINARY, flags))) {}
  // A node whose plugin is live: Node, the fixture host's inventory, a fresh Lease.
  std::string AddNode(const std::string& name, const std::string& host,
                      const std::map<std::string, std::string>& labels = {},
                      int64_t lease_seconds = 3600) {
    auto uid = testing::MakeNode(*client, name, labels);
    REQUIRE_OK(uid);
    auto inventory = testing::FixtureInventory(XPU_SOURCE_DIR, host, name);
    INFO(inventory.status().ToString());
    REQUIRE_OK(inventory);
    REQUIRE_OK(testing::PutInventory(*client, *inventory));
    REQUIRE_OK(testing::RenewPluginLease(*client, "xpu-dra", name, lease_seconds));
    return *uid;
  }
  std::vector<ResourceSlice> SlicesOf(const std::string& node) {
    auto all = testing::ListSlices(*client, kDriver);
    REQUIRE_OK(all);
    std::vector<ResourceSlice> out;
    for (auto& s : *all) {
      if (s.spec.pool.name == node) out.push_back(std::move(s));
    }
    return out;
  }
  int DevicesOf(const std::string& node) {
    int n = 0;
    for (const auto& s : SlicesOf(node)) n += static_cast<int>(s.spec.devices.size());
    return n;
  }
};

std::unique_ptr<e2e::ChildProcess> StartController(const Cluster& c,
                                                   const std::vector<std::string>& extra,
                                                   const std::string& log_name = "controller.log") {
  std::vector<std::string> args = {"--kubeconfig",     c.sim->kubeconfig(),
                                   "--namespace",      "xpu-dra",
                                   "--metrics-addr",   "127.0.0.1:0",
                                   "--claim-debounce", "100ms",
                                   "--config-poll",    "100ms",
                                   "--log-level",      "debug"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto p = e2e::ChildProcess::Start(XPU_CONTROLLER_BINARY, args, c.sim->dir() + "/" + log_name);
  REQUIRE_OK(p);
  return std::move(p).value();
}

const api::resource::Device* FindDevice(const std::vector<ResourceSlice>& slices,
                                        const std::string& name) {
  for (const auto& s : slices) {
    for (const auto& d : s.spec.devices) {
      if (d.name == name) return &d;
    }
  }
  return nullptr;
}

bool HasTaint(const std::vector<ResourceSlice>& slices, const std::string& device,
              std::string_view key) {
  const auto* d = FindDevice(slices, device);
  if (d == nullptr) return false;
  for (const auto& t : d->taints) {
    if (t.key == key) return true;
  }
  return false;
}

void WriteFile(const std::string& path, const std::string& text) {
  REQUIRE_OK(WriteFileAtomically(path, text, 0644));  // as a ConfigMap update swaps the file
}

TEST_CASE("xpu-dra-controller --help and bad flags", "[controller][e2e]") {
  const xpu::testing::TempDir temp;
  const std::string& dir = temp.path();
  auto help = e2e::ChildProcess::Start(XPU_CONTROLLER_BINARY, {"--help"}, dir + "/help.log");
  REQUIRE_OK(help);
  CHECK((*help)->Wait() == 0);
  CHECK((*help)->Log().find("--leader-elect") != std::string::npos);
  auto bad = e2e::ChildProcess::Start(XPU_CONTROLLER_BINARY, {"--qps", "-1"}, dir + "/bad.log");
  REQUIRE_OK(bad);
  CHECK((*bad)->Wait() == 2);
  CHECK((*bad)->Log().find("--qps") != std::string::npos);
  std::ofstream(dir + "/bad.yaml") << "capabilityClasses:\n- name: x\n  minMemory: lots\n";
  auto bad_config = e2e::ChildProcess::Start(
      XPU_CONTROLLER_BINARY, {"--config", dir + "/bad.yaml", "--kubeconfig", "/nonexistent"},
      dir + "/bad-config.log");
  REQUIRE_OK(bad_config);
  CHECK((*bad_config)->Wait() == 2);
  CHECK((*bad_config)->Log().find("minMemory") != std::string::npos);
}

TEST_CASE(
    "xpu-dra-controller publishes live nodes, follows inventories, Leases and wipes, and keeps "
    "its DeviceClasses",
    "[controller][e2e]") {
  Cluster c;
  const std::string uid =
      c.AddNode("n1", "atlas800-9000", {{"topology.xpu.dra.dev/leaf", "leaf-7"}});
  const std::string config_path = c.sim->dir() + "/config.yaml";
  WriteFile(config_path, "vendorClasses: true\n");
  auto controller = StartController(c, {"--leader-elect", "false", "--config", config_path});

  // A node appears: its slices appear and validate.
  REQUIRE(Eventually([&] { return c.DevicesOf("n1") == 8; }));
  std::vector<ResourceSlice> slices = c.SlicesOf("n1");
  for (const ResourceSlice& s : slices) {
    INFO(api::resource::ToJson(s).dump());
    CHECK(api::ValidateResourceSlice(s, api::KubeVersion::k1_35).ok());
    CHECK(s.spec.node_name == "n1");
    REQUIRE(s.metadata.owner_references.size() == 1);
    CHECK(s.metadata.owner_references[0].uid == uid);
  }
  const auto* npu0 = FindDevice(slices, "npu-0");
  REQUIRE(npu0 != nullptr);
  CHECK(npu0->attributes.at("scaleUpDomain").string_value == "ring-0");
  CHECK(npu0->attributes.at("leaf").string_value == "leaf-7");
  CHECK(npu0->capacity.at("memory").value == "32Gi");
  const int64_t generation = slices[0].spec.pool.generation;

  SECTION("inventory change: slice updated, generation bumped") {
    auto inventory = testing::FixtureInventory(XPU_SOURCE_DIR, "atlas800-9000", "n1");
    REQUIRE_OK(inventory);
    inventory->status.devices[3].health = "Unhealthy";
    REQUIRE_OK(testing::PutInventory(*c.client, *inventory));
    REQUIRE(
        Eventually([&] { return HasTaint(c.SlicesOf("n1"), "npu-3", "xpu.dra.dev/unhealthy"); }));
    CHECK(c.SlicesOf("n1")[0].spec.pool.generation > generation);
    // Healthy again: the taint goes.
    inventory->status.devices[3].health = "Healthy";
    REQUIRE_OK(testing::PutInventory(*c.client, *inventory));
    REQUIRE(Eventually([&] {
      auto now = c.SlicesOf("n1");
      return FindDevice(now, "npu-3") != nullptr &&
             !HasTaint(now, "npu-3", "xpu.dra.dev/unhealthy");
    }));
  }

  SECTION("Lease expiry withdraws the pool, a renewal brings it back") {
    REQUIRE_OK(testing::RenewPluginLease(*c.client, "xpu-dra", "n1", 1));
    REQUIRE(Eventually([&] { return c.SlicesOf("n1").empty(); }, milliseconds(10'000)));
    REQUIRE_OK(testing::RenewPluginLease(*c.client, "xpu-dra", "n1", 3600));
    REQUIRE(Eventually([&] { return c.DevicesOf("n1") == 8; }));
  }

  SECTION("slices wiped the way the kubelet does are recreated while the plugin is live") {
    for (const ResourceSlice& s : slices) {
      REQUIRE_OK(c.client->Delete(kc::ResourceSlices(), "", s.metadata.name));
    }
    const bool recreated = Eventually([&] {
      auto now = c.SlicesOf("n1");
      return !now.empty() && now[0].metadata.name != slices[0].metadata.name &&
             c.DevicesOf("n1") == 8;
    });
    INFO(controller->Log());
    REQUIRE(recreated);
    CHECK(c.SlicesOf("n1").size() == slices.size());
  }

  SECTION("DeviceClasses: created, repaired, stale ones deleted, others left alone") {
    auto has_class = [&](const std::string& name) {
      return c.client->Get(kc::DeviceClasses(), "", name).ok();
    };
    REQUIRE(Eventually([&] { return has_class("nvidia.xpu.dra.dev"); }));
    // Someone else's class of a name we would not use stays; a managed class we no longer want
    // goes; one we want comes back when deleted.
    nlohmann::json theirs = {{"apiVersion", "resource.k8s.io/v1"},
                             {"kind", "DeviceClass"},
                             {"metadata", {{"name", "someone-elses"}}},
                             {"spec", nlohmann::json::object()}};
    REQUIRE_OK(c.client->Create(kc::DeviceClasses(), "", theirs));
    nlohmann::json stale = theirs;
    stale["metadata"]["name"] = "stale-class";
    stale["metadata"]["labels"][std::string(kManagedByLabel)] = std::string(kManagedByValue);
    REQUIRE_OK(c.client->Create(kc::DeviceClasses(), "", stale));
    REQUIRE_OK(c.client->Delete(kc::DeviceClasses(), "", "nvidia.xpu.dra.dev"));
    REQUIRE(
        Eventually([&] { return has_class("nvidia.xpu.dra.dev") && !has_class("stale-class"); }));
    CHECK(has_class("someone-elses"));
    // Config: vendor classes off, one capability class.
    WriteFile(config_path,
              "vendorClasses: false\ncapabilityClasses:\n- name: big-memory\n  minMemory: 64Gi\n");
    REQUIRE(
        Eventually([&] { return has_class("big-memory") && !has_class("nvidia.xpu.dra.dev"); }));
    CHECK(has_class("someone-elses"));
  }

  SECTION("support matrix taints, and a bad config leaves the good one in force") {
    WriteFile(config_path, "supportMatrix:\n- vendor: huawei\n  driver: \">=99.0.0\"\n");
    REQUIRE(
        Eventually([&] { return HasTaint(c.SlicesOf("n1"), "npu-0", "xpu.dra.dev/unsupported"); }));
    WriteFile(config_path, "supportMatrix:\n- vendor: huawei\n  driver: \"~>1\"\n");
    REQUIRE(Eventually([&] {
      return controller->Log().find("rejected, the previous one stays in force") !=
             std::string::npos;
    }));
    // The Event is recorded just after the log line.
    CHECK(Eventually([&] {
      auto events = c.client->ListAll(kc::Events(), "xpu-dra");
      if (!events.ok()) return false;
      for (const auto& e : events->items) {
        if (e.value("reason", "") == "InvalidConfig") return true;
      }
      return false;
    }));
    CHECK(HasTaint(c.SlicesOf("n1"), "npu-0", "xpu.dra.dev/unsupported"));
    WriteFile(config_path, "supportMatrix: []\n");
    REQUIRE(Eventually(
        [&] { return !HasTaint(c.SlicesOf("n1"), "npu-0", "xpu.dra.dev/unsupported"); }));
  }

  SECTION("an allocation re-orders the pool: held devices last, the solver's choice first") {
    e2e::ClaimSpec claim;
    claim.name = "holds-npu-0";
    claim.devices = {"npu-0"};
    claim.pool = "n1";
    REQUIRE_OK(e2e::CreateClaim(*c.client, claim));
    auto order = [&] {
      std::vector<std::string> names;
      for (const auto& s : c.SlicesOf("n1")) {
        for (const auto& d : s.spec.devices) names.push_back(d.name);
      }
      return names;
    };
    REQUIRE(Eventually([&] {
      auto names = order();
      return names.size() == 8 && names.back() == "npu-0";
    }));
    // With npu-0 held, the fullest ring (ring-0, three free) comes first.
    CHECK(order().front() == "npu-1");
  }

  SECTION("metrics and readiness") {
    const std::string log = controller->Log();
    const auto at = log.find("(port ");
    REQUIRE(at != std::string::npos);
    const int port = std::stoi(log.substr(at + 6));
    std::string metrics;
    REQUIRE(Eventually([&] {
      metrics = e2e::HttpGet(port, "/metrics");
      return metrics.find("xpu_dra_controller_nodes{state=\"live\"} 1") != std::string::npos;
    }));
    CHECK(metrics.find("# TYPE xpu_dra_controller_slices_published gauge") != std::string::npos);
    CHECK(metrics.find("xpu_dra_controller_slice_writes_total{verb=\"create\",result=\"ok\"} 1") !=
          std::string::npos);
    CHECK(metrics.find("xpu_dra_controller_leader 1") != std::string::npos);
    CHECK(e2e::HttpGet(port, "/readyz").starts_with("HTTP/1.1 200"));
  }
  CHECK(controller->Stop() == 0);
}

TEST_CASE("the DeviceClasses come before the fleet's slices", "[controller][e2e]") {
  // Claims cannot be allocated without their classes: a controller starting on a large fleet
  // writes them first, not after every node's pool. At 10 writes a second, 60 nodes take 6 s.
  Cluster c;
  constexpr int kNodes = 60;
  for (int i = 0; i < kNodes; ++i) c.AddNode("n" + std::to_string(i), "hgx-h200");
  auto controller = StartController(c, {"--leader-elect", "false", "--qps", "10", "--burst", "1"});
  int slices_then = -1;
  const bool classes = Eventually(
      [&] {
        auto listed = c.client->ListAll(kc::DeviceClasses(), "");
        if (!listed.ok() || listed->items.empty()) return false;
        auto slices = testing::ListSlices(*c.client, kDriver);
        slices_then = slices.ok() ? static_cast<int>(slices->size()) : -1;
        return true;
      },
      milliseconds(30'000), milliseconds(20));
  INFO(controller->Log());
  REQUIRE(classes);
  CHECK(slices_then >= 0);
  CHECK(slices_then < kNodes / 2);
  REQUIRE(Eventually([&] { return c.DevicesOf("n" + std::to_string(kNodes - 1)) == 8; },
                     milliseconds(60'000)));
}

TEST_CASE("a server that drops taints and counters: tainted devices left out, attributes mode",
          "[controller][e2e]") {
  Cluster c({"--feature-gates", "DRADeviceTaints=false,DRAPartitionableDevices=false"});
  auto uid = testing::MakeNode(*c.client, "n1");
  REQUIRE_OK(uid);
  auto inventory = testing::FixtureInventory(XPU_SOURCE_DIR, "atlas800t-a3", "n1");
  REQUIRE_OK(inventory);
  inventory->status.devices[5].health = "Unhealthy";
  REQUIRE_OK(testing::PutInventory(*c.client, *inventory));
  REQUIRE_OK(testing::RenewPluginLease(*c.client, "xpu-dra", "n1", 3600));
  const std::string config_path = c.sim->dir() + "/config.yaml";
  WriteFile(config_path, "publishing: {mode: groups, groupSizes: [2, 4]}\n");
  auto controller = StartController(c, {"--leader-elect", "false", "--config", config_path});
  // 15 healthy dies, no group devices, no counters: what the server can hold.
  REQUIRE(Eventually([&] {
    auto slices = c.SlicesOf("n1");
    int devices = 0;
    bool counters = false;
    for (const auto& s : slices) {
      devices += static_cast<int>(s.spec.devices.size());
      counters |= !s.spec.shared_counters.empty();
    }
    return devices == 15 && !counters && FindDevice(slices, "npu-5") == nullptr;
  }));
  const std::string log = controller->Log();
  CHECK(log.find("dropped device taints") != std::string::npos);
  CHECK(log.find("dropped device counters") != std::string::npos);
  auto events = c.client->ListAll(kc::Events(), "default");
  REQUIRE_OK(events);
  int dropped = 0;
  for (const auto& e : events->items) dropped += e.value("reason", "") == "FieldsDropped" ? 1 : 0;
  CHECK(dropped >= 1);
  CHECK(controller->Stop() == 0);
}

TEST_CASE(
    "autoscaler: pending claims no live node serves, with the node groups that could, and "
    "template drift",
    "[controller][e2e]") {
  Cluster c;
  // n1 is an A2 of node group ascend-a2, whose template is the A2 reference server: no drift.
  // n2 claims to be of that group but is an Atlas 800 9000: drift.
  c.AddNode("n1", "atlas800t-a2", {{"xpu.dra.dev/node-group", "ascend-a2"}});
  c.AddNode("n2", "atlas800-9000", {{"xpu.dra.dev/node-group", "ascend-a2"}});
  const std::string groups = c.sim->dir() + "/groups";
  fs::create_directories(groups);
  WriteFile(groups + "/a2.yaml", "name: ascend-a2\nmodel: atlas800t-a2\nmaxSize: 4\n");
  WriteFile(groups + "/a3.yaml", "name: ascend-a3\nmodel: atlas800t-a3\nmaxSize: 2\n");
  auto controller = StartController(c, {"--leader-elect", "false", "--node-groups", groups});
  REQUIRE(Eventually([&] { return c.DevicesOf("n1") == 8 && c.DevicesOf("n2") == 8; }));
  const std::string log = controller->Log();
  const auto at = log.find("(port ");
  REQUIRE(at != std::string::npos);
  const int port = std::stoi(log.substr(at + 6));

  // 16 NPUs on one node: only an A3 (a new node of ascend-a3) can. 2 NPUs: n1 can.
  for (const auto& [name, count] : {std::pair{"big", 16}, std::pair{"small", 2}}) {
    REQUIRE_OK(
        c.client->Create(kc::ResourceClaims(), "default",
                         api::testing::ClaimJson(name, "npus", "huawei.xpu.dra.dev", count)));
  }
  nlohmann::json pending;
  REQUIRE(Eventually([&] {
    const std::string reply = e2e::HttpGet(port, "/autoscaler/pending");
    const size_t body = reply.find("\r\n\r\n");
    if (!reply.starts_with("HTTP/1.1 200") || body == std::string::npos) return false;
    pending = nlohmann::json::parse(reply.substr(body + 4), nullptr, false);
    return pending.is_object() && pending["pending"].size() == 1;
  }));
  const nlohmann::json& big = pending["pending"][0];
  CHECK(big["name"] == "big");
  CHECK(big["reason"] == "none of the 2 live nodes can serve it");
  REQUIRE(big["nodeGroups"].size() == 2);
  CHECK(big["nodeGroups"][0]["name"] == "ascend-a2");
  CHECK(big["nodeGroups"][0]["fits"] == false);
  CHECK(big["nodeGroups"][1]["name"] == "ascend-a3");
  CHECK(big["nodeGroups"][1]["fits"] == true);

  // Drift: n2 is counted and an Event names it; n1 is not.
  REQUIRE(Eventually([&] {
    return e2e::HttpGet(port, "/metrics")
               .find("xpu_dra_controller_node_group_drift{group=\"ascend-a2\"} 1") !=
           std::string::npos;
  }));
  std::string message;
  REQUIRE(Eventually([&] {
    auto events = c.client->ListAll(kc::Events(), "default");
    if (!events.ok()) return false;
    for (const auto& e : events->items) {
      if (e.value("reason", "") == "NodeGroupTemplateDrift") message = e.value("message", "");
    }
    return !message.empty();
  }));
  CHECK(message.find("node n2 ") != std::string::npos);
  CHECK(controller->Stop() == 0);
}

TEST_CASE("groups mode publishes aligned groups that consume their members' counters",
          "[controller][e2e]") {
  Cluster c;
  c.AddNode("n1", "atlas800t-a3");
  const std::string config_path = c.sim->dir() + "/config.yaml";
  WriteFile(config_path, "publishing: {mode: groups, groupSizes: [2, 4, 8]}\n");
  auto controller = StartController(c, {"--leader-elect", "false", "--config", config_path});
  REQUIRE(Eventually([&] { return FindDevice(c.SlicesOf("n1"), "npu-x4-0") != nullptr; }));
  const auto slices = c.SlicesOf("n1");
  int counter_slices = 0;
  for (const auto& s : slices) {
    INFO(api::resource::ToJson(s).dump());
    CHECK(api::ValidateResourceSlice(s, api::KubeVersion::k1_35).ok());
    if (!s.spec.shared_counters.empty()) {
      ++counter_slices;
      CHECK(s.spec.devices.empty());  // 1.35: counter sets in a slice of their own
    }
    CHECK(s.spec.pool.resource_slice_count == static_cast<int64_t>(slices.size()));
  }
  CHECK(counter_slices == 1);
  const auto* group = FindDevice(slices, "npu-x2-0");
  REQUIRE(group != nullptr);
  CHECK(group->attributes.at("groupSize").int_value == 2);
  REQUIRE(group->consumes_counters.size() == 1);
  CHECK(group->consumes_counters[0].counters.size() == 2);
  CHECK(controller->Stop() == 0);
}

TEST_CASE("a standby controller takes over when the leader dies", "[controller][e2e]") {
  Cluster c;
  c.AddNode("n1", "hgx-h200");
  const std::vector<std::string> fast = {"--lease-duration", "3s",   "--renew-deadline", "2s",
                                         "--retry-period",   "200ms"};
  auto first = StartController(c, fast, "first.log");
  REQUIRE(Eventually([&] { return c.DevicesOf("n1") == 8; }));
  auto second = StartController(c, fast, "second.log");
  REQUIRE(Eventually([&] {
    return second->Log().find("informers") == std::string::npos &&
           second->Log().find("publishing slices") != std::string::npos;
  }));
  CHECK(second->Log().find("became leader") == std::string::npos);

  const auto killed = std::chrono::steady_clock::now();
  first->Kill();  // no release: the standby waits out the lease
  c.AddNode("n2", "atlas800-9000");
  REQUIRE(Eventually([&] { return c.DevicesOf("n2") == 8; }, milliseconds(20'000)));
  CHECK(std::chrono::steady_clock::now() - killed < std::chrono::seconds(15));
  CHECK(second->Log().find("became leader") != std::string::npos);
  CHECK(second->Stop() == 0);
}

TEST_CASE(
    "1,000 nodes (250 under the sanitizers) under 10% injected 409/429/500 converge to exactly "
    "the desired slices",
    "[controller][e2e][scale]") {
  Cluster c({"--fault-codes", "409,429,500"});
  constexpr int kNodes = xpu::testing::SizeFor(1000, 250);
  const std::vector<std::string> hosts = {"hgx-h200", "atlas800-9000", "atlas800t-a2",
                                          "cambricon-mlu370-x8"};
  std::map<std::string, api::NodeInventory> fixtures;
  for (const std::string& h : hosts) {
    auto inv = testing::FixtureInventory(XPU_SOURCE_DIR, h, "x");
    REQUIRE_OK(inv);
    fixtures[h] = *inv;
  }
  for (int i = 0; i < kNodes; ++i) {
    const std::string name = "node-" + std::to_string(i);
    REQUIRE_OK(testing::MakeNode(*c.client, name));
    api::NodeInventory inv = fixtures[hosts[static_cast<size_t>(i) % hosts.size()]];
    inv.metadata.name = name;
    REQUIRE_OK(testing::PutInventory(*c.client, inv));
    REQUIRE_OK(testing::RenewPluginLease(*c.client, "xpu-dra", name, 3600));
  }
  REQUIRE_OK(c.client->PostPath("/kube-sim/faults", {{"rate", 0.1}, {"seed", 7}}));

  std::ostringstream log_text;
  Logger log(log_text, "error");
  metrics::Registry registry;
  ControllerMetrics m(registry);
  kc::ClientOptions options;
  options.qps = 0;
  auto cluster_config = c.sim->Config();
  REQUIRE_OK(cluster_config);
  auto client = kc::Client::Create(*cluster_config, options);
  REQUIRE_OK(client);
  CoreOptions core;
  Controller controller(client->get(), core, DefaultConfig(), &m, &log);
  (void)controller.Start(milliseconds(120'000));

  auto converged = [&] {
    auto slices = testing::ListSlices(*c.client, kDriver);
    if (!slices.ok()) return false;  // an injected fault on the check itself
    std::map<std::string, int> devices;
    for (const auto& s : *slices) {
      devices[s.spec.pool.name] += static_cast<int>(s.spec.devices.size());
    }
    if (devices.size() != kNodes) return false;
    for (const auto& [pool, n] : devices) {
      if (n != 8) return false;
    }
    return true;
  };
  REQUIRE(Eventually(converged, milliseconds(240'000)));
  REQUIRE_OK(c.client->PostPath("/kube-sim/faults", {{"rate", 0}}));
  REQUIRE(Eventually([&] { return controller.QueueDepth() == 0; }, milliseconds(60'000)));

  // Exactly the desired slices: one per pool, consistent pool fields, no duplicated device.
  auto slices = testing::ListSlices(*c.client, kDriver);
  REQUIRE_OK(slices);
  std::map<std::string, std::vector<const ResourceSlice*>> pools;
  for (const auto& s : *slices) pools[s.spec.pool.name].push_back(&s);
  CHECK(pools.size() == kNodes);
  for (const auto& [pool, list] : pools) {
    INFO(pool);
    CHECK(list.size() == 1);
    std::set<std::string> names;
    for (const ResourceSlice* s : list) {
      CHECK(s->spec.pool.resource_slice_count == static_cast<int64_t>(list.size()));
      for (const auto& d : s->spec.devices) CHECK(names.insert(d.name).second);
    }
    CHECK(names.size() == 8);
  }
  CHECK(m.slice_writes.Value({"create", "ok"}) >= kNodes);
  CHECK(m.slice_writes.Value({"create", "conflict"}) +
            m.slice_writes.Value({"update", "conflict"}) +
            m.slice_writes.Value({"create", "error"}) >
        0);
  controller.Stop();
}

}  // namespace
}  // namespace xpu::controller
