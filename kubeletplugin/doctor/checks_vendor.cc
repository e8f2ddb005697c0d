// The checklist's vendor checks (internal/checks.h): 2. devices, driver and vendor library,
// 3. firmware, 4. toolkit, 11. health.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kubeletplugin/doctor/internal/checks.h"

namespace xpu::doctor::internal {

using discovery::HostRoot;

namespace {
namespace checks_vendor_cc {

// The kernel module directory of each vendor's driver (sys/module/<name>).
std::vector<std::string_view> DriverModules(std::string_view vendor) {
  if (vendor == "nvidia") return {"nvidia"};
  if (vendor == "huawei") return {"drv_davinci_intf", "drv_devdrv"};
  if (vendor == "hygon") return {"hydcu", "hycu"};
  if (vendor == "cambricon") return {"cambricon_drv"};
  if (vendor == "metax") return {"metax"};
  if (vendor == "enflame") return {"enflame"};
  if (vendor == "amd") return {"amdgpu"};
  return {};
}

// usr/local/cuda/version.json: {"cuda": {"version": "12.8.1"}, ...}.
std::string CudaToolkit(const HostRoot& host) {
  StatusOr<std::string> text = host.ReadFile("usr/local/cuda/version.json");
  if (!text.ok()) return "";
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("cuda") || !doc["cuda"].is_object()) return "";
  const nlohmann::json& v = doc["cuda"].value("version", nlohmann::json());
  return v.is_string() ? v.get<std::string>() : "";
}

}  // namespace checks_vendor_cc
}  // namespace

// ---- 2. devices, driver, vendor library ----

CheckResult CheckDevices(const Facts& facts) {
  const auto& devices = facts.inventory.status.devices;
  if (devices.empty()) {
    return Result("devices", CheckStatus::kFail, "sysfs PCI scan: no accelerator found",
                  "no supported accelerator on /sys/bus/pci/devices: check the hardware, BIOS "
                  "(above-4G decoding) and `lspci`");
  }
  std::map<std::string, int> by_model;
  for (const auto& d : devices) ++by_model[d.vendor + " " + d.model];
  std::string evidence = "sysfs PCI scan:";
  for (const auto& [model, n] : by_model) evidence += " " + std::to_string(n) + "x " + model;
  if (!facts.inventory.status.server_model.empty()) {
    evidence += " (" + facts.inventory.status.server_model + ")";
  }
  return Result("devices", CheckStatus::kPass, evidence);
}

CheckResult CheckDriver(const HostRoot& host, const Facts& facts) {
  if (facts.vendors.empty()) return Result("driver", CheckStatus::kSkip, "no accelerator found");
  std::vector<std::string> loaded;
  for (const std::string& vendor : facts.vendors) {
    for (std::string_view m : checks_vendor_cc::DriverModules(vendor)) {
      const std::string module = "sys/module/" + std::string(m);
      if (host.Exists(module)) loaded.push_back("/" + module);
    }
  }
  if (facts.vendors.contains("nvidia") && host.Exists("proc/driver/nvidia/version")) {
    loaded.emplace_back("/proc/driver/nvidia/version");
  }
  if (facts.nvml && facts.nvml->library.loaded) loaded.emplace_back("nvmlInit_v2 ok");
  if (facts.dcmi && facts.dcmi->library.loaded) loaded.emplace_back("dcmi_init ok");
  const auto& versions = facts.inventory.status.versions;
  const auto driver = versions.find("driver");
  const std::string version = driver == versions.end() ? "" : driver->second.raw;
  std::string evidence = "version " + (version.empty() ? std::string("unknown") : version) +
                         "; loaded: " + (loaded.empty() ? "no evidence" : Join(loaded, ", "));
  if (!loaded.empty() && !version.empty()) return Result("driver", CheckStatus::kPass, evidence);
  if (loaded.empty() && version.empty()) {
    return Result("driver", CheckStatus::kFail, evidence,
                  "the accelerator driver is neither installed nor loaded: install the vendor "
                  "driver package and load its kernel module");
  }
  return Result("driver", CheckStatus::kWarn, evidence,
                loaded.empty() ? "the driver is installed but no module of it is loaded (modprobe)"
                               : "the driver's version file is missing");
}

CheckResult CheckVendorLibrary(const Facts& facts) {
  std::vector<std::string> ok;
  std::vector<std::string> missing;
  std::vector<std::string> failed;
  const auto judge = [&](const discovery::LibraryStatus& lib, const std::string& version) {
    if (lib.loaded) {
      ok.push_back(lib.name + " " + version + " (" + lib.path + ")");
    } else if (lib.path.empty()) {
      missing.push_back(lib.name + ": " + lib.error);
    } else {
      failed.push_back(lib.name + ": " + lib.error);
    }
  };
  if (facts.nvml) judge(facts.nvml->library, facts.nvml->driver_version);
  if (facts.dcmi) judge(facts.dcmi->library, facts.dcmi->dcmi_version);
  if (!facts.nvml && !facts.dcmi) {
    return Result("vendor-library", CheckStatus::kSkip,
                  facts.vendors.empty() ? "no accelerator found"
                                        : "no NVML/DCMI vendor among the devices, or probing off");
  }
  std::vector<std::string> all = ok;
  all.insert(all.end(), failed.begin(), failed.end());
  all.insert(all.end(), missing.begin(), missing.end());
  if (!failed.empty()) {
    return Result("vendor-library", CheckStatus::kFail, Join(all, "; "),
                  "the library loads but fails: its driver is not loaded or does not match");
  }
  if (!missing.empty()) {
    return Result("vendor-library", CheckStatus::kWarn, Join(all, "; "),
                  "install the management library (libnvidia-ml.so.1 / libdcmi.so) or pass "
                  "--vendor-lib-dir; without it health and links come from sysfs and tables");
  }
  return Result("vendor-library", CheckStatus::kPass, Join(all, "; "));
}

// ---- 3. firmware ----

CheckResult CheckFirmware(const Facts& facts) {
  const auto& devices = facts.inventory.status.devices;
  if (devices.empty()) return Result("firmware", CheckStatus::kSkip, "no accelerator found");
  std::set<std::string> seen;
  std::vector<std::string> unknown;
  for (const auto& d : devices) {
    if (d.firmware_version.empty()) {
      unknown.push_back(d.name);
    } else {
      seen.insert(d.firmware_version);
    }
  }
  std::string evidence =
      "discovery: firmware " +
      (seen.empty() ? std::string("unknown")
                    : Join(std::vector<std::string>(seen.begin(), seen.end()), ", "));
  if (!unknown.empty()) {
    evidence += "; unknown on " + std::to_string(unknown.size()) + " of " +
                std::to_string(devices.size()) + " devices";
    return Result("firmware", CheckStatus::kWarn, evidence,
                  "the firmware version is not reported, so the support matrix cannot judge it");
  }
  if (seen.size() > 1) {
    return Result("firmware", CheckStatus::kWarn, evidence,
                  "devices run different firmware versions: upgrade them to one");
  }
  return Result("firmware", CheckStatus::kPass, evidence);
}

// ---- 4. toolkit ----

CheckResult CheckToolkit(const HostRoot& host, const Facts& facts) {
  if (facts.vendors.empty()) return Result("toolkit", CheckStatus::kSkip, "no accelerator found");
  // The toolkit components discovery reads (status.versions), other than driver and firmware.
  std::vector<std::string> found;
  for (const auto& [component, v] : facts.inventory.status.versions) {
    if (component != "driver" && component != "firmware") {
      found.push_back(component + " " + v.raw + (component == "cuda" ? " (driver API, NVML)" : ""));
    }
  }
  // CUDA normally ships in the images; a host toolkit is reported when there is one. ("cuda"
  // above is the CUDA version the driver supports, from NVML.)
  if (std::string cuda = checks_vendor_cc::CudaToolkit(host); !cuda.empty()) {
    found.push_back("CUDA toolkit " + cuda + " (/usr/local/cuda/version.json)");
  }
  if (!found.empty()) return Result("toolkit", CheckStatus::kPass, Join(found, "; "));
  if (facts.vendors == std::set<std::string>{"nvidia"}) {
    return Result("toolkit", CheckStatus::kSkip,
                  "no /usr/local/cuda/version.json; CUDA comes with the container images");
  }
  return Result("toolkit", CheckStatus::kWarn, "no toolkit version file found (docs/discovery.md)",
                "install the vendor toolkit (CANN, DTK, Neuware, MACA, TopsRider) on the host, "
                "or check its version file");
}

// ---- 11. health ----

CheckResult CheckHealth(const Facts& facts) {
  const auto& devices = facts.inventory.status.devices;
  if (devices.empty()) return Result("health", CheckStatus::kSkip, "no accelerator found");
  // Fails: a device discovery reports unhealthy (no node, NVML unhealthy), an XID, a DCMI health
  // of major or critical. Warnings: what degrades a device without taking it away (a minor DCMI
  // alarm, a failing library call, an NVLink or HCCS link down).
  std::vector<std::string> fails;
  std::vector<std::string> warns;
  size_t healthy = 0;
  for (const auto& d : devices) {
    if (d.health == "Healthy") {
      ++healthy;
    } else {
      fails.push_back(d.name + " " + d.health);
    }
  }
  std::string from = "discovery";
  if (facts.nvml && facts.nvml->library.loaded) {
    from = "NVML";
    for (const auto& g : facts.nvml->devices) {
      const std::string gpu = "NVML gpu " + std::to_string(g.index);
      for (const uint64_t xid : g.xid_events) fails.push_back(gpu + ": XID " + std::to_string(xid));
      if (!g.error.empty()) warns.push_back(gpu + ": " + g.error);
      for (const auto& link : g.links) {
        if (!link.active) warns.push_back(gpu + ": NVLink " + std::to_string(link.link) + " down");
      }
    }
  }
  if (facts.dcmi && facts.dcmi->library.loaded) {
    from = "DCMI";
    for (const auto& c : facts.dcmi->chips) {
      const std::string chip = "DCMI chip " + std::to_string(c.phy_id);
      if (c.health == 1) warns.push_back(chip + ": minor alarm");
      if (c.health >= 2 && c.health != 0xFFFFFFFF) {
        fails.push_back(chip + ": health " + std::to_string(c.health) +
                        (c.health == 2 ? " (major)" : " (critical)"));
      }
      if (c.hccs_healthy == false) warns.push_back(chip + ": HCCS down");
      if (!c.error.empty()) warns.push_back(chip + ": " + c.error);
    }
  }
  std::string evidence =
      std::to_string(healthy) + " of " + std::to_string(devices.size()) + " healthy (" + from + ")";
  std::vector<std::string> all = fails;
  all.insert(all.end(), warns.begin(), warns.end());
  if (!all.empty()) evidence += "; " + Join(all, "; ");
  if (!fails.empty()) {
    return Result("health", CheckStatus::kFail, evidence,
                  "drain the node and look at the device (nvidia-smi -q, npu-smi info); a GPU "
                  "with XID 79 needs a reset or a reboot");
  }
  if (!warns.empty()) {
    return Result("health", CheckStatus::kWarn, evidence,
                  "the devices work, degraded: check the links and the vendor's error log");
  }
  if (from == "discovery" &&
      (facts.vendors.contains("nvidia") || facts.vendors.contains("huawei"))) {
    return Result("health", CheckStatus::kWarn, evidence + ": no vendor health read",
                  "only the device nodes were judged: load NVML/DCMI (--vendor-lib-dir)");
  }
  return Result("health", CheckStatus::kPass, evidence);
}

}  // namespace xpu::doctor::internal
