#include "kubeletplugin/discovery/pci.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "base/text.h"

namespace xpu::discovery {
namespace {

constexpr std::string_view kPciDevices = "sys/bus/pci/devices";

// "0000:13:00.0": domain, bus, device, function in lower-case hex.
bool IsBdf(std::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// "pci0000:10"
bool IsRootComplex(std::string_view s) {
  return s.size() == 10 && s.starts_with("pci") && s[7] == ':';
}

}  // namespace

std::optional<uint32_t> ParseHex(std::string_view text) {
  text = Trim(text);
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  if (text.empty() || text.size() > 8) return std::nullopt;
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

PciScan ScanPci(const HostRoot& host) {
  PciScan scan;
  StatusOr<std::vector<std::string>> names = host.List(kPciDevices);
  if (!names.ok()) {
    scan.problems.push_back(names.status().message());
    return scan;
  }
  for (const std::string& bdf : *names) {
    const std::string link = std::string(kPciDevices) + "/" + bdf;
    StatusOr<std::string> path = host.Resolve(link);
    if (!path.ok()) {
      scan.problems.push_back(path.status().message());
      continue;
    }
    PciFunction f;
    f.bdf = bdf;
    f.sysfs_path = *path;
    bool ids_ok = true;
    const auto hex = [&](std::string_view file) -> uint32_t {
      const std::string rel = f.sysfs_path + "/" + std::string(file);
      StatusOr<std::string> text = host.ReadFile(rel);
      if (!text.ok()) {
        scan.problems.push_back(text.status().message());
        ids_ok = false;
        return 0;
      }
      const std::optional<uint32_t> v = ParseHex(*text);
      if (!v) {
        scan.problems.push_back("parse /" + rel + ": expected a hex number, got \"" +
                                std::string(Trim(*text)) + "\"");
        ids_ok = false;
        return 0;
      }
      return *v;
    };
    f.vendor = static_cast<uint16_t>(hex("vendor"));
    f.device = static_cast<uint16_t>(hex("device"));
    f.pci_class = hex("class");
    if (!ids_ok) continue;
    const std::string numa_rel = f.sysfs_path + "/numa_node";
    if (StatusOr<std::string> numa = host.ReadTrimmed(numa_rel); numa.ok()) {
      int value = 0;
      const auto [end, ec] = std::from_chars(numa->data(), numa->data() + numa->size(), value);
      if (ec != std::errc() || end != numa->data() + numa->size() || value < -1) {
        scan.problems.push_back("parse /" + numa_rel + ": expected a NUMA node number, got \"" +
                                *numa + "\"");
      } else if (value >= 0) {
        f.numa_node = value;
      }
    } else if (numa.status().code() != StatusCode::kNotFound) {
      scan.problems.push_back(numa.status().message());
    }
    // sys/devices/pci0000:10/0000:10:01.0/.../0000:13:00.0
    size_t start = 0;
    const std::string& p = f.sysfs_path;
    while (start < p.size()) {
      const size_t slash = std::min(p.find('/', start), p.size());
      const std::string_view part = std::string_view{p}.substr(start, slash - start);
      if (IsRootComplex(part)) {
        f.pcie_root = std::string(part);
        f.pcie_path = {f.pcie_root};
      } else if (!f.pcie_root.empty() && IsBdf(part)) {
        f.pcie_path.emplace_back(part);
      }
      start = slash + 1;
    }
    scan.functions.push_back(std::move(f));
  }
  std::sort(scan.functions.begin(), scan.functions.end(),
            [](const PciFunction& a, const PciFunction& b) { return a.bdf < b.bdf; });
  return scan;
}

}  // namespace xpu::discovery
