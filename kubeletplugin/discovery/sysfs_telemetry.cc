// ReadSysfsTelemetry and HostLibraryDirs (telemetry.h): what the kernel says about a device
// whose vendor has no management library we load.
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/telemetry.h"

namespace xpu::discovery {
namespace {

// The file's number, or nullopt when it is absent or not a number (some hwmon attributes read
// back an error such as ENODATA while the sensor is asleep: no value then, not zero).
std::optional<double> ReadNumber(const HostRoot& root, const std::string& rel) {
  StatusOr<std::string> text = root.ReadTrimmed(rel);
  if (!text.ok() || text->empty()) return std::nullopt;
  long long value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return static_cast<double>(value);
}

}  // namespace

DeviceTelemetry ReadSysfsTelemetry(const std::string& host_root, const std::string& pci_address) {
  DeviceTelemetry t;
  t.pci_address = pci_address;
  const HostRoot root(host_root);
  const std::string dev = "sys/bus/pci/devices/" + pci_address;
  // The first hwmon folder that has the attribute: a driver registers one per device.
  StatusOr<std::vector<std::string>> hwmons = root.List(dev + "/hwmon");
  auto first = [&](std::string_view attribute) -> std::optional<double> {
    if (!hwmons.ok()) return std::nullopt;
    for (const std::string& h : *hwmons) {
      std::string path = dev;
      path.append("/hwmon/").append(h).append("/").append(attribute);
      if (auto v = ReadNumber(root, path)) return v;
    }
    return std::nullopt;
  };
  if (auto millidegrees = first("temp1_input")) t.temperature_celsius = *millidegrees / 1000.0;
  std::optional<double> microwatts = first("power1_average");
  if (!microwatts) microwatts = first("power1_input");
  if (microwatts) t.power_watts = *microwatts / 1e6;
  if (auto percent = ReadNumber(root, dev + "/gpu_busy_percent")) {
    t.utilization_ratio = *percent / 100.0;
  }
  t.memory_used_bytes = ReadNumber(root, dev + "/mem_info_vram_used");
  t.memory_total_bytes = ReadNumber(root, dev + "/mem_info_vram_total");
  return t;
}

std::vector<std::string> HostLibraryDirs(const std::string& host_root) {
  std::string root = host_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root == "/") return {};
  std::vector<std::string> dirs;
  for (const char* rel :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
        "/usr/local/Ascend/driver/lib64/driver", "/usr/local/Ascend/driver/lib64/common",
        "/usr/local/Ascend/driver/lib64", "/opt/hyhal/lib"}) {
    dirs.push_back(root + rel);
  }
  return dirs;
}

}  // namespace xpu::discovery
