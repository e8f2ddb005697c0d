// PlanPoolSync (pure) and ApplyPoolSync through a recording SliceWriter: the publishing rules
// without a server. pool_sync_test.cc runs the same rules against kube-sim.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"
#include "controller/pool_sync.h"
#include "controller/testing/slice_examples.h"

namespace xpu::controller {
namespace {

using api::resource::ResourceSlice;
using api::resource::ResourceSliceSpec;

using testing::kDriver;
const NodeFacts kNode{"n1", "uid-n1", {}};

ResourceSliceSpec SliceOf(int first, int count, const std::string& model = "H200") {
  return testing::GpuSlice("n1", first, count, model);
}

DesiredPool PoolOf(std::vector<ResourceSliceSpec> slices) {
  DesiredPool pool;
  pool.name = "n1";
  pool.slices = std::move(slices);
  return pool;
}

// What the server holds after `pool` was written at `generation`: slices named n1-<i>.
std::vector<SlicePtr> Stored(const DesiredPool& pool, int64_t generation) {
  std::vector<SlicePtr> out;
  std::vector<ResourceSlice> objects = SliceObjects(pool, kNode, kDriver, generation);
  for (size_t i = 0; i < objects.size(); ++i) {
    ResourceSlice& s = objects[i];
    s.metadata.name = "n1-" + std::to_string(i);
    s.metadata.uid = "uid-" + std::to_string(i);
    s.metadata.resource_version = std::to_string(10 + i);
    out.push_back(std::make_shared<const ResourceSlice>(std::move(s)));
  }
  return out;
}

std::vector<std::string> Names(const std::vector<SlicePtr>& slices) {
  std::vector<std::string> names;
  for (const SlicePtr& s : slices) names.push_back(s->metadata.name);
  return names;
}

TEST_CASE("a pool sync plan follows the publishing rules", "[pool_sync][plan]") {
  const DesiredPool two = PoolOf({SliceOf(0, 4), SliceOf(4, 4)});
  const std::vector<SlicePtr> stored = Stored(two, 3);

  struct Case {
    std::string name;
    std::optional<DesiredPool> desired;
    std::vector<SlicePtr> existing;
    bool bump_on_change;
    int64_t generation;
    std::vector<std::string> deletes;
    size_t updates;
    size_t creates;
  };
  std::vector<SlicePtr> with_stale = stored;
  {
    std::vector<SlicePtr> old = Stored(PoolOf({SliceOf(0, 8)}), 2);
    ResourceSlice stale = *old[0];
    stale.metadata.name = "n1-old";
    with_stale.push_back(std::make_shared<const ResourceSlice>(std::move(stale)));
  }
  // clang-format off
  const std::vector<Case> cases = {
      {"a new pool: every slice created at generation 1",
       two, {}, false, 1, {}, 0, 2},
      {"nothing changed: an empty plan",
       two, stored, false, 3, {}, 0, 0},
      {"one slice changed: updated, same generation",
       PoolOf({SliceOf(0, 4), SliceOf(4, 4, "H100")}), stored, false, 3, {}, 1, 0},
      {"one slice changed, a bump asked for: every slice rewritten at the next generation",
       PoolOf({SliceOf(0, 4), SliceOf(4, 4, "H100")}), stored, true, 4, {}, 2, 0},
      {"both slices changed: both updated at the next generation",
       PoolOf({SliceOf(0, 4, "B200"), SliceOf(4, 4, "B200")}), stored, false, 4, {}, 2, 0},
      {"devices moved between slices: old deleted, new created, bumped",
       PoolOf({SliceOf(0, 8)}), stored, false, 4, {"n1-0", "n1-1"}, 0, 1},
      {"a slice of an older generation is obsolete",
       two, with_stale, false, 3, {"n1-old"}, 0, 0},
      {"withdrawn: every slice deleted",
       std::nullopt, with_stale, false, 3, {"n1-0", "n1-1", "n1-old"}, 0, 0},
  };
  // clang-format on

  for (const Case& c : cases) {
    SECTION(c.name) {
      PoolSyncPlan plan = PlanPoolSync(api::DriverName(kDriver), api::PoolName("n1"), c.desired,
                                       kNode, c.existing, c.bump_on_change);
      CHECK(plan.pool == "n1");
      CHECK(plan.generation == c.generation);
      CHECK(Names(plan.deletes) == c.deletes);
      REQUIRE(plan.updates.size() == c.updates);
      REQUIRE(plan.creates.size() == c.creates);
      CHECK(plan.Empty() == (c.deletes.empty() && c.updates == 0 && c.creates == 0));
      const size_t count = c.desired ? c.desired->slices.size() : 0;
      for (const auto* list : {&plan.updates, &plan.creates}) {
        for (const ResourceSlice& s : *list) {
          CHECK(s.spec.driver == kDriver);
          CHECK(s.spec.pool.name == "n1");
          CHECK(s.spec.pool.generation == c.generation);
          CHECK(s.spec.pool.resource_slice_count == static_cast<int64_t>(count));
        }
      }
      for (const ResourceSlice& s : plan.updates) {
        // An update keeps the stored object's identity and resourceVersion (the precondition).
        CHECK_FALSE(s.metadata.name.empty());
        CHECK_FALSE(s.metadata.resource_version.empty());
      }
      for (const ResourceSlice& s : plan.creates) {
        CHECK(s.metadata.name.empty());
        CHECK(s.metadata.generate_name == "n1-xpu.dra.dev-");
        REQUIRE(s.metadata.owner_references.size() == 1);
        CHECK(s.metadata.owner_references[0].uid == kNode.uid);
      }
    }
  }
}

TEST_CASE("a pool sync plan keeps what the server added", "[pool_sync][plan]") {
  DesiredPool pool = PoolOf({SliceOf(0, 2)});
  api::resource::DeviceTaint taint;
  taint.key = "xpu.dra.dev/unhealthy";
  taint.value = "Unhealthy";
  taint.effect = "NoSchedule";
  pool.slices[0].devices[1].taints.push_back(taint);
  std::vector<SlicePtr> stored = Stored(pool, 1);
  ResourceSlice server = *stored[0];
  server.spec.devices[1].taints[0].time_added = "2026-12-02T01:00:00Z";
  server.spec.devices[0].unknown["futureField"] = "kept";
  stored[0] = std::make_shared<const ResourceSlice>(server);

  SECTION("the same desired state: nothing to write") {
    CHECK(PlanPoolSync(api::DriverName(kDriver), api::PoolName("n1"), pool, kNode, stored).Empty());
  }
  SECTION("a change elsewhere: the update carries the timestamp and unknown fields") {
    pool.slices[0].devices[0].attributes["model"].string_value = "H100";
    PoolSyncPlan plan =
        PlanPoolSync(api::DriverName(kDriver), api::PoolName("n1"), pool, kNode, stored);
    REQUIRE(plan.updates.size() == 1);
    const ResourceSliceSpec& spec = plan.updates[0].spec;
    CHECK(spec.devices[1].taints[0].time_added == "2026-12-02T01:00:00Z");
    CHECK(spec.devices[0].unknown.at("futureField") == "kept");
  }
}

// Records every write and answers from a script: by default the object sent, as a server would
// store it.
class RecordingWriter final : public SliceWriter {
 public:
  std::vector<std::string> calls;
  std::map<std::string, Status> fail;  // "create" / "update" / "delete:<name>" -> error
  std::function<nlohmann::json(nlohmann::json)> stored = [](nlohmann::json j) { return j; };

  StatusOr<nlohmann::json> Create(const nlohmann::json& slice) override {
    calls.emplace_back("create");
    if (auto it = fail.find("create"); it != fail.end()) return it->second;
    return stored(slice);
  }
  StatusOr<nlohmann::json> Update(const nlohmann::json& slice) override {
    calls.push_back("update:" + slice["metadata"]["name"].get<std::string>());
    if (auto it = fail.find("update"); it != fail.end()) return it->second;
    return stored(slice);
  }
  Status Delete(const std::string& name, const api::client::DeleteOptions& pre) override {
    calls.push_back("delete:" + name + ":" + pre.uid.value_or("") + ":" +
                    pre.resource_version.value_or(""));
    if (auto it = fail.find("delete:" + name); it != fail.end()) return it->second;
    return OkStatus();
  }
};

TEST_CASE("applying a pool sync plan writes in order and stops at a failure", "[pool_sync][plan]") {
  const DesiredPool two = PoolOf({SliceOf(0, 4), SliceOf(4, 4)});
  PoolSyncPlan plan;
  plan.pool = "n1";
  plan.generation = 5;
  plan.deletes = Stored(PoolOf({SliceOf(8, 1)}), 4);
  plan.updates = {*Stored(two, 5)[0]};
  plan.creates = SliceObjects(PoolOf({SliceOf(4, 4)}), kNode, kDriver, 5);

  RecordingWriter writer;
  std::vector<std::string> observed;
  SyncOptions options;
  options.observe = [&](std::string_view verb, std::string_view result) {
    observed.push_back(std::string(verb) + ":" + std::string(result));
  };

  SECTION("deletes with preconditions first, then updates, then creates") {
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    REQUIRE_OK(r.status);
    CHECK(writer.calls ==
          std::vector<std::string>{"delete:n1-0:uid-0:10", "update:n1-0", "create"});
    CHECK(observed == std::vector<std::string>{"delete:ok", "update:ok", "create:ok"});
    CHECK(r.deleted == 1);
    CHECK(r.updated == 1);
    CHECK(r.created == 1);
    CHECK(r.generation == 5);
    CHECK(r.deleted_names == std::vector<std::string>{"n1-0"});
    CHECK(r.written.size() == 2);
    CHECK_FALSE(r.dropped_taints);
  }
  SECTION("a slice already gone counts as deleted") {
    writer.fail["delete:n1-0"] = Status(StatusCode::kNotFound, "gone");
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    REQUIRE_OK(r.status);
    CHECK(r.deleted == 1);
    CHECK(observed.front() == "delete:not_found");
  }
  SECTION("a conflict stops the sync; the writes before it are listed") {
    writer.fail["update"] = Status(StatusCode::kAborted, "the object has been modified");
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    CHECK(r.status.code() == StatusCode::kAborted);
    CHECK(r.status.message().find("sync pool n1") != std::string::npos);
    CHECK(writer.calls == std::vector<std::string>{"delete:n1-0:uid-0:10", "update:n1-0"});
    CHECK(observed.back() == "update:conflict");
    CHECK(r.deleted == 1);
    CHECK(r.updated == 0);
    CHECK(r.created == 0);
  }
  SECTION("not the leader: nothing written") {
    options.can_write = [] { return false; };
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    CHECK(r.status.code() == StatusCode::kCancelled);
    CHECK(writer.calls.empty());
  }
  SECTION("the leader lost its lease half way: the writes stop there") {
    int left = 2;
    options.can_write = [&] { return left-- > 0; };
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    CHECK(r.status.code() == StatusCode::kCancelled);
    CHECK(writer.calls.size() == 2);
  }
  SECTION("fields the server dropped are reported") {
    api::resource::DeviceTaint taint;
    taint.key = "xpu.dra.dev/unhealthy";
    taint.value = "Unhealthy";
    taint.effect = "NoSchedule";
    plan.creates[0].spec.devices[0].taints.push_back(taint);
    api::resource::CounterSet set;
    set.name = "gpu-members";
    set.counters["gpu-4"].value = "1";
    plan.creates[0].spec.shared_counters.push_back(set);
    writer.stored = [](nlohmann::json j) {
      j["spec"].erase("sharedCounters");
      for (auto& d : j["spec"]["devices"]) d.erase("taints");
      return j;
    };
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    REQUIRE_OK(r.status);
    CHECK(r.dropped_taints);
    CHECK(r.dropped_counters);
  }
  SECTION("an answer that is not a slice is an error") {
    writer.stored = [](const nlohmann::json&) { return nlohmann::json("not an object"); };
    PoolSyncResult r = ApplyPoolSync(plan, writer, options);
    CHECK_FALSE(r.status.ok());
    CHECK(r.status.message().find("read written slice") != std::string::npos);
  }
}

}  // namespace
}  // namespace xpu::controller
