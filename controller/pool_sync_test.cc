// SyncPool against the real kube-sim: the upstream publishing rules, step by step.
#include "controller/pool_sync.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "api/resource_validation.h"
#include "base/testing/require_ok.h"
#include "controller/testing/cluster.h"
#include "controller/testing/slice_examples.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;

using testing::kDriver;

// kube-sim started with `flags`, a client to it and the Node n1 whose pool the tests sync.
struct NodeN1 {
  explicit NodeN1(const std::vector<std::string>& flags = {}) {
    auto started = testing::StartCluster(XPU_KUBE_SIM_BINARY, flags);
    REQUIRE_OK(started);
    cluster = std::move(started).value();
    auto uid = testing::MakeNode(*cluster.client, "n1");
    REQUIRE_OK(uid);
    node = {"n1", *uid, {}};
  }
  testing::SimCluster cluster;
  NodeFacts node;
};

api::resource::ResourceSliceSpec SliceOf(const std::string& node, int first, int count,
                                         const std::string& model = "H200") {
  return testing::GpuSlice(node, first, count, model);
}

std::vector<SlicePtr> Current(kc::Client& client) {
  auto slices = testing::ListSlices(client, kDriver);
  REQUIRE_OK(slices);
  std::vector<SlicePtr> out;
  for (auto& s : *slices) {
    out.push_back(std::make_shared<const api::resource::ResourceSlice>(std::move(s)));
  }
  return out;
}

// Pool n1 with gpu-0 and gpu-1 in one slice, `tainted` carrying the unhealthy taint.
DesiredPool TaintedPool(int tainted) {
  DesiredPool pool;
  pool.name = "n1";
  pool.slices = {SliceOf("n1", 0, 2)};
  api::resource::DeviceTaint taint;
  taint.key = "xpu.dra.dev/unhealthy";
  taint.value = "Unhealthy";
  taint.effect = "NoSchedule";
  pool.slices[0].devices[static_cast<size_t>(tainted)].taints.push_back(taint);
  return pool;
}

struct Writes {
  std::vector<std::string> seen;
  WriteObserver Observer() {
    return [this](std::string_view verb, std::string_view result) {
      seen.push_back(std::string(verb) + ":" + std::string(result));
    };
  }
};

TEST_CASE("pool sync creates, leaves alone, updates and withdraws a pool", "[pool_sync]") {
  NodeN1 n1;
  auto& client = n1.cluster.client;
  const NodeFacts& node = n1.node;
  DesiredPool pool;
  pool.name = "n1";
  pool.slices = {SliceOf("n1", 0, 4), SliceOf("n1", 4, 4)};

  Writes w;
  PoolSyncResult first = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool,
                                  node, {}, {false, w.Observer(), nullptr});
  REQUIRE_OK(first.status);
  CHECK(first.created == 2);
  CHECK(first.generation == 1);
  auto now = Current(*client);
  REQUIRE(now.size() == 2);
  for (const SlicePtr& s : now) {
    CHECK(s->spec.pool.generation == 1);
    CHECK(s->spec.pool.resource_slice_count == 2);
    CHECK(s->metadata.generate_name == "n1-xpu.dra.dev-");
    REQUIRE(s->metadata.owner_references.size() == 1);
    CHECK(s->metadata.owner_references[0].kind == "Node");
    CHECK(s->metadata.owner_references[0].uid == node.uid);
    CHECK(api::ValidateResourceSlice(*s, api::KubeVersion::k1_34).ok());
  }

  SECTION("nothing changed: nothing written") {
    PoolSyncResult again = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool,
                                    node, now, {false, w.Observer(), nullptr});
    REQUIRE_OK(again.status);
    CHECK_FALSE(again.Changed());
  }
  SECTION("one slice changed: updated in place, same generation") {
    pool.slices[1] = SliceOf("n1", 4, 4, "H100");
    PoolSyncResult r = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node,
                                now, {false, w.Observer(), nullptr});
    REQUIRE_OK(r.status);
    CHECK(r.updated == 1);
    CHECK(r.created == 0);
    CHECK(r.generation == 1);
  }
  SECTION("both slices changed: generation bumped on every slice") {
    pool.slices = {SliceOf("n1", 0, 4, "B200"), SliceOf("n1", 4, 4, "B200")};
    PoolSyncResult r = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node,
                                now, {false, w.Observer(), nullptr});
    REQUIRE_OK(r.status);
    CHECK(r.updated == 2);
    for (const SlicePtr& s : Current(*client)) CHECK(s->spec.pool.generation == 2);
  }
  SECTION("devices move between slices: obsolete deleted first, new created, bumped") {
    pool.slices = {SliceOf("n1", 0, 8)};
    w.seen.clear();
    PoolSyncResult r = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node,
                                now, {false, w.Observer(), nullptr});
    REQUIRE_OK(r.status);
    // One existing and one desired are not a pair here: two existing, so names decide.
    CHECK(r.deleted == 2);
    CHECK(r.created == 1);
    REQUIRE(w.seen.size() == 3);
    CHECK(w.seen[0] == "delete:ok");
    CHECK(w.seen[2] == "create:ok");
    auto after = Current(*client);
    REQUIRE(after.size() == 1);
    CHECK(after[0]->spec.pool.generation == 2);
    CHECK(after[0]->spec.pool.resource_slice_count == 1);
  }
  SECTION("a stale resourceVersion is a conflict to retry, not a lost write") {
    pool.slices[0] = SliceOf("n1", 0, 4, "H100");
    PoolSyncResult r1 = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node,
                                 now, {false, w.Observer(), nullptr});
    REQUIRE_OK(r1.status);
    pool.slices[0] = SliceOf("n1", 0, 4, "H20");
    w.seen.clear();
    PoolSyncResult r2 = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node,
                                 now, {false, w.Observer(), nullptr});
    CHECK(r2.status.code() == StatusCode::kAborted);
    CHECK(w.seen == std::vector<std::string>{"update:conflict"});
    PoolSyncResult r3 = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node,
                                 Current(*client));
    CHECK(r3.status.ok());
    CHECK(r3.updated == 1);
  }
  SECTION("withdrawn: every slice deleted") {
    PoolSyncResult r = SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"),
                                std::nullopt, node, now, {false, w.Observer(), nullptr});
    REQUIRE_OK(r.status);
    CHECK(r.deleted == 2);
    CHECK(Current(*client).empty());
  }
  SECTION("not the leader: nothing written") {
    PoolSyncResult r =
        SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), std::nullopt, node, now,
                 {false, w.Observer(), [] { return false; }});
    CHECK(r.status.code() == StatusCode::kCancelled);
    CHECK(Current(*client).size() == 2);
  }
}

TEST_CASE("pool sync keeps taint timestamps the server set", "[pool_sync]") {
  NodeN1 n1;
  auto& client = n1.cluster.client;
  const NodeFacts& node = n1.node;
  DesiredPool pool = TaintedPool(1);
  REQUIRE_OK(
      SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node, {}).status);
  auto now = Current(*client);
  REQUIRE(now.size() == 1);
  REQUIRE(now[0]->spec.devices[1].taints.size() == 1);
  // Whether or not the server stamped timeAdded, the same desired state writes nothing.
  PoolSyncResult r =
      SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node, now);
  REQUIRE_OK(r.status);
  CHECK_FALSE(r.Changed());
}

TEST_CASE("pool sync reports fields the server dropped", "[pool_sync]") {
  NodeN1 n1(
      {"--feature-gates",
       "DRADeviceTaints=false,DRAPartitionableDevices=false,DRAPartitionableDevicesType=false"});
  auto& client = n1.cluster.client;
  const NodeFacts& node = n1.node;
  DesiredPool pool = TaintedPool(0);
  api::resource::CounterSet set;
  set.name = "gpu-members";
  set.counters["gpu-0"].value = "1";
  set.counters["gpu-1"].value = "1";
  pool.slices[0].shared_counters.push_back(set);
  api::resource::DeviceCounterConsumption uses;
  uses.counter_set = "gpu-members";
  uses.counters["gpu-1"].value = "1";
  pool.slices[0].devices[1].consumes_counters.push_back(uses);
  pool.slices[0].devices[1].attributes.emplace("partitionType",
                                               api::resource::DeviceAttribute::String("whole"));
  pool.slices[0].partition_type_attribute = std::string(kDriver) + "/partitionType";
  PoolSyncResult r =
      SyncPool(*client, api::DriverName(kDriver), api::PoolName("n1"), pool, node, {});
  REQUIRE_OK(r.status);
  CHECK(r.dropped_taints);
  CHECK(r.dropped_counters);
  CHECK(r.dropped_partition_type);
}

}  // namespace
}  // namespace xpu::controller
