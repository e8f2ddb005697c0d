// The upstream tier, end to end: pods reach Running through node agents (xpu-node-agent) and
// their claims are prepared, partitions created and destroyed; and liveness: a stopped plugin's
// pool withdrawn, a deleted Node's pool collected, leader election on real Leases. The shared
// fixture is in upstream_fixture.h.
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
  if (auto why = NoPartitionCounters()) XPU_SKIP(*why);
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
  if (auto why = NoPartitionCounters()) XPU_SKIP(*why);
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
}  // namespace xpu::e2e::upstream
