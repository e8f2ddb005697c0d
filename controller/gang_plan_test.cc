#include "controller/gang_plan.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "api/client/testing/fake_objects.h"
#include "base/testing/require_ok.h"
#include "controller/gangs.h"
#include "controller/testing/cluster.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;
using kc::testing::FakeObjects;
using kc::testing::FakeVerb;

const api::NodeInventory& Atlas() {
  static const api::NodeInventory inventory = [] {
    auto inv = testing::FixtureInventory(XPU_SOURCE_DIR, "atlas800t-a2", "n");
    REQUIRE_OK(inv);
    return *inv;
  }();
  return inventory;
}

// n1..n6: n1-n3 in leaf-a, n4-n6 in leaf-b, both under spine-0 and super-pod pod-0.
std::vector<GangCandidate> SixNodes() {
  std::vector<GangCandidate> nodes;
  for (int i = 1; i <= 6; ++i) {
    GangCandidate c;
    c.name = "n" + std::to_string(i);
    c.address = "10.0.0." + std::to_string(i);
    c.labels = {{"topology.xpu.dra.dev/leaf", i <= 3 ? "leaf-a" : "leaf-b"},
                {"topology.xpu.dra.dev/spine", "spine-0"},
                {"topology.xpu.dra.dev/superpod", "pod-0"}};
    c.inventory = &Atlas();
    nodes.push_back(c);
  }
  return nodes;
}

api::AcceleratorGang Gang(const std::string& name, int nodes, const std::string& max_tier) {
  api::AcceleratorGang g;
  g.metadata.name = name;
  g.metadata.namespace_name = "default";
  g.metadata.uid = "uid-" + name;
  g.metadata.generation = 1;
  g.spec.nodes = nodes;
  g.spec.devices_per_node = 8;
  g.spec.capability_class = "huawei.xpu.dra.dev";
  g.spec.max_tier = max_tier;
  return g;
}

GangPlan Plan(const api::AcceleratorGang& gang, std::vector<GangCandidate> nodes) {
  static const Config config = DefaultConfig();
  GangPlanInput in;
  in.gang = &gang;
  in.nodes = std::move(nodes);
  in.config = &config;
  in.now = "2026-12-02T00:00:00Z";
  return PlanGang(in);
}

std::set<std::string> Leaves(const api::AcceleratorGangStatus& s) {
  std::set<std::string> leaves;
  for (const auto& n : s.nodes) leaves.insert(n.name <= "n3" ? "leaf-a" : "leaf-b");
  return leaves;
}

TEST_CASE("Gang fabric: tiers ordered by containment, the super-pod above the leaves") {
  auto fabric = BuildGangFabric(SixNodes());
  REQUIRE_OK(fabric);
  // pod-0 holds both leaves, so it sits above them; it and spine-0 hold the same nodes and the
  // default order puts superpod first.
  CHECK(fabric->tiers == std::vector<std::string>{"leaf", "superpod", "spine", "any"});
  CHECK(fabric->notes.empty());
}

TEST_CASE("Gang fabric: a tier cutting across the one below it is left out, with a note") {
  auto nodes = SixNodes();
  nodes[0].labels["topology.xpu.dra.dev/spine"] = "spine-1";  // leaf-a now spans two spines
  auto fabric = BuildGangFabric(nodes);
  REQUIRE_OK(fabric);
  CHECK(std::find(fabric->tiers.begin(), fabric->tiers.end(), "spine") == fabric->tiers.end());
  REQUIRE(fabric->notes.size() == 1);
  CHECK(fabric->notes[0].find("tier spine left out") != std::string::npos);
  CHECK(fabric->dropped == std::vector<std::string>{"spine"});
  // A gang limited to that tier is not placed by guesswork in another: it says why.
  const GangPlan plan = Plan(Gang("g", 4, "spine"), nodes);
  CHECK(plan.status.phase == "Pending");
  CHECK(plan.status.conditions[0].reason == "FabricInconsistent");
  CHECK(plan.status.conditions[0].message.find("tier spine are inconsistent") != std::string::npos);
}

TEST_CASE("PlanGang: 2 x 8 up to a leaf lands in one leaf with a full rank table") {
  const GangPlan plan = Plan(Gang("g1", 2, "leaf"), SixNodes());
  const api::AcceleratorGangStatus& s = plan.status;
  REQUIRE(s.phase == "Placed");
  CHECK(s.tier == "leaf");
  REQUIRE(s.nodes.size() == 2);
  CHECK(Leaves(s).size() == 1);
  CHECK(s.nodes[0].rank == 0);
  CHECK(s.nodes[1].rank == 1);
  CHECK(s.nodes[0].address.starts_with("10.0.0."));
  CHECK(s.resource_claim_name == "g1-gang");
  REQUIRE(s.rank_table.size() == 16);
  for (size_t r = 0; r < s.rank_table.size(); ++r) {
    const api::GangRank& e = s.rank_table[r];
    CHECK(e.rank == static_cast<int64_t>(r));
    CHECK(e.node == s.nodes[r / 8].name);
    CHECK(e.local_rank == static_cast<int64_t>(r % 8));
    CHECK(e.ip_address.starts_with("192.168.101."));
  }
  REQUIRE(s.conditions.size() == 2);
  CHECK(s.conditions[0].type == "Placed");
  CHECK(s.conditions[0].status == "True");
  CHECK(s.conditions[1].type == "DevicesHealthy");
  CHECK(s.conditions[1].status == "True");
  CHECK(api::ValidateAcceleratorGang([&] {
          auto g = Gang("g1", 2, "leaf");
          g.status = s;
          return g;
        }())
            .ok());
}

TEST_CASE("PlanGang: a gang that needs a tier above its limit stays pending and says why") {
  const GangPlan plan = Plan(Gang("g2", 4, "leaf"), SixNodes());
  CHECK(plan.status.phase == "Pending");
  CHECK(plan.status.nodes.empty());
  REQUIRE(plan.status.conditions.size() == 1);
  const api::Condition& c = plan.status.conditions[0];
  CHECK(c.status == "False");
  CHECK(c.reason == "Unschedulable");
  CHECK(c.message.find("no domain up to tier leaf has 4 nodes") != std::string::npos);
  CHECK(c.message.find("the most any has is 3") != std::string::npos);
  // Allowed up to the spine, it fits in the super-pod.
  const GangPlan wider = Plan(Gang("g2", 4, "spine"), SixNodes());
  CHECK(wider.status.phase == "Placed");
  CHECK(wider.status.tier == "superpod");
  CHECK(wider.status.domain == "pod-0");
}

TEST_CASE("PlanGang: nodes another gang holds, or with devices in use, are not offered") {
  auto nodes = SixNodes();
  nodes[3].held_by = "uid-other";  // n4
  nodes[4].allocated = {"npu-3"};  // n5: 7 free, 8 needed
  const GangPlan plan = Plan(Gang("g3", 3, "spine"), nodes);
  REQUIRE(plan.status.phase == "Placed");
  std::set<std::string> names;
  for (const auto& n : plan.status.nodes) names.insert(n.name);
  CHECK(names == std::set<std::string>{"n1", "n2", "n3"});
  // The gang's own hold does not keep it off its nodes.
  nodes[3].held_by = "uid-g3";
  nodes[0].held_by = nodes[1].held_by = nodes[2].held_by = "uid-other";
  CHECK(Plan(Gang("g3", 3, "spine"), nodes).status.phase == "Pending");
}

TEST_CASE("PlanGang: a node selector limits the candidates") {
  auto nodes = SixNodes();
  nodes[5].labels["pool"] = "a";
  auto gang = Gang("g", 1, "");
  gang.spec.node_selector = {{"pool", "a"}};
  const GangPlan plan = Plan(gang, nodes);
  REQUIRE(plan.status.nodes.size() == 1);
  CHECK(plan.status.nodes[0].name == "n6");
}

TEST_CASE("PlanGang: a placed gang stays put, is replaced or fails when a member node goes") {
  auto gang = Gang("g", 2, "leaf");
  gang.status = Plan(gang, SixNodes()).status;
  REQUIRE(gang.status.phase == "Placed");
  CHECK(Plan(gang, SixNodes()).status == [&] {
    auto s = gang.status;
    s.observed_generation = 1;
    return s;
  }());
  const std::string lost = gang.status.nodes[0].name;
  auto without = SixNodes();
  std::erase_if(without, [&](const GangCandidate& c) { return c.name == lost; });

  const GangPlan replaced = Plan(gang, without);
  CHECK(replaced.moved);
  REQUIRE(replaced.status.phase == "Placed");
  for (const auto& n : replaced.status.nodes) CHECK(n.name != lost);
  CHECK(replaced.status.conditions[0].reason == "Replaced");
  CHECK(replaced.status.conditions[0].message.find("member node " + lost + " failed") !=
        std::string::npos);

  gang.spec.on_node_failure = "fail";
  const GangPlan failed = Plan(gang, without);
  CHECK(failed.status.phase == "Failed");
  CHECK(failed.status.conditions[0].reason == "NodeFailed");
  // Failed is final.
  gang.status = failed.status;
  CHECK(Plan(gang, SixNodes()).status.phase == "Failed");
}

TEST_CASE("PlanGang: a member device going unhealthy shows in the gang's conditions") {
  auto gang = Gang("g", 2, "leaf");
  gang.status = Plan(gang, SixNodes()).status;
  REQUIRE(gang.status.phase == "Placed");
  const std::string member = gang.status.nodes[1].name;
  api::NodeInventory sick = Atlas();
  sick.status.devices[3].health = "Unhealthy";
  auto nodes = SixNodes();
  for (auto& n : nodes) {
    if (n.name == member) n.inventory = &sick;
  }
  const GangPlan plan = Plan(gang, nodes);
  CHECK(plan.status.phase == "Placed");  // placement stays; the workload decides
  REQUIRE(plan.status.conditions.size() == 2);
  const api::Condition& health = plan.status.conditions[1];
  CHECK(health.status == "False");
  CHECK(health.reason == "DevicesUnhealthy");
  CHECK(health.message == member + "/npu-3 (Unhealthy)");
}

TEST_CASE("PlanGang: a spec the schema admits but that names no class is not placed") {
  auto gang = Gang("g", 1, "");
  gang.spec.capability_class.clear();
  const GangPlan plan = Plan(gang, SixNodes());
  CHECK(plan.status.phase == "Pending");
  CHECK(plan.status.conditions[0].reason == "InvalidSpec");
  CHECK(plan.status.conditions[0].message ==
        "spec: exactly one of capabilityClass and deviceClassName must be set");
}

TEST_CASE("PlanGang: a max tier the fabric lacks leaves nothing to place in") {
  const GangPlan plan = Plan(Gang("g", 1, "scaleUpDomain"), SixNodes());
  CHECK(plan.status.phase == "Pending");
  CHECK(plan.status.conditions[0].message.find("no tier at or below scaleUpDomain") !=
        std::string::npos);
}

TEST_CASE("PlanGang: a class that admits none of a node's devices gets nothing there") {
  auto gang = Gang("g", 1, "");
  gang.spec.capability_class = "nvidia.xpu.dra.dev";
  const GangPlan plan = Plan(gang, SixNodes());
  CHECK(plan.status.phase == "Pending");
  CHECK(plan.status.conditions[0].message.find("0 of 6 live nodes") != std::string::npos);
}

// ---- The writes ----

struct Fakes {
  FakeObjects<api::AcceleratorGang> gangs{"acceleratorgangs", true};
  FakeObjects<api::resource::ResourceSlice> slices{"resourceslices"};
  FakeObjects<api::resource::ResourceClaim> claims{"resourceclaims", true};
  FakeObjects<api::resource::ResourceClaimTemplate> templates{"resourceclaimtemplates"};
  GangWriters writers() { return {&gangs, &slices, &claims, &templates}; }
  // Stores `gang` and gives it back as stored (uid, resourceVersion).
  api::AcceleratorGang Stored(const api::AcceleratorGang& gang) {
    gangs.Put(gang);
    return *gangs.Find(kc::ObjectKey::Of(gang.metadata));
  }
};

TEST_CASE("Gang sync: status first, then the gang device, the shared claim and the template") {
  Fakes f;
  const auto gang = f.Stored(Gang("g1", 2, "leaf"));
  const GangPlan placed = Plan(gang, SixNodes());
  const auto key = kc::ObjectKey::Namespaced("default", "g1");
  const GangSyncPlan plan = PlanGangSync(key, gang, placed.status, false, {}, 7, {});
  const GangSyncResult result = ApplyGangSync(plan, f.writers());
  REQUIRE_OK(result.status);
  CHECK(f.gangs.Find(key)->status.phase == "Placed");

  auto slice = f.slices.Find(kc::ObjectKey::Cluster("xpu-dra-gang.default.g1"));
  REQUIRE(slice.has_value());
  CHECK(slice->spec.pool.name == "gangs");
  CHECK(slice->spec.pool.generation == 8);
  CHECK(slice->spec.pool.resource_slice_count == 1);
  REQUIRE(slice->spec.devices.size() == 1);
  CHECK(slice->spec.devices[0].name == "gang-g1");
  CHECK(slice->spec.devices[0].attributes.at("gang").string_value == gang.metadata.uid);
  CHECK(slice->spec.devices[0].attributes.at("leaf").string_value ==
        std::optional<std::string>(placed.status.domain));
  std::vector<std::string> want;
  for (const auto& n : placed.status.nodes) want.push_back(n.name);
  std::sort(want.begin(), want.end());
  CHECK((*slice->spec.node_selector)["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] ==
        nlohmann::json(want));

  auto claim = f.claims.Find(kc::ObjectKey::Namespaced("default", "g1-gang"));
  REQUIRE(claim.has_value());
  CHECK(claim->metadata.owner_references.at(0).uid == gang.metadata.uid);
  CHECK(claim->spec.devices.requests.at(0).exactly->device_class_name == "gang.xpu.dra.dev");
  auto tmpl = f.templates.Find(kc::ObjectKey::Namespaced("default", "g1-member"));
  REQUIRE(tmpl.has_value());
  const auto& request = *tmpl->spec.spec.devices.requests.at(0).exactly;
  CHECK(request.count == 8);
  CHECK(request.device_class_name == "huawei.xpu.dra.dev");
  CHECK(request.selectors.at(0).cel->expression.find(gang.metadata.uid) != std::string::npos);
  REQUIRE(tmpl->spec.spec.devices.constraints.size() == 1);
  CHECK(tmpl->spec.spec.devices.constraints[0].match_attribute == "xpu.dra.dev/scaleUpDomain");

  // Again with nothing changed: nothing written.
  const int before =
      f.slices.writes() + f.claims.writes() + f.templates.writes() + f.gangs.writes();
  const GangSyncPlan again =
      PlanGangSync(key, *f.gangs.Find(key), placed.status, false, {*slice}, 8, {});
  CHECK(ApplyGangSync(again, f.writers()).status.ok());
  CHECK(f.slices.writes() + f.claims.writes() + f.templates.writes() + f.gangs.writes() == before);

  // Deleted: its slice, claim and template go.
  const GangSyncPlan gone = PlanGangSync(key, std::nullopt, std::nullopt, false, {*slice}, 8, {});
  REQUIRE_OK(ApplyGangSync(gone, f.writers()).status);
  CHECK_FALSE(f.slices.Find(kc::ObjectKey::Cluster("xpu-dra-gang.default.g1")).has_value());
  CHECK_FALSE(f.claims.Find(kc::ObjectKey::Namespaced("default", "g1-gang")).has_value());
  CHECK_FALSE(f.templates.Find(kc::ObjectKey::Namespaced("default", "g1-member")).has_value());
}

TEST_CASE("Gang sync: a conflict on the status writes nothing else") {
  Fakes f;
  const auto gang = f.Stored(Gang("g1", 2, "leaf"));
  f.gangs.FailNext(FakeVerb::kUpdateStatus, Status(StatusCode::kAborted, "conflict"));
  const GangPlan placed = Plan(gang, SixNodes());
  const GangSyncPlan plan = PlanGangSync(kc::ObjectKey::Namespaced("default", "g1"), gang,
                                         placed.status, false, {}, 0, {});
  const GangSyncResult result = ApplyGangSync(plan, f.writers());
  CHECK(result.status.code() == StatusCode::kAborted);
  CHECK(f.slices.writes() == 0);
  CHECK(f.claims.writes() == 0);
  CHECK(f.templates.writes() == 0);
}

TEST_CASE("Gang sync: a moved gang deletes its old claim, and makes it again once gone") {
  Fakes f;
  const auto gang = f.Stored(Gang("g1", 2, "leaf"));
  const GangPlan placed = Plan(gang, SixNodes());
  const auto key = kc::ObjectKey::Namespaced("default", "g1");
  REQUIRE_OK(
      ApplyGangSync(PlanGangSync(key, gang, placed.status, false, {}, 0, {}), f.writers()).status);
  const std::string old_uid =
      f.claims.Find(kc::ObjectKey::Namespaced("default", "g1-gang"))->metadata.uid;
  const auto slice = *f.slices.Find(kc::ObjectKey::Cluster("xpu-dra-gang.default.g1"));
  const GangSyncResult moved = ApplyGangSync(
      PlanGangSync(key, *f.gangs.Find(key), placed.status, true, {slice}, 1, {}), f.writers());
  INFO(moved.status.message());
  REQUIRE_OK(moved.status);
  CHECK(moved.waiting);
  CHECK_FALSE(f.claims.Find(kc::ObjectKey::Namespaced("default", "g1-gang")).has_value());
  REQUIRE_OK(
      ApplyGangSync(PlanGangSync(key, *f.gangs.Find(key), placed.status, false, {slice}, 1, {}),
                    f.writers())
          .status);
  auto again = f.claims.Find(kc::ObjectKey::Namespaced("default", "g1-gang"));
  REQUIRE(again.has_value());
  CHECK(again->metadata.uid != old_uid);
}

TEST_CASE("Gang slice names map back to their gang") {
  CHECK(GangSliceName("ns", "g") == "xpu-dra-gang.ns.g");
  CHECK(GangOfSlice("xpu-dra-gang.ns.g") == kc::ObjectKey::Namespaced("ns", "g"));
  CHECK_FALSE(GangOfSlice("n1-xpu.dra.dev-abcde").has_value());
  CHECK_FALSE(GangOfSlice("xpu-dra-gang.ns").has_value());
}

}  // namespace
}  // namespace xpu::controller
