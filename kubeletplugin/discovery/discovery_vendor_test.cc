// Discovery with the vendor libraries loaded through the real dlopen path: the fake NVML and DCMI
// built by the test tree, answering from each fixture host's fake-vendor/*.json.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "kubeletplugin/discovery/discovery.h"

namespace xpu::discovery {
namespace {

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

api::NodeInventory DiscoverWithLibs(const std::string& host) {
  ::setenv("XPU_FAKE_NVML_JSON", (kHosts + host + "/fake-vendor/nvml.json").c_str(), 1);
  ::setenv("XPU_FAKE_DCMI_JSON", (kHosts + host + "/fake-vendor/dcmi.json").c_str(), 1);
  DiscoveryOptions options;
  options.host_root = kHosts + host;
  options.vendor_lib_dirs = {XPU_FAKE_LIB_DIR};
  options.node_name = host;
  auto inventory = Discover(options);
  INFO(inventory.status().ToString());
  REQUIRE(inventory.ok());
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

}  // namespace
}  // namespace xpu::discovery
