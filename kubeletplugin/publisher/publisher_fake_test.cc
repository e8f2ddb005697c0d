// The publisher's logic against in-memory objects (api/client/testing/fake_objects.h) and a fake
// clock: no server, no sleeping. publisher_test.cc runs the same publisher against kube-sim.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/client/testing/fake_objects.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "kubeletplugin/publisher/publisher.h"

namespace xpu::plugin {
namespace {

using namespace std::chrono_literals;
namespace kc = api::client;
using kc::ObjectKey;
using kc::testing::FakeObjects;
using kc::testing::FakeVerb;

struct FakeApi {
  std::shared_ptr<FakeObjects<api::core::Node>> nodes =
      std::make_shared<FakeObjects<api::core::Node>>("nodes", true);
  std::shared_ptr<FakeObjects<api::NodeInventory>> inventories =
      std::make_shared<FakeObjects<api::NodeInventory>>("nodeinventories", true);
  std::shared_ptr<FakeObjects<api::core::Lease>> leases =
      std::make_shared<FakeObjects<api::core::Lease>>("leases");
  std::shared_ptr<kc::RecordedEvents> events = std::make_shared<kc::RecordedEvents>();
  FakeClock clock;

  PublisherApi Api() const { return {nodes, inventories, leases, events}; }
  PublisherOptions Options() {
    PublisherOptions o;
    o.node_name = "n1";
    o.clock = &clock;
    return o;
  }
  std::string AddNode() {
    api::core::Node node;
    node.metadata.name = "n1";
    nodes->Put(node);
    return nodes->Find(ObjectKey::Cluster("n1"))->metadata.uid;
  }
};

TEST_CASE("publisher (fakes): writes once, owned by the Node, again only on change") {
  FakeApi f;
  api::NodeInventory found = api::testing::ExampleNodeInventory();
  InventoryPublisher publisher(f.Api(), f.Options(), [&] { return found; });

  StatusOr<bool> early = publisher.PublishOnce();
  CHECK(early.status().code() == StatusCode::kNotFound);
  CHECK(f.inventories->writes() == 0);

  const std::string uid = f.AddNode();
  StatusOr<bool> first = publisher.PublishOnce();
  REQUIRE_OK(first);
  CHECK(*first);
  std::optional<api::NodeInventory> stored = f.inventories->Find(ObjectKey::Cluster("n1"));
  REQUIRE(stored);
  CHECK(stored->status == found.status);  // created, then the status written
  CHECK(stored->metadata.owner_references.at(0).uid == uid);
  CHECK(f.inventories->writes() == 2);

  for (auto& c : found.status.conditions) c.last_transition_time = "2030-01-01T00:00:00Z";
  StatusOr<bool> same = publisher.PublishOnce();
  REQUIRE_OK(same);
  CHECK_FALSE(*same);
  CHECK(f.inventories->writes() == 2);

  found.status.devices[0].health = "Unhealthy";
  REQUIRE_OK(publisher.PublishOnce());
  CHECK(f.inventories->Find(ObjectKey::Cluster("n1"))->status.devices[0].health == "Unhealthy");
  CHECK(publisher.stats().inventory_writes == 2);
  CHECK(publisher.stats().unchanged == 1);
}

TEST_CASE("publisher (fakes): a conflict is re-read and retried once, a new Node gets its owner") {
  FakeApi f;
  const std::string uid = f.AddNode();
  api::NodeInventory found = api::testing::ExampleNodeInventory();
  InventoryPublisher publisher(f.Api(), f.Options(), [&] { return found; });
  REQUIRE_OK(publisher.PublishOnce());

  found.status.devices[0].health = "Unhealthy";
  f.inventories->FailNext(FakeVerb::kUpdateStatus, Status(StatusCode::kAborted, "409 Conflict"));
  StatusOr<bool> retried = publisher.PublishOnce();
  REQUIRE_OK(retried);
  CHECK(*retried);

  found.status.devices[0].health = "Healthy";
  for (int i = 0; i < 2; ++i) {
    f.inventories->FailNext(FakeVerb::kUpdateStatus, Status(StatusCode::kAborted, "409 Conflict"));
  }
  CHECK(publisher.PublishOnce().status().code() == StatusCode::kAborted);

  // The Node is replaced (a new uid): the owner reference follows before the status.
  REQUIRE_OK(f.nodes->Delete(ObjectKey::Cluster("n1"), {}));
  const std::string new_uid = f.AddNode();
  REQUIRE(new_uid != uid);
  REQUIRE_OK(publisher.PublishOnce());
  CHECK(f.inventories->Find(ObjectKey::Cluster("n1"))->metadata.owner_references.at(0).uid ==
        new_uid);
  CHECK(f.inventories->Find(ObjectKey::Cluster("n1"))->status.devices[0].health == "Healthy");
}

// The Node appears at a given time on the clock; counts the reads.
class NodeFrom final : public kc::ObjectReader<api::core::Node> {
 public:
  NodeFrom(const Clock& clock, Clock::SteadyTime from, kc::ObjectReader<api::core::Node>* nodes)
      : clock_(clock), from_(from), nodes_(nodes) {}
  StatusOr<api::core::Node> Get(const ObjectKey& key) override {
    ++gets;
    if (clock_.Now() < from_) return NotFoundError("get nodes " + key.String() + ": not found");
    return nodes_->Get(key);
  }
  std::atomic<int> gets{0};

 private:
  const Clock& clock_;
  const Clock::SteadyTime from_;
  kc::ObjectReader<api::core::Node>* const nodes_;
};

TEST_CASE("publisher (fakes): Run renews and rediscovers on the clock, sooner while no Node") {
  FakeApi f;
  f.AddNode();
  const auto start = f.clock.Now();
  auto node = std::make_shared<NodeFrom>(f.clock, start + 10s, f.nodes.get());
  PublisherApi api = f.Api();
  api.nodes = node;
  const PublisherOptions o = f.Options();
  StopFlag stop;
  int discoveries = 0;
  Clock::SteadyTime first_discovery;
  InventoryPublisher publisher(api, o, [&] {
    if (++discoveries == 1) first_discovery = f.clock.Now();
    if (discoveries == 10) stop.Set();
    return api::testing::ExampleNodeInventory();
  });
  publisher.Run(stop);

  // No Node for 10 s: asked again every node_retry (2 s), with no discovery; the Lease is
  // created without an owner meanwhile (a Lease does not wait for its Node).
  CHECK(first_discovery - start >= 10s);
  CHECK(first_discovery - start < 10s + o.node_retry + 1s);
  // Then ten discoveries, one per rediscover period (60 s).
  const auto elapsed = f.clock.Now() - first_discovery;
  CHECK(elapsed >= 9 * o.rediscover);
  CHECK(elapsed < 9 * o.rediscover + 1s);
  // The Lease is renewed every 5 s over the whole run.
  const auto total = f.clock.Now() - start;
  const auto renewals = publisher.stats().lease_renewals;
  CHECK(renewals >= static_cast<uint64_t>(total / o.lease_renew));
  CHECK(renewals <= static_cast<uint64_t>(total / o.lease_renew) + 1);
  CHECK(
      f.leases->Find(ObjectKey::Namespaced("xpu-dra", "xpu-dra-plugin-n1"))->spec.holder_identity ==
      "n1");
  CHECK(publisher.stats().discoveries == 10);
  CHECK(publisher.stats().inventory_writes == 1);
  CHECK(publisher.stats().unchanged == 9);
}

TEST_CASE("publisher (fakes): a refused inventory is reported once and not sent again") {
  FakeApi f;
  f.AddNode();
  StopFlag stop;
  int discoveries = 0;
  api::NodeInventory found = api::testing::ExampleNodeInventory();
  InventoryPublisher publisher(f.Api(), f.Options(), [&] {
    ++discoveries;
    if (discoveries == 6) found.status.devices[0].health = "Unhealthy";  // something new
    if (discoveries == 8) stop.Set();
    return found;
  });
  f.inventories->FailNext(FakeVerb::kUpdateStatus,
                          InvalidArgumentError("update status of nodeinventories n1: 422 Invalid"));
  std::vector<std::string> lines;
  publisher.Run(stop, nullptr, [&](const std::string& line) { lines.push_back(line); });

  // Discoveries 1-5 find the same facts: sent once (refused), then not again; 6 is new: sent;
  // 7 and 8 are unchanged.
  CHECK(f.inventories->calls(FakeVerb::kUpdateStatus) == 2);
  CHECK(publisher.stats().terminal_errors == 1);
  CHECK(publisher.stats().errors == 5);  // the refusal, and the four answered without a request
  CHECK(publisher.stats().inventory_writes == 1);
  CHECK(f.inventories->Find(ObjectKey::Cluster("n1"))->status.devices[0].health == "Unhealthy");
  const std::vector<kc::EventInfo> events = f.events->events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].reason == "InventoryRejected");
  CHECK(events[0].type == "Warning");
  CHECK(events[0].about.kind == "Lease");
  CHECK(events[0].about.name == "xpu-dra-plugin-n1");
  CHECK(events[0].message.find("422 Invalid") != std::string::npos);
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
          return l.find("refused by the API server") != std::string::npos;
        }) == 1);
}

}  // namespace
}  // namespace xpu::plugin
