// Render's subrequests: one per (vendor, rule-keeping constraint), topology tiers as prioritized
// alternatives, the limit of 8, and a brute-force check that every set the scheduler could pick
// under a rendered subrequest keeps the server's rules.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/validation.h"
#include "base/name_list.h"
#include "base/testing/require_ok.h"
#include "controller/device_classes.h"
#include "controller/reference_servers.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "topology/solver.h"

namespace xpu::controller {
namespace {

// The default config, in `mode`, plus the classes the examples use.
RenderOptions TierOptions(PublishMode mode = PublishMode::kAttributes) {
  RenderOptions options;
  options.config.mode = mode;
  auto add = [&](std::string name, std::vector<std::string> vendors,
                 std::vector<std::string> models) {
    CapabilityClass c;
    c.name = std::move(name);
    c.vendors = std::move(vendors);
    c.models = std::move(models);
    options.config.capability_classes.push_back(std::move(c));
  };
  add("mixed-order", {"huawei", "nvidia"}, {});
  add("nvidia-first", {"nvidia", "huawei"}, {});
  add("acc-pcie", {"nvidia"}, {"L40S"});
  add("hopper", {"nvidia"}, {"H200"});
  return options;
}

StatusOr<Rendered> RenderCount(const std::string& capability_class, int64_t count,
                               const RenderOptions& options) {
  CapabilityRequest r;
  r.name = "job";
  r.capability_class = capability_class;
  r.count = count;
  r.topology = "single-node";
  return Render(r, options);
}

// Every subrequest, in the claim's order.
std::vector<const SubrequestRender*> Subrequests(const Rendered& r) {
  std::vector<const SubrequestRender*> out;
  for (const VendorRender& v : r.vendors) {
    for (const SubrequestRender& s : v.subrequests) out.push_back(&s);
  }
  return out;
}

std::vector<std::string> SubrequestNames(const Rendered& r) {
  std::vector<std::string> out;
  for (const SubrequestRender* s : Subrequests(r)) out.push_back(s->name);
  return out;
}

const nlohmann::json& ClaimDevices(const Rendered& r) {
  return r.objects.at(0)["spec"]["spec"]["devices"];
}

// The matchAttribute names the claim puts on subrequest `name`, in order.
std::vector<std::string> MatchAttributes(const Rendered& r, const std::string& name) {
  std::vector<std::string> out;
  const nlohmann::json& devices = ClaimDevices(r);
  if (!devices.contains("constraints")) return out;
  for (const nlohmann::json& c : devices["constraints"]) {
    for (const nlohmann::json& request : c["requests"]) {
      if (request == "accelerators/" + name) out.push_back(c["matchAttribute"]);
    }
  }
  return out;
}

std::string Selector(const Rendered& r, const std::string& name) {
  for (const nlohmann::json& sub : ClaimDevices(r)["requests"][0]["firstAvailable"]) {
    if (sub["name"] != name) continue;
    if (!sub.contains("selectors")) return "";
    return sub["selectors"][0]["cel"]["expression"];
  }
  FAIL("no subrequest " << name);
  return "";
}

// The subrequest of `vendor` that admits `model` (by its own list or the vendor's exclusions).
const SubrequestRender* Admitting(const Rendered& r, const std::string& vendor,
                                  const std::string& model) {
  for (const VendorRender& v : r.vendors) {
    if (v.vendor != vendor) continue;
    for (const SubrequestRender& s : v.subrequests) {
      const bool listed = std::find(s.models.begin(), s.models.end(), model) != s.models.end();
      const bool excluded = std::find(v.excluded_models.begin(), v.excluded_models.end(), model) !=
                            v.excluded_models.end();
      if (s.group_size == 0 && (listed || (s.models.empty() && !excluded))) return &s;
    }
  }
  return nullptr;
}

TEST_CASE("8 NPUs: the Atlas 800 9000 needs no constraint, the A2 boxes one scaleUpDomain",
          "[render]") {
  StatusOr<Rendered> out = RenderCount("mixed-order", 8, TierOptions());
  REQUIRE_OK(out);
  const SubrequestRender* ring = Admitting(*out, "huawei", "Ascend910");
  REQUIRE(ring != nullptr);
  CHECK(ring->constraint.empty());
  CHECK(MatchAttributes(*out, ring->name).empty());
  CHECK(Selector(*out, ring->name).find("'Ascend910'") != std::string::npos);
  const SubrequestRender* a2 = Admitting(*out, "huawei", "Ascend910B");
  REQUIRE(a2 != nullptr);
  CHECK(a2 != ring);
  CHECK(MatchAttributes(*out, a2->name) == std::vector<std::string>{"xpu.dra.dev/scaleUpDomain"});
  // Two groups: each names the models it is for, so that no other model passes either.
  CHECK(ring->models == std::vector<std::string>{"Ascend910"});
  CHECK(a2->models == std::vector<std::string>{"Ascend910B"});
  // 8 A3 dies keep the rules only as 4 whole modules, which no matchAttribute says: that model
  // alone is left out, and the note says what it needs.
  CHECK(Admitting(*out, "huawei", "Ascend910C") == nullptr);
  CHECK(out->vendors[0].excluded_models == std::vector<std::string>{"Ascend910C"});
  CHECK(std::any_of(out->notes.begin(), out->notes.end(), [](const std::string& n) {
    return n.starts_with("huawei: Ascend910C left out:") &&
           n.find("only groups mode") != std::string::npos;
  }));
  // Ordered by the bandwidth every set keeps, fastest first: a 910B's eight (one HCCS mesh)
  // before a 910's (two rings), the HGX board's before the PCIe server's.
  CHECK(SubrequestNames(*out) ==
        std::vector<std::string>{"huawei-scaleup", "huawei", "nvidia", "nvidia-l40s"});
}

TEST_CASE("A3 pairs by module next to the 910 rings and A2 boxes, four by NUMA node", "[render]") {
  StatusOr<Rendered> two = RenderCount("mixed-order", 2, TierOptions());
  REQUIRE_OK(two);
  const SubrequestRender* a3 = Admitting(*two, "huawei", "Ascend910C");
  REQUIRE(a3 != nullptr);
  CHECK(a3->name == "huawei-module");
  CHECK(MatchAttributes(*two, a3->name) == std::vector<std::string>{"xpu.dra.dev/module"});
  CHECK(Selector(*two, a3->name).find("'Ascend910C'") != std::string::npos);
  const SubrequestRender* rings = Admitting(*two, "huawei", "Ascend910");
  REQUIRE(rings != nullptr);
  CHECK(rings->constraint == "scaleUpDomain");
  // The 910B's pairs are faster than the 910 ring's: each model has its own alternative.
  const SubrequestRender* a2 = Admitting(*two, "huawei", "Ascend910B");
  REQUIRE(a2 != nullptr);
  CHECK(a2->constraint == "scaleUpDomain");
  CHECK(two->vendors[0].excluded_models.empty());

  // Four dies are two whole modules: neither module nor scaleUpDomain keeps that, but a NUMA
  // node holds exactly two modules; in groups mode a group device serves them.
  StatusOr<Rendered> four = RenderCount("mixed-order", 4, TierOptions());
  REQUIRE_OK(four);
  const SubrequestRender* a3_four = Admitting(*four, "huawei", "Ascend910C");
  REQUIRE(a3_four != nullptr);
  CHECK(a3_four->constraint == "numaNode");
  CHECK(Admitting(*four, "huawei", "Ascend910B") != nullptr);
  StatusOr<Rendered> grouped = RenderCount("mixed-order", 4, TierOptions(PublishMode::kGroups));
  REQUIRE_OK(grouped);
  const VendorRender& huawei = grouped->vendors.at(0);
  CHECK(huawei.excluded_models.empty());
  REQUIRE(huawei.subrequests.at(0).group_size == 4);
  CHECK(huawei.subrequests[0].name == "huawei-group");
  // The attribute alternatives over single devices name their models and take single devices.
  std::set<std::string> single_models;
  for (size_t i = 1; i < huawei.subrequests.size(); ++i) {
    const SubrequestRender& singles = huawei.subrequests[i];
    if (singles.group_size > 0) continue;  // a group device of other models, by bandwidth
    CHECK(singles.singles);
    CHECK_FALSE(singles.models.empty());
    single_models.insert(singles.models.begin(), singles.models.end());
    CHECK(Selector(*grouped, singles.name).find(".groupSize == 1") != std::string::npos);
  }
  CHECK(single_models == std::set<std::string>{"Ascend910", "Ascend910B", "Ascend910C"});
}

TEST_CASE("PCIe GPUs get their tiers as alternatives, tightest first", "[render]") {
  StatusOr<Rendered> two = RenderCount("acc-pcie", 2, TierOptions());
  REQUIRE_OK(two);
  CHECK(SubrequestNames(*two) ==
        std::vector<std::string>{"nvidia-switch", "nvidia-root", "nvidia-any"});
  CHECK(MatchAttributes(*two, "nvidia-switch") ==
        std::vector<std::string>{"xpu.dra.dev/pcieSwitch"});
  CHECK(MatchAttributes(*two, "nvidia-root") ==
        std::vector<std::string>{"resource.kubernetes.io/pcieRoot"});
  CHECK(MatchAttributes(*two, "nvidia-any").empty());

  // A switch holds two GPUs: four get the root complex, then any four. The NUMA node holds the
  // same GPUs as the root complex: no alternative of its own.
  StatusOr<Rendered> four = RenderCount("acc-pcie", 4, TierOptions());
  REQUIRE_OK(four);
  CHECK(SubrequestNames(*four) == std::vector<std::string>{"nvidia-root", "nvidia-any"});
  CHECK(MatchAttributes(*four, "nvidia-root") ==
        std::vector<std::string>{"resource.kubernetes.io/pcieRoot"});
  CHECK(MatchAttributes(*four, "nvidia-any").empty());

  // NVSwitch: all pairs are equal, so a tier picks nothing better.
  for (int64_t count : {1, 2, 4, 8}) {
    StatusOr<Rendered> h200 = RenderCount("hopper", count, TierOptions());
    REQUIRE_OK(h200);
    CHECK(SubrequestNames(*h200) == std::vector<std::string>{"nvidia"});
  }
}

TEST_CASE("subrequests follow the class' vendor order, then the tiers", "[render]") {
  for (int64_t count : {1, 2, 4, 8}) {
    INFO(count);
    StatusOr<Rendered> huawei_first = RenderCount("mixed-order", count, TierOptions());
    StatusOr<Rendered> nvidia_first = RenderCount("nvidia-first", count, TierOptions());
    REQUIRE_OK(huawei_first);
    REQUIRE_OK(nvidia_first);
    std::vector<std::string> vendors;
    for (const SubrequestRender* s : Subrequests(*huawei_first)) vendors.push_back(s->vendor);
    CHECK(std::is_sorted(vendors.begin(), vendors.end()));  // huawei < nvidia
    vendors.clear();
    for (const SubrequestRender* s : Subrequests(*nvidia_first)) vendors.push_back(s->vendor);
    CHECK(std::is_sorted(vendors.rbegin(), vendors.rend()));
    // For each set of models of a vendor, its tiers come first and the one without a tier last.
    for (const VendorRender& v : nvidia_first->vendors) {
      std::map<std::vector<std::string>, std::vector<const SubrequestRender*>> by_models;
      for (const SubrequestRender& s : v.subrequests) by_models[s.models].push_back(&s);
      for (const auto& [models, subs] : by_models) {
        INFO(v.vendor << " " << JoinNames(models));
        CHECK(subs.back()->tier.empty());
        for (size_t i = 0; i + 1 < subs.size(); ++i) CHECK_FALSE(subs[i]->tier.empty());
      }
    }
  }
}

TEST_CASE("one device goes first to the models the claims can ask the fewest job sizes of",
          "[render]") {
  for (const PublishMode mode : {PublishMode::kAttributes, PublishMode::kGroups}) {
    INFO(PublishModeName(mode));
    StatusOr<Rendered> r = RenderCount("mixed-order", 1, TierOptions(mode));
    REQUIRE_OK(r);
    for (const VendorRender& v : r->vendors) {
      INFO(v.vendor);
      REQUIRE_FALSE(v.subrequests.empty());
      // The last names no model, so that a model no reference server has still lands.
      CHECK(v.subrequests.back().models.empty());
      for (size_t i = 0; i + 1 < v.subrequests.size(); ++i) {
        CHECK_FALSE(v.subrequests[i].models.empty());
      }
    }
    // Huawei: the claims can ask an Atlas 800 9000's Ascend910 for 1, 2, 4 or 8 devices; an
    // A3's Ascend910C for 1, 2 (a module), 4 (a NUMA node) and 16, and in groups mode 8 too.
    // So in groups mode a single NPU goes to the 910 first; in attributes mode they tie.
    const VendorRender& huawei = r->vendors.front();
    REQUIRE(huawei.vendor == "huawei");
    REQUIRE(huawei.subrequests.size() >= 2);
    if (mode == PublishMode::kGroups) {
      CHECK(huawei.subrequests[0].models == std::vector<std::string>{"Ascend910"});
      CHECK(huawei.subrequests[1].models == std::vector<std::string>{"Ascend910C"});
    } else {
      CHECK(huawei.subrequests[0].models == std::vector<std::string>{"Ascend910", "Ascend910C"});
    }
  }
  // One model: one subrequest, as before.
  StatusOr<Rendered> h200 = RenderCount("hopper", 1, TierOptions());
  REQUIRE_OK(h200);
  CHECK(SubrequestNames(*h200) == std::vector<std::string>{"nvidia"});
}

TEST_CASE("never more than 8 subrequests, and each drop is a note", "[render]") {
  for (const PublishMode mode : {PublishMode::kAttributes, PublishMode::kGroups}) {
    const RenderOptions options = TierOptions(mode);
    for (const std::string cls : {"inference", "training-standard", "mixed-order"}) {
      for (int64_t count : {1, 2, 3, 4, 5, 6, 8, 12, 16}) {
        INFO(cls << " x" << count << " groups mode " << (mode == PublishMode::kGroups));
        StatusOr<Rendered> out = RenderCount(cls, count, options);
        if (!out.ok()) continue;
        const nlohmann::json& subs = ClaimDevices(*out)["requests"][0]["firstAvailable"];
        CHECK(subs.size() <= 8);
        std::set<std::string> names;
        for (const SubrequestRender* s : Subrequests(*out)) {
          CHECK(api::IsDnsLabel(s->name));
          CHECK(s->name.starts_with(s->vendor));
          CHECK(names.insert(s->name).second);
        }
        // A vendor keeps its rule-keeping subrequests while any of it is listed.
        for (const VendorRender& v : out->vendors) {
          CHECK(std::any_of(v.subrequests.begin(), v.subrequests.end(),
                            [](const SubrequestRender& s) { return !s.optional; }));
        }
        const auto dropped =
            std::count_if(out->notes.begin(), out->notes.end(),
                          [](const std::string& n) { return n.starts_with("dropped "); });
        if (subs.size() < 8) CHECK(dropped == 0);
      }
    }
  }
  // inference x2 over every vendor: 20 alternatives in groups mode, cut to 8 with every vendor
  // that has devices still listed.
  StatusOr<Rendered> out = RenderCount("inference", 2, TierOptions(PublishMode::kGroups));
  REQUIRE_OK(out);
  CHECK(ClaimDevices(*out)["requests"][0]["firstAvailable"].size() == 8);
  CHECK(out->vendors.size() == 6);
  CHECK(std::find(out->notes.begin(), out->notes.end(),
                  "dropped nvidia-root: firstAvailable holds at most 8 subrequests") !=
        out->notes.end());
}

TEST_CASE("slices publish pcieSwitch: the bridge the topology model groups devices by",
          "[render]") {
  const ReferenceServer* server = FindReferenceServer("pcie-2numa-8gpu");
  REQUIRE(server != nullptr);
  api::NodeInventory inventory = server->inventory;
  // A device straight below its root port has no switch: nothing to publish.
  inventory.status.devices.at(7).pcie_path = {"pci0000:90", "0000:98:00.0"};
  StatusOr<DesiredPool> pool =
      BuildPool(inventory, NodeFacts{"n1", "uid", {}}, TierOptions().config, PublishOptions{});
  REQUIRE_OK(pool);
  std::map<std::string, std::string> switches;
  for (const auto& d : pool->slices.at(0).devices) {
    auto it = d.attributes.find("pcieSwitch");
    if (it != d.attributes.end()) switches[d.name] = it->second.string_value.value_or("");
  }
  CHECK(switches.size() == 7);
  CHECK(switches["gpu-0"] == "0000:10:01.0");
  CHECK(switches["gpu-1"] == "0000:10:01.0");
  CHECK(switches["gpu-2"] == "0000:10:02.0");
  CHECK(switches["gpu-6"] == "0000:90:02.0");
  CHECK_FALSE(switches.contains("gpu-7"));
  CHECK(DevicePcieSwitch(inventory.status.devices.at(0)) == "0000:10:01.0");
}

// ---- The brute-force property ----

// A reference server's single devices as its slices publish them, by name.
std::map<std::string, const api::resource::Device*> PublishedSingles(
    const std::vector<api::resource::ResourceSliceSpec>& slices) {
  std::map<std::string, const api::resource::Device*> out;
  for (const auto& slice : slices) {
    for (const auto& d : slice.devices) {
      auto size = d.attributes.find("groupSize");
      if (size != d.attributes.end() && size->second.int_value != 1) continue;
      out.emplace(d.name, &d);
    }
  }
  return out;
}

std::optional<std::string> PublishedValue(const api::resource::Device& d, std::string name) {
  const std::string own = "xpu.dra.dev/";
  if (name.starts_with(own)) name = name.substr(own.size());
  auto it = d.attributes.find(name);
  if (it == d.attributes.end()) return std::nullopt;
  if (it->second.string_value) return *it->second.string_value;
  if (it->second.int_value) return std::to_string(*it->second.int_value);
  return std::nullopt;
}

// Every `count`-set of `ids` (node ids) sharing each attribute's value keeps the node's rules.
// Returns the number of sets seen, or -1 at the first that breaks them.
int64_t CheckEverySet(const topology::Node& node, const std::vector<int>& ids, int count) {
  int64_t seen = 0;
  const bool all = topology::ForEachSubset(ids, count, [&](topology::DeviceSet set) {
    ++seen;
    if (topology::RuleAllows(node, set)) return true;
    INFO("breaks the rules: " << JoinNames(node.Names(set), ","));
    CHECK(false);
    return false;
  });
  return all ? seen : -1;
}

// A reference server as the property check sees it: its topology and its published singles.
struct PublishedServer {
  const ReferenceServer* server = nullptr;
  topology::Node node;
  std::vector<api::resource::ResourceSliceSpec> slices;
};

std::vector<PublishedServer> PublishAll(const Config& config) {
  std::vector<PublishedServer> out;
  for (const ReferenceServer& server : ReferenceServers()) {
    StatusOr<DesiredPool> pool =
        BuildPool(server.inventory, NodeFacts{server.name, "uid", {}}, config, PublishOptions{});
    REQUIRE_OK(pool);
    StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(server.inventory);
    REQUIRE_OK(spec);
    StatusOr<topology::Node> node = topology::Node::Build(*spec);
    REQUIRE_OK(node);
    out.push_back({&server, *std::move(node), std::move(pool->slices)});
  }
  return out;
}

// The sets subrequest `s` of `v` lets the scheduler pick on `server`, checked; returns how many.
int64_t CheckSubrequest(const Rendered& out, const VendorRender& v, const SubrequestRender& s,
                        const PublishedServer& server, const Config& config) {
  const auto published = PublishedSingles(server.slices);
  // The devices the selectors pass, split by the constraints' values.
  const std::vector<std::string> match = MatchAttributes(out, s.name);
  std::map<std::vector<std::string>, std::vector<int>> parts;
  for (const api::InventoryDevice& d : server.server->inventory.status.devices) {
    auto it = published.find(d.name);
    if (it == published.end() || DeviceInClass(config, v.device_class, "xpu.dra.dev", d) != true) {
      continue;
    }
    const auto& in = s.models.empty() ? v.excluded_models : s.models;
    if ((std::find(in.begin(), in.end(), d.model) != in.end()) == s.models.empty()) continue;
    std::vector<std::string> values;
    for (const std::string& attribute : match) {
      if (auto value = PublishedValue(*it->second, attribute)) values.push_back(*value);
    }
    if (values.size() != match.size()) continue;  // in no set
    parts[values].push_back(*server.node.FindDevice(d.name));
  }
  int64_t sets = 0;
  for (const auto& [values, ids] : parts) {
    const int64_t seen = CheckEverySet(server.node, ids, static_cast<int>(s.count));
    if (seen < 0) return -1;
    sets += seen;
  }
  return sets;
}

TEST_CASE("every set a rendered subrequest lets the scheduler pick keeps the rules", "[render]") {
  int64_t sets = 0;
  for (const PublishMode mode : {PublishMode::kAttributes, PublishMode::kGroups}) {
    const RenderOptions options = TierOptions(mode);
    const std::vector<PublishedServer> servers = PublishAll(options.config);
    for (const std::string cls : {"inference", "mixed-order", "acc-pcie", "hopper"}) {
      for (int64_t count : {1, 2, 3, 4, 6, 8}) {
        StatusOr<Rendered> out = RenderCount(cls, count, options);
        if (!out.ok()) continue;
        for (const VendorRender& v : out->vendors) {
          for (const SubrequestRender& s : v.subrequests) {
            // A group device is one of the node's aligned groups: rule-valid as published.
            if (s.group_size > 0) continue;
            for (const PublishedServer& server : servers) {
              INFO(server.server->name << ": " << cls << " x" << count << " " << s.name);
              const int64_t seen = CheckSubrequest(*out, v, s, server, options.config);
              REQUIRE(seen >= 0);
              sets += seen;
            }
          }
        }
      }
    }
  }
  CHECK(sets > 1000);
}

}  // namespace
}  // namespace xpu::controller
