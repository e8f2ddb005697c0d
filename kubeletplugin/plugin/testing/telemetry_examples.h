// The device exporter's test fixture, shared by its unit test (device_metrics_test) and the
// /metrics compatibility test (exposition_compat_test): a node with one NVIDIA GPU and one Ascend
// NPU, and one telemetry sample of each. For tests only.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_TESTING_TELEMETRY_EXAMPLES_H_
#define XPU_KUBELETPLUGIN_PLUGIN_TESTING_TELEMETRY_EXAMPLES_H_

#include <string>
#include <utility>

#include "api/node_inventory.h"
#include "kubeletplugin/discovery/telemetry.h"

namespace xpu::plugin::testing {

// An inventory device with the fields the exporter's labels read.
inline api::InventoryDevice Device(std::string name, std::string vendor, std::string model,
                                   std::string uuid, std::string pci) {
  api::InventoryDevice d;
  d.name = std::move(name);
  d.vendor = std::move(vendor);
  d.model = std::move(model);
  d.uuid = std::move(uuid);
  d.pci_address = std::move(pci);
  return d;
}

// gpu-0 (nvidia H200, uuid GPU-1, 0000:13:00.0) and npu-3 (huawei Ascend910B3, no uuid,
// 0000:c1:00.0).
inline api::NodeInventory TwoDevices() {
  api::NodeInventory inv;
  inv.status.devices = {Device("gpu-0", "nvidia", "H200", "GPU-1", "0000:13:00.0"),
                        Device("npu-3", "huawei", "Ascend910B3", "", "0000:c1:00.0")};
  return inv;
}

// A sample of gpu-0: temperature, power, utilisation, memory, ECC and XID counts, two NVLinks.
inline discovery::DeviceTelemetry GpuSample() {
  return {.pci_address = "0000:13:00.0",
          .uuid = "",
          .temperature_celsius = 31,
          .power_watts = 72.5,
          .energy_joules = 5000000.5,
          .utilization_ratio = 0.25,
          .memory_used_bytes = 536870912,
          .memory_total_bytes = 150754820096,
          .ecc_errors = {{"corrected", 4}, {"uncorrected", 1}},
          .xid_errors = 2,
          .links_up = {{"nvlink0", 1}, {"nvlink1", 0}},
          .link_errors = {},
          .error = ""};
}

// A sample of npu-3 with the uuid the library reports, the HCCS link and its error counters.
inline discovery::DeviceTelemetry NpuSample() {
  discovery::DeviceTelemetry npu;
  npu.pci_address = "0000:c1:00.0";
  npu.uuid = "from-the-library";
  npu.temperature_celsius = 40;
  npu.links_up = {{"hccs", 1}};
  npu.link_errors = {{{"hccs1", "crc"}, 0}, {{"hccs1", "retry"}, 3}};
  return npu;
}

}  // namespace xpu::plugin::testing

#endif  // XPU_KUBELETPLUGIN_PLUGIN_TESTING_TELEMETRY_EXAMPLES_H_
