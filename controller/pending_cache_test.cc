// /autoscaler/pending from the controller's caches, in process against kube-sim: the answer
// follows an inventory change, a claim being allocated and a node going dead, and no request
// decodes an inventory.
#include "controller/pending_cache.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "api/testing/claim_json.h"
#include "base/log.h"
#include "base/metrics/metrics.h"
#include "base/testing/require_ok.h"
#include "controller/controller.h"
#include "controller/testing/cluster.h"
#include "e2e/client/claims.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;
using std::chrono::milliseconds;
using testing::Eventually;

// Creates an unallocated claim of `count` Huawei NPUs.
void AskNpus(kc::Client& client, const std::string& name, int count) {
  REQUIRE_OK(client.Create(kc::ResourceClaims(), "default",
                           api::testing::ClaimJson(name, "npus", "huawei.xpu.dra.dev", count)));
}

// name -> reason of each pending claim.
std::map<std::string, std::string> Pending(Controller& controller) {
  const nlohmann::json body = nlohmann::json::parse(controller.PendingJson());
  std::map<std::string, std::string> out;
  for (const auto& p : body["pending"]) out[p["name"]] = p["reason"];
  return out;
}

TEST_CASE(
    "/autoscaler/pending follows an inventory change, an allocation and a node going dead, "
    "without decoding per request",
    "[controller][e2e][pending]") {
  auto started = testing::StartControllerCluster(XPU_KUBE_SIM_BINARY);
  REQUIRE_OK(started);
  kc::Client& client = *started->client;
  auto a2 = testing::FixtureInventory(XPU_SOURCE_DIR, "atlas800t-a2", "n1");
  REQUIRE_OK(a2);
  REQUIRE_OK(testing::MakeNode(client, "n1"));
  REQUIRE_OK(testing::PutInventory(client, *a2));
  REQUIRE_OK(testing::RenewPluginLease(client, "xpu-dra", "n1", 3600));
  auto profile = ParseNodeGroupProfile("name: a3\nmodel: atlas800t-a3\nmaxSize: 2\n", "");
  REQUIRE_OK(profile);

  std::ostringstream log_text;
  Logger log(log_text, "error");
  metrics::Registry registry;
  ControllerMetrics m(registry);
  CoreOptions core;
  core.claim_debounce = milliseconds(50);
  core.node_groups = {*profile};
  auto cluster_config = started->sim->Config();
  REQUIRE_OK(cluster_config);
  auto own_client = kc::Client::Create(*cluster_config, testing::Unthrottled());
  REQUIRE_OK(own_client);
  Controller controller(own_client->get(), core, DefaultConfig(), &m, &log);
  REQUIRE_OK(controller.Start(milliseconds(30'000)));

  // 16 NPUs: no A2 has them; 4: n1 has.
  AskNpus(client, "big", 16);
  AskNpus(client, "four", 4);
  using Reasons = std::map<std::string, std::string>;
  const std::string one_live = "none of the 1 live nodes can serve it";
  REQUIRE(Eventually([&] { return Pending(controller) == Reasons{{"big", one_live}}; }));
  const uint64_t noted = controller.PendingCounts().noted;
  CHECK(controller.PendingCounts().nodes == 1);

  // Inventory change: six NPUs unhealthy, so four no longer fit.
  api::NodeInventory sick = *a2;
  for (size_t i = 0; i < 6; ++i) sick.status.devices[i].health = "Unhealthy";
  REQUIRE_OK(testing::PutInventory(client, sick));
  REQUIRE(Eventually([&] { return Pending(controller).contains("four"); }));
  CHECK(controller.PendingCounts().noted == noted + 1);
  REQUIRE_OK(testing::PutInventory(client, *a2));
  REQUIRE(Eventually([&] { return !Pending(controller).contains("four"); }));

  // A claim allocated six NPUs of n1: two are left.
  e2e::ClaimSpec held;
  held.name = "held";
  held.pool = "n1";
  held.devices = {"npu-0", "npu-1", "npu-2", "npu-3", "npu-4", "npu-5"};
  REQUIRE_OK(e2e::CreateClaim(client, held));
  REQUIRE(Eventually([&] { return Pending(controller).contains("four"); }));
  REQUIRE_OK(client.Delete(kc::ResourceClaims(), "default", "held"));
  REQUIRE(Eventually([&] { return !Pending(controller).contains("four"); }));

  // The plugin's Lease runs out: no live node.
  REQUIRE_OK(testing::RenewPluginLease(client, "xpu-dra", "n1", 1));
  const std::string none = "no live node of this driver";
  REQUIRE(Eventually([&] {
    return Pending(controller) == Reasons{{"big", none}, {"four", none}};
  }));
  // Requests read the facts the pool syncs noted: two inventory writes, two versions noted.
  CHECK(controller.PendingCounts().noted == noted + 2);
  CHECK(controller.PendingCounts().models == 1);
  controller.Stop();
}

}  // namespace
}  // namespace xpu::controller
