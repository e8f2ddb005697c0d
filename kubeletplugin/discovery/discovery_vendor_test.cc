// Discovery with the vendor libraries loaded through the real dlopen path: the fake NVML and DCMI
// built by the test tree, answering from each fixture host's fake-vendor/*.json.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/partitioning.h"

namespace xpu::discovery {
namespace {

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

// `nvml_json`: the fake NVML's answers, when not the host's own; `lib_dir`: where the fakes are.
api::NodeInventory DiscoverWithLibs(const std::string& host, const std::string& nvml_json = "",
                                    const std::string& lib_dir = XPU_FAKE_LIB_DIR) {
  ::setenv("XPU_FAKE_NVML_JSON",
           (nvml_json.empty() ? kHosts + host + "/fake-vendor/nvml.json" : nvml_json).c_str(), 1);
  ::setenv("XPU_FAKE_DCMI_JSON", (kHosts + host + "/fake-vendor/dcmi.json").c_str(), 1);
  DiscoveryOptions options;
  options.host_root = kHosts + host;
  options.vendor_lib_dirs = {lib_dir};
  options.node_name = host;
  auto inventory = Discover(options);
  REQUIRE_OK(inventory);
  const Status valid = api::ValidateNodeInventory(*inventory);
  INFO(valid.ToString());
  CHECK(valid.ok());
  return std::move(inventory).value();
}

const api::Condition* FindCondition(const api::NodeInventory& inv, const std::string& type) {
  for (const auto& c : inv.status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

TEST_CASE("NVML through dlopen: uuids, NVSwitch links and XID health", "[discovery][vendor]") {
  const auto inv = DiscoverWithLibs("hgx-h200-unhealthy");
  REQUIRE(inv.status.devices.size() == 8);
  for (const auto& d : inv.status.devices) {
    CHECK(d.uuid.rfind("GPU-", 0) == 0);
    CHECK(d.sources.at("uuid") == "nvml");
  }
  CHECK(inv.status.devices[3].health == "Unhealthy");
  CHECK(inv.status.devices[3].sources.at("health") == "nvml");
  CHECK(inv.status.devices[0].health == "Healthy");
  CHECK(inv.status.health == "Degraded");
  CHECK(FindCondition(inv, "VendorLibrary") == nullptr);
  // GPU 5's NVLink 7 is down: a condition, and its pairs through the switches carry 17/18.
  const api::Condition* links = FindCondition(inv, "Links");
  REQUIRE(links != nullptr);
  CHECK(links->reason == "LinksDegraded");
  CHECK(links->message.find("gpu-5: NVLink 7 down (17 of 18 active)") != std::string::npos);
  double full = 0;
  double degraded = 0;
  for (const auto& l : inv.status.links) {
    if (l.a == "gpu-0" && l.b == "gpu-1") full = l.bandwidth_gbps;
    if (l.a == "gpu-4" && l.b == "gpu-5") degraded = l.bandwidth_gbps;
  }
  CHECK(full > 0);
  CHECK(degraded == Approx(full * 17 / 18));
}

std::vector<std::string> ProfileNames(const api::InventoryPartitioning& p) {
  std::vector<std::string> out;
  for (const api::PartitionProfile& profile : p.profiles) out.push_back(profile.name);
  return out;
}

const api::PartitionProfile* FindProfile(const api::InventoryPartitioning& p,
                                         const std::string& name) {
  for (const api::PartitionProfile& profile : p.profiles) {
    if (profile.name == name) return &profile;
  }
  return nullptr;
}

// Eight devices, each with `partitioning` of `kind` from `source`, and no library condition.
void RequireEightPartitionable(const api::NodeInventory& inv, const std::string& kind,
                               const std::string& source) {
  REQUIRE(inv.status.devices.size() == 8);
  CHECK(FindCondition(inv, "VendorLibrary") == nullptr);
  for (const auto& d : inv.status.devices) {
    INFO(d.name);
    REQUIRE(d.partitioning.has_value());
    CHECK(d.partitioning->kind == kind);
    CHECK(d.sources.at("partitioning") == source);
  }
}

TEST_CASE("NVML MIG through dlopen: profiles, placements and the GPU instances that exist",
          "[discovery][vendor]") {
  const auto inv = DiscoverWithLibs("hgx-h200-mig");
  RequireEightPartitionable(inv, "mig", "nvml");
  const api::InventoryPartitioning& p = *inv.status.devices[1].partitioning;
  auto profile = [&p](const std::string& name) -> const api::PartitionProfile& {
    const api::PartitionProfile* found = FindProfile(p, name);
    INFO(name);
    REQUIRE(found != nullptr);
    return *found;
  };
  CHECK(p.enabled);
  CHECK(p.slots == 8);
  CHECK(p.capacity == std::map<std::string, int64_t>{{"compute", 7}});
  // 1g.18gb+me is left out: its instances sit where 1g.18gb's do.
  CHECK(ProfileNames(p) == std::vector<std::string>{"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb",
                                                    "4g.71gb", "7g.141gb"});
  const api::PartitionProfile& one = profile("1g.18gb");
  CHECK(one.memory == "16384Mi");
  CHECK(one.counters == std::map<std::string, int64_t>{{"compute", 1}});
  CHECK(one.slots == 1);
  CHECK(one.placements == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(profile("1g.35gb").slots == 2);
  CHECK(profile("1g.35gb").placements == std::vector<int64_t>{0, 2, 4, 6});
  CHECK(profile("2g.35gb").counters.at("compute") == 2);
  CHECK(profile("3g.71gb").placements == std::vector<int64_t>{0, 4});
  CHECK(profile("7g.141gb").slots == 8);
  CHECK(profile("7g.141gb").counters.at("compute") == 7);
  // The two GPU instances on GPU 1, by first slot.
  REQUIRE(p.partitions.size() == 2);
  CHECK(p.partitions[0].profile == "1g.18gb");
  CHECK(p.partitions[0].placement == 0);
  CHECK(p.partitions[0].id == 7);
  CHECK(p.partitions[0].uuid == "MIG-4cb87259-21dd-5cca-9c06-13a08e48d65d");
  CHECK(p.partitions[1].profile == "3g.71gb");
  CHECK(p.partitions[1].placement == 4);
  CHECK(p.partitions[1].id == 2);
  CHECK(p.partitions[1].uuid == "MIG-de18a2fd-73ec-5d81-9b49-ea5912ed7d2c");
  // GPU 0: MIG on, nothing created; GPU 3: three instances.
  CHECK(inv.status.devices[0].partitioning->enabled);
  CHECK(inv.status.devices[0].partitioning->partitions.empty());
  CHECK(inv.status.devices[3].partitioning->partitions.size() == 3);
  // GPU 5: MIG mode off, so NVML gives no profiles: served whole.
  const api::InventoryPartitioning& off = *inv.status.devices[5].partitioning;
  CHECK_FALSE(off.enabled);
  CHECK(off.profiles.empty());
  CHECK(off.partitions.empty());
  CHECK(off.capacity.empty());
}

TEST_CASE("NVML MIG: an instance of a media-extension profile is listed under its base",
          "[discovery][vendor]") {
  // GPU 3's 1g.18gb at slot 6 made a 1g.18gb+me (profile id 20).
  std::ifstream in(kHosts + "hgx-h200-mig/fake-vendor/nvml.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  bool changed = false;
  for (nlohmann::json& gi : doc["devices"][3]["mig"]["gpuInstances"]) {
    if (gi["placement"]["start"] == 6) {
      gi["profileId"] = 20;
      changed = true;
    }
  }
  REQUIRE(changed);
  testing::TempDir dir;
  const std::string path = dir.path() + "/nvml.json";
  std::ofstream(path) << doc.dump(2);
  const auto inv = DiscoverWithLibs("hgx-h200-mig", path);
  CHECK(FindCondition(inv, "VendorLibrary") == nullptr);
  const api::InventoryPartitioning& p = *inv.status.devices[3].partitioning;
  REQUIRE(p.partitions.size() == 3);
  CHECK(p.partitions[2].placement == 6);
  CHECK(p.partitions[2].profile == "1g.18gb");
}

TEST_CASE("NVML MIG that contradicts itself is left out of that GPU with a condition",
          "[discovery][vendor]") {
  // GPU 1's 3g.71gb moved onto slot 0, where its 1g.18gb sits.
  std::ifstream in(kHosts + "hgx-h200-mig/fake-vendor/nvml.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  for (nlohmann::json& gi : doc["devices"][1]["mig"]["gpuInstances"]) {
    if (gi["placement"]["start"] == 4) gi["placement"]["start"] = 0;
  }
  testing::TempDir dir;
  const std::string path = dir.path() + "/nvml.json";
  std::ofstream(path) << doc.dump(2);
  const auto inv = DiscoverWithLibs("hgx-h200-mig", path);
  CHECK_FALSE(inv.status.devices[1].partitioning.has_value());
  CHECK(inv.status.devices[3].partitioning.has_value());
  const api::Condition* c = FindCondition(inv, "VendorLibrary");
  REQUIRE(c != nullptr);
  CHECK_THAT(c->message, Catch::Contains("nvml: gpu-1: MIG left out: ") &&
                             Catch::Contains("overlaps another partition"));
}

TEST_CASE("NVML MIG: no MIG functions, or MIG not supported, leaves partitioning out",
          "[discovery][vendor]") {
  // An older library without the versioned profile info and the _v2 placements.
  const auto old = DiscoverWithLibs("hgx-h200-mig", "", std::string(XPU_FAKE_LIB_DIR) + "/old");
  REQUIRE(old.status.devices.size() == 8);
  for (const auto& d : old.status.devices) CHECK_FALSE(d.partitioning.has_value());
  CHECK(FindCondition(old, "VendorLibrary") == nullptr);
  // NOT_SUPPORTED from every MIG call on GPUs 1 and 5.
  std::ifstream in(kHosts + "hgx-h200-mig/fake-vendor/nvml.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["faults"]["migNotSupported"] = {1, 5};
  testing::TempDir dir;
  const std::string path = dir.path() + "/nvml.json";
  std::ofstream(path) << doc.dump(2);
  const auto inv = DiscoverWithLibs("hgx-h200-mig", path);
  CHECK(FindCondition(inv, "VendorLibrary") == nullptr);
  for (const auto& d : inv.status.devices) {
    INFO(d.name);
    CHECK(d.partitioning.has_value() == (d.index != 1 && d.index != 5));
  }
}

TEST_CASE("DCMI vNPU through dlopen: templates, the chip's resource and the vNPUs present",
          "[discovery][vendor]") {
  const auto inv = DiscoverWithLibs("atlas800t-a2-vnpu");
  RequireEightPartitionable(inv, "vnpu", "dcmi");
  for (const auto& d : inv.status.devices) CHECK(d.partitioning->enabled);
  const api::InventoryPartitioning& p = *inv.status.devices[1].partitioning;
  CHECK(p.capacity ==
        std::map<std::string, int64_t>{{"aicore", 20}, {"aicpu", 7}, {"memory-mib", 65536}});
  CHECK(ProfileNames(p) == std::vector<std::string>{"vir05_1c_16g", "vir10_3c_32g"});
  const api::PartitionProfile* small = FindProfile(p, "vir05_1c_16g");
  REQUIRE(small != nullptr);
  CHECK(small->memory == "16Gi");
  CHECK(small->counters ==
        std::map<std::string, int64_t>{{"aicore", 5}, {"aicpu", 1}, {"memory-mib", 16384}});
  CHECK(small->placements.empty());
  CHECK(small->max_instances == 0);  // as many as the capacity holds
  REQUIRE(p.partitions.size() == 2);
  CHECK(p.partitions[0].profile == "vir05_1c_16g");
  CHECK(p.partitions[0].instance == 0);
  CHECK(p.partitions[0].id == 100);
  CHECK(p.partitions[1].instance == 1);
  CHECK(p.partitions[1].id == 101);
  const api::InventoryPartitioning& three = *inv.status.devices[3].partitioning;
  REQUIRE(three.partitions.size() == 1);
  CHECK(three.partitions[0].profile == "vir10_3c_32g");
  CHECK(inv.status.devices[0].partitioning->partitions.empty());
}

TEST_CASE(
    "DCMI vNPU: a vNPU of no known template is counted under a profile of its own, and "
    "vNPUs beyond the chip are left out with a condition",
    "[discovery][vendor]") {
  std::ifstream in(kHosts + "atlas800t-a2-vnpu/fake-vendor/dcmi.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  // NPU 0: a vir03_1c_8g (not in the 910B3's table) by its resources.
  doc["chips"][0]["vnpu"]["vdevices"] = nlohmann::json::parse(
      R"([{"vdevId": 110, "name": "vir03_1c_8g", "aicore": 3, "aicpu": 1, "memoryMB": 8192}])");
  // NPU 3: a second and third vir10_3c_32g, more AI Cores than the chip has.
  nlohmann::json& on3 = doc["chips"][3]["vnpu"]["vdevices"];
  on3.push_back(on3[0]);
  on3.push_back(on3[0]);
  on3[1]["vdevId"] = 103;
  on3[2]["vdevId"] = 104;
  testing::TempDir dir;
  const std::string path = dir.path() + "/dcmi.json";
  std::ofstream(path) << doc.dump(2);
  ::setenv("XPU_FAKE_DCMI_JSON", path.c_str(), 1);
  DiscoveryOptions options;
  options.host_root = kHosts + "atlas800t-a2-vnpu";
  options.vendor_lib_dirs = {XPU_FAKE_LIB_DIR};
  options.node_name = "n1";
  const auto inv = Discover(options);
  REQUIRE_OK(inv);
  REQUIRE_OK(api::ValidateNodeInventory(*inv));
  const api::InventoryPartitioning& p = *inv->status.devices[0].partitioning;
  const api::PartitionProfile* own = FindProfile(p, "vir03_1c_8g");
  REQUIRE(own != nullptr);
  CHECK(own->counters.at("aicore") == 3);
  CHECK(own->max_instances == 1);
  REQUIRE(p.partitions.size() == 1);
  CHECK(p.partitions[0].profile == "vir03_1c_8g");
  CHECK_FALSE(inv->status.devices[3].partitioning.has_value());
  const api::Condition* c = FindCondition(*inv, "VendorLibrary");
  REQUIRE(c != nullptr);
  CHECK_THAT(c->message, Catch::Contains("dcmi: npu-3: vNPU left out: ") &&
                             Catch::Contains("take more aicore than the device's capacity"));
}

TEST_CASE("NVML that fails to initialise: a condition, and sysfs facts stand",
          "[discovery][vendor]") {
  const auto inv = DiscoverWithLibs("hgx-h200-nvml-init-fails");
  CHECK(inv.status.devices.size() == 8);
  const api::Condition* c = FindCondition(inv, "VendorLibrary");
  REQUIRE(c != nullptr);
  CHECK(c->reason == "NvmlUnavailable");
  CHECK(c->message.find("nvmlInit_v2: 9 driver not loaded") != std::string::npos);
}

TEST_CASE("DCMI through dlopen: chip facts, and a failing call on one chip",
          "[discovery][vendor]") {
  const auto a2 = DiscoverWithLibs("atlas800t-a2");
  REQUIRE(a2.status.devices.size() == 8);
  CHECK(a2.status.devices[0].sources.at("topology") == "dcmi");
  CHECK(FindCondition(a2, "VendorLibrary") == nullptr);

  const auto& npu0 = a2.status.devices[0];
  CHECK(npu0.firmware_version == "7.5.0.1.129");
  CHECK(npu0.sources.at("firmware") == "dcmi");
  CHECK(npu0.attributes.at("huawei.com/networkHealth").string_value == "ok");
  CHECK(FindCondition(a2, "Network") == nullptr);
  CHECK(FindCondition(a2, "Links") == nullptr);

  const auto broken = DiscoverWithLibs("atlas800t-a2-dcmi-broken");
  REQUIRE(broken.status.devices.size() == 8);  // every device still appears
  bool names_call = false;
  for (const auto& c : broken.status.conditions) {
    if (c.message.find("dcmi_get_device_hbm_info") != std::string::npos) names_call = true;
  }
  CHECK(names_call);
  // NPU 1 has no PCIe information from DCMI: matched by its physical id all the same.
  const auto& npu1 = broken.status.devices[1];
  CHECK(npu1.name == "npu-1");
  CHECK(npu1.attributes.at("huawei.com/logicID").int_value == 1);
  CHECK(npu1.sources.at("model") == "dcmi");
  // NPU 3's HCCS is unhealthy: each of its seven HCCS links is down, the others are up.
  int down = 0;
  for (const auto& l : broken.status.links) {
    if (l.type != "hccs") continue;
    const bool touches = l.a == "npu-3" || l.b == "npu-3";
    CHECK(l.state == (touches ? "down" : ""));
    down += touches ? 1 : 0;
  }
  CHECK(down == 7);
  const api::Condition* links = FindCondition(broken, "Links");
  REQUIRE(links != nullptr);
  CHECK(links->message.find("npu-3: HCCS unhealthy (pcs_status 0x1, hdlc_status 0x0)") !=
        std::string::npos);
  // NPU 4's RoCE network is unreachable.
  CHECK(broken.status.devices[4].attributes.at("huawei.com/networkHealth").string_value ==
        "unreachable");
  const api::Condition* network = FindCondition(broken, "Network");
  REQUIRE(network != nullptr);
  CHECK(network->status == "False");
  CHECK(network->reason == "NetworkUnhealthy");
  CHECK(network->message == "npu-4: RoCE network unreachable");
}

TEST_CASE("Hygon DMI vHCUs through dlopen: sizes, the device's units and the vHCUs present",
          "[discovery][vendor]") {
  ::setenv("XPU_FAKE_HYDMI_JSON", (kHosts + "hygon-dcu-8-vhcu/fake-vendor/hydmi.json").c_str(), 1);
  const auto inv = DiscoverWithLibs("hygon-dcu-8-vhcu");
  ::unsetenv("XPU_FAKE_HYDMI_JSON");
  RequireEightPartitionable(inv, "vhcu", "hydmi");
  const api::InventoryPartitioning& p = *inv.status.devices[2].partitioning;
  CHECK(p.enabled);
  CHECK(p.capacity ==
        std::map<std::string, int64_t>{{"compute-units", 80}, {"memory-mib", 65536}, {"vhcus", 4}});
  CHECK(ProfileNames(p) == std::vector<std::string>{"20cu.16gb", "40cu.32gb", "60cu.48gb"});
  const api::PartitionProfile* half = FindProfile(p, "40cu.32gb");
  REQUIRE(half != nullptr);
  CHECK(half->memory == "32Gi");
  CHECK(half->counters ==
        std::map<std::string, int64_t>{{"compute-units", 40}, {"memory-mib", 32768}, {"vhcus", 1}});
  REQUIRE(p.partitions.size() == 2);
  CHECK(p.partitions[0].profile == "20cu.16gb");
  CHECK(p.partitions[0].id == 0);
  CHECK(p.partitions[1].instance == 1);
  CHECK(p.partitions[1].id == 1);
  REQUIRE(inv.status.devices[5].partitioning->partitions.size() == 1);
  CHECK(inv.status.devices[5].partitioning->partitions[0].profile == "40cu.32gb");
  CHECK(inv.status.devices[0].partitioning->partitions.empty());
  // The same host without Hygon's DMI (no fixture for the fake): whole DCUs, and no complaint.
  const auto plain = DiscoverWithLibs("hygon-dcu-8");
  CHECK(FindCondition(plain, "VendorLibrary") == nullptr);
  for (const auto& d : plain.status.devices) CHECK_FALSE(d.partitioning.has_value());
}

TEST_CASE("Hygon DMI: vHCUs taking more than the device has are left out with a condition",
          "[discovery][vendor]") {
  std::ifstream in(kHosts + "hygon-dcu-8-vhcu/fake-vendor/hydmi.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["vdevices"].push_back({{"id", 7}, {"device", 5}, {"computeUnits", 60}, {"memoryMiB", 1024}});
  testing::TempDir dir;
  const std::string path = dir.path() + "/hydmi.json";
  std::ofstream(path) << doc.dump(2);
  ::setenv("XPU_FAKE_HYDMI_JSON", path.c_str(), 1);
  const auto inv = DiscoverWithLibs("hygon-dcu-8-vhcu");
  ::unsetenv("XPU_FAKE_HYDMI_JSON");
  CHECK_FALSE(inv.status.devices[5].partitioning.has_value());
  CHECK(inv.status.devices[2].partitioning.has_value());
  const api::Condition* c = FindCondition(inv, "VendorLibrary");
  REQUIRE(c != nullptr);
  CHECK_THAT(c->message,
             Catch::Contains("hydmi: dcu-5: vHCU left out: ") && Catch::Contains("compute-units"));
}

TEST_CASE("the fake DCMI creates vNPUs from the same templates discovery knows",
          "[discovery][vendor]") {
  // Two tables must agree: discovery's (partitioning.cc) and the fixture generator's, which the
  // fake DCMI creates from.
  std::ifstream in(kHosts + "atlas800t-a2-vnpu/fake-vendor/dcmi.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  for (const nlohmann::json& chip : doc.at("chips")) {
    const std::string name = chip.at("chipName").get<std::string>();
    INFO(name);
    const nlohmann::json& fake = chip.at("vnpu").at("templates");
    const std::span<const VnpuTemplate> known = VnpuTemplatesOf(name);
    REQUIRE(fake.size() == known.size());
    for (const VnpuTemplate& t : known) {
      INFO(t.name);
      const nlohmann::json& f = fake.at(std::string(t.name));
      CHECK(f.at("aicore").get<int>() == t.aicore);
      CHECK(f.at("aicpu").get<int>() == t.aicpu);
      CHECK(f.at("memoryMB").get<int>() == t.memory_mib);
    }
  }
}

}  // namespace
}  // namespace xpu::discovery
