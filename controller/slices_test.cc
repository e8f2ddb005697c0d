#include "controller/slices.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "api/resource_validation.h"
#include "base/testing/require_ok.h"
#include "controller/slice_goldens.h"

namespace xpu::controller {
namespace {

namespace fs = std::filesystem;
using api::resource::Device;
using api::resource::ResourceSliceSpec;

const fs::path kSourceDir = XPU_SOURCE_DIR;

std::vector<fs::path> InventoryFiles() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kSourceDir / "e2e/fixtures/hosts-expected")) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

api::NodeInventory ReadInventory(const fs::path& path) {
  StatusOr<api::NodeInventory> inventory = api::FromJson<api::NodeInventory>(ReadJson(path));
  INFO(path.string());
  REQUIRE_OK(inventory);
  return *inventory;
}

api::NodeInventory Host(const std::string& name) {
  return ReadInventory(kSourceDir / "e2e/fixtures/hosts-expected" / (name + ".json"));
}

NodeFacts Facts(const std::string& name = "node-a") {
  return {name, "00000000-0000-4000-8000-000000000002", {}};
}

DesiredPool Build(const api::NodeInventory& inventory, const Config& config = Config{},
                  const PublishOptions& options = PublishOptions{},
                  const std::set<std::string>& allocated = {}, const NodeFacts& node = Facts()) {
  StatusOr<DesiredPool> pool = BuildPool(inventory, node, config, options, allocated);
  REQUIRE_OK(pool);
  return *pool;
}

std::vector<Device> AllDevices(const DesiredPool& pool) {
  std::vector<Device> devices;
  for (const ResourceSliceSpec& spec : pool.slices) {
    devices.insert(devices.end(), spec.devices.begin(), spec.devices.end());
  }
  return devices;
}

Device FindDevice(const std::vector<Device>& devices, const std::string& name) {
  for (const Device& d : devices) {
    if (d.name == name) return d;
  }
  FAIL("no device " << name);
  return Device{};
}

std::string StringAttribute(const Device& device, const std::string& name) {
  auto it = device.attributes.find(name);
  if (it == device.attributes.end() || !it->second.string_value) return "";
  return *it->second.string_value;
}

std::vector<std::string> Names(const std::vector<Device>& devices) {
  std::vector<std::string> names;
  for (const Device& d : devices) names.push_back(d.name);
  return names;
}

bool HasNote(const DesiredPool& pool, const std::string& part) {
  for (const std::string& note : pool.notes) {
    if (note.find(part) != std::string::npos) return true;
  }
  return false;
}

// n devices of kind gpu without any topology.
api::NodeInventory Synthetic(int n) {
  api::NodeInventory inventory;
  inventory.metadata.name = "big";
  for (int i = 0; i < n; ++i) {
    api::InventoryDevice d;
    d.name = "gpu-" + std::to_string(i);
    d.kind = "gpu";
    d.vendor = "nvidia";
    d.model = "H200";
    d.index = i;
    d.memory = "141Gi";
    d.health = "Healthy";
    d.attributes["vendor"].string_value = "nvidia";
    d.attributes["driverVersion"].version = "570.158.1";
    inventory.status.devices.push_back(d);
  }
  return inventory;
}

TEST_CASE("every fixture host gives valid slices in both modes and versions", "[slices]") {
  for (const fs::path& file : InventoryFiles()) {
    const api::NodeInventory inventory = ReadInventory(file);
    for (PublishMode mode : {PublishMode::kAttributes, PublishMode::kGroups}) {
      for (api::KubeVersion version : {api::KubeVersion::k1_34, api::KubeVersion::k1_35}) {
        Config config;
        config.mode = mode;
        PublishOptions options;
        options.version = version;
        const NodeFacts node = Facts(inventory.metadata.name);
        const DesiredPool pool = Build(inventory, config, options, {}, node);
        INFO(file.filename().string()
             << " " << PublishModeName(mode) << " " << api::KubeVersionName(version));
        REQUIRE_FALSE(pool.slices.empty());
        for (const auto& slice : SliceObjects(pool, node, options.driver, 3)) {
          const Status valid = api::ValidateResourceSlice(slice, version);
          INFO(valid.message());
          CHECK(valid.ok());
          CHECK(slice.spec.pool.name == node.name);
          CHECK(slice.spec.node_name == node.name);
        }
        // Every single device carries a scale-up domain (a group spanning two has none).
        for (const Device& d : AllDevices(pool)) {
          auto size = d.attributes.find("groupSize");
          if (size != d.attributes.end() && size->second.int_value != 1) continue;
          CHECK_FALSE(StringAttribute(d, "scaleUpDomain").empty());
        }
      }
    }
  }
}

TEST_CASE("the committed slice goldens match what the builder gives", "[slices]") {
  for (const fs::path& file : InventoryFiles()) {
    const api::NodeInventory inventory = ReadInventory(file);
    for (PublishMode mode : {PublishMode::kGroups, PublishMode::kAttributes}) {
      const std::string relative = "e2e/fixtures/slices-expected/" + file.stem().string() + "." +
                                   std::string(PublishModeName(mode)) + ".json";
      StatusOr<nlohmann::json> want = GoldenSlices(inventory, mode);
      REQUIRE_OK(want);
      std::ifstream in(kSourceDir / relative, std::ios::binary);
      std::stringstream committed;
      committed << in.rdbuf();
      if (committed.str() != want->dump(2) + "\n") {
        FAIL_CHECK(relative << " is missing or differs from the slice builder's output; "
                            << "regenerate the goldens with `build/bin/gen-slice-goldens .` "
                               "from the source root");
      }
    }
  }
}

TEST_CASE("Atlas 800 9000 rings are the scale-up domains", "[slices]") {
  const std::vector<Device> devices = AllDevices(Build(Host("atlas800-9000")));
  REQUIRE(devices.size() == 8);
  for (int i = 0; i < 8; ++i) {
    const Device& d = FindDevice(devices, "npu-" + std::to_string(i));
    CHECK(StringAttribute(d, "scaleUpDomain") == (i < 4 ? "ring-0" : "ring-1"));
    CHECK(d.capacity.at("memory").value == "32Gi");
  }
}

TEST_CASE("the scale-up domain comes from groups, then link components, then the node",
          "[slices]") {
  api::NodeInventory inventory = Host("atlas800-9000");
  for (api::InventoryDevice& d : inventory.status.devices) d.attributes.erase("scaleUpDomain");
  SECTION("the ring groups") {
    const std::vector<Device> devices = AllDevices(Build(inventory));
    CHECK(StringAttribute(FindDevice(devices, "npu-5"), "scaleUpDomain") == "ring-1");
  }
  SECTION("components of direct links") {
    inventory.status.groups.clear();
    const std::vector<Device> devices = AllDevices(Build(inventory));
    CHECK(StringAttribute(FindDevice(devices, "npu-0"), "scaleUpDomain") == "scaleup-0");
    CHECK(StringAttribute(FindDevice(devices, "npu-7"), "scaleUpDomain") == "scaleup-1");
  }
  SECTION("no links") {
    inventory.status.groups.clear();
    inventory.status.links.clear();
    inventory.status.rule_set = "any";
    const std::vector<Device> devices = AllDevices(Build(inventory));
    CHECK(StringAttribute(FindDevice(devices, "npu-3"), "scaleUpDomain") == "node");
  }
}

TEST_CASE("A3 dies get their module and a scale-up domain", "[slices]") {
  const std::vector<Device> devices = AllDevices(Build(Host("atlas800t-a3")));
  REQUIRE(devices.size() == 16);
  CHECK(StringAttribute(FindDevice(devices, "npu-0"), "module") == "module-0");
  CHECK(StringAttribute(FindDevice(devices, "npu-3"), "module") == "module-1");
  for (const Device& d : devices) CHECK_FALSE(StringAttribute(d, "scaleUpDomain").empty());
}

TEST_CASE("attributes mode puts the solver's choice first and allocated devices last", "[slices]") {
  const DesiredPool pool = Build(Host("atlas800-9000"), Config{}, PublishOptions{}, {"npu-0"});
  const std::vector<std::string> names = Names(AllDevices(pool));
  REQUIRE(names.size() == 8);
  // The fullest ring first: ring-0 has three free devices.
  CHECK((names[0] == "npu-1" || names[0] == "npu-2" || names[0] == "npu-3"));
  CHECK(names.back() == "npu-0");
  std::set<std::string> unique(names.begin(), names.end());
  CHECK(unique.size() == 8);
  CHECK(pool.mode == PublishMode::kAttributes);
}

TEST_CASE("a topology that does not build keeps inventory order with a note", "[slices]") {
  api::NodeInventory inventory = Host("atlas800-9000");
  inventory.status.rule_set = "no-such-rule-set";
  std::swap(inventory.status.devices[0], inventory.status.devices[1]);
  const DesiredPool pool = Build(inventory);
  CHECK(Names(AllDevices(pool)).front() == "npu-1");
  CHECK(HasNote(pool, "inventory order"));
}

TEST_CASE("unhealthy devices are tainted or left out", "[slices]") {
  api::NodeInventory inventory = Host("hgx-h200-unhealthy");
  inventory.status.devices[3].health = "Unhealthy";
  Config config;
  config.unhealthy_effect = "NoExecute";
  SECTION("with taints") {
    const DesiredPool pool = Build(inventory, config);
    const Device& d = FindDevice(AllDevices(pool), "gpu-3");
    REQUIRE(d.taints.size() == 1);
    CHECK(d.taints[0].key == kUnhealthyTaint);
    CHECK(d.taints[0].value == "Unhealthy");
    CHECK(d.taints[0].effect == "NoExecute");
    CHECK_FALSE(d.taints[0].time_added.has_value());
    CHECK(pool.tainted.at(std::string(kUnhealthyTaint)) == 1);
    CHECK(pool.devices == 8);
  }
  SECTION("without taint support") {
    PublishOptions options;
    options.taints = false;
    const DesiredPool pool = Build(inventory, config, options);
    const std::vector<std::string> names = Names(AllDevices(pool));
    CHECK(names.size() == 7);
    CHECK(std::find(names.begin(), names.end(), "gpu-3") == names.end());
    CHECK(HasNote(pool, "gpu-3"));
    CHECK(pool.devices == 7);
  }
  SECTION("a link down") {
    inventory.status.devices[3].health = "Healthy";
    api::InventoryLink link;
    link.a = "gpu-5";
    link.b = "gpu-6";
    link.type = "nvlink";
    link.state = "down";
    inventory.status.links.push_back(link);
    const std::vector<Device> devices = AllDevices(Build(inventory));
    REQUIRE(FindDevice(devices, "gpu-5").taints.size() == 1);
    CHECK(FindDevice(devices, "gpu-5").taints[0].value == "LinkDown");
    CHECK(FindDevice(devices, "gpu-6").taints.size() == 1);
    CHECK(FindDevice(devices, "gpu-4").taints.empty());
  }
}

TEST_CASE("the DCMI-broken host's unhealthy die taints its groups", "[slices]") {
  Config config;
  config.mode = PublishMode::kGroups;
  const DesiredPool pool = Build(Host("atlas800t-a2-dcmi-broken"), config);
  REQUIRE(pool.mode == PublishMode::kGroups);
  const std::vector<Device> devices = AllDevices(pool);
  CHECK(FindDevice(devices, "npu-6").taints.at(0).value == "Unhealthy");
  CHECK(FindDevice(devices, "npu-x8-0").taints.size() == 1);
  CHECK(FindDevice(devices, "npu-0").taints.empty());

  PublishOptions options;
  options.taints = false;
  const DesiredPool untainted = Build(Host("atlas800t-a2-dcmi-broken"), config, options);
  REQUIRE(untainted.mode == PublishMode::kGroups);
  for (const Device& d : AllDevices(untainted)) {
    CHECK(d.taints.empty());
    CHECK(d.name != "npu-6");
    CHECK(d.name != "npu-x8-0");
    for (const auto& consumption : d.consumes_counters) {
      CHECK_FALSE(consumption.counters.contains("npu-6"));
    }
  }
  CHECK(HasNote(untainted, "npu-x8-0"));
  CHECK(untainted.tainted.empty());
}

TEST_CASE("devices outside the support matrix get the unsupported taint", "[slices]") {
  Config config;
  SupportRule rule;
  rule.vendor = "nvidia";
  rule.driver = VersionRange{">=99999.0.0"};
  config.support_matrix.push_back(rule);
  const DesiredPool pool = Build(Host("hgx-h200"), config);
  for (const Device& d : AllDevices(pool)) {
    REQUIRE(d.taints.size() == 1);
    CHECK(d.taints[0].key == kUnsupportedTaint);
    CHECK(d.taints[0].value == "driverVersion");
    CHECK(d.taints[0].effect == "NoSchedule");
  }
  CHECK(pool.tainted.at(std::string(kUnsupportedTaint)) == 8);
  // Another vendor's rule does not judge these devices.
  config.support_matrix[0].vendor = "huawei";
  for (const Device& d : AllDevices(Build(Host("hgx-h200"), config))) CHECK(d.taints.empty());
}

TEST_CASE("fabric tiers come from the node labels, else the inventory", "[slices]") {
  api::NodeInventory inventory = Host("gb200-tray");
  // The fabricDomain, leaf and spine of the first device on a node with `labels`.
  auto tiers = [&inventory](std::map<std::string, std::string> labels) {
    NodeFacts node = Facts();
    node.labels = std::move(labels);
    const Device d = AllDevices(Build(inventory, Config{}, PublishOptions{}, {}, node)).front();
    return std::vector<std::string>{StringAttribute(d, "fabricDomain"), StringAttribute(d, "leaf"),
                                    StringAttribute(d, "spine")};
  };
  SECTION("xpu labels") {
    CHECK(tiers({{"topology.xpu.dra.dev/superpod", "sp-1"},
                 {"topology.xpu.dra.dev/leaf", "leaf-7"},
                 {"topology.xpu.dra.dev/spine", "spine-2"},
                 {"nvidia.com/gpu.clique", "other"}}) ==
          std::vector<std::string>{"sp-1", "leaf-7", "spine-2"});
  }
  SECTION("other providers' labels") {
    CHECK(tiers({{"nvidia.com/gpu.clique", "uuid.1"},
                 {"cloud.google.com/gce-topology-subblock", "sb"},
                 {"topology.k8s.aws/network-node-layer-2", "nn-2"}}) ==
          std::vector<std::string>{"uuid.1", "sb", "nn-2"});
  }
  SECTION("the inventory's fabric") {
    api::InventoryFabric fabric;
    fabric.clique_id = "cluster.3";
    fabric.leaf = "l1";
    inventory.status.fabric = fabric;
    const Device d = AllDevices(Build(inventory)).front();
    CHECK(StringAttribute(d, "fabricDomain") == "cluster.3");
    CHECK(StringAttribute(d, "leaf") == "l1");
    CHECK_FALSE(d.attributes.contains("spine"));
  }
  SECTION("too long a value is left out") {
    NodeFacts node = Facts();
    node.labels = {{"topology.xpu.dra.dev/leaf", std::string(63, 'a')}};
    inventory.status.devices[0].attributes["model"].string_value = std::string(65, 'm');
    const DesiredPool pool = Build(inventory, Config{}, PublishOptions{}, {}, node);
    const Device& d = FindDevice(AllDevices(pool), "gpu-0");
    CHECK(StringAttribute(d, "leaf") == std::string(63, 'a'));
    CHECK_FALSE(d.attributes.contains("model"));
    CHECK(HasNote(pool, "model"));
  }
}

TEST_CASE("vendor-specific attributes are dropped first over 32", "[slices]") {
  api::NodeInventory inventory = Host("atlas800-9000");
  api::InventoryDevice& d = inventory.status.devices[0];
  d.uuid = "0e5f8c1c-0000-4000-8000-000000000000";
  for (int i = 0; d.attributes.size() < 40; ++i) {
    d.attributes["extra" + std::to_string(i)].int_value = i;
  }
  const DesiredPool pool = Build(inventory);
  const Device& out = FindDevice(AllDevices(pool), "npu-0");
  CHECK(out.attributes.size() + out.capacity.size() == 32);
  CHECK_FALSE(out.attributes.contains("huawei.com/deviceIP"));
  CHECK(out.attributes.contains("resource.kubernetes.io/pcieRoot"));
  CHECK(HasNote(pool, "huawei.com/deviceIP"));
  const Device& other = FindDevice(AllDevices(pool), "npu-1");
  CHECK(other.attributes.contains("huawei.com/deviceIP"));
}

TEST_CASE("the uuid attribute is added when the device has one", "[slices]") {
  api::NodeInventory inventory = Host("hgx-h200");
  inventory.status.devices[0].uuid = "GPU-1234";
  const std::vector<Device> devices = AllDevices(Build(inventory));
  CHECK(StringAttribute(FindDevice(devices, "gpu-0"), "uuid") == "GPU-1234");
}

TEST_CASE("groups mode publishes singles and groups consuming member counters", "[slices]") {
  Config config;
  config.mode = PublishMode::kGroups;
  config.group_sizes = {4};
  SECTION("1.35: the counter set in a slice of its own") {
    const DesiredPool pool = Build(Host("atlas800-9000"), config);
    REQUIRE(pool.mode == PublishMode::kGroups);
    REQUIRE(pool.slices.size() == 2);
    CHECK(pool.slices[0].devices.empty());
    REQUIRE(pool.slices[0].shared_counters.size() == 1);
    CHECK(pool.slices[0].shared_counters[0].name == "npu-members");
    CHECK(pool.slices[0].shared_counters[0].counters.size() == 8);
    CHECK(pool.slices[0].shared_counters[0].counters.at("npu-3").value == "1");
    const std::vector<Device> devices = AllDevices(pool);
    CHECK(devices.size() == 10);
    CHECK(pool.devices == 10);
    const Device& single = FindDevice(devices, "npu-2");
    CHECK(single.attributes.at("groupSize").int_value == 1);
    REQUIRE(single.consumes_counters.size() == 1);
    CHECK(single.consumes_counters[0].counters.size() == 1);
    CHECK(single.consumes_counters[0].counters.contains("npu-2"));
    const Device& group = FindDevice(devices, "npu-x4-1");
    CHECK(group.attributes.at("groupSize").int_value == 4);
    CHECK(StringAttribute(group, "scaleUpDomain") == "ring-1");
    CHECK(StringAttribute(group, "vendor") == "huawei");
    CHECK_FALSE(group.attributes.contains("index"));
    CHECK_FALSE(group.attributes.contains("resource.kubernetes.io/pciBusID"));
    CHECK(group.capacity.at("memory").value == "32Gi");
    REQUIRE(group.consumes_counters.size() == 1);
    CHECK(group.consumes_counters[0].counter_set == "npu-members");
    CHECK(group.consumes_counters[0].counters.size() == 4);
    CHECK(group.consumes_counters[0].counters.contains("npu-4"));
  }
  SECTION("1.34: counters and devices in one slice") {
    PublishOptions options;
    options.version = api::KubeVersion::k1_34;
    const DesiredPool pool = Build(Host("atlas800-9000"), config, options);
    REQUIRE(pool.mode == PublishMode::kGroups);
    REQUIRE(pool.slices.size() == 1);
    CHECK(pool.slices[0].shared_counters.size() == 1);
    CHECK(pool.slices[0].devices.size() == 10);
  }
  SECTION("without counter support") {
    PublishOptions options;
    options.counters = false;
    const DesiredPool pool = Build(Host("atlas800-9000"), config, options);
    CHECK(pool.mode == PublishMode::kAttributes);
    CHECK(HasNote(pool, "counters"));
    CHECK(AllDevices(pool).size() == 8);
  }
  SECTION("mixed kinds") {
    api::NodeInventory inventory = Host("atlas800-9000");
    inventory.status.devices[7].kind = "gpu";
    const DesiredPool pool = Build(inventory, config);
    CHECK(pool.mode == PublishMode::kAttributes);
    CHECK(HasNote(pool, "mixed"));
  }
}

TEST_CASE("large pools are split at the version's device limit", "[slices]") {
  const api::NodeInventory inventory = Synthetic(200);
  SECTION("1.34") {
    PublishOptions options;
    options.version = api::KubeVersion::k1_34;
    const DesiredPool pool = Build(inventory, Config{}, options);
    REQUIRE(pool.slices.size() == 2);
    CHECK(pool.slices[0].devices.size() == 128);
    CHECK(pool.devices == 200);
  }
  SECTION("1.35 without taints") { CHECK(Build(inventory).slices.size() == 2); }
  SECTION("1.35 with taints") {
    Config config;
    SupportRule rule;
    rule.vendor = "nvidia";
    rule.driver = VersionRange{">=99999.0.0"};
    config.support_matrix.push_back(rule);
    const DesiredPool pool = Build(inventory, config);
    REQUIRE(pool.slices.size() == 4);
    CHECK(pool.slices[0].devices.size() == 64);
    CHECK(pool.slices[3].devices.size() == 8);
    CHECK(pool.tainted.at(std::string(kUnsupportedTaint)) == 200);
    for (const auto& slice : SliceObjects(pool, Facts("big"), "xpu.dra.dev", 1)) {
      CHECK(api::ValidateResourceSlice(slice, api::KubeVersion::k1_35).ok());
    }
  }
  SECTION("groups mode falls back") {
    Config config;
    config.mode = PublishMode::kGroups;
    const DesiredPool pool = Build(inventory, config);
    CHECK(pool.mode == PublishMode::kAttributes);
    CHECK_FALSE(pool.notes.empty());
  }
}

TEST_CASE("an empty node gets one empty slice", "[slices]") {
  api::NodeInventory inventory;
  inventory.metadata.name = "empty";
  for (PublishMode mode : {PublishMode::kAttributes, PublishMode::kGroups}) {
    Config config;
    config.mode = mode;
    const DesiredPool pool = Build(inventory, config);
    REQUIRE(pool.slices.size() == 1);
    CHECK(pool.slices[0].devices.empty());
    CHECK(pool.devices == 0);
    const auto slices = SliceObjects(pool, Facts("empty"), "xpu.dra.dev", 1);
    CHECK(api::ValidateResourceSlice(slices[0], api::KubeVersion::k1_35).ok());
  }
}

TEST_CASE("bad device names are errors naming the field", "[slices]") {
  api::NodeInventory inventory = Host("atlas800-9000");
  inventory.status.devices[2].name = "npu-1";
  StatusOr<DesiredPool> pool = BuildPool(inventory, Facts(), Config{}, PublishOptions{});
  REQUIRE_FALSE(pool.ok());
  CHECK(pool.status().message().find("status.devices[2].name") != std::string::npos);
}

TEST_CASE("slice objects carry the owner, generation and count", "[slices]") {
  const NodeFacts node = Facts("n1");
  const DesiredPool pool = Build(Synthetic(130), Config{}, PublishOptions{}, {}, node);
  const auto slices = SliceObjects(pool, node, "xpu.dra.dev", 7);
  REQUIRE(slices.size() == 2);
  for (const auto& slice : slices) {
    CHECK(slice.metadata.generate_name == "n1-xpu.dra.dev-");
    REQUIRE(slice.metadata.owner_references.size() == 1);
    const api::OwnerReference& owner = slice.metadata.owner_references[0];
    CHECK(owner.api_version == "v1");
    CHECK(owner.kind == "Node");
    CHECK(owner.name == "n1");
    CHECK(owner.uid == node.uid);
    CHECK(owner.controller == true);
    CHECK(slice.spec.pool.generation == 7);
    CHECK(slice.spec.pool.resource_slice_count == 2);
    CHECK(slice.spec.driver == "xpu.dra.dev");
  }
}

}  // namespace
}  // namespace xpu::controller
