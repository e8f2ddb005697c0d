// The device exporter: exposition (names, labels, what is left out) and the sampler against the
// fixture hosts (fake DCMI, sysfs), with the cost of a sample and of a scrape measured.
#include "kubeletplugin/plugin/device_metrics.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/plugin/testing/telemetry_examples.h"

namespace xpu::plugin {
namespace {

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

bool HasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

size_t CountPrefix(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (size_t at = 0; (at = ("\n" + text).find("\n" + prefix, at)) != std::string::npos; ++at) ++n;
  return n;
}

using testing::TwoDevices;

TEST_CASE("device telemetry exposition: names, the five labels and base units") {
  const discovery::DeviceTelemetry gpu = testing::GpuSample();
  discovery::DeviceTelemetry npu = testing::NpuSample();
  npu.pci_address = "0000:C1:00.0";  // upper case from a library still joins
  discovery::DeviceTelemetry stray;  // no inventory device: left out
  stray.pci_address = "0000:ff:00.0";
  stray.temperature_celsius = 99;

  const std::string text = RenderDeviceTelemetry("n1", TwoDevices(), {gpu, npu, stray});
  INFO(text);
  const std::string g = R"({node="n1",device="gpu-0",vendor="nvidia",model="H200",uuid="GPU-1")";
  CHECK(HasLine(text, "xpu_dra_device_temperature_celsius" + g + "} 31"));
  CHECK(HasLine(text, "xpu_dra_device_power_watts" + g + "} 72.5"));
  CHECK(HasLine(text, "xpu_dra_device_energy_joules_total" + g + "} 5000000.5"));
  CHECK(HasLine(text, "# TYPE xpu_dra_device_energy_joules_total counter"));
  CHECK(HasLine(text, "xpu_dra_device_utilization_ratio" + g + "} 0.25"));
  CHECK(HasLine(text, "xpu_dra_device_memory_used_bytes" + g + "} 536870912"));
  CHECK(HasLine(text, "xpu_dra_device_memory_total_bytes" + g + "} 150754820096"));
  CHECK(HasLine(text, "xpu_dra_device_ecc_errors_total" + g + R"(,kind="corrected"} 4)"));
  CHECK(HasLine(text, "xpu_dra_device_ecc_errors_total" + g + R"(,kind="uncorrected"} 1)"));
  CHECK(HasLine(text, "xpu_dra_device_xid_errors_total" + g + "} 2"));
  CHECK(HasLine(text, "xpu_dra_device_link_up" + g + R"(,link="nvlink0"} 1)"));
  CHECK(HasLine(text, "xpu_dra_device_link_up" + g + R"(,link="nvlink1"} 0)"));
  CHECK(HasLine(text, "# TYPE xpu_dra_device_ecc_errors_total counter"));
  CHECK(HasLine(text, "# TYPE xpu_dra_device_temperature_celsius gauge"));
  // The inventory has no uuid for the NPU: the library's.
  const std::string n =
      R"({node="n1",device="npu-3",vendor="huawei",model="Ascend910B3",uuid="from-the-library")";
  CHECK(HasLine(text, "xpu_dra_device_temperature_celsius" + n + "} 40"));
  CHECK(HasLine(text, "xpu_dra_device_link_up" + n + R"(,link="hccs"} 1)"));
  CHECK(HasLine(text, "xpu_dra_device_link_errors_total" + n + R"(,link="hccs1",kind="retry"} 3)"));
  CHECK(HasLine(text, "xpu_dra_device_link_errors_total" + n + R"(,link="hccs1",kind="crc"} 0)"));
  CHECK(HasLine(text, "# TYPE xpu_dra_device_link_errors_total counter"));
  CHECK(text.find("99") == std::string::npos);
  CHECK(CountPrefix(text, "xpu_dra_device_temperature_celsius{") == 2);
  CHECK(CountPrefix(text, "xpu_dra_device_power_watts{") == 1);  // the NPU gave none
  CHECK(CountPrefix(text, "xpu_dra_device_energy_joules_total{") == 1);
}

TEST_CASE("device telemetry exposition: nothing read, nothing rendered") {
  discovery::DeviceTelemetry empty;
  empty.pci_address = "0000:13:00.0";
  CHECK(RenderDeviceTelemetry("n1", TwoDevices(), {empty}).empty());
  CHECK(RenderDeviceTelemetry("n1", TwoDevices(), {}).empty());
}

std::shared_ptr<const api::NodeInventory> Inventory(const std::string& host) {
  discovery::DiscoveryOptions options;
  options.host_root = kHosts + host;
  options.node_name = "n1";
  options.probe_vendor_libraries = false;
  auto inv = discovery::Discover(options);
  INFO(inv.status().ToString());
  REQUIRE_OK(inv);
  return std::make_shared<const api::NodeInventory>(std::move(inv).value());
}

const api::InventoryDevice& ByPci(const api::NodeInventory& inv, const std::string& pci) {
  for (const auto& d : inv.status.devices) {
    if (d.pci_address == pci) return d;
  }
  FAIL("no device at " << pci);
  return inv.status.devices.front();
}

TEST_CASE("device telemetry sampler: a Hygon DCU from sysfs, with the inventory's labels") {
  auto inv = Inventory("hygon-dcu-8");
  DeviceTelemetrySampler sampler({.node_name = "n1", .host_root = kHosts + "hygon-dcu-8"},
                                 [inv] { return inv; });
  CHECK(sampler.Rendered().empty());
  CHECK(sampler.Sample() == inv->status.devices.size());
  const api::InventoryDevice& d = ByPci(*inv, "0000:13:00.0");
  const std::string labels = "{node=\"n1\",device=\"" + d.name + "\",vendor=\"" + d.vendor +
                             "\",model=\"" + d.model + "\",uuid=\"" + d.uuid + "\"}";
  const std::string text = sampler.Rendered();
  INFO(text);
  CHECK(d.vendor == "hygon");
  CHECK(HasLine(text, "xpu_dra_device_temperature_celsius" + labels + " 45"));
  CHECK(HasLine(text, "xpu_dra_device_power_watts" + labels + " 150"));
  CHECK(HasLine(text, "xpu_dra_device_memory_used_bytes" + labels + " 1073741824"));
  CHECK(HasLine(text, "xpu_dra_device_memory_total_bytes" + labels + " 68719476736"));
  CHECK(text.find("xpu_dra_device_ecc_errors_total") == std::string::npos);  // not in sysfs
  CHECK(sampler.errors().empty());
}

TEST_CASE("device telemetry sampler: no library and no sysfs files, no series") {
  auto inv = Inventory("metax-c500-8");
  DeviceTelemetrySampler sampler({.node_name = "n1", .host_root = kHosts + "metax-c500-8"},
                                 [inv] { return inv; });
  CHECK(sampler.Sample() == 0);
  CHECK(sampler.Rendered().empty());
}

TEST_CASE("device telemetry sampler: 16 NPUs through DCMI, sample and scrape cost") {
  setenv("XPU_FAKE_DCMI_JSON", (kHosts + "atlas200t-a2-box16/fake-vendor/dcmi.json").c_str(), 1);
  auto inv = Inventory("atlas200t-a2-box16");
  REQUIRE(inv->status.devices.size() == 16);
  DeviceTelemetrySampler sampler({.node_name = "n1",
                                  .host_root = kHosts + "atlas200t-a2-box16",
                                  .vendor_lib_dirs = {XPU_FAKE_LIB_DIR}},
                                 [inv] { return inv; });
  REQUIRE(sampler.Sample() == 16);
  INFO(sampler.Rendered());
  CHECK(CountPrefix(sampler.Rendered(), "xpu_dra_device_temperature_celsius{") == 16);
  CHECK(CountPrefix(sampler.Rendered(), "xpu_dra_device_memory_used_bytes{") == 16);
  CHECK(sampler.errors().empty());

  // Measured, not asserted (machines differ): a scrape copies the text of the last sample.
  using Clock = std::chrono::steady_clock;
  constexpr int kRounds = 200;
  auto start = Clock::now();
  for (int i = 0; i < kRounds; ++i) sampler.Sample();
  const double sample_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() / kRounds;
  start = Clock::now();
  size_t bytes = 0;
  for (int i = 0; i < kRounds; ++i) bytes += sampler.Rendered().size();
  const double scrape_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() / kRounds;
  std::printf(
      "device telemetry, 16 devices (fake DCMI): sample %.3f ms, scrape %.4f ms (%zu bytes)\n",
      sample_ms, scrape_ms, bytes / kRounds);
  CHECK(bytes / kRounds == sampler.Rendered().size());
}

}  // namespace
}  // namespace xpu::plugin
