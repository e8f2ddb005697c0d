// Leader election between replicas against the real kube-sim.
#include "controller/leader.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "api/core.h"
#include "base/testing/require_ok.h"
#include "base/time.h"
#include "controller/testing/cluster.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;
using std::chrono::milliseconds;

LeaderOptions Fast(const std::string& identity) {
  LeaderOptions o;
  o.ns = "xpu-dra";
  o.identity = identity;
  o.lease_duration = milliseconds(1500);
  o.renew_deadline = milliseconds(1000);
  o.retry_period = milliseconds(100);
  return o;
}

struct Replica {
  Replica(kc::Client* client, const std::string& identity) : elector(client, Fast(identity)) {}
  void Start() {
    thread = std::thread([this] {
      elector.Run(
          stop, [this] { starts++; }, [this] { stops++; });
    });
  }
  void Join() {
    stop.Set();
    thread.join();
  }
  LeaderElector elector;
  StopFlag stop;
  std::atomic<int> starts{0};
  std::atomic<int> stops{0};
  std::thread thread;
};

TEST_CASE("leader options need retry < renew deadline < lease duration", "[leader]") {
  LeaderOptions o = Fast("a");
  CHECK(o.Validate().ok());
  o.renew_deadline = o.lease_duration;
  CHECK_FALSE(o.Validate().ok());
  o = Fast("");
  CHECK(o.Validate().message().find("identity") != std::string::npos);
}

TEST_CASE("one of two replicas leads, the standby takes over when it stops", "[leader]") {
  auto cluster = testing::StartCluster(XPU_KUBE_SIM_BINARY, {}, {"xpu-dra"});
  REQUIRE_OK(cluster);
  auto& client = cluster->client;

  Replica a(client.get(), "replica-a");
  Replica b(client.get(), "replica-b");
  a.Start();
  REQUIRE(testing::Eventually([&] { return a.elector.IsLeader(); }, milliseconds(10'000)));
  b.Start();
  // b sees a's renewals and stays a standby while more than a lease duration's worth of them
  // (1.5 s / 100 ms) goes by. The expiry rule itself is tested on a fake clock
  // (leader_decide_test.cc).
  REQUIRE(testing::Eventually([&] { return b.elector.ObservedHolder() == "replica-a"; }));
  REQUIRE(
      testing::Eventually([&] { return b.elector.ObservedRenewals() > 20; }, milliseconds(10'000)));
  CHECK_FALSE(b.elector.IsLeader());
  CHECK(b.starts == 0);
  CHECK(a.elector.IsLeader());

  const auto stopped = std::chrono::steady_clock::now();
  a.Join();  // releases the lease
  CHECK(a.stops == 1);
  REQUIRE(testing::Eventually([&] { return b.elector.IsLeader(); }, milliseconds(10'000)));
  // Released: the standby does not wait out the lease duration.
  CHECK(std::chrono::steady_clock::now() - stopped < milliseconds(1500));
  auto lease = client->Get(kc::Leases(), "xpu-dra", "xpu-dra-controller");
  REQUIRE_OK(lease);
  CHECK((*lease)["spec"]["holderIdentity"] == "replica-b");
  CHECK((*lease)["spec"]["leaseTransitions"].get<int>() >= 1);
  b.Join();
}

TEST_CASE("a leader whose lease another replica took steps down", "[leader]") {
  auto cluster = testing::StartCluster(XPU_KUBE_SIM_BINARY, {}, {"xpu-dra"});
  REQUIRE_OK(cluster);
  auto& client = cluster->client;
  Replica a(client.get(), "replica-a");
  a.Start();
  REQUIRE(testing::Eventually([&] { return a.elector.IsLeader(); }, milliseconds(10'000)));
  // Someone else writes the lease (as a replica that thought it expired would).
  REQUIRE(testing::Eventually([&] {
    auto got = client->Get(kc::Leases(), "xpu-dra", "xpu-dra-controller");
    if (!got.ok()) return false;
    auto lease = api::FromJson<api::core::Lease>(*got);
    if (!lease.ok()) return false;
    lease->spec.holder_identity = "intruder";
    lease->spec.lease_duration_seconds = 60;
    lease->spec.renew_time = FormatMicroTime(std::chrono::system_clock::now());
    return client->Update(kc::Leases(), "xpu-dra", api::core::ToJson(*lease)).ok();
  }));
  REQUIRE(testing::Eventually([&] { return !a.elector.IsLeader(); }, milliseconds(5'000)));
  CHECK(a.stops == 1);
  CHECK(a.elector.ObservedHolder() == "intruder");
  a.Join();
  // A replica that is not the leader does not release someone else's lease.
  auto got = client->Get(kc::Leases(), "xpu-dra", "xpu-dra-controller");
  REQUIRE_OK(got);
  CHECK((*got)["spec"]["holderIdentity"] == "intruder");
}

}  // namespace
}  // namespace xpu::controller
