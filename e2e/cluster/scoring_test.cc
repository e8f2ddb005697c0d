// The placement lab's model of kube-scheduler's node scoring (lab/kube_score.h) against the real
// kube-scheduler (the upstream tier, ctest upstream-scoring). Eight fixture nodes of three kinds
// run our plugin and controller on the pinned control plane; a seeded sequence of pods, each with
// a claim that `xpuctl render` writes for a capability class over nvidia and huawei, is placed
// one at a time, with releases in between, so that the nodes are used in different ways. Before
// each placement the lab decides on the state the scheduler sees: the stock allocator (the same
// Go package the scheduler runs) over each node's published slices with the devices of the live
// claims taken gives the feasible nodes and the subrequest each would use; KubeScores totals them
// with the CPU and memory plugins; SelectHost picks. The real pick agrees when it is the lab's,
// or when the lab scores it as high as the lab's (a tie, which the scheduler breaks by its own
// feasible order, docs/kube-scheduler-scoring.md section 7). It needs 95 % agreement, and
// placements where the score, and the DynamicResources term in it, set the nodes apart.
//
// Every pod has explicit CPU and memory requests: the scheduler's "nonzero" defaults then never
// apply, and LeastAllocated and BalancedAllocation both see the same per-node sums the lab reads
// back from the bound pods. Before 1.37 DynamicResources has no Score; the test then exits 77,
// which ctest shows as skipped. The report goes to $XPU_UPSTREAM_REPORT_DIR (default the working
// directory) as upstream-scoring-<version>.json.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/client/client.h"
#include "api/quantity.h"
#include "base/testing/require_ok.h"
#include "controller/config.h"
#include "controller/render.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "lab/kube_score.h"
#include "lab/stock_allocator.h"

namespace xpu::e2e {
namespace {

namespace kc = api::client;
using nlohmann::json;

constexpr const char* kNs = "scoring";
// The first release whose DynamicResources plugin has a Score (docs/kube-scheduler-scoring.md).
constexpr int kFirstScoringMinor = 37;
constexpr int kPlacements = 48;
constexpr uint32_t kSeed = 20261205;
// The fleet's devices: 8 per node. Above this many held, the sequence releases first, so that
// most placements still have a choice of nodes.
constexpr int kBusyDevices = 44;

// Attributes mode, set explicitly: the controller's default follows the Kubernetes version, and
// the claims' topology tiers are matchAttribute constraints over single devices.
constexpr const char* kConfig = R"(publishing:
  mode: attributes
capabilityClasses:
- name: scoring
  vendors: [nvidia, huawei]
)";

struct FleetNode {
  const char* node;
  const char* host;
};
constexpr FleetNode kFleet[] = {{"sc-pcie-0", "pcie-2numa-8gpu"}, {"sc-pcie-1", "pcie-2numa-8gpu"},
                                {"sc-pcie-2", "pcie-2numa-8gpu"}, {"sc-pcie-3", "pcie-2numa-8gpu"},
                                {"sc-h200-0", "hgx-h200"},        {"sc-h200-1", "hgx-h200"},
                                {"sc-910-0", "atlas800-9000"},    {"sc-910-1", "atlas800-9000"}};

struct PodRequest {
  std::string cpu;
  std::string memory;
};

// The pod `name`: with the claim of the same name unless `claim` is false (a pod that only loads
// the node's CPU and memory), pinned to `node` when it is not empty.
json Pod(const std::string& name, const PodRequest& request, const std::string& node, bool claim) {
  json pod = PodObject(kNs, name, name, node);
  json& container = pod["spec"]["containers"][0];
  container["resources"]["requests"] = {{"cpu", request.cpu}, {"memory", request.memory}};
  if (!claim) {
    pod["spec"].erase("resourceClaims");
    container["resources"].erase("claims");
  }
  return pod;
}

// The claim `name` as the ResourceClaimTemplate that Render writes for `count` devices of the
// test's capability class: whatever tiers render emits is what is checked.
json RenderedClaim(const std::string& name, int count) {
  static const controller::Config config = testing::RequireValue(controller::ParseConfig(kConfig));
  controller::CapabilityRequest request;
  request.name = name;
  request.ns = kNs;
  request.capability_class = "scoring";
  request.count = count;
  request.topology = "single-node";
  controller::RenderOptions options;
  options.config = config;
  const controller::Rendered rendered = testing::RequireValue(controller::Render(request, options));
  const json& tpl = rendered.objects.at(0);
  REQUIRE(tpl.value("kind", "") == "ResourceClaimTemplate");
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec", tpl.at("spec").at("spec")}};
}

// A quantity's value (milli: in thousandths), or `fallback` when the field is absent: the
// scheduler's nonzero default for a container without a request.
int64_t QuantityOr(const json& requests, const char* name, int64_t fallback, bool milli) {
  const auto it = requests.find(name);
  if (it == requests.end()) return fallback;
  const api::Quantity q = testing::RequireValue(api::QuantityFromJson(*it));
  return milli ? q.MilliValue() : q.Value();
}

lab::Resources ResourcesOf(const json& requests, int64_t default_cpu, int64_t default_memory) {
  return {QuantityOr(requests, "cpu", default_cpu, true),
          QuantityOr(requests, "memory", default_memory, false)};
}

// What the scheduler's snapshot holds, read back from the API server.
struct State {
  std::map<std::string, json> slices;  // node -> its ResourceSlices of our driver (an array)
  std::map<std::string, std::vector<std::string>> allocated;  // node -> "driver/pool/device"
  std::map<std::string, std::set<std::string>> held;          // node -> device names
  std::map<std::string, lab::Resources> requested;            // node -> its pods' nonzero sums
  int held_devices = 0;
};

State ReadState(kc::Client& client) {
  State state;
  for (const FleetNode& n : kFleet) {
    state.slices[n.node] = json::array();
    state.requested[n.node] = {};
  }
  const auto slices = testing::RequireValue(client.ListAll(kc::ResourceSlices(), ""));
  for (const json& slice : slices.items) {
    const std::string node = slice.value("/spec/nodeName"_json_pointer, "");
    if (slice.value("/spec/driver"_json_pointer, "") != DriverHarness::kDriver) continue;
    if (state.slices.contains(node)) state.slices[node].push_back(slice);
  }
  // Our pools are named after their nodes.
  const auto claims = testing::RequireValue(client.ListAll(kc::ResourceClaims(), kNs));
  for (const json& claim : claims.items) {
    for (const json& r :
         claim.value("/status/allocation/devices/results"_json_pointer, json::array())) {
      const std::string pool = r.value("pool", "");
      const std::string device = r.value("device", "");
      std::string id = r.value("driver", "");
      id.append("/").append(pool).append("/").append(device);
      state.allocated[pool].push_back(std::move(id));
      state.held[pool].insert(device);
      ++state.held_devices;
    }
  }
  // The nonzero request of each container: 100m CPU and 200 MiB where it sets none
  // (pkg/scheduler/util/pod_resources.go); every pod here sets both.
  const auto pods = testing::RequireValue(client.ListAll(Pods(), kNs));
  for (const json& pod : pods.items) {
    const std::string node = pod.value("/spec/nodeName"_json_pointer, "");
    if (node.empty()) continue;
    for (const json& c : pod.value("/spec/containers"_json_pointer, json::array())) {
      const lab::Resources r = ResourcesOf(
          c.value("/resources/requests"_json_pointer, json::object()), 100, 200LL << 20);
      state.requested[node].cpu_milli += r.cpu_milli;
      state.requested[node].memory += r.memory;
    }
  }
  return state;
}

// One node in the lab's view of a scheduling cycle.
struct Candidate {
  std::string node;
  std::vector<std::string> requests;  // the `request` of each allocation result
  int64_t raw = 0;                    // PrioritizedListRaw
  int64_t total = 0;                  // KubeScores
};

struct LabChoice {
  std::vector<Candidate> feasible;
  size_t pick = 0;
  int64_t max_total = 0;
  int at_max = 0;  // feasible nodes with the highest total
  // Whether the DynamicResources term changed which nodes score highest: without it (every raw
  // score 0, so it adds 0 everywhere) they would be others.
  bool dra_decided = false;
};

// The feasible nodes with the highest of `totals`.
std::vector<size_t> AtMax(const std::vector<int64_t>& totals) {
  const int64_t max = *std::max_element(totals.begin(), totals.end());
  std::vector<size_t> at;
  for (size_t i = 0; i < totals.size(); ++i) {
    if (totals[i] == max) at.push_back(i);
  }
  return at;
}

LabChoice LabChoose(lab::StockAllocator& stock, const State& state,
                    const std::map<std::string, lab::Resources>& allocatable, const json& claim,
                    const lab::Resources& pod, std::mt19937_64& rng) {
  LabChoice choice;
  std::vector<lab::NodeScoreInput> inputs;
  for (const FleetNode& n : kFleet) {
    REQUIRE_OK(stock.PutSlices(n.node, state.slices.at(n.node)));
    const auto held = state.allocated.find(n.node);
    const auto results = testing::RequireValue(stock.AllocateResults(
        n.node, n.node, held == state.allocated.end() ? std::vector<std::string>() : held->second,
        claim));
    if (!results.has_value()) continue;
    Candidate c{n.node, {}, 0, 0};
    for (const lab::AllocatedDevice& d : *results) c.requests.push_back(d.request);
    c.raw = lab::PrioritizedListRaw(claim.at("spec"), c.requests);
    inputs.push_back({n.node, c.raw, allocatable.at(n.node), state.requested.at(n.node)});
    choice.feasible.push_back(std::move(c));
  }
  if (choice.feasible.empty()) return choice;
  const std::vector<int64_t> totals =
      lab::KubeScores(inputs, {.dynamic_resources_score = true, .pod_request = pod});
  for (size_t i = 0; i < totals.size(); ++i) choice.feasible[i].total = totals[i];
  choice.max_total = *std::max_element(totals.begin(), totals.end());
  choice.at_max = static_cast<int>(std::count(totals.begin(), totals.end(), choice.max_total));
  choice.pick = lab::SelectHost(totals, rng);
  for (lab::NodeScoreInput& in : inputs) in.prioritized_raw = 0;
  choice.dra_decided =
      AtMax(totals) !=
      AtMax(lab::KubeScores(inputs, {.dynamic_resources_score = true, .pod_request = pod}));
  return choice;
}

// Where the scheduler put a pod, and the `request` of each result of its claim.
struct Placed {
  std::string node;
  std::vector<std::string> requests;
};

// Creates claim and pod `name` and waits until the pod is bound and its claim allocated; an
// empty node when that does not happen in time.
Placed Place(kc::Client& client, const std::string& name, const json& claim, const json& pod) {
  REQUIRE_OK(client.Create(kc::ResourceClaims(), kNs, claim));
  REQUIRE_OK(client.Create(Pods(), kNs, pod));
  Placed placed;
  WaitFor([&] {
    auto bound = client.Get(Pods(), kNs, name);
    if (!bound.ok()) return false;
    const std::string node = bound->value("/spec/nodeName"_json_pointer, "");
    auto allocated = client.Get(kc::ResourceClaims(), kNs, name);
    if (node.empty() || !allocated.ok() || AllocatedDevices(*allocated).empty()) return false;
    placed.node = node;
    for (const json& r :
         allocated->value("/status/allocation/devices/results"_json_pointer, json::array())) {
      placed.requests.push_back(r.value("request", ""));
    }
    return true;
  });
  return placed;
}

// Waits until `node`'s slices carry the order the controller computes for its devices held now
// (it re-orders after every allocation and release, debounced): the next cycle must see the
// state the lab reads.
void WaitRepublished(DriverHarness& harness, const std::string& node) {
  const State state = ReadState(harness.client());
  const auto held = state.held.find(node);
  const Status ordered = harness.WaitPublishedOrder(
      node, /*groups=*/false, held == state.held.end() ? std::set<std::string>() : held->second);
  INFO(ordered.ToString());
  CHECK(ordered.ok());
}

struct Tally {
  int placements = 0;
  int agreements = 0;
  int ties = 0;                // the lab's highest total shared by several nodes
  int decided = 0;             // some feasible node scored below the highest total
  int decided_agreements = 0;  // of those, placements that agree
  int dra_decided = 0;         // the DynamicResources term changed the highest-scored nodes
  int dra_agreements = 0;      // of those, placements that agree
  int same_subrequests = 0;    // the real node's results use the subrequests the lab found there
  json steps = json::array();
};

// Compares one real placement with the lab's choice made before it, and records the step.
void Record(Tally& tally, int step, int count, const PodRequest& request, const LabChoice& lab,
            const Placed& real) {
  const auto real_lab = std::find_if(lab.feasible.begin(), lab.feasible.end(),
                                     [&](const Candidate& c) { return c.node == real.node; });
  const bool known = real_lab != lab.feasible.end();
  const bool agrees =
      real.node == lab.feasible[lab.pick].node || (known && real_lab->total == lab.max_total);
  const bool decided = lab.at_max < static_cast<int>(lab.feasible.size());
  ++tally.placements;
  tally.agreements += agrees ? 1 : 0;
  tally.ties += lab.at_max > 1 ? 1 : 0;
  tally.decided += decided ? 1 : 0;
  tally.decided_agreements += decided && agrees ? 1 : 0;
  tally.dra_decided += lab.dra_decided ? 1 : 0;
  tally.dra_agreements += lab.dra_decided && agrees ? 1 : 0;
  std::multiset<std::string> lab_requests;
  if (known) lab_requests.insert(real_lab->requests.begin(), real_lab->requests.end());
  tally.same_subrequests += known && lab_requests == std::multiset<std::string>(
                                                         real.requests.begin(), real.requests.end())
                                ? 1
                                : 0;
  json nodes = json::array();
  for (const Candidate& c : lab.feasible) {
    nodes.push_back(
        {{"node", c.node}, {"raw", c.raw}, {"total", c.total}, {"requests", c.requests}});
  }
  tally.steps.push_back({{"step", step},
                         {"count", count},
                         {"cpu", request.cpu},
                         {"memory", request.memory},
                         {"node", real.node},
                         {"requests", real.requests},
                         {"lab", lab.feasible[lab.pick].node},
                         {"maxTotal", lab.max_total},
                         {"agrees", agrees},
                         {"decidedByScore", decided},
                         {"decidedByDynamicResources", lab.dra_decided},
                         {"feasible", nodes}});
}

void WriteReport(const std::string& version, const Tally& t, int64_t seconds) {
  const char* dir = std::getenv("XPU_UPSTREAM_REPORT_DIR");
  const std::string path =
      std::string(dir != nullptr ? dir : ".") + "/upstream-scoring-" + version + ".json";
  const json report = {{"version", version},
                       {"seed", kSeed},
                       {"placements", t.placements},
                       {"agreements", t.agreements},
                       {"ties", t.ties},
                       {"decidedByScore", t.decided},
                       {"decidedAgreements", t.decided_agreements},
                       {"decidedByDynamicResources", t.dra_decided},
                       {"dynamicResourcesAgreements", t.dra_agreements},
                       {"sameSubrequests", t.same_subrequests},
                       {"sequenceSeconds", seconds},
                       {"steps", t.steps}};
  std::ofstream(path) << report.dump(2) << "\n";
  WARN("kube-scheduler " << version << " against the lab: " << t.agreements << "/" << t.placements
                         << " agree (" << t.ties << " ties; " << t.decided
                         << " decided by the score, " << t.decided_agreements << " agree; "
                         << t.dra_decided << " by the DynamicResources term, " << t.dra_agreements
                         << " agree); " << t.same_subrequests << " used the lab's subrequests; "
                         << seconds << " s; " << path);
}

// The test's fleet, controller, stock allocator and the nodes' allocatable.
struct Bench {
  std::unique_ptr<DriverHarness> harness;
  std::unique_ptr<lab::StockAllocator> stock;
  std::map<std::string, lab::Resources> allocatable;
};

Bench StartBench(const Cluster& cluster) {
  Bench b;
  b.harness = testing::RequireValue(DriverHarness::Create(cluster, cluster.dir() + "/work-score"));
  REQUIRE_OK(b.harness->StartController(kConfig));
  for (const FleetNode& n : kFleet) REQUIRE_OK(b.harness->AddNode(n.node, n.host));
  for (const FleetNode& n : kFleet) {
    const Status published = b.harness->WaitPublished(n.node, 8);
    INFO(b.harness->controller()->Log());
    REQUIRE_OK(published);
  }
  kc::Client& client = b.harness->client();
  REQUIRE_OK(EnsureNamespace(client, kNs));
  for (const FleetNode& n : kFleet) {
    const json node = testing::RequireValue(client.Get(kc::Nodes(), "", n.node));
    b.allocatable[n.node] =
        ResourcesOf(node.value("/status/allocatable"_json_pointer, json::object()), 0, 0);
  }
  // The per-vendor classes the rendered claims name, as the controller creates them.
  json classes;
  REQUIRE(WaitFor([&] {
    auto list = client.ListAll(kc::DeviceClasses(), "");
    if (!list.ok()) return false;
    classes = json(list->items);
    int ours = 0;
    for (const json& c : classes) {
      const std::string name = c.value("/metadata/name"_json_pointer, "");
      ours += name == "scoring.nvidia" || name == "scoring.huawei" ? 1 : 0;
    }
    return ours == 2;
  }));
  // The allocator built beside the control plane's binaries (build-upstream builds it for the
  // default pin and newer ones), else the one the lab finds.
  const std::string beside = cluster.bin_dir() + "/stock-allocator";
  b.stock = testing::RequireValue(lab::StockAllocator::Start(testing::RequireValue(
      lab::FindStockAllocator(::access(beside.c_str(), X_OK) == 0 ? beside : ""))));
  // The allocator must be the release the scheduler runs: v0.<minor>.<patch> of v1.<minor>.
  INFO(b.stock->version() << " against " << cluster.version());
  REQUIRE(b.stock->version().ends_with("v0" + cluster.version().substr(2)));
  REQUIRE_OK(b.stock->SetClasses(classes));
  return b;
}

// Mixed states to start from: CPU and memory loads of different shapes on three nodes, and
// claims pinned to three others (these are not compared: only one node is feasible).
std::vector<std::string> LoadNodes(Bench& b) {
  kc::Client& client = b.harness->client();
  const struct {
    const char* name;
    const char* node;
    PodRequest request;
  } loads[] = {{"load-pcie-1", "sc-pcie-1", {"24", "32Gi"}},
               {"load-h200-0", "sc-h200-0", {"4", "192Gi"}},
               {"load-910-1", "sc-910-1", {"16", "128Gi"}}};
  for (const auto& l : loads) {
    REQUIRE_OK(client.Create(Pods(), kNs, Pod(l.name, l.request, l.node, false)));
  }
  REQUIRE(WaitFor([&] {
    return std::all_of(std::begin(loads), std::end(loads), [&](const auto& l) {
      auto got = client.Get(Pods(), kNs, l.name);
      return got.ok() && got->value("/spec/nodeName"_json_pointer, "") == l.node;
    });
  }));
  const struct {
    const char* name;
    const char* node;
    int count;
  } pins[] = {
      {"pin-pcie-2", "sc-pcie-2", 4}, {"pin-h200-1", "sc-h200-1", 2}, {"pin-910-0", "sc-910-0", 2}};
  std::vector<std::string> held;
  for (const auto& p : pins) {
    const Placed placed = Place(client, p.name, RenderedClaim(p.name, p.count),
                                Pod(p.name, {"1", "2Gi"}, p.node, true));
    REQUIRE(placed.node == p.node);
    WaitRepublished(*b.harness, p.node);
    held.emplace_back(p.name);
  }
  return held;
}

// Deletes one claim of `held` (and its pod), chosen by `rng`, and waits for the republish.
void ReleaseOne(Bench& b, std::vector<std::string>& held, std::mt19937& rng) {
  kc::Client& client = b.harness->client();
  const size_t at = rng() % held.size();
  const std::string name = held[at];
  held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
  std::set<std::string> nodes;
  auto claim = client.Get(kc::ResourceClaims(), kNs, name);
  REQUIRE_OK(claim);
  for (const std::string& d : AllocatedDevices(*claim)) nodes.insert(d.substr(0, d.find('/')));
  REQUIRE_OK(ReleaseClaims(b.harness->cluster(), client, kNs, {name}));
  for (const std::string& node : nodes) WaitRepublished(*b.harness, node);
}

Tally RunSequence(Bench& b, std::vector<std::string> held) {
  kc::Client& client = b.harness->client();
  std::mt19937 rng(kSeed);
  std::mt19937_64 lab_rng(kSeed);
  const PodRequest requests[] = {{"500m", "512Mi"}, {"1", "2Gi"},  {"2", "8Gi"},
                                 {"4", "2Gi"},      {"1", "32Gi"}, {"3", "16Gi"}};
  Tally tally;
  for (int step = 0; tally.placements < kPlacements && step < 4 * kPlacements; ++step) {
    const State state = ReadState(client);
    if (!held.empty() && (rng() % 4 == 0 || state.held_devices > kBusyDevices)) {
      ReleaseOne(b, held, rng);
      continue;
    }
    const int count = std::vector<int>{1, 2, 4}[rng() % 3];
    const PodRequest& request = requests[rng() % std::size(requests)];
    const std::string name = "c" + std::to_string(step);
    const json claim = RenderedClaim(name, count);
    const lab::Resources pod =
        ResourcesOf({{"cpu", request.cpu}, {"memory", request.memory}}, 0, 0);
    const LabChoice lab = LabChoose(*b.stock, state, b.allocatable, claim, pod, lab_rng);
    if (lab.feasible.empty()) {  // nowhere to go: free something first
      REQUIRE(!held.empty());
      ReleaseOne(b, held, rng);
      continue;
    }
    const Placed real = Place(client, name, claim, Pod(name, request, "", true));
    INFO("step " << step << ": " << count << " devices, lab " << lab.feasible[lab.pick].node);
    REQUIRE(!real.node.empty());
    held.push_back(name);
    Record(tally, step, count, request, lab, real);
    WaitRepublished(*b.harness, real.node);
  }
  return tally;
}

// Ends the process with ctest's skip code: a check that cannot run is not a pass.
[[noreturn]] void Skip(const std::string& why) {
  std::cout << "SKIPPED: " << why << std::endl;
  std::exit(77);  // NOLINT(concurrency-mt-unsafe): the only thread that exits
}

TEST_CASE("upstream: kube-scheduler's node scores against the lab's model", "[scoring]") {
  ClusterOptions options;
  options.kind = ClusterKind::kUpstream;
  std::unique_ptr<Cluster> cluster = testing::RequireValue(Cluster::Start(options));
  if (cluster->minor() < kFirstScoringMinor) {
    const std::string version = cluster->version();
    cluster.reset();  // std::exit runs no destructors: stop the control plane first
    Skip("DynamicResources has no Score before 1.37; " + version + " ranks nodes without it");
  }
  Bench bench = StartBench(*cluster);
  std::vector<std::string> held = LoadNodes(bench);
  const auto started = std::chrono::steady_clock::now();
  const Tally tally = RunSequence(bench, std::move(held));
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started);
  WriteReport(cluster->version(), tally, seconds.count());
  REQUIRE(tally.placements >= 40);
  REQUIRE(tally.agreements * 100 >= 95 * tally.placements);
  // Some placements must have had a node scored below the best, or agreement says nothing; and
  // some must have turned on the DynamicResources term, the part 1.37 added.
  REQUIRE(tally.decided > 0);
  REQUIRE(tally.dra_decided > 0);
}

}  // namespace
}  // namespace xpu::e2e
