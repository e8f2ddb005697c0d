// Per-device telemetry (temperature, power, utilisation, memory, ECC and XID errors, link state)
// for the plugin's device exporter. The vendor libraries are opened once and kept loaded: a
// sampler calls Sample() on its period, so a scrape never waits on NVML or DCMI. Vendors without a
// library are read from sysfs (hwmon under the PCI device). Every value is what the source
// reported, converted to base units; anything a source does not give stays unset, never guessed.
// Errors are per device (`error`) or per source (`status().error`); nothing throws.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_TELEMETRY_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_TELEMETRY_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

struct DeviceTelemetry {
  // The key joining a sample to the inventory's device: sysfs form "0000:13:00.0".
  std::string pci_address;
  std::string uuid;  // as the library reports it ("GPU-..."); empty when it does not
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
  // The device's energy counter in joules, cumulative since the driver loaded (NVML total energy,
  // Volta and newer); unset where the source has none.
  std::optional<double> energy_joules;
  std::optional<double> utilization_ratio;  // 0..1 (NVML GPU busy, DCMI AI Core, amdgpu busy)
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  // Cumulative ECC error counts by kind: "corrected" (single-bit) and "uncorrected" (double-bit),
  // volatile (since the driver loaded), as DCGM's *_VOL_TOTAL fields.
  std::map<std::string, double> ecc_errors;
  // NVML: critical XID events seen since the sampler opened the library (application XIDs too).
  std::optional<double> xid_errors;
  // Link name ("nvlink0", "hccs", "roce") -> 1 up, 0 down.
  std::map<std::string, double> links_up;
  // Link error counters since the driver loaded: {link ("hccs1"), kind ("crc", "retry")} ->
  // count. DCMI's HCCS statistics per macro.
  std::map<std::pair<std::string, std::string>, double> link_errors;
  std::string error;  // calls that failed for this device, "; "-separated
};

// One vendor library kept open for sampling.
class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  // How opening went; `loaded` false means Sample() returns nothing.
  virtual const LibraryStatus& status() const = 0;
  // One reading of every device the library knows. Thread-compatible: one sampler thread.
  virtual std::vector<DeviceTelemetry> Sample() = 0;
};

// Load libnvidia-ml.so.1 / libdcmi.so from `lib_dirs` (then the default path), initialise it and
// find its devices. Never null; see status().
std::unique_ptr<TelemetrySource> OpenNvmlTelemetry(const std::vector<std::string>& lib_dirs);
std::unique_ptr<TelemetrySource> OpenDcmiTelemetry(const std::vector<std::string>& lib_dirs);

// Adds a failed call's error to `t->error` ("a; b").
inline void AddTelemetryError(DeviceTelemetry* t, const std::string& error) {
  if (!t->error.empty()) t->error += "; ";
  t->error += error;
}

// What sysfs says about the PCI device `pci_address` under `host_root`: hwmon temp1_input
// (millidegrees C) and power1_average (microwatts, else power1_input), and the amdgpu-style
// mem_info_vram_used / mem_info_vram_total (bytes) and gpu_busy_percent files when the driver has
// them (Hygon's DCU driver is an amdgpu fork). Unset what is absent or unreadable.
DeviceTelemetry ReadSysfsTelemetry(const std::string& host_root, const std::string& pci_address);

// Where a host keeps its driver libraries, under `host_root`: the multiarch and lib64 folders and
// the Ascend driver's lib64 folders, and Hygon's /opt/hyhal/lib. For a plugin whose host root is
// mounted into its container
// (/host) the vendor libraries are found without --vendor-lib-dir. Empty for the root "/" (the
// loader's default search path already covers those folders).
std::vector<std::string> HostLibraryDirs(const std::string& host_root);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_TELEMETRY_H_
