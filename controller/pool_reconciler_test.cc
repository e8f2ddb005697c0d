// DecidePool (pure): when a pool sync skips, withdraws or publishes, without a server. And the
// pure steps of the gang side (NodesToConsider, PlacedNodes).
#include "controller/pool_reconciler.h"

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/accelerator_gang.h"
#include "controller/gang_reconciler.h"

namespace xpu::controller {
namespace {

PoolInputs LiveInputs() {
  PoolInputs in;
  in.live = true;
  in.inventory_version = "41";
  in.node = NodeFacts{"n1", "uid-n1", {{"zone", "a"}}, "gang-uid"};
  in.config_generation = 3;
  in.publish.taints = true;
  in.publish.counters = true;
  in.allocated = {"gpu-0"};
  in.slices = {{"n1-xpu.dra.dev-abc", "57"}};
  return in;
}

TEST_CASE("a pool sync skips, withdraws or publishes", "[pool_reconciler][decide]") {
  using Change = std::function<void(PoolInputs&)>;
  const Change none = [](PoolInputs&) {};
  struct Case {
    std::string name;
    Change now;                  // applied to LiveInputs() for this sync
    std::optional<Change> last;  // applied to LiveInputs() for the remembered sync
    PoolAction action;
    bool remember;
  };
  // clang-format off
  const std::vector<Case> cases = {
      {"first sync of a live node: publish", none, std::nullopt, PoolAction::kPublish, true},
      {"first sync of a node not live: withdraw",
       [](PoolInputs& in) { in.live = false; }, std::nullopt, PoolAction::kWithdraw, true},
      {"inputs equal to the last: skip", none, none, PoolAction::kSkip, true},
      {"not live, and so last time: skip",
       [](PoolInputs& in) { in.live = false; }, [](PoolInputs& in) { in.live = false; },
       PoolAction::kSkip, true},
      {"the Lease expired since: withdraw",
       [](PoolInputs& in) { in.live = false; }, none, PoolAction::kWithdraw, true},
      {"the node came back: publish",
       none, [](PoolInputs& in) { in.live = false; }, PoolAction::kPublish, true},
      {"a new inventory: publish",
       [](PoolInputs& in) { in.inventory_version = "42"; }, none, PoolAction::kPublish, true},
      {"a recreated Node (new uid): publish",
       [](PoolInputs& in) { in.node.uid = "uid-n1-b"; }, none, PoolAction::kPublish, true},
      {"a label changed: publish",
       [](PoolInputs& in) { in.node.labels["zone"] = "b"; }, none, PoolAction::kPublish, true},
      {"another gang holds the node: publish",
       [](PoolInputs& in) { in.node.gang.clear(); }, none, PoolAction::kPublish, true},
      {"a new config: publish",
       [](PoolInputs& in) { in.config_generation = 4; }, none, PoolAction::kPublish, true},
      {"the server drops taints now: publish",
       [](PoolInputs& in) { in.publish.taints = false; }, none, PoolAction::kPublish, true},
      {"the server drops counters now: publish",
       [](PoolInputs& in) { in.publish.counters = false; }, none, PoolAction::kPublish, true},
      {"a claim freed a device: publish",
       [](PoolInputs& in) { in.allocated.clear(); }, none, PoolAction::kPublish, true},
      {"a slice changed under us: publish",
       [](PoolInputs& in) { in.slices[0].second = "58"; }, none, PoolAction::kPublish, true},
      {"a slice was deleted by someone else: publish",
       [](PoolInputs& in) { in.slices.clear(); }, none, PoolAction::kPublish, true},
      {"writes in flight: never skipped, not remembered",
       [](PoolInputs& in) { in.writes_in_flight = true; }, none, PoolAction::kPublish, false},
      {"writes in flight on a node not live: withdraw, not remembered",
       [](PoolInputs& in) { in.live = false; in.writes_in_flight = true; },
       [](PoolInputs& in) { in.live = false; }, PoolAction::kWithdraw, false},
  };
  // clang-format on
  for (const Case& c : cases) {
    INFO(c.name);
    PoolInputs now = LiveInputs();
    c.now(now);
    std::optional<PoolInputs> last;
    if (c.last) {
      last = LiveInputs();
      (*c.last)(*last);
    }
    const PoolDecision d = DecidePool(now, last);
    CHECK(d.action == c.action);
    CHECK(d.remember == c.remember);
    if (d.action == PoolAction::kSkip) continue;
    // The slices are owned by the Node (name and uid only, whatever the labels and gang).
    CHECK(d.owner == NodeFacts{now.node.name, now.node.uid, {}});
    if (d.action == PoolAction::kPublish) {
      CHECK(d.node == now.node);
      CHECK(d.publish == now.publish);
    }
  }
}

TEST_CASE("after writes, the inputs remembered are those the watch is to show",
          "[pool_reconciler]") {
  PoolInputs in = LiveInputs();
  in.slices = {{"n1-a", "57"}, {"n1-b", "60"}, {"n1-c", "61"}};
  PoolSyncResult result;
  result.updated = 1;
  result.created = 1;
  result.deleted = 1;
  for (const auto& [name, version] : {std::pair{"n1-a", "70"}, std::pair{"n1-d", "71"}}) {
    auto slice = std::make_shared<api::resource::ResourceSlice>();
    slice->metadata.name = name;
    slice->metadata.resource_version = version;
    result.written.push_back(slice);
  }
  result.deleted_names = {"n1-c"};

  const PoolInputs after = InputsAfterWrites(in, result);
  // By name, the written at the server's versions, the untouched as they were, the deleted gone.
  CHECK(after.slices == std::vector<std::pair<std::string, std::string>>{
                            {"n1-a", "70"}, {"n1-b", "60"}, {"n1-d", "71"}});
  PoolInputs rest = after;
  rest.slices = in.slices;
  CHECK(rest == in);  // nothing else changes
  // The sync the watch's echo of these writes starts is a skip.
  PoolInputs echoed = in;
  echoed.slices = {{"n1-a", "70"}, {"n1-b", "60"}, {"n1-d", "71"}};
  CHECK(DecidePool(echoed, after).action == PoolAction::kSkip);
  // One the watch has shown only in part is not.
  echoed.slices = {{"n1-a", "70"}, {"n1-b", "60"}, {"n1-c", "61"}};
  CHECK(DecidePool(echoed, after).action == PoolAction::kPublish);
}

api::AcceleratorGang GangIn(const std::string& phase, const std::vector<std::string>& members) {
  api::AcceleratorGang gang;
  gang.status.phase = phase;
  for (const std::string& m : members) {
    api::GangNode n;
    n.name = m;
    gang.status.nodes.push_back(n);
  }
  return gang;
}

TEST_CASE("a gang placement looks at its members only while it stays", "[gang_reconciler]") {
  const std::vector<std::string> live = {"a", "b", "c", "d"};
  struct Case {
    std::string name;
    api::AcceleratorGang gang;
    std::vector<std::string> considered;
    std::vector<std::string> placed;
  };
  const std::vector<Case> cases = {
      {"pending: every live node", GangIn("Pending", {}), live, {}},
      {"placed, all members live: its members",
       GangIn("Placed", {"b", "d"}),
       {"b", "d"},
       {"b", "d"}},
      {"placed, a member gone: every live node", GangIn("Placed", {"b", "x"}), live, {"b", "x"}},
      {"failed: its live members", GangIn("Failed", {"b", "x"}), {"b"}, {}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(NodesToConsider(c.gang, live) == c.considered);
    CHECK(PlacedNodes(c.gang) == c.placed);
  }
}

}  // namespace
}  // namespace xpu::controller
