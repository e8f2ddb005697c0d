// The device exporter: per-device telemetry on the plugin's /metrics, for every vendor, with the
// same labels everywhere (node, device, vendor, model, uuid — the inventory's names):
//
//   xpu_dra_device_temperature_celsius      gauge    degrees C
//   xpu_dra_device_power_watts              gauge    watts
//   xpu_dra_device_energy_joules_total      counter  joules since the driver loaded (NVML only)
//   xpu_dra_device_utilization_ratio        gauge    0..1 (GPU busy, Ascend AI Core, amdgpu busy)
//   xpu_dra_device_memory_used_bytes        gauge    bytes
//   xpu_dra_device_memory_total_bytes       gauge    bytes
//   xpu_dra_device_ecc_errors_total{kind}   counter  corrected / uncorrected, since driver load
//   xpu_dra_device_xid_errors_total         counter  NVIDIA XID events since NVML was opened
//   xpu_dra_device_link_up{link}            gauge    1 up, 0 down: nvlink<N>, hccs, roce
//   xpu_dra_device_link_errors_total{link,kind}  counter  HCCS macros hccs1..7: crc, retry
//
// metrics.h and docs/kubelet-plugin.md ("Device telemetry") map each to DCGM's and npu-exporter's
// names.
//
// The vendor libraries are opened once and sampled on a period by the plugin's telemetry thread;
// the scrape only copies the text rendered at the last sample. Devices of vendors without a
// library (and NVIDIA or Ascend devices the library did not report) are read from sysfs. A value a
// source does not give has no series: nothing is invented.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_DEVICE_METRICS_H_
#define XPU_KUBELETPLUGIN_PLUGIN_DEVICE_METRICS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/mutex.h"
#include "kubeletplugin/discovery/telemetry.h"

namespace xpu::plugin {

// Prometheus text for the inventory's devices joined with `samples` by PCI address (samples
// matching no device are left out). Families with no series are left out too.
std::string RenderDeviceTelemetry(const std::string& node, const api::NodeInventory& inventory,
                                  const std::vector<discovery::DeviceTelemetry>& samples);

struct DeviceTelemetryOptions {
  std::string node_name = {};
  std::string host_root = "/";
  std::vector<std::string> vendor_lib_dirs = {};
  // A library that failed to open is tried again after this long (a driver installed later).
  std::chrono::milliseconds reopen_after{60'000};
};

// Samples every device of the current inventory and keeps the rendered text for the scrape.
// Sample() runs on one thread (the plugin's telemetry thread); Rendered() on any.
class DeviceTelemetrySampler {
 public:
  using InventoryFn = std::function<std::shared_ptr<const api::NodeInventory>()>;
  DeviceTelemetrySampler(DeviceTelemetryOptions options, InventoryFn inventory);

  // Reads every device (opening the libraries the inventory's vendors need) and replaces the
  // rendered text. Returns the devices that had at least one reading.
  size_t Sample();
  // The text of the last sample; "" before the first.
  std::string Rendered() const EXCLUDES(mu_);
  // Errors of the last sample (library or device), one per line, for the log.
  std::vector<std::string> errors() const EXCLUDES(mu_);
  // The readings of the last sample (energy per claim integrates their power).
  std::vector<discovery::DeviceTelemetry> samples() const EXCLUDES(mu_);

 private:
  struct Source {
    const char* vendor;  // the inventory's vendor name this library serves
    std::function<std::unique_ptr<discovery::TelemetrySource>(const std::vector<std::string>&)>
        open;
    std::unique_ptr<discovery::TelemetrySource> lib;
    std::chrono::steady_clock::time_point opened_at{};
  };
  void Ensure(Source& source);

  const DeviceTelemetryOptions options_;
  const InventoryFn inventory_;
  std::vector<Source> sources_;  // the sampling thread's own
  mutable Mutex mu_;
  std::string rendered_ GUARDED_BY(mu_);
  std::vector<std::string> errors_ GUARDED_BY(mu_);
  std::vector<discovery::DeviceTelemetry> samples_ GUARDED_BY(mu_);
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_DEVICE_METRICS_H_
