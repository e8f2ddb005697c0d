#include "kubeletplugin/publisher/publisher.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "api/core.h"
#include "api/testing/inventory_examples.h"
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
  auto sim = e2e::KubeSimProcess::Start(XPU_KUBE_SIM_BINARY);
  REQUIRE(sim.ok());
  auto config = (*sim)->Config();
  REQUIRE(config.ok());
  auto client = kc::Client::Create(*config);
  REQUIRE(client.ok());
  REQUIRE(
      (*client)
          ->Create(
              kc::Namespaces(), "",
              {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "xpu-dra"}}}})
          .ok());
  return {std::move(sim).value(), std::move(client).value()};
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
  REQUIRE(node.ok());
  const auto first = publisher.PublishOnce();
  INFO(first.status().ToString());
  REQUIRE(first.ok());
  CHECK(*first);
  auto stored = c.client->Get(kc::NodeInventories(), "", "n1");
  REQUIRE(stored.ok());
  CHECK((*stored)["metadata"]["ownerReferences"][0]["uid"] == (*node)["metadata"]["uid"]);
  CHECK((*stored)["metadata"]["ownerReferences"][0]["kind"] == "Node");
  auto typed = api::FromJson<api::NodeInventory>(*stored);
  REQUIRE(typed.ok());
  CHECK(typed->status == found.status);
  const std::string rv = (*stored)["metadata"]["resourceVersion"];

  // The same facts again (even with a new condition timestamp): nothing written.
  for (auto& cond : found.status.conditions) cond.last_transition_time = "2030-01-01T00:00:00Z";
  const auto same = publisher.PublishOnce();
  REQUIRE(same.ok());
  CHECK_FALSE(*same);
  CHECK((*c.client->Get(kc::NodeInventories(), "", "n1"))["metadata"]["resourceVersion"] == rv);

  // A changed fact is written.
  found.status.devices[0].health = "Unhealthy";
  const auto changed = publisher.PublishOnce();
  REQUIRE(changed.ok());
  CHECK(*changed);
  typed = api::FromJson<api::NodeInventory>(*c.client->Get(kc::NodeInventories(), "", "n1"));
  REQUIRE(typed.ok());
  CHECK(typed->status.devices[0].health == "Unhealthy");
  CHECK(publisher.stats().inventory_writes == 2);
  CHECK(publisher.stats().unchanged == 1);

  // The Node goes: its inventory goes with it (ownerReference garbage collection).
  REQUIRE(c.client->Delete(kc::Nodes(), "", "n1").ok());
  CHECK(c.client->Get(kc::NodeInventories(), "", "n1").status().code() == StatusCode::kNotFound);
}

TEST_CASE("publisher keeps the plugin Lease renewed", "[plugin][publisher]") {
  Cluster c = Start();
  REQUIRE(c.client->Create(kc::Nodes(), "", Node("n2")).ok());
  InventoryPublisher publisher(c.client.get(), Options("n2"),
                               [] { return api::testing::ExampleNodeInventory(); });
  REQUIRE(publisher.RenewLease().ok());
  auto lease =
      api::FromJson<api::core::Lease>(*c.client->Get(kc::Leases(), "xpu-dra", "xpu-dra-plugin-n2"));
  REQUIRE(lease.ok());
  CHECK(lease->spec.holder_identity == "n2");
  CHECK(lease->spec.lease_duration_seconds == 15);
  CHECK(lease->metadata.owner_references.at(0).kind == "Node");
  const std::string first_renew = *lease->spec.renew_time;

  // Run renews it and publishes the inventory until stopped.
  std::atomic<bool> stop{false};
  std::thread runner([&] { publisher.Run(stop); });
  CHECK(Eventually([&] {
    auto l = api::FromJson<api::core::Lease>(
        *c.client->Get(kc::Leases(), "xpu-dra", "xpu-dra-plugin-n2"));
    return l.ok() && *l->spec.renew_time != first_renew;
  }));
  CHECK(Eventually([&] { return c.client->Get(kc::NodeInventories(), "", "n2").ok(); }));
  stop = true;
  runner.join();
  CHECK(publisher.stats().lease_renewals >= 2);
  CHECK(publisher.stats().errors == 0);
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
