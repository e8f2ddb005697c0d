#include "kubeletplugin/publisher/publisher.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "api/core.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/client/wait.h"

namespace xpu::plugin {
namespace {

using nlohmann::json;
namespace kc = api::client;

struct Cluster {
  std::unique_ptr<e2e::KubeSimProcess> sim;
  std::unique_ptr<kc::Client> client;
};

Cluster Start() {
  auto started = e2e::StartSimWithClient(XPU_KUBE_SIM_BINARY, {"xpu-dra"});
  REQUIRE_OK(started);
  return {std::move(started->sim), std::move(started->client)};
}

json Node(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
}

PublisherOptions Options(const std::string& node) {
  PublisherOptions o;
  o.node_name = node;
  o.lease_renew = std::chrono::milliseconds(50);
  o.rediscover = std::chrono::milliseconds(50);
  o.node_retry = std::chrono::milliseconds(50);
  return o;
}

using e2e::Eventually;

TEST_CASE("publisher writes the inventory once, owned by the Node, and only again on change",
          "[plugin][publisher]") {
  Cluster c = Start();
  api::NodeInventory found = api::testing::ExampleNodeInventory();
  InventoryPublisher publisher(c.client.get(), Options("n1"), [&] { return found; });

  // No Node yet: not an error of the plugin, it waits.
  const auto early = publisher.PublishOnce();
  CHECK(early.status().code() == StatusCode::kNotFound);
  CHECK(early.status().message() == "node n1 does not exist (yet)");

  const auto node = c.client->Create(kc::Nodes(), "", Node("n1"));
  REQUIRE_OK(node);
  const auto first = publisher.PublishOnce();
  INFO(first.status().ToString());
  REQUIRE_OK(first);
  CHECK(*first);
  auto stored = c.client->Get(kc::NodeInventories(), "", "n1");
  REQUIRE_OK(stored);
  CHECK((*stored)["metadata"]["ownerReferences"][0]["uid"] == (*node)["metadata"]["uid"]);
  CHECK((*stored)["metadata"]["ownerReferences"][0]["kind"] == "Node");
  auto typed = api::FromJson<api::NodeInventory>(*stored);
  REQUIRE_OK(typed);
  CHECK(typed->status == found.status);
  const std::string rv = (*stored)["metadata"]["resourceVersion"];

  // The same facts again (even with a new condition timestamp): nothing written.
  for (auto& cond : found.status.conditions) cond.last_transition_time = "2030-01-01T00:00:00Z";
  const auto same = publisher.PublishOnce();
  REQUIRE_OK(same);
  CHECK_FALSE(*same);
  CHECK((*c.client->Get(kc::NodeInventories(), "", "n1"))["metadata"]["resourceVersion"] == rv);

  // A changed fact is written.
  found.status.devices[0].health = "Unhealthy";
  const auto changed = publisher.PublishOnce();
  REQUIRE_OK(changed);
  CHECK(*changed);
  typed = api::FromJson<api::NodeInventory>(*c.client->Get(kc::NodeInventories(), "", "n1"));
  REQUIRE_OK(typed);
  CHECK(typed->status.devices[0].health == "Unhealthy");
  CHECK(publisher.stats().inventory_writes == 2);
  CHECK(publisher.stats().unchanged == 1);

  // The Node goes: its inventory goes with it (ownerReference garbage collection).
  REQUIRE_OK(c.client->Delete(kc::Nodes(), "", "n1"));
  CHECK(c.client->Get(kc::NodeInventories(), "", "n1").status().code() == StatusCode::kNotFound);
}

TEST_CASE("publisher keeps the plugin Lease renewed", "[plugin][publisher]") {
  Cluster c = Start();
  REQUIRE_OK(c.client->Create(kc::Nodes(), "", Node("n2")));
  InventoryPublisher publisher(c.client.get(), Options("n2"),
                               [] { return api::testing::ExampleNodeInventory(); });
  REQUIRE_OK(publisher.RenewLease());
  auto lease =
      api::FromJson<api::core::Lease>(*c.client->Get(kc::Leases(), "xpu-dra", "xpu-dra-plugin-n2"));
  REQUIRE_OK(lease);
  CHECK(lease->spec.holder_identity == "n2");
  CHECK(lease->spec.lease_duration_seconds == 15);
  CHECK(lease->metadata.owner_references.at(0).kind == "Node");
  const std::string first_renew = *lease->spec.renew_time;

  // Run renews it and publishes the inventory until stopped.
  StopFlag stop;
  std::thread runner([&] { publisher.Run(stop); });
  CHECK(Eventually([&] {
    auto l = api::FromJson<api::core::Lease>(
        *c.client->Get(kc::Leases(), "xpu-dra", "xpu-dra-plugin-n2"));
    return l.ok() && *l->spec.renew_time != first_renew;
  }));
  CHECK(Eventually([&] { return c.client->Get(kc::NodeInventories(), "", "n2").ok(); }));
  stop.Set();
  runner.join();
  CHECK(publisher.stats().lease_renewals >= 2);
  CHECK(publisher.stats().errors == 0);
}

TEST_CASE("an inventory the API server refuses is reported once and not sent again unchanged",
          "[plugin][publisher]") {
  Cluster c = Start();
  REQUIRE_OK(c.client->Create(kc::Nodes(), "", Node("n3")));
  // A client that counts the publisher's writes by verb.
  std::mutex mu;
  std::map<std::string, int> writes;
  kc::ClientOptions counted;
  counted.observe = [&](std::string_view verb, int /*code*/) {
    std::lock_guard<std::mutex> lock(mu);
    if (verb != "get" && verb != "list") ++writes[std::string(verb)];
  };
  auto config = c.sim->Config();
  REQUIRE_OK(config);
  auto client = kc::Client::Create(*config, counted);
  REQUIRE_OK(client);

  api::NodeInventory found = api::testing::ExampleNodeInventory();
  found.status.devices[0].name = "Not_A_DNS_Label";  // the CRD's schema refuses it: 422
  std::vector<std::string> lines;
  InventoryPublisher publisher(client->get(), Options("n3"), [&] {
    std::lock_guard<std::mutex> lock(mu);
    return found;
  });
  StopFlag stop;
  std::thread runner([&] {
    publisher.Run(stop, nullptr, [&](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    });
  });
  REQUIRE(Eventually([&] { return publisher.stats().terminal_errors == 1; }));
  auto updates = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return writes["update"];
  };
  const int updates_before = updates();
  const uint64_t renewals_before = publisher.stats().lease_renewals;
  // Ten more rediscoveries of the same facts: no inventory write, no new report. The only
  // updates are the Lease's renewals (one each; the count may straddle one in flight).
  const uint64_t seen = publisher.stats().discoveries;
  REQUIRE(Eventually([&] { return publisher.stats().discoveries >= seen + 10; }));
  const uint64_t renewals = publisher.stats().lease_renewals - renewals_before;
  const int new_updates = updates() - updates_before;
  INFO("updates " << new_updates << ", renewals " << renewals);
  CHECK(static_cast<uint64_t>(new_updates) <= renewals + 1);
  CHECK(publisher.stats().terminal_errors == 1);
  CHECK(publisher.stats().errors >= 10);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto refused = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("refused by the API server") != std::string::npos;
    });
    CHECK(refused == 1);
  }
  auto events = c.client->ListAll(kc::Events(), "xpu-dra");
  REQUIRE_OK(events);
  int rejected = 0;
  for (const json& e : events->items) {
    if (e["reason"] != "InventoryRejected") continue;
    ++rejected;
    CHECK(e["involvedObject"]["name"] == "xpu-dra-plugin-n3");
    CHECK(e["message"].get<std::string>().find("Not_A_DNS_Label") != std::string::npos);
  }
  CHECK(rejected == 1);

  // Discovery finds something different: it is sent, and accepted.
  {
    std::lock_guard<std::mutex> lock(mu);
    found.status.devices[0].name = "npu-0";
  }
  CHECK(Eventually([&] {
    auto stored = c.client->Get(kc::NodeInventories(), "", "n3");
    if (!stored.ok()) return false;
    auto typed = api::FromJson<api::NodeInventory>(*stored);
    return typed.ok() && !typed->status.devices.empty() && typed->status.devices[0].name == "npu-0";
  }));
  stop.Set();
  runner.join();
  CHECK(publisher.stats().terminal_errors == 1);
}

TEST_CASE("publisher options and helpers", "[plugin][publisher]") {
  CHECK(LeaseName("gpu-node-7") == "xpu-dra-plugin-gpu-node-7");
  // 2026-11-30T10:05:00.000123Z
  const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(1796033100)) +
                 std::chrono::microseconds(123);
  CHECK(MicroTime(t) == "2026-11-30T10:05:00.000123Z");
  PublisherOptions o;
  o.node_name = "../etc";
  CHECK(o.Validate().code() == StatusCode::kInvalidArgument);
  o.node_name = "n1";
  CHECK(o.Validate().ok());
  o.lease_renew = std::chrono::seconds(20);  // not shorter than the 15 s duration
  CHECK(o.Validate().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xpu::plugin
