// The upstream tier, gangs: a 4 x 8 gang lands in one super-pod and its members run with their
// ranks. The shared fixture is in upstream_fixture.h.
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

namespace kc = api::client;
using nlohmann::json;

// ---- Gangs -------------------------------------------------------------------------------------

// Six Atlas 800T A2: super-pod pod-a holds leaves a1 (g-1, g-2) and a2 (g-3, g-4); pod-b holds
// leaf b1 (g-5, g-6); one spine over both. The node names, once each has published.
std::vector<std::string> AddGangNodes(DriverHarness& h) {
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
  return nodes;
}

// What a container would read: the rank table each chosen node's plugin wrote for the shared
// claim llm-gang, its servers in `rank_of_node`'s order.
void CheckRankTables(DriverHarness& h, const std::set<std::string>& chosen,
                     const std::map<int64_t, std::string>& rank_of_node) {
  kc::Client& client = h.client();
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
}

// Each member's own claim: eight devices of its node.
void CheckMemberClaims(kc::Client& client, const std::map<std::string, std::string>& node_of_pod) {
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
}

// A member node fails before the pods start: its plugin stops, its Lease runs out, and the
// gang (`gang` made smaller) is placed again without it; the gang device follows.
void CheckNodeLossReplaced(DriverHarness& h, const json& gang) {
  kc::Client& client = h.client();
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
}

TEST_CASE("upstream: a 4 x 8 gang lands in one super-pod, its members run with their ranks",
          "[gang]") {
  auto harness = DriverHarness::Create(Upstream(), WorkDir("gang"));
  REQUIRE_OK(harness);
  DriverHarness& h = **harness;
  REQUIRE_OK(h.StartController(kBuiltInConfigAttributes, {"--log-level", "debug"}));
  const std::vector<std::string> nodes = AddGangNodes(h);
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

  CheckRankTables(h, chosen, rank_of_node);
  CheckMemberClaims(client, node_of_pod);
  std::vector<std::string> pods;
  for (const auto& [pod, node] : node_of_pod) pods.push_back(pod);
  REQUIRE_OK(DeletePodsNow(Upstream(), "train", pods));
  REQUIRE_OK(client.Delete(kc::AcceleratorGangs(), "train", "llm"));
  CHECK(WaitFor([&] {
    return client.Get(kc::ResourceClaimTemplates(), "train", "llm-member").status().code() ==
           StatusCode::kNotFound;
  }));

  CheckNodeLossReplaced(h, gang);
  for (auto& a : agents) a->Stop();
}

}  // namespace
}  // namespace xpu::e2e::upstream
