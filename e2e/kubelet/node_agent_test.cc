#include "e2e/kubelet/node_agent.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>

#include "base/testing/require_ok.h"
#include "base/time.h"
#include "e2e/client/child_process.h"

namespace xpu::e2e {
namespace {

using nlohmann::json;

std::chrono::system_clock::time_point At(const char* text) {
  auto t = ParseTime(text);
  REQUIRE_OK(t);
  return *t;
}

NodeAgentOptions Valid() {
  NodeAgentOptions o;
  o.node_name = "node-1";
  return o;
}

TEST_CASE("node agent flags", "[node_agent]") {
  bool help = false;
  auto o = ParseNodeAgentFlags({"--kubeconfig",
                                "/k",
                                "--node-name",
                                "n-0.rack",
                                "--node-labels",
                                "zone=a,x.io/pool=gpu",
                                "--cpu",
                                "8",
                                "--memory=64Gi",
                                "--pods",
                                "20",
                                "--host-ip",
                                "10.0.0.7",
                                "--heartbeat",
                                "500ms",
                                "--plugin-registry-dir",
                                "/reg",
                                "--state-dir",
                                "/st",
                                "--wipe-after",
                                "3s",
                                "--log-level",
                                "debug"},
                               &help);
  REQUIRE_OK(o);
  CHECK_FALSE(help);
  CHECK(o->kubeconfig == "/k");
  CHECK(o->node_name == "n-0.rack");
  CHECK(o->node_labels == std::map<std::string, std::string>{{"zone", "a"}, {"x.io/pool", "gpu"}});
  CHECK(o->cpu == "8");
  CHECK(o->memory == "64Gi");
  CHECK(o->pods == 20);
  CHECK(o->host_ip == "10.0.0.7");
  CHECK(o->heartbeat == std::chrono::milliseconds(500));
  CHECK(o->plugin_registry_dir == "/reg");
  CHECK(o->StateDir() == "/st");
  CHECK(o->wipe_after == std::chrono::seconds(3));
  CHECK(o->log_level == "debug");
  CHECK(o->Validate().ok());

  auto defaults = ParseNodeAgentFlags({"--node-name", "n1"}, &help);
  REQUIRE_OK(defaults);
  CHECK(defaults->cpu == "64");
  CHECK(defaults->memory == "512Gi");
  CHECK(defaults->pods == 110);
  CHECK(defaults->heartbeat == std::chrono::seconds(10));
  CHECK(defaults->wipe_after == std::chrono::seconds(30));
  CHECK(defaults->plugin_registry_dir == "/var/lib/kubelet/plugins_registry");
  CHECK(defaults->StateDir() == "/var/lib/xpu-node-agent/n1");
  CHECK(defaults->Validate().ok());

  REQUIRE_OK(ParseNodeAgentFlags({"--help"}, &help));
  CHECK(help);

  help = false;
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--node-name", "n1", "--gpus", "8"}, "unknown flag --gpus"},
      {{"--pods", "many"}, "--pods"},
      {{"--pods", "0"}, "--pods"},
      {{"--heartbeat", "soon"}, "--heartbeat"},
      {{"--node-labels", "a=b,c"}, "--node-labels"},
      {{"--node-name"}, "--node-name: needs a value"},
  };
  for (const auto& [args, expect] : bad) {
    INFO(expect);
    auto parsed = ParseNodeAgentFlags(args, &help);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().message().find(expect) != std::string::npos);
  }
}

TEST_CASE("node agent options validation names the flag", "[node_agent]") {
  CHECK(Valid().Validate().ok());
  struct Case {
    const char* flag;
    std::function<void(NodeAgentOptions&)> change;
  };
  const std::vector<Case> cases = {
      {"--node-name", [](NodeAgentOptions& o) { o.node_name = ""; }},
      {"--node-name", [](NodeAgentOptions& o) { o.node_name = "Node_1"; }},
      {"--node-name", [](NodeAgentOptions& o) { o.node_name = "-node"; }},
      {"--node-name", [](NodeAgentOptions& o) { o.node_name = std::string(254, 'a'); }},
      {"--node-labels",
       [](NodeAgentOptions& o) {
         o.node_labels = {{"bad key", "v"}};
       }},
      {"--node-labels",
       [](NodeAgentOptions& o) {
         o.node_labels = {{"k", "bad value"}};
       }},
      {"--cpu", [](NodeAgentOptions& o) { o.cpu = "64x"; }},
      {"--cpu", [](NodeAgentOptions& o) { o.cpu = "0"; }},
      {"--memory", [](NodeAgentOptions& o) { o.memory = "-1Gi"; }},
      {"--pods", [](NodeAgentOptions& o) { o.pods = 0; }},
      {"--host-ip", [](NodeAgentOptions& o) { o.host_ip = "localhost"; }},
      {"--heartbeat", [](NodeAgentOptions& o) { o.heartbeat = std::chrono::seconds(40); }},
      {"--heartbeat", [](NodeAgentOptions& o) { o.heartbeat = std::chrono::milliseconds(0); }},
      {"--plugin-registry-dir", [](NodeAgentOptions& o) { o.plugin_registry_dir = "reg"; }},
      {"--state-dir", [](NodeAgentOptions& o) { o.state_dir = "state"; }},
      {"--wipe-after", [](NodeAgentOptions& o) { o.wipe_after = std::chrono::milliseconds(0); }},
      {"--log-level", [](NodeAgentOptions& o) { o.log_level = "loud"; }},
  };
  for (const Case& c : cases) {
    NodeAgentOptions o = Valid();
    c.change(o);
    Status s = o.Validate();
    INFO(c.flag << ": " << s.message());
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find(c.flag) != std::string::npos);
  }
  NodeAgentOptions v6 = Valid();
  v6.host_ip = "::1";
  CHECK(v6.Validate().ok());
}

TEST_CASE("node labels: the --node-labels flag is parsed", "[node_agent]") {
  auto empty = ParseNodeLabels("");
  REQUIRE_OK(empty);
  CHECK(empty->empty());
  auto good = ParseNodeLabels("zone=a,example.com/tier=gold,flag=");
  REQUIRE_OK(good);
  CHECK(*good == std::map<std::string, std::string>{
                     {"zone", "a"}, {"example.com/tier", "gold"}, {"flag", ""}});
  for (const char* bad :
       {"zone", "=a", "a=b,", "a=b,,c=d", "a=b,a=c", "bad key=v", "k=bad value", "x=-dash-"}) {
    auto parsed = ParseNodeLabels(bad);
    INFO(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    CHECK(parsed.status().message().find("--node-labels") != std::string::npos);
  }
  auto twice = ParseNodeLabels("a=b,a=b");
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().message().find("given twice") != std::string::npos);

  NodeAgentOptions o = Valid();
  o.node_labels = {{"zone", "a"}};
  CHECK(NodeLabels(o) ==
        std::map<std::string, std::string>{{"kubernetes.io/hostname", "node-1"}, {"zone", "a"}});
}

TEST_CASE("node status: capacity, Ready heartbeat, transitions kept", "[node_agent]") {
  NodeAgentOptions o = Valid();
  o.cpu = "16";
  o.memory = "128Gi";
  o.pods = 32;
  const auto t0 = At("2026-01-01T00:00:00Z");
  const auto t1 = At("2026-01-01T00:00:10Z");

  api::core::NodeStatus current;
  current.capacity["example.com/thing"] = "1";
  api::core::NodeCondition custom;
  custom.type = "NetworkUnavailable";
  custom.status = "False";
  current.conditions.push_back(custom);
  current.unknown = {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}}};

  api::core::NodeStatus first = BuildNodeStatus(o, current, t0);
  for (const auto* resources : {&first.capacity, &first.allocatable}) {
    CHECK(resources->at("cpu") == "16");
    CHECK(resources->at("memory") == "128Gi");
    CHECK(resources->at("pods") == "32");
  }
  CHECK(first.capacity.at("example.com/thing") == "1");  // kept
  auto find = [](const api::core::NodeStatus& s, const std::string& type) {
    for (const auto& c : s.conditions) {
      if (c.type == type) return c;
    }
    FAIL("no condition " << type);
    return api::core::NodeCondition{};
  };
  const auto ready = find(first, "Ready");
  CHECK(ready.status == "True");
  CHECK(ready.reason == "KubeletReady");
  CHECK(ready.last_heartbeat_time == "2026-01-01T00:00:00Z");
  CHECK(ready.last_transition_time == "2026-01-01T00:00:00Z");
  CHECK(find(first, "MemoryPressure").status == "False");
  CHECK(find(first, "DiskPressure").status == "False");
  CHECK(find(first, "PIDPressure").status == "False");
  CHECK(find(first, "NetworkUnavailable").status == "False");  // kept
  CHECK(first.conditions.size() == 5);
  CHECK(first.node_info.operating_system == "linux");
  CHECK_FALSE(first.node_info.architecture.empty());
  CHECK(first.unknown["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250);
  CHECK(first.unknown["addresses"] ==
        json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                     {{"type", "Hostname"}, {"address", "node-1"}}}));

  // The next heartbeat moves only the heartbeat.
  api::core::NodeStatus second = BuildNodeStatus(o, first, t1);
  CHECK(find(second, "Ready").last_heartbeat_time == "2026-01-01T00:00:10Z");
  CHECK(find(second, "Ready").last_transition_time == "2026-01-01T00:00:00Z");
  CHECK(second.conditions.size() == 5);

  // Ready False (someone else's write) becomes True with a new transition.
  api::core::NodeStatus not_ready = first;
  for (auto& c : not_ready.conditions) {
    if (c.type == "Ready") c.status = "Unknown";
  }
  CHECK(find(BuildNodeStatus(o, not_ready, t1), "Ready").last_transition_time ==
        "2026-01-01T00:00:10Z");

  // Written as the API expects.
  api::core::Node node;
  node.metadata.name = "node-1";
  node.status = second;
  const json written = api::core::ToJson(node);
  CHECK(written["status"]["capacity"]["memory"] == "128Gi");
  CHECK(written["status"]["allocatable"]["pods"] == "32");
  CHECK(written["status"]["addresses"].size() == 2);
  CHECK(written["status"]["nodeInfo"]["operatingSystem"] == "linux");
}

TEST_CASE("node lease: created and renewed", "[node_agent]") {
  const auto t0 = At("2026-01-01T00:00:00Z");
  const auto t1 = At("2026-01-01T00:00:10.25Z");
  api::core::Lease made = RenewedLease(std::nullopt, "node-1", "node-uid", t0);
  CHECK(made.metadata.name == "node-1");
  CHECK(made.metadata.namespace_name == "kube-node-lease");
  CHECK(made.spec.holder_identity == "node-1");
  CHECK(made.spec.lease_duration_seconds == 40);
  CHECK(made.spec.renew_time == "2026-01-01T00:00:00.000000Z");
  CHECK(made.spec.acquire_time == "2026-01-01T00:00:00.000000Z");
  REQUIRE(made.metadata.owner_references.size() == 1);
  CHECK(made.metadata.owner_references[0].kind == "Node");
  CHECK(made.metadata.owner_references[0].uid == "node-uid");
  CHECK(RenewedLease(std::nullopt, "node-1", "", t0).metadata.owner_references.empty());

  api::core::Lease stored = made;
  stored.metadata.resource_version = "42";
  stored.spec.holder_identity = "someone-else";
  stored.spec.lease_duration_seconds = 15;
  api::core::Lease renewed = RenewedLease(stored, "node-1", "node-uid", t1);
  CHECK(renewed.metadata.resource_version == "42");  // the update's precondition
  CHECK(renewed.spec.holder_identity == "node-1");
  CHECK(renewed.spec.lease_duration_seconds == 40);
  CHECK(renewed.spec.renew_time == "2026-01-01T00:00:10.250000Z");
  CHECK(renewed.spec.acquire_time == "2026-01-01T00:00:00.000000Z");
  const json written = api::core::ToJson(renewed);
  CHECK(written["spec"]["renewTime"] == "2026-01-01T00:00:10.250000Z");
  CHECK(written["spec"]["leaseDurationSeconds"] == 40);
}

json PodWithClaims(json claims, json statuses = nullptr) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "pod-uid"}}},
              {"spec",
               {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})},
                {"resourceClaims", std::move(claims)}}}};
  if (!statuses.is_null()) pod["status"]["resourceClaimStatuses"] = std::move(statuses);
  return pod;
}

TEST_CASE("pod claims: names and templates", "[node_agent]") {
  auto none = PodClaims(json{{"spec", {{"containers", json::array()}}}});
  REQUIRE_OK(none);
  CHECK(none->empty());
  auto garbage = PodClaims(json::array({1, 2}));
  REQUIRE_OK(garbage);
  CHECK(garbage->empty());

  const json claims = json::array({{{"name", "a"}, {"resourceClaimName", "shared"}},
                                   {{"name", "b"}, {"resourceClaimTemplateName", "tmpl"}},
                                   {{"name", "c"}, {"resourceClaimTemplateName", "unneeded"}}});
  // The template's claim is not in the status yet: wait.
  auto waiting = PodClaims(PodWithClaims(claims));
  REQUIRE_FALSE(waiting.ok());
  CHECK(waiting.status().code() == StatusCode::kUnavailable);
  CHECK(waiting.status().message().find("\"b\"") != std::string::npos);
  auto partial = PodClaims(
      PodWithClaims(claims, json::array({{{"name", "b"}, {"resourceClaimName", "p-b-x7k2"}}})));
  REQUIRE_FALSE(partial.ok());
  CHECK(partial.status().code() == StatusCode::kUnavailable);
  CHECK(partial.status().message().find("\"c\"") != std::string::npos);

  auto ready = PodClaims(
      PodWithClaims(claims, json::array({{{"name", "c"}, {"resourceClaimName", nullptr}},
                                         {{"name", "b"}, {"resourceClaimName", "p-b-x7k2"}}})));
  REQUIRE_OK(ready);
  CHECK(*ready == std::vector<PodClaimRef>{{"a", "shared"}, {"b", "p-b-x7k2"}});
  // A status entry without resourceClaimName at all also means no claim is needed.
  auto absent = PodClaims(PodWithClaims(
      claims, json::array({{{"name", "c"}}, {{"name", "b"}, {"resourceClaimName", "p-b-x7k2"}}})));
  REQUIRE_OK(absent);
  CHECK(absent->size() == 2);
}

TEST_CASE("pod claims: malformed pods are terminal errors", "[node_agent]") {
  struct Case {
    const char* what;
    json pod;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"neither name", PodWithClaims(json::array({{{"name", "a"}}})), "exactly one of"},
      {"both names",
       PodWithClaims(json::array(
           {{{"name", "a"}, {"resourceClaimName", "x"}, {"resourceClaimTemplateName", "t"}}})),
       "exactly one of"},
      {"no entry name", PodWithClaims(json::array({{{"resourceClaimName", "x"}}})),
       "spec.resourceClaims[0].name"},
      {"duplicate entry",
       PodWithClaims(json::array({{{"name", "a"}, {"resourceClaimName", "x"}},
                                  {{"name", "a"}, {"resourceClaimName", "y"}}})),
       "used twice"},
      {"unknown status name",
       PodWithClaims(json::array({{{"name", "a"}, {"resourceClaimTemplateName", "t"}}}),
                     json::array({{{"name", "zzz"}, {"resourceClaimName", "x"}}})),
       "\"zzz\" names no spec.resourceClaims entry"},
      {"status name missing",
       PodWithClaims(json::array({{{"name", "a"}, {"resourceClaimTemplateName", "t"}}}),
                     json::array({{{"resourceClaimName", "x"}}})),
       "status.resourceClaimStatuses[0].name"},
      {"status listed twice",
       PodWithClaims(json::array({{{"name", "a"}, {"resourceClaimTemplateName", "t"}}}),
                     json::array({{{"name", "a"}, {"resourceClaimName", "x"}},
                                  {{"name", "a"}, {"resourceClaimName", "y"}}})),
       "listed twice"},
      {"status claim name mistyped",
       PodWithClaims(json::array({{{"name", "a"}, {"resourceClaimTemplateName", "t"}}}),
                     json::array({{{"name", "a"}, {"resourceClaimName", 7}}})),
       "resourceClaimName: expected a string"},
      {"claims not an array", PodWithClaims(json{{"name", "a"}}), "spec.resourceClaims"},
      {"statuses not an array",
       PodWithClaims(json::array({{{"name", "a"}, {"resourceClaimTemplateName", "t"}}}),
                     json{{"a", "b"}}),
       "status.resourceClaimStatuses"},
  };
  for (const Case& c : cases) {
    auto claims = PodClaims(c.pod);
    INFO(c.what);
    REQUIRE_FALSE(claims.ok());
    CHECK(claims.status().code() == StatusCode::kInvalidArgument);
    CHECK(claims.status().message().find(c.expect) != std::string::npos);
  }
}

api::resource::ResourceClaim Claim(const std::vector<std::string>& drivers) {
  api::resource::ResourceClaim claim;
  claim.metadata.name = "c";
  claim.metadata.namespace_name = "ns";
  claim.metadata.uid = "claim-uid";
  if (drivers.empty()) return claim;
  claim.status.allocation.emplace();
  for (const std::string& driver : drivers) {
    api::resource::DeviceRequestAllocationResult result;
    result.request = "r";
    result.driver = driver;
    result.pool = "node-1";
    result.device = "d";
    claim.status.allocation->devices.results.push_back(result);
  }
  return claim;
}

TEST_CASE("claim readiness and drivers", "[node_agent]") {
  api::resource::ResourceClaim unallocated = Claim({});
  Status s = ClaimReadyFor(unallocated, "pod-uid");
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message() == "resourceclaim ns/c: not allocated yet");
  CHECK(ClaimDrivers(unallocated).empty());

  api::resource::ResourceClaim claim = Claim({"b.example.com", "a.example.com", "b.example.com"});
  CHECK(ClaimDrivers(claim) == std::vector<std::string>{"a.example.com", "b.example.com"});
  CHECK(ClaimReadyFor(claim, "pod-uid").code() == StatusCode::kUnavailable);  // not reserved

  api::resource::ResourceClaimConsumerReference other;
  other.resource = "pods";
  other.name = "other";
  other.uid = "other-uid";
  claim.status.reserved_for.push_back(other);
  s = ClaimReadyFor(claim, "pod-uid");
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message().find("not reserved for pod uid pod-uid") != std::string::npos);

  api::resource::ResourceClaimConsumerReference not_a_pod;
  not_a_pod.api_group = "example.com";
  not_a_pod.resource = "pods";
  not_a_pod.uid = "pod-uid";
  claim.status.reserved_for.push_back(not_a_pod);
  CHECK(ClaimReadyFor(claim, "pod-uid").code() == StatusCode::kUnavailable);

  api::resource::ResourceClaimConsumerReference mine = other;
  mine.name = "p";
  mine.uid = "pod-uid";
  claim.status.reserved_for.push_back(mine);
  CHECK(ClaimReadyFor(claim, "pod-uid").ok());
}

PodRecord Record(const std::string& pod, const std::string& uid,
                 const std::vector<std::string>& claim_uids) {
  PodRecord record{pod, "ns", uid, {}};
  for (const std::string& claim : claim_uids) {
    record.claims.push_back({"claim-" + claim, claim, {"xpu.dra.dev"}, {}});
  }
  return record;
}

TEST_CASE("pod record: round trip, path and bad input", "[node_agent]") {
  PodRecord record = Record("p", "pod-uid", {"u1", "u2"});
  record.claims[0].devices.push_back(
      {{"gpu"}, "node-1", "gpu-0", {"xpu.dra.dev/gpu=claim-u1-gpu-0"}, std::nullopt});
  record.claims[0].devices.push_back(
      {{"gpu", "gpu/sub"}, "node-1", "gpu-1", {"a=b", "c=d"}, std::nullopt});
  record.claims[1].drivers = {"a.dev", "b.dev"};

  const json written = ToJson(record);
  CHECK(written["pod"] == "p");
  CHECK(written["namespace"] == "ns");
  CHECK(written["uid"] == "pod-uid");
  CHECK(written["claims"][0]["name"] == "claim-u1");
  CHECK(written["claims"][0]["uid"] == "u1");
  CHECK(written["claims"][0]["devices"][0] ==
        json{{"requestNames", {"gpu"}},
             {"poolName", "node-1"},
             {"deviceName", "gpu-0"},
             {"cdiDeviceIds", {"xpu.dra.dev/gpu=claim-u1-gpu-0"}}});
  CHECK(written["claims"][1]["devices"] == json::array());
  // The whole file, as the agent has always written it: empty lists are written too.
  PodRecord small{"p", "ns", "pod-uid", {{"c", "u", {}, {{{}, "node-1", "gpu-0", {"a=b"}, "s"}}}}};
  CHECK(ToJson(small).dump(2) == R"({
  "claims": [
    {
      "devices": [
        {
          "cdiDeviceIds": [
            "a=b"
          ],
          "deviceName": "gpu-0",
          "poolName": "node-1",
          "requestNames": []
        }
      ],
      "drivers": [],
      "name": "c",
      "uid": "u"
    }
  ],
  "namespace": "ns",
  "pod": "p",
  "uid": "pod-uid"
})");
  auto back = PodRecordFromJson(json::parse(written.dump()));
  REQUIRE_OK(back);
  CHECK(*back == record);
  CHECK(back->Key() == "ns/p");
  CHECK(PodRecordPath("/var/state", "ns", "p") == "/var/state/pods/ns_p.json");

  struct Case {
    const char* what;
    std::function<void(json&)> change;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"no uid", [](json& j) { j.erase("uid"); }, "uid: missing required field"},
      {"empty pod", [](json& j) { j["pod"] = ""; }, "pod: expected a non-empty string"},
      {"claims missing", [](json& j) { j.erase("claims"); }, "claims: missing required field"},
      {"claims an object", [](json& j) { j["claims"] = json::object(); }, "claims"},
      {"claim not an object", [](json& j) { j["claims"][0] = 3; }, "claims[0]: expected an object"},
      {"claim without uid", [](json& j) { j["claims"][1].erase("uid"); }, "claims[1].uid"},
      {"device without pool", [](json& j) { j["claims"][0]["devices"][1].erase("poolName"); },
       "claims[0].devices[1].poolName"},
      {"cdi id not a string", [](json& j) { j["claims"][0]["devices"][0]["cdiDeviceIds"][0] = 1; },
       "claims[0].devices[0].cdiDeviceIds[0]"},
      {"drivers not a list", [](json& j) { j["claims"][0]["drivers"] = "x"; }, "claims[0].drivers"},
      {"unknown member", [](json& j) { j["claims"][0]["devices"][0]["shareId"] = "s"; },
       "claims[0].devices[0]"},
  };
  for (const Case& c : cases) {
    json j = written;
    c.change(j);
    auto parsed = PodRecordFromJson(j);
    INFO(c.what);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    CHECK(parsed.status().message().find(c.expect) != std::string::npos);
  }
  CHECK_FALSE(PodRecordFromJson(json::array()).ok());
}

TEST_CASE("claims to unprepare: counted per claim uid over the node's pods", "[node_agent]") {
  const PodRecord leaving = Record("a", "uid-a", {"shared", "own", "shared-2", "own"});
  const PodRecord b = Record("b", "uid-b", {"shared"});
  const PodRecord c = Record("c", "uid-c", {"shared-2", "unrelated"});

  auto uids = [](const std::vector<ClaimRecord>& claims) {
    std::vector<std::string> out;
    for (const auto& claim : claims) out.push_back(claim.uid);
    return out;
  };
  // Alone: every claim once, in order.
  CHECK(uids(ClaimsToUnprepare(leaving, {})) ==
        std::vector<std::string>{"shared", "own", "shared-2"});
  // Itself in the list does not count.
  CHECK(uids(ClaimsToUnprepare(leaving, {leaving})) ==
        std::vector<std::string>{"shared", "own", "shared-2"});
  CHECK(uids(ClaimsToUnprepare(leaving, {leaving, b})) ==
        std::vector<std::string>{"own", "shared-2"});
  CHECK(uids(ClaimsToUnprepare(leaving, {b, c})) == std::vector<std::string>{"own"});
  // The last user of a shared claim unprepares it.
  CHECK(uids(ClaimsToUnprepare(b, {c})) == std::vector<std::string>{"shared"});
  CHECK(ClaimsToUnprepare(b, {leaving}).empty());
  // What is unprepared carries the drivers to call.
  CHECK(ClaimsToUnprepare(b, {})[0].drivers == std::vector<std::string>{"xpu.dra.dev"});
}

const json* Condition(const json& status, const std::string& type) {
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

TEST_CASE("running pod status", "[node_agent]") {
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "pod-uid"}}},
      {"spec",
       {{"nodeName", "node-1"},
        {"containers", json::array({{{"name", "main"}, {"image", "busybox:1.36"}},
                                    {{"name", "side"}, {"image", "registry.k8s.io/pause:3.10"}}})},
        {"resourceClaims", json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "t"}}})}}},
      {"status",
       {{"phase", "Pending"},
        {"qosClass", "BestEffort"},
        {"resourceClaimStatuses",
         json::array({{{"name", "gpu"}, {"resourceClaimName", "p-gpu-abcde"}}})},
        {"conditions", json::array({{{"type", "PodScheduled"},
                                     {"status", "True"},
                                     {"lastProbeTime", nullptr},
                                     {"lastTransitionTime", "2025-12-31T23:59:00Z"}},
                                    {{"type", "example.com/Custom"}, {"status", "False"}}})}}}};
  const auto t0 = At("2026-01-01T00:00:00Z");
  const json status = RunningPodStatus(pod, t0, "127.0.0.1");
  CHECK(status["phase"] == "Running");
  CHECK(status["hostIP"] == "127.0.0.1");
  CHECK(status["hostIPs"] == json::array({{{"ip", "127.0.0.1"}}}));
  CHECK(status["startTime"] == "2026-01-01T00:00:00Z");
  CHECK(status["qosClass"] == "BestEffort");  // immutable on the server: kept
  CHECK(status["resourceClaimStatuses"] == pod["status"]["resourceClaimStatuses"]);
  for (const char* type :
       {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"}) {
    const json* c = Condition(status, type);
    INFO(type);
    REQUIRE(c != nullptr);
    CHECK((*c)["status"] == "True");
    CHECK((*c)["lastProbeTime"].is_null());
  }
  CHECK((*Condition(status, "PodScheduled"))["lastTransitionTime"] == "2025-12-31T23:59:00Z");
  CHECK((*Condition(status, "Ready"))["lastTransitionTime"] == "2026-01-01T00:00:00Z");
  REQUIRE(Condition(status, "example.com/Custom") != nullptr);  // kept
  CHECK(status["conditions"].size() == 6);
  CHECK_FALSE(status.contains("initContainerStatuses"));

  REQUIRE(status["containerStatuses"].size() == 2);
  const json& first = status["containerStatuses"][0];
  CHECK(first["name"] == "main");
  CHECK(first["image"] == "busybox:1.36");
  REQUIRE(first["imageID"].is_string());
  CHECK(first["imageID"].get<std::string>().empty());
  CHECK(first["ready"] == true);
  CHECK(first["started"] == true);
  CHECK(first["restartCount"] == 0);
  CHECK(first["state"] == json{{"running", {{"startedAt", "2026-01-01T00:00:00Z"}}}});
  CHECK(status["containerStatuses"][1]["name"] == "side");
  CHECK(status["containerStatuses"][1]["image"] == "registry.k8s.io/pause:3.10");

  // Written again later (a restart, a conflict): times already set stay.
  json again_pod = pod;
  again_pod["status"] = status;
  const json again = RunningPodStatus(again_pod, At("2026-01-01T00:05:00Z"), "127.0.0.1");
  CHECK(again["startTime"] == "2026-01-01T00:00:00Z");
  CHECK(again["containerStatuses"][0]["state"]["running"]["startedAt"] == "2026-01-01T00:00:00Z");
  CHECK((*Condition(again, "Ready"))["lastTransitionTime"] == "2026-01-01T00:00:00Z");
  CHECK(again["conditions"].size() == 6);
}

TEST_CASE("running pod status: init containers and odd input", "[node_agent]") {
  json pod = {
      {"spec",
       {{"initContainers",
         json::array({{{"name", "setup"}, {"image", "busybox"}},
                      {{"name", "proxy"}, {"image", "envoy"}, {"restartPolicy", "Always"}}})},
        {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
  const json status = RunningPodStatus(pod, At("2026-01-01T00:00:00Z"), "10.1.2.3");
  REQUIRE(status["initContainerStatuses"].size() == 2);
  const json& setup = status["initContainerStatuses"][0];
  CHECK(setup["state"]["terminated"]["exitCode"] == 0);
  CHECK(setup["state"]["terminated"]["reason"] == "Completed");
  CHECK(setup["started"] == false);
  const json& proxy = status["initContainerStatuses"][1];
  CHECK(proxy["state"]["running"]["startedAt"] == "2026-01-01T00:00:00Z");
  CHECK(proxy["ready"] == true);
  CHECK(status["hostIP"] == "10.1.2.3");

  for (const json& odd :
       {json(nullptr), json::array({1}), json{{"spec", "x"}, {"status", 5}},
        json{{"spec", {{"containers", json::array({1, {{"image", "no-name"}}, "x"})}}},
             {"status", {{"conditions", "nope"}, {"containerStatuses", 3}}}}}) {
    const json s = RunningPodStatus(odd, At("2026-01-01T00:00:00Z"), "127.0.0.1");
    INFO(odd.dump());
    CHECK(s["phase"] == "Running");
    CHECK(s["containerStatuses"] == json::array());
    CHECK(s["conditions"].size() == 5);
  }
}

TEST_CASE("pod event", "[node_agent]") {
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "pod-uid"}}}};
  const json event = PodEvent(pod, "FailedPrepareDynamicResources", std::string(2000, 'x'),
                              "node-1", At("2026-01-01T00:00:00Z"));
  CHECK(event["kind"] == "Event");
  CHECK(event["metadata"]["namespace"] == "ns");
  CHECK(event["metadata"]["generateName"] == "p.");
  CHECK(event["involvedObject"] == json{{"apiVersion", "v1"},
                                        {"kind", "Pod"},
                                        {"namespace", "ns"},
                                        {"name", "p"},
                                        {"uid", "pod-uid"}});
  CHECK(event["type"] == "Warning");
  CHECK(event["reason"] == "FailedPrepareDynamicResources");
  CHECK(event["message"].get<std::string>().size() == 1024);
  CHECK(event["reportingInstance"] == "node-1");
  CHECK(event["firstTimestamp"] == "2026-01-01T00:00:00Z");
}

TEST_CASE("xpu-node-agent: --help and flag errors", "[node_agent]") {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("node-agent-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto run = [&](const std::vector<std::string>& args, std::string* log) {
    auto child = ChildProcess::Start(XPU_NODE_AGENT_BINARY, args, dir + "/log");
    REQUIRE_OK(child);
    const int code = (*child)->Wait();
    *log = (*child)->Log();
    return code;
  };
  std::string log;
  CHECK(run({"--help"}, &log) == 0);
  for (const char* flag : {"--kubeconfig", "--node-name", "--node-labels", "--cpu", "--memory",
                           "--pods", "--host-ip", "--heartbeat", "--plugin-registry-dir",
                           "--state-dir", "--wipe-after", "--log-level", "--help"}) {
    CHECK(log.find(flag) != std::string::npos);
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--node-name", "n1", "--bogus"}, "unknown flag --bogus"},
      {{"--node-name", "n1", "--pods", "lots"}, "--pods"},
      {{"--cpu", "8"}, "--node-name is required"},
      {{"--node-name", "Bad_Name"}, "--node-name"},
      {{"--node-name", "n1", "--node-labels", "a"}, "--node-labels"},
      {{"--node-name", "n1", "--memory", "lots"}, "--memory"},
      {{"--node-name", "n1", "--wipe-after", "never"}, "--wipe-after"},
  };
  for (const auto& [args, expect] : bad) {
    INFO(expect);
    CHECK(run(args, &log) == 2);
    CHECK(log.find(expect) != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace xpu::e2e
