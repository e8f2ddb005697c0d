// The upstream tier, allocation on partly used and partitionable devices: the allocator against
// the solver on partly used Ascend nodes, MIG partitions from the parent's counters, the
// fallbacks when DRAPartitionableDevices is off and partitionTypeAttribute. The shared fixture is
// in upstream_fixture.h.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "api/partitions.h"
#include "api/testing/resource_examples.h"
#include "base/name_list.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "controller/config.h"
#include "controller/device_classes.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "e2e/cluster/upstream_fixture.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::e2e::upstream {
namespace {

namespace kc = api::client;
using nlohmann::json;

struct Agreement {
  int placements = 0;                // requests the solver could place
  int as_good = 0;                   // allocated, rule-valid and scored as well as the solver's set
  int rules_hold = 0;                // allocated sets that obey the vendor rules
  int unschedulable = 0;             // refused by the scheduler although the solver found a set
  json differences = json::array();  // where the allocator's set was worse: free, picked, solver
};

// The controller re-orders a pool after an allocation or a release (debounced), and a burst of
// claims may outrun it: each claim must meet the order its free state asks for.
bool WaitReordered(DriverHarness& harness, const std::string& node, bool groups,
                   const std::set<std::string>& held) {
  const Status s = harness.WaitPublishedOrder(node, groups, held, std::chrono::seconds(10));
  INFO(s.ToString());
  return s.ok();
}

Agreement RunSequence(Fleet& fleet, const std::string& node, const std::string& ns, bool groups,
                      int steps, uint32_t seed) {
  kc::Client& client = fleet.harness->client();
  REQUIRE_OK(EnsureNamespace(client, ns));
  const topology::Node topo = TopologyOf(client, node);
  const int total = topo.size();
  // A request that fits one scale-up domain asks for one (as the examples do); a larger one,
  // such as all eight NPUs of two 910 rings, cannot.
  std::map<std::string, int> domain_sizes;
  auto published = fleet.harness->PublishedDevices(node);
  REQUIRE_OK(published);
  for (const auto& d : *published) {
    if (d.value("/attributes/groupSize/int"_json_pointer, 1) != 1) continue;
    ++domain_sizes[d.value("/attributes/scaleUpDomain/string"_json_pointer, "")];
  }
  int largest_domain = 0;
  for (const auto& [domain, size] : domain_sizes) largest_domain = std::max(largest_domain, size);
  std::mt19937 rng(seed);
  auto inventory = client.Get(kc::NodeInventories(), "", node);
  REQUIRE_OK(inventory);
  std::map<std::string, topology::DeviceSet> held;             // claim -> physical devices
  std::map<std::string, std::vector<std::string>> held_names;  // claim -> allocated devices
  auto held_devices = [&] {
    std::set<std::string> names;
    for (const auto& [claim, list] : held_names) names.insert(list.begin(), list.end());
    return names;
  };
  topology::DeviceSet used;
  Agreement result;
  for (int step = 0; step < steps; ++step) {
    const int free_count = total - used.size();
    std::vector<int> counts;
    for (int c : {1, 2, 4, 8}) {
      if (c > free_count || c > total) continue;
      if (topology::Solve(topo, topo.All() - used, c).feasible) counts.push_back(c);
    }
    if (counts.empty() || (!held.empty() && rng() % 3 == 0)) {
      auto it = held.begin();
      std::advance(it, static_cast<long>(rng() % held.size()));  // NOLINT(google-runtime-int)
      used = used - it->second;
      Release(ns, {it->first}, client);
      held_names.erase(it->first);
      held.erase(it);
      CHECK(WaitReordered(*fleet.harness, node, groups, held_devices()));
      continue;
    }
    const int count = counts[rng() % counts.size()];
    const topology::DeviceSet free = topo.All() - used;
    const auto best = topology::Solve(topo, free, count);
    const std::string name = "s" + std::to_string(step);
    json claim = groups && count > 1
                     ? GroupClaim(ns, name, "huawei.xpu.dra.dev", count)
                     : ClaimObject(ns, name, "huawei.xpu.dra.dev", count,
                                   count <= largest_domain ? SameDomain() : json::array());
    bool refused = false;
    auto got = Allocate(client, ns, name, claim, node, &refused);
    INFO(node << " step " << step << " count " << count);
    ++result.placements;
    if (refused) {  // groups mode: no aligned group of that size is wholly free
      ++result.unschedulable;
      Release(ns, {name}, client);
      continue;
    }
    REQUIRE(!got.empty());
    std::vector<std::string> devices;
    for (const auto& g : got) devices.push_back(DeviceOf(g));
    if (groups && count > 1) {  // expand the group device into its members
      for (const auto& d : *published) {
        if (d.value("name", "") != devices[0]) continue;
        devices.clear();
        for (const auto& c : d.at("consumesCounters")) {
          for (const auto& [member, v] : c.at("counters").items()) devices.push_back(member);
        }
      }
    }
    auto picked = topo.ParseDeviceList(JoinNames(devices));
    REQUIRE_OK(picked);
    REQUIRE(picked->size() == count);
    CHECK((*picked & used).empty());
    const bool rules = topology::RuleAllows(topo, *picked);
    result.rules_hold += rules ? 1 : 0;
    const bool good = rules && !best.score.BetterThan(topology::Evaluate(topo, free, *picked));
    result.as_good += good ? 1 : 0;
    if (!good) {
      result.differences.push_back({{"step", step},
                                    {"count", count},
                                    {"free", JoinNames(topo.Names(free))},
                                    {"allocator", JoinNames(topo.Names(*picked))},
                                    {"solver", JoinNames(topo.Names(best.devices))}});
    }
    used = used | *picked;
    held[name] = *picked;
    for (const auto& g : got) held_names[name].push_back(DeviceOf(g));
    CHECK(WaitReordered(*fleet.harness, node, groups, held_devices()));
  }
  std::vector<std::string> left;
  for (const auto& [name, set] : held) left.push_back(name);
  Release(ns, left, client);
  return result;
}

void Report(const std::string& key, const Agreement& a) {
  const char* dir = std::getenv("XPU_UPSTREAM_REPORT_DIR");
  const std::string path = std::string(dir != nullptr ? dir : ".") + "/upstream-agreement-" +
                           Upstream().version() + ".json";
  json all = json::object();
  if (std::ifstream in(path); in.good()) all = json::parse(in, nullptr, false);
  if (all.is_discarded()) all = json::object();
  all[key] = {{"placements", a.placements},
              {"asGoodAsSolver", a.as_good},
              {"rulesHold", a.rules_hold},
              {"unschedulable", a.unschedulable},
              {"differences", a.differences}};
  std::ofstream(path) << all.dump(2) << "\n";
  WARN(key << ": " << a.as_good << "/" << a.placements << " as good as the solver, rules held "
           << a.rules_hold << "/" << (a.placements - a.unschedulable) << ", unschedulable "
           << a.unschedulable);
}

TEST_CASE("upstream: partly used Ascend nodes, the allocator against the solver", "[allocation]") {
  const std::vector<std::string> hosts = {"atlas800-9000", "atlas800t-a3", "atlas200t-a2-box16"};
  for (const char* mode : {"attributes", "groups"}) {
    Fleet fleet = StartFleet(std::string("seq") + mode[0], hosts,
                             std::string("publishing:\n  mode: ") + mode + "\n");
    for (const auto& [node, host] : fleet.host_of) {
      const Agreement a =
          RunSequence(fleet, node, "seq-" + std::string(mode), mode[0] == 'g', 24, 7);
      Report(host + "/" + mode, a);
      CHECK(a.placements > 0);
      CHECK(a.rules_hold == a.placements - a.unschedulable);
      if (mode[0] == 'a') CHECK(a.unschedulable == 0);
    }
  }
}

std::string AttributeOf(const json& device, const std::string& name) {
  const json a = device.value("attributes", json::object()).value(name, json::object());
  if (a.contains("string")) return a.at("string").get<std::string>();
  if (a.contains("int")) return std::to_string(a.at("int").get<int64_t>());
  return "";
}

// What the MIG fixture node publishes: gpu-0 whole, consuming its whole counter set, and its 18
// MIG placements, which carry the partition attributes and no vendor.
void CheckMigPublished(DriverHarness& harness, const std::string& node) {
  std::vector<json> devices;
  const bool published = WaitFor(
      [&] {
        auto got = harness.PublishedDevices(node);
        if (got.ok()) devices = std::move(*got);
        return std::any_of(devices.begin(), devices.end(),
                           [](const json& d) { return d.value("name", "") == "gpu-0-1g-18gb-6"; });
      },
      std::chrono::seconds(90));
  {
    INFO(harness.controller()->Log());
    REQUIRE(published);
  }
  int gpu0_parts = 0;
  int whole = 0;
  for (const auto& d : devices) {
    const std::string name = d.value("name", "");
    INFO(d.dump());
    if (AttributeOf(d, "parent") == "gpu-0") {
      ++gpu0_parts;
      CHECK(AttributeOf(d, "partitionKind") == "mig");
      CHECK(VendorOf(d).empty());
      REQUIRE(d.value("consumesCounters", json::array()).size() == 1);
      CHECK(d["consumesCounters"][0].value("counterSet", "") == "gpu-0-parts");
    }
    if (AttributeOf(d, "partitionKind").empty()) {
      ++whole;
      CHECK(VendorOf(d) == "nvidia");
    }
    if (name == "gpu-0") {
      REQUIRE(d.value("consumesCounters", json::array()).size() == 1);
      CHECK(d["consumesCounters"][0].value("counterSet", "") == "gpu-0-parts");
      CHECK(d["consumesCounters"][0].value("counters", json::object()).size() == 9);
    }
  }
  CHECK(gpu0_parts == 18);
  CHECK(whole == 8);
}

TEST_CASE(
    "upstream: MIG partitions allocate from the parent's counters, and whole and partitioned use "
    "exclude each other",
    "[allocation]") {
  if (auto why = NoPartitionCounters()) XPU_SKIP(*why);
  // The MIG fixture host: its fake NVML has MIG on for gpu-0..3, with GPU instances on gpu-1 and
  // gpu-3 and none on gpu-0.
  const std::string host = SourceDir() + "/e2e/fixtures/hosts/hgx-h200-mig";
  ::setenv("XPU_FAKE_NVML_JSON", (host + "/fake-vendor/nvml.json").c_str(), 1);
  auto started = DriverHarness::Create(Upstream(), WorkDir("mig"));
  REQUIRE_OK(started);
  DriverHarness& harness = **started;
  REQUIRE_OK(harness.StartController(kBuiltInConfigAttributes));
  const std::string node = "mig-hgx-h200";
  const Status added =
      harness.AddNode(node, "hgx-h200-mig", {}, {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR});
  ::unsetenv("XPU_FAKE_NVML_JSON");
  REQUIRE_OK(added);

  CheckMigPublished(harness, node);

  kc::Client& client = harness.client();
  const std::string ns = "mig";
  REQUIRE_OK(EnsureNamespace(client, ns));
  const std::string attrs = "device.attributes['xpu.dra.dev']";
  auto small_on = [&](const std::string& parent) {
    return attrs + ".profile == '1g.18gb' && " + attrs + ".parent == '" + parent + "'";
  };
  const json one_small =
      WithSelector(ClaimObject(ns, "part", "mig.xpu.dra.dev", 1), small_on("gpu-0"));

  // (a) One 1g.18gb on gpu-0: the real scheduler allocates a partition device, the highest
  // placement first.
  const auto part = Allocate(client, ns, "part", one_small, node);
  REQUIRE(part.size() == 1);
  CHECK(part[0] == node + "/gpu-0-1g-18gb-6");

  // (b) While it is held: a sibling 1g.18gb fits beside it, in another slot of gpu-0; the
  // 7g.141gb, which needs every slot, does not; nor does gpu-0 whole.
  json sibling_claim = one_small;
  sibling_claim["metadata"]["name"] = "sibling";
  const auto sibling = Allocate(client, ns, "sibling", sibling_claim, node);
  REQUIRE(sibling.size() == 1);
  CHECK(sibling[0].rfind(node + "/gpu-0-1g-18gb-", 0) == 0);
  CHECK(sibling[0] != part[0]);
  Release(ns, {"sibling"}, client);

  bool refused = false;
  const auto full =
      Allocate(client, ns, "full",
               WithSelector(ClaimObject(ns, "full", "mig.xpu.dra.dev", 1),
                            attrs + ".profile == '7g.141gb' && " + attrs + ".parent == 'gpu-0'"),
               node, &refused);
  CHECK(full.empty());
  CHECK(refused);
  Release(ns, {"full"}, client);

  const std::string gpu0 = attrs + ".index == 0";
  refused = false;
  const auto blocked = Allocate(
      client, ns, "whole", WithSelector(ClaimObject(ns, "whole", "nvidia.xpu.dra.dev", 1), gpu0),
      node, &refused);
  CHECK(blocked.empty());
  CHECK(refused);

  // (c) The partition's pod and claim go: the waiting pod's claim gets gpu-0 whole.
  Release(ns, {"part"}, client);
  const std::vector<std::string> whole_now = AllocationOnceMade(client, ns, "whole");
  CHECK(whole_now == std::vector<std::string>{node + "/gpu-0"});

  // (d) The reverse: while gpu-0 is held whole, no partition of it is allocated; one of gpu-1
  // (free slots 0-3 beside its existing 3g.71gb) is.
  refused = false;
  const auto under_whole =
      Allocate(client, ns, "part-under-whole",
               WithSelector(ClaimObject(ns, "part-under-whole", "mig.xpu.dra.dev", 1),
                            attrs + ".parent == 'gpu-0'"),
               node, &refused);
  CHECK(under_whole.empty());
  CHECK(refused);
  const auto beside = Allocate(
      client, ns, "part-gpu1",
      WithSelector(ClaimObject(ns, "part-gpu1", "mig.xpu.dra.dev", 1), small_on("gpu-1")), node);
  REQUIRE(beside.size() == 1);
  CHECK(beside[0].rfind(node + "/gpu-1-1g-18gb-", 0) == 0);
  Release(ns, {"part-under-whole", "part-gpu1", "whole"}, client);

  // With nothing held: gpu-1, whose existing 3g.71gb holds slots 4-7 (taken out of its counter
  // set), is not free whole; gpu-5, MIG off, is.
  refused = false;
  const auto busy_whole = Allocate(
      client, ns, "whole-gpu1",
      WithSelector(ClaimObject(ns, "whole-gpu1", "nvidia.xpu.dra.dev", 1), attrs + ".index == 1"),
      node, &refused);
  CHECK(busy_whole.empty());
  CHECK(refused);
  const auto plain = Allocate(
      client, ns, "whole-gpu5",
      WithSelector(ClaimObject(ns, "whole-gpu5", "nvidia.xpu.dra.dev", 1), attrs + ".index == 5"),
      node);
  CHECK(plain == std::vector<std::string>{node + "/gpu-5"});
  Release(ns, {"whole-gpu1", "whole-gpu5"}, client);
}

TEST_CASE("upstream: with DRAPartitionableDevices off, groups mode falls back to attributes",
          "[fallback]") {
  // From 1.38 every server keeps counters: groups mode never falls back there.
  if (std::string locked = GatesLockedOn("DRAPartitionableDevices", "counters"); !locked.empty()) {
    XPU_SKIP(std::move(locked));
  }
  ClusterOptions options;
  options.kind = ClusterKind::kUpstream;
  options.feature_gates = "DRAPartitionableDevices=false";
  auto cluster = Cluster::Start(options);
  REQUIRE_OK(cluster);
  auto harness = DriverHarness::Create(**cluster, (*cluster)->dir() + "/work");
  REQUIRE_OK(harness);
  REQUIRE_OK((*harness)->StartController("publishing:\n  mode: groups\n"));
  const std::string node = "fb-atlas800-9000";
  REQUIRE_OK((*harness)->AddNode(node, "atlas800-9000"));
  REQUIRE_OK((*harness)->WaitPublished(node, 8));
  // Then every device is a single one again, with no counters.
  CheckFallback(**harness, "counters", node, 8, "consumesCounters");
}

// The MIG host's node, its plugin loading the fake NVML, under a controller of `harness`; the
// published gpu-0-1g-18gb-6 (empty, failing, when it never is).
json PublishMigNode(DriverHarness& harness, const std::string& node) {
  const std::string host = SourceDir() + "/e2e/fixtures/hosts/hgx-h200-mig";
  ::setenv("XPU_FAKE_NVML_JSON", (host + "/fake-vendor/nvml.json").c_str(), 1);
  const Status added =
      harness.AddNode(node, "hgx-h200-mig", {}, {"--vendor-lib-dir", XPU_FAKE_VENDOR_LIB_DIR});
  ::unsetenv("XPU_FAKE_NVML_JSON");
  REQUIRE_OK(added);
  json device;
  CHECK(WaitFor(
      [&] {
        auto got = harness.PublishedDevice(node, "gpu-0-1g-18gb-6");
        if (got.ok()) device = *got;
        return got.ok();
      },
      std::chrono::seconds(90)));
  return device;
}

// The partitionTypeAttribute of node's slices that have devices consuming counters.
std::set<std::string> PartitionTypeAttributes(kc::Client& client, const std::string& node) {
  std::set<std::string> out;
  kc::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  auto page = client.ListAll(kc::ResourceSlices(), "", options);
  REQUIRE_OK(page);
  for (const json& slice : page->items) {
    const json spec = slice.value("spec", json::object());
    bool consuming = false;
    for (const json& d : spec.value("devices", json::array())) {
      consuming = consuming || d.contains("consumesCounters");
    }
    if (consuming) out.insert(spec.value("partitionTypeAttribute", "(none)"));
  }
  return out;
}

TEST_CASE(
    "upstream: 1.37 keeps partitionTypeAttribute where its gate is on, and the controller stops "
    "naming it where the server drops it",
    "[fallback]") {
  if (RequestedMinor() != 0 && RequestedMinor() < 37) {
    XPU_SKIP("partitionTypeAttribute is 1.37's; not checked on " + Upstream().version());
  }
  SECTION("gate on: the server keeps it, and each counter-consuming device names its type") {
    ClusterOptions options;
    options.kind = ClusterKind::kUpstream;
    // The gate needs DRAResourcePoolStatus, whose ResourcePoolStatusRequest is v1alpha3.
    options.feature_gates = "DRAResourcePoolStatus=true,DRAPartitionableDevicesType=true";
    options.runtime_config = "resource.k8s.io/v1alpha3=true";
    auto cluster = Cluster::Start(options);
    REQUIRE_OK(cluster);
    auto harness = DriverHarness::Create(**cluster, (*cluster)->dir() + "/work");
    REQUIRE_OK(harness);
    REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
    const std::string node = "pt-hgx-h200-mig";
    const json device = PublishMigNode(**harness, node);
    INFO((*harness)->controller()->Log());
    CHECK(device.value("/attributes/partitionType/string"_json_pointer, "") == "1g.18gb");
    auto whole = (*harness)->PublishedDevice(node, "gpu-0");
    REQUIRE_OK(whole);
    CHECK(whole->value("/attributes/partitionType/string"_json_pointer, "") == "whole");
    CHECK(PartitionTypeAttributes((*harness)->client(), node) ==
          std::set<std::string>{"xpu.dra.dev/partitionType"});
    const int port = MetricsPort(*(*harness)->controller());
    // Never dropped: the series is absent (-1) or 0.
    CHECK(Metric(port, "xpu_dra_controller_fallbacks_total{field=\"partitionType\"}") <= 0);
  }
  SECTION("gate off (1.37's default): dropped once, then neither the field nor the attribute") {
    auto harness = DriverHarness::Create(Upstream(), WorkDir("partition-type"));
    REQUIRE_OK(harness);
    REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
    const std::string node = "ptoff-hgx-h200-mig";
    PublishMigNode(**harness, node);
    INFO((*harness)->controller()->Log());
    int port = 0;
    REQUIRE(WaitFor([&] { return (port = MetricsPort(*(*harness)->controller())) > 0; }));
    CHECK(WaitFor([&] {
      return Metric(port, "xpu_dra_controller_fallbacks_total{field=\"partitionType\"}") >= 1;
    }));
    CHECK(WaitFor([&] {
      auto d = (*harness)->PublishedDevice(node, "gpu-0-1g-18gb-6");
      return d.ok() && !d->contains("/attributes/partitionType"_json_pointer) &&
             PartitionTypeAttributes((*harness)->client(), node) == std::set<std::string>{"(none)"};
    }));
  }
}

}  // namespace
}  // namespace xpu::e2e::upstream
