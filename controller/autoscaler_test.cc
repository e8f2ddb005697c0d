#include "controller/autoscaler.h"

#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "base/testing/require_ok.h"
#include "controller/device_classes.h"
#include "controller/pending_cache.h"
#include "controller/pending_facts.h"
#include "controller/reference_servers.h"
#include "topology/solver.h"

namespace xpu::controller {
namespace {

const api::NodeInventory& Server(std::string_view name) {
  const ReferenceServer* s = FindReferenceServer(name);
  REQUIRE(s != nullptr);
  return s->inventory;
}

ClaimAlternative Huawei(int64_t count) {
  return {.name = "", .device_class = "huawei.xpu.dra.dev", .count = count, .all = false};
}

PendingClaimInput Claim(std::string name, std::vector<ClaimAlternative> alternatives) {
  PendingClaimInput c;
  c.ns = "default";
  c.name = std::move(name);
  c.demands.push_back({.request = "r", .alternatives = std::move(alternatives)});
  return c;
}

TEST_CASE("a node serves a request with enough free devices of the class in a rule-keeping set",
          "[autoscaler]") {
  const Config config = DefaultConfig();
  const api::NodeInventory& a2 = Server("atlas800t-a2");
  CHECK_FALSE(CannotServe(a2, {}, Huawei(8), config, "xpu.dra.dev").has_value());
  const std::set<std::string> six = {"npu-0", "npu-1", "npu-2", "npu-3", "npu-4", "npu-5"};
  const std::optional<std::string> busy = CannotServe(a2, six, Huawei(4), config, "xpu.dra.dev");
  REQUIRE(busy.has_value());
  CHECK(*busy == "2 of its 8 huawei.xpu.dra.dev devices free, 4 wanted");
  CHECK_FALSE(CannotServe(a2, six, Huawei(2), config, "xpu.dra.dev").has_value());
  // The 910 rings: three never keep the rule.
  const std::optional<std::string> ring =
      CannotServe(Server("atlas800-9000"), {}, Huawei(3), config, "xpu.dra.dev");
  REQUIRE(ring.has_value());
  CHECK(ring->find("no set of 3") != std::string::npos);
  // Another vendor's class: no device of it.
  ClaimAlternative gpu = Huawei(1);
  gpu.device_class = "nvidia.xpu.dra.dev";
  CHECK(CannotServe(a2, {}, gpu, config, "xpu.dra.dev") == "no device of class nvidia.xpu.dra.dev");
  // All: every device of the class free.
  ClaimAlternative all = Huawei(0);
  all.all = true;
  CHECK_FALSE(CannotServe(a2, {}, all, config, "xpu.dra.dev").has_value());
  CHECK(CannotServe(a2, {"npu-3"}, all, config, "xpu.dra.dev").has_value());
}

TEST_CASE("pending claims: only ours, only those no live node serves, judged per node group",
          "[autoscaler]") {
  const Config config = DefaultConfig();
  const std::vector<PendingClaimInput> claims = {
      Claim("big", {Huawei(16)}),
      Claim("small", {Huawei(2)}),
      Claim("foreign", {{.name = "", .device_class = "gpu.example.com", .count = 1, .all = false}}),
      // firstAvailable: the second alternative fits the live node.
      Claim("either", {Huawei(16), Huawei(4)}),
  };
  CHECK_FALSE(ClassesAreOurs(claims[2], config, "xpu.dra.dev"));
  auto a3 = ParseNodeGroupProfile("name: a3\nmodel: atlas800t-a3\nmaxSize: 2\n", "");
  auto h200 = ParseNodeGroupProfile("name: h200\nmodel: hgx-h200\nmaxSize: 2\n", "");
  REQUIRE_OK(a3);
  REQUIRE_OK(h200);
  bool given = false;
  const auto one_a2 = [&](LiveNode* node) {
    if (given) return false;
    given = true;
    node->name = "n1";
    node->inventory = std::make_shared<const api::NodeInventory>(Server("atlas800t-a2"));
    node->allocated = {};
    return true;
  };
  const std::vector<PendingReport> reports =
      PendingClaims(claims, one_a2, {*a3, *h200}, config, "xpu.dra.dev");
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].name == "big");
  CHECK(reports[0].reason == "none of the 1 live nodes can serve it");
  REQUIRE(reports[0].groups.size() == 2);
  CHECK(reports[0].groups[0].fits);
  CHECK(reports[0].groups[0].reason.find("16 of huawei.xpu.dra.dev on a new") != std::string::npos);
  CHECK_FALSE(reports[0].groups[1].fits);
  CHECK(reports[0].groups[1].reason == "r: no device of class huawei.xpu.dra.dev");

  const nlohmann::json json = PendingJson(reports, {*a3, *h200});
  CHECK(json["pending"][0]["nodeGroups"][0]["fits"] == true);
  CHECK(json["nodeGroups"] == nlohmann::json::array({"a3", "h200"}));

  // No live node at all.
  const auto none = [](LiveNode*) { return false; };
  const std::vector<PendingReport> alone = PendingClaims(claims, none, {}, config, "xpu.dra.dev");
  CHECK(alone.size() == 3);
  CHECK(alone[0].reason == "no live node of this driver");
}

TEST_CASE("template drift: a node like its template has none, another server model has",
          "[autoscaler]") {
  auto profile = ParseNodeGroupProfile("name: g\nmodel: atlas800t-a2\nmaxSize: 2\n", "");
  REQUIRE_OK(profile);
  StatusOr<DesiredPool> tmpl = TemplatePool(*profile, DefaultConfig(), PublishOptions{});
  REQUIRE_OK(tmpl);
  NodeFacts node{.name = "n7", .uid = "u", .labels = {}};
  StatusOr<DesiredPool> same =
      BuildPool(Server("atlas800t-a2"), node, DefaultConfig(), PublishOptions{});
  REQUIRE_OK(same);
  CHECK(TemplateDrift(*same, *tmpl).empty());

  api::NodeInventory fewer = Server("atlas800t-a2");
  fewer.status.devices.pop_back();
  fewer.status.links.clear();
  StatusOr<DesiredPool> short_one = BuildPool(fewer, node, DefaultConfig(), PublishOptions{});
  REQUIRE_OK(short_one);
  const std::vector<std::string> drift = TemplateDrift(*short_one, *tmpl);
  REQUIRE_FALSE(drift.empty());
  CHECK(std::find(drift.begin(), drift.end(), "device npu-7 missing") != drift.end());

  StatusOr<DesiredPool> other =
      BuildPool(Server("atlas800-9000"), node, DefaultConfig(), PublishOptions{});
  REQUIRE_OK(other);
  CHECK_FALSE(TemplateDrift(*other, *tmpl).empty());
  CHECK(TemplateDrift(*other, *tmpl, 2).size() == 2);
}

// CannotServe as it was before the facts: every call from the decoded inventory.
std::optional<std::string> CannotServeDecoded(const api::NodeInventory& inventory,
                                              const std::set<std::string>& allocated,
                                              const ClaimAlternative& alternative,
                                              const Config& config) {
  StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(inventory);
  StatusOr<topology::Node> node =
      spec.ok() ? topology::Node::Build(*spec) : StatusOr<topology::Node>(spec.status());
  if (!node.ok()) return "its inventory has no usable topology: " + node.status().message();
  topology::DeviceSet free;
  int in_class = 0;
  for (const api::InventoryDevice& d : inventory.status.devices) {
    const std::optional<bool> in =
        DeviceInClass(config, alternative.device_class, "xpu.dra.dev", d);
    if (!in.has_value()) return std::nullopt;
    if (!*in) continue;
    ++in_class;
    if (allocated.contains(d.name) || d.health != "Healthy") continue;
    if (const std::optional<int> id = node->FindDevice(d.name)) free.Add(*id);
  }
  const int want = alternative.all ? 1 : static_cast<int>(alternative.count);
  const std::string& c = alternative.device_class;
  if (in_class == 0) return "no device of class " + c;
  if (free.size() < want) {
    return std::to_string(free.size()) + " of its " + std::to_string(in_class) + " " + c +
           " devices free, " + std::to_string(want) + " wanted";
  }
  if (alternative.all) {
    if (free.size() == in_class) return std::nullopt;
    return "not all of its " + c + " devices are free";
  }
  if (!topology::Solve(*node, free, want).feasible) {
    return "its free " + c + " devices hold no set of " + std::to_string(want) + " its rules allow";
  }
  return std::nullopt;
}

TEST_CASE("pending claims from shared node facts answer as the decoded inventories did",
          "[autoscaler][pending]") {
  const Config config = DefaultConfig();
  const std::vector<std::string> models = {"atlas800t-a2", "atlas800-9000", "hgx-h200",
                                           "atlas800t-a3"};
  std::mt19937 rng(36);
  // 200 nodes of four models, some devices unhealthy, some held, each with its own uuids.
  std::vector<api::NodeInventory> fleet;
  std::vector<std::set<std::string>> held;
  for (int i = 0; i < 200; ++i) {
    api::NodeInventory inv = Server(models[static_cast<size_t>(i) % models.size()]);
    inv.metadata.name = "n" + std::to_string(i);
    std::set<std::string> h;
    for (api::InventoryDevice& d : inv.status.devices) {
      d.uuid = inv.metadata.name + "-" + d.name;
      if (rng() % 10 == 0) d.health = "Unhealthy";
      if (rng() % 4 == 0) h.insert(d.name);
    }
    fleet.push_back(std::move(inv));
    held.push_back(std::move(h));
  }
  std::vector<ClaimAlternative> asks;
  for (const char* cls : {"huawei.xpu.dra.dev", "nvidia.xpu.dra.dev"}) {
    for (int64_t n : {1, 2, 3, 4, 8, 16}) {
      asks.push_back({.name = "", .device_class = cls, .count = n});
    }
    asks.push_back({.name = "", .device_class = cls, .count = 0, .all = true});
  }
  // Every node and alternative: the same words as before.
  PendingModels interned;
  for (size_t i = 0; i < fleet.size(); ++i) {
    const PendingNode node = interned.Of(fleet[i]);
    for (const ClaimAlternative& a : asks) {
      INFO(fleet[i].metadata.name << " " << a.count << " of " << a.device_class);
      CHECK(CannotServe(*node.model, node.healthy, DeviceIds(*node.model, held[i]), a, config,
                        "xpu.dra.dev") == CannotServeDecoded(fleet[i], held[i], a, config));
    }
  }
  // One model per server model, whatever the uuids and health.
  CHECK(interned.size() == models.size());

  // The claims no node serves, as the walk over decoded inventories finds them.
  std::vector<PendingClaimInput> claims;
  for (size_t i = 0; i < asks.size(); ++i) {
    claims.push_back(Claim("c" + std::to_string(i), {asks[i]}));
    claims.push_back(Claim("d" + std::to_string(i), {asks[i], asks[(i + 5) % asks.size()]}));
  }
  auto profile = ParseNodeGroupProfile("name: a3\nmodel: atlas800t-a3\nmaxSize: 2\n", "");
  REQUIRE_OK(profile);
  // Few nodes, so that some claims stay pending.
  for (size_t live : {size_t{0}, size_t{1}, size_t{3}, size_t{200}}) {
    std::vector<PendingNodeInput> nodes;
    std::set<std::string> expected;
    for (const PendingClaimInput& c : claims) {
      bool served = false;
      for (size_t i = 0; i < live && !served; ++i) {
        for (const ClaimAlternative& a : c.demands[0].alternatives) {
          served |= !CannotServeDecoded(fleet[i], held[i], a, config).has_value();
        }
      }
      if (!served) expected.insert(c.name);
    }
    for (size_t i = 0; i < live; ++i) {
      PendingNodeInput in{.facts = interned.Of(fleet[i]), .allocated = {}};
      in.allocated = DeviceIds(*in.facts.model, held[i]);
      nodes.push_back(std::move(in));
    }
    const auto reports = JudgePendingClaims(claims, nodes, {*profile}, config, "xpu.dra.dev");
    std::set<std::string> got;
    for (const PendingReport& r : reports) {
      got.insert(r.name);
      CHECK(r.groups.size() == 1);
      CHECK(r.reason == (live == 0
                             ? "no live node of this driver"
                             : "none of the " + std::to_string(live) + " live nodes can serve it"));
    }
    INFO(live << " live nodes");
    CHECK(got == expected);
    CHECK_FALSE(expected.empty());
  }
}

api::NodeInventory Versioned(std::string_view model, const std::string& node,
                             const std::string& version) {
  api::NodeInventory inv = Server(model);
  inv.metadata.name = node;
  inv.metadata.resource_version = version;
  return inv;
}

// What a pool sync does with the inventory it decoded.
void Note(PendingCache& cache, const api::NodeInventory& inv) {
  cache.Note(inv.metadata.name, inv.metadata.resource_version, inv);
}

TEST_CASE("the pending cache keeps one model per server model and follows inventory versions",
          "[autoscaler][pending]") {
  PendingCache cache;
  Note(cache, Versioned("atlas800t-a2", "n1", "1"));
  Note(cache, Versioned("atlas800t-a2", "n2", "2"));
  Note(cache, Versioned("hgx-h200", "n3", "3"));
  CHECK(cache.counts().nodes == 3);
  CHECK(cache.counts().models == 2);
  CHECK(cache.counts().noted == 3);
  // The same version again (a relist): not noted (nor decoded) again.
  Note(cache, Versioned("atlas800t-a2", "n1", "1"));
  CHECK(cache.counts().noted == 3);

  const Config config = DefaultConfig();
  const std::vector<PendingClaimInput> claims = {Claim("four", {Huawei(4)})};
  auto judge = [&](const std::vector<std::string>& live) {
    std::vector<PendingNodeInput> nodes;
    for (PendingNode& f : cache.Facts(live)) nodes.push_back({.facts = f, .allocated = {}});
    return JudgePendingClaims(claims, nodes, {}, config, "xpu.dra.dev");
  };
  CHECK(judge({"n1"}).empty());
  // n1 changes: six NPUs unhealthy. Still the A2 model, another health mask.
  api::NodeInventory sick = Versioned("atlas800t-a2", "n1", "4");
  for (size_t i = 0; i < 6; ++i) sick.status.devices[i].health = "Unhealthy";
  Note(cache, sick);
  CHECK(cache.counts().noted == 4);
  REQUIRE(judge({"n1"}).size() == 1);
  CHECK(judge({"n1", "n2"}).empty());
  CHECK(judge({"n1", "n3"}).size() == 1);
  // n3's H200 replaced by an A2; the H200 model goes with it.
  Note(cache, Versioned("atlas800t-a2", "n3", "5"));
  CHECK(cache.counts().models == 1);
  CHECK(judge({"n1", "n3"}).empty());
  // Deleted: no facts, not counted as live.
  cache.Forget("n3");
  const auto reports = judge({"n1", "n3"});
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].reason == "none of the 1 live nodes can serve it");
  CHECK(cache.counts().nodes == 2);
}

}  // namespace
}  // namespace xpu::controller
