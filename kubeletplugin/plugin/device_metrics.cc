#include "kubeletplugin/plugin/device_metrics.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "base/metrics/metrics.h"

namespace xpu::plugin {
namespace {

using discovery::DeviceTelemetry;

const std::vector<std::string> kLabels = {"node", "device", "vendor", "model", "uuid"};

std::vector<std::string> With(std::vector<std::string> labels, std::string extra) {
  labels.push_back(std::move(extra));
  return labels;
}

// Lower case, so that a library's upper-case hex matches sysfs.
std::string PciKey(std::string_view address) {
  std::string out(address);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Every family registered on first use, so a node without, say, ECC counters has no empty
// `# HELP` block for them.
class Families {
 public:
  explicit Families(metrics::Registry& r) : r_(r) {}

  void Gauge(const char* name, const char* help, const std::vector<std::string>& labels,
             const std::optional<double>& value, const std::vector<std::string>& label_names) {
    if (value) r_.AddGauge(name, help, label_names).Set(labels, *value);
  }
  void Add(const std::vector<std::string>& labels, const DeviceTelemetry& t) {
    Gauge("xpu_dra_device_temperature_celsius", "Device temperature in degrees Celsius.", labels,
          t.temperature_celsius, kLabels);
    Gauge("xpu_dra_device_power_watts", "Device power draw in watts.", labels, t.power_watts,
          kLabels);
    if (t.energy_joules) {
      r_.AddCounter("xpu_dra_device_energy_joules_total",
                    "Device energy in joules since the driver loaded (NVIDIA total energy).",
                    kLabels)
          .Inc(labels, *t.energy_joules);
    }
    Gauge("xpu_dra_device_utilization_ratio",
          "Device busy ratio 0..1 (NVIDIA GPU utilisation, Ascend AI Core, amdgpu busy).", labels,
          t.utilization_ratio, kLabels);
    Gauge("xpu_dra_device_memory_used_bytes", "Device memory in use, in bytes.", labels,
          t.memory_used_bytes, kLabels);
    Gauge("xpu_dra_device_memory_total_bytes", "Device memory size, in bytes.", labels,
          t.memory_total_bytes, kLabels);
    for (const auto& [kind, count] : t.ecc_errors) {
      r_.AddCounter("xpu_dra_device_ecc_errors_total",
                    "Memory ECC errors since the driver loaded, by kind (corrected, uncorrected).",
                    With(kLabels, "kind"))
          .Inc(With(labels, kind), count);
    }
    if (t.xid_errors) {
      r_.AddCounter("xpu_dra_device_xid_errors_total",
                    "NVIDIA XID error events seen since the plugin opened NVML.", kLabels)
          .Inc(labels, *t.xid_errors);
    }
    for (const auto& [link, up] : t.links_up) {
      r_.AddGauge("xpu_dra_device_link_up", "1 when the device's link is up, 0 when down.",
                  With(kLabels, "link"))
          .Set(With(labels, link), up);
    }
    for (const auto& [key, count] : t.link_errors) {
      r_.AddCounter("xpu_dra_device_link_errors_total",
                    "Link errors since the driver loaded, by link and kind (HCCS crc, retry).",
                    With(With(kLabels, "link"), "kind"))
          .Inc(With(With(labels, key.first), key.second), count);
    }
  }

 private:
  metrics::Registry& r_;
};

}  // namespace

std::string RenderDeviceTelemetry(const std::string& node, const api::NodeInventory& inventory,
                                  const std::vector<DeviceTelemetry>& samples) {
  std::map<std::string, const DeviceTelemetry*> by_pci;
  for (const DeviceTelemetry& t : samples) {
    if (!t.pci_address.empty()) by_pci.emplace(PciKey(t.pci_address), &t);
  }
  metrics::Registry registry;
  Families families(registry);
  for (const api::InventoryDevice& d : inventory.status.devices) {
    auto it = by_pci.find(PciKey(d.pci_address));
    if (d.pci_address.empty() || it == by_pci.end()) continue;
    const DeviceTelemetry& t = *it->second;
    families.Add({node, d.name, d.vendor, d.model, d.uuid.empty() ? t.uuid : d.uuid}, t);
  }
  return registry.Render();
}

DeviceTelemetrySampler::DeviceTelemetrySampler(DeviceTelemetryOptions options,
                                               InventoryFn inventory)
    : options_(std::move(options)), inventory_(std::move(inventory)) {
  sources_.push_back({"nvidia", discovery::OpenNvmlTelemetry, nullptr, {}});
  sources_.push_back({"huawei", discovery::OpenDcmiTelemetry, nullptr, {}});
}

void DeviceTelemetrySampler::Ensure(Source& source) {
  const auto now = std::chrono::steady_clock::now();
  if (source.lib != nullptr &&
      (source.lib->status().loaded || now - source.opened_at < options_.reopen_after)) {
    return;
  }
  source.lib = nullptr;  // the old handle goes first: a library is initialised once at a time
  source.lib = source.open(options_.vendor_lib_dirs);
  source.opened_at = now;
}

size_t DeviceTelemetrySampler::Sample() {
  std::shared_ptr<const api::NodeInventory> inventory = inventory_();
  if (inventory == nullptr) return 0;
  std::vector<std::string> errors;
  std::vector<DeviceTelemetry> samples;
  for (Source& source : sources_) {
    const bool needed =
        std::any_of(inventory->status.devices.begin(), inventory->status.devices.end(),
                    [&](const api::InventoryDevice& d) { return d.vendor == source.vendor; });
    if (!needed) continue;
    Ensure(source);
    const discovery::LibraryStatus& status = source.lib->status();
    if (!status.error.empty()) errors.push_back(status.name + ": " + status.error);
    if (!status.loaded) continue;
    for (DeviceTelemetry& t : source.lib->Sample()) {
      if (!t.error.empty()) errors.push_back(status.name + " " + t.pci_address + ": " + t.error);
      samples.push_back(std::move(t));
    }
  }
  // Whatever no library reported: sysfs (hwmon and the driver's own files).
  std::map<std::string, bool> sampled;
  for (const DeviceTelemetry& t : samples) sampled[PciKey(t.pci_address)] = true;
  for (const api::InventoryDevice& d : inventory->status.devices) {
    if (d.pci_address.empty() || sampled.count(PciKey(d.pci_address)) != 0) continue;
    samples.push_back(discovery::ReadSysfsTelemetry(options_.host_root, d.pci_address));
  }
  size_t with_readings = 0;
  for (const DeviceTelemetry& t : samples) {
    if (t.temperature_celsius || t.power_watts || t.energy_joules || t.utilization_ratio ||
        t.memory_used_bytes || t.memory_total_bytes || !t.ecc_errors.empty() || t.xid_errors ||
        !t.links_up.empty() || !t.link_errors.empty()) {
      ++with_readings;
    }
  }
  std::string text = RenderDeviceTelemetry(options_.node_name, *inventory, samples);
  MutexLock lock(mu_);
  rendered_ = std::move(text);
  errors_ = std::move(errors);
  samples_ = std::move(samples);
  return with_readings;
}

std::string DeviceTelemetrySampler::Rendered() const {
  MutexLock lock(mu_);
  return rendered_;
}

std::vector<std::string> DeviceTelemetrySampler::errors() const {
  MutexLock lock(mu_);
  return errors_;
}

std::vector<DeviceTelemetry> DeviceTelemetrySampler::samples() const {
  MutexLock lock(mu_);
  return samples_;
}

}  // namespace xpu::plugin
