#include "controller/autoscaler.h"

#include <catch2/catch.hpp>

#include "base/testing/require_ok.h"
#include "controller/reference_servers.h"

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

}  // namespace
}  // namespace xpu::controller
