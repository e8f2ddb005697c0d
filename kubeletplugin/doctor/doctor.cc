#include "kubeletplugin/doctor/doctor.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "base/enum_names.h"
#include "base/text.h"
#include "kubeletplugin/cdi/profiles.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/versions.h"
#include "kubeletplugin/doctor/driver_files_check.h"

namespace xpu::doctor {
namespace {

using discovery::HostRoot;

constexpr std::string_view kStatusNames[] = {"pass", "warn", "fail", "skip"};
static_assert(NamesCover(kStatusNames, CheckStatus::kSkip));

// What one Discover call found, with the raw vendor-library facts its probes returned.
struct Facts {
  api::NodeInventory inventory;
  std::optional<discovery::NvmlFacts> nvml;  // set when discovery asked NVML
  std::optional<discovery::DcmiFacts> dcmi;  // set when discovery asked DCMI
  std::set<std::string> vendors;             // of the devices found
};

CheckResult Result(std::string name, CheckStatus status, std::string evidence,
                   std::string hint = "") {
  if (status == CheckStatus::kPass) hint.clear();
  return {std::move(name), status, std::move(evidence), std::move(hint)};
}

// The lines of `text`, trimmed, without empty ones and '#' comments.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    line = Trim(line.substr(0, line.find('#')));
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// "key = value" / "key=value" -> {key, value}, both trimmed; nullopt without '='.
std::optional<std::pair<std::string_view, std::string_view>> SplitAssignment(
    std::string_view line) {
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  return std::pair{Trim(line.substr(0, eq)), Trim(line.substr(eq + 1))};
}

// {major, minor} of a version string ("v1.34.1", "1.7.24-1", "2.0.0~rc"), through the
// discovery's normalisation; nullopt when it has none.
std::optional<std::pair<int, int>> MajorMinor(std::string_view raw) {
  if (raw.starts_with("v")) raw.remove_prefix(1);
  const std::string semver = discovery::NormalizeSemver(raw);
  if (semver.empty()) return std::nullopt;
  std::pair<int, int> v;
  const char* p = semver.data();
  const char* end = semver.data() + semver.size();
  auto r = std::from_chars(p, end, v.first);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, v.second);
  if (r.ec != std::errc()) return std::nullopt;
  return v;
}

bool AtLeast(const std::pair<int, int>& v, int major, int minor) {
  return v >= std::pair{major, minor};
}

// The Version of the first installed package of `names` in the dpkg database
// (var/lib/dpkg/status), with any epoch ("1:") dropped; "" when none is installed.
std::string DpkgVersion(std::string_view status_text, std::initializer_list<std::string_view> names,
                        std::string* package) {
  std::string_view current;
  std::string_view version;
  bool installed = false;
  const auto flush = [&]() -> std::string {
    const bool wanted = std::find(names.begin(), names.end(), current) != names.end();
    if (!wanted || !installed || version.empty()) return "";
    if (package) *package = std::string(current);
    const size_t colon = version.find(':');
    return std::string(colon == std::string_view::npos ? version : version.substr(colon + 1));
  };
  size_t start = 0;
  while (start <= status_text.size()) {
    const size_t nl = std::min(status_text.find('\n', start), status_text.size());
    const std::string_view line = status_text.substr(start, nl - start);
    start = nl + 1;
    if (Trim(line).empty()) {  // end of a stanza
      if (std::string v = flush(); !v.empty()) return v;
      current = version = "";
      installed = false;
      if (nl == status_text.size()) break;
      continue;
    }
    if (line.starts_with("Package:")) current = Trim(line.substr(8));
    if (line.starts_with("Version:")) version = Trim(line.substr(8));
    if (line.starts_with("Status:")) installed = line.ends_with(" installed");
  }
  return flush();
}

// ---- 1. kernel and IOMMU ----

CheckResult CheckKernel(const HostRoot& host) {
  StatusOr<std::string> text = host.ReadTrimmed("proc/version");
  if (!text.ok()) {
    return Result("kernel", CheckStatus::kWarn, text.status().message(),
                  "the kernel version could not be read; is the host's /proc mounted?");
  }
  // "Linux version 6.8.0-45-generic (buildd@...) ..." -> "6.8.0-45-generic".
  std::string_view version = *text;
  constexpr std::string_view kPrefix = "Linux version ";
  if (version.starts_with(kPrefix)) version.remove_prefix(kPrefix.size());
  version = version.substr(0, version.find(' '));
  return Result("kernel", CheckStatus::kPass, "/proc/version: " + std::string(version));
}

CheckResult CheckIommu(const HostRoot& host) {
  StatusOr<std::string> cmdline = host.ReadTrimmed("proc/cmdline");
  std::vector<std::string> flags;
  bool off = false;
  if (cmdline.ok()) {
    for (std::string_view word : Lines(*cmdline)) {  // one line; split on spaces below
      size_t i = 0;
      while (i < word.size()) {
        const size_t sp = std::min(word.find(' ', i), word.size());
        const std::string_view w = word.substr(i, sp - i);
        i = sp + 1;
        if (w.starts_with("intel_iommu=") || w.starts_with("amd_iommu=") ||
            w.starts_with("iommu=") || w.starts_with("iommu.passthrough=")) {
          flags.emplace_back(w);
          off = off || w.ends_with("=off");
        }
      }
    }
  }
  StatusOr<std::vector<std::string>> groups = host.List("sys/kernel/iommu_groups");
  const size_t group_count = groups.ok() ? groups->size() : 0;
  std::string evidence = "/proc/cmdline: ";
  if (!cmdline.ok()) {
    evidence += "unreadable";
  } else if (flags.empty()) {
    evidence += "no IOMMU option";
  } else {
    for (size_t i = 0; i < flags.size(); ++i) evidence += (i ? " " : "") + flags[i];
  }
  evidence += "; /sys/kernel/iommu_groups: " + std::to_string(group_count) + " groups";
  if (group_count > 0 && !off) return Result("iommu", CheckStatus::kPass, evidence);
  return Result("iommu", CheckStatus::kWarn, evidence,
                "the IOMMU is off: add intel_iommu=on (Intel) or amd_iommu=on, with iommu=pt "
                "(iommu.passthrough=1 on Arm) for GPUDirect/RDMA performance, and reboot");
}

// ---- 2.-4. devices, driver, vendor library, firmware, toolkit ----

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

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

CheckResult CheckDriver(const HostRoot& host, const Facts& facts) {
  if (facts.vendors.empty()) return Result("driver", CheckStatus::kSkip, "no accelerator found");
  std::vector<std::string> loaded;
  for (const std::string& vendor : facts.vendors) {
    for (std::string_view m : DriverModules(vendor)) {
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

// usr/local/cuda/version.json: {"cuda": {"version": "12.8.1"}, ...}.
std::string CudaToolkit(const HostRoot& host) {
  StatusOr<std::string> text = host.ReadFile("usr/local/cuda/version.json");
  if (!text.ok()) return "";
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("cuda") || !doc["cuda"].is_object()) return "";
  const nlohmann::json& v = doc["cuda"].value("version", nlohmann::json());
  return v.is_string() ? v.get<std::string>() : "";
}

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
  if (std::string cuda = CudaToolkit(host); !cuda.empty()) {
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

// ---- 5. device nodes ----

struct NodeSeen {
  bool exists = false;
  bool is_char = false;
  unsigned mode = 0;
};

NodeSeen StatNode(const HostRoot& host, std::string_view rel) {
  NodeSeen seen;
  StatusOr<std::string> resolved = host.Resolve(rel);
  if (!resolved.ok()) return seen;
  struct stat st {};
  const std::string path = host.root() + "/" + *resolved;
  if (::stat(path.c_str(), &st) != 0) return seen;
  seen.exists = true;
  seen.is_char = S_ISCHR(st.st_mode);
  seen.mode = st.st_mode & 07777;
  return seen;
}

std::string OctalMode(unsigned mode) {
  std::string out;
  for (int shift = 9; shift >= 0; shift -= 3) out += static_cast<char>('0' + ((mode >> shift) & 7));
  return out;
}

CheckResult CheckDeviceNodes(const HostRoot& host, const Facts& facts) {
  const auto& devices = facts.inventory.status.devices;
  if (devices.empty()) return Result("device-nodes", CheckStatus::kSkip, "no accelerator found");
  // Each device's own node, then the vendor's control nodes as the CDI profiles name them (all
  // candidates: the profiles leave out those a host lacks, which is what this check reports).
  std::vector<std::string> own;
  std::vector<cdi::DeviceFacts> cdi_devices;
  for (const auto& d : devices) {
    const std::string node = discovery::DeviceNodePath(host.root(), d);
    if (!node.empty()) own.push_back(node);
    cdi_devices.push_back(cdi::FactsOf(d, node));
  }
  const cdi::HostFiles every_node{
      [](std::string_view) { return true; },
      [](std::string_view, std::string_view) { return std::vector<std::string>(); }};
  std::vector<std::string> control;
  for (const cdi::DeviceNode& n : cdi::EditsForClaim(cdi_devices, every_node).common.device_nodes) {
    control.push_back(n.host_path.empty() ? n.path : n.host_path);
  }
  CheckStatus worst = CheckStatus::kPass;
  std::vector<std::string> problems;
  std::map<std::string, int> kinds;  // "char 0666" / "regular file" -> count
  int missing_control = 0;
  const auto rank = [](CheckStatus s) {
    return s == CheckStatus::kFail ? 2 : s == CheckStatus::kWarn;
  };
  for (const bool is_control : {false, true}) {
    for (const std::string& path : is_control ? control : own) {
      const NodeSeen seen = StatNode(host, std::string_view{path}.substr(1));
      CheckStatus status = JudgeDeviceNode(seen.exists, seen.is_char, seen.mode);
      if (!seen.exists) {
        if (is_control) {
          ++missing_control;  // optional ones (nvidia-modeset, dvpp_cmdlist) may be absent
          continue;
        }
        problems.push_back(path + " missing");
      } else if (!seen.is_char) {
        ++kinds["regular files"];
      } else {
        ++kinds["char " + OctalMode(seen.mode)];
        if (status != CheckStatus::kPass) {
          problems.push_back(path + " mode " + OctalMode(seen.mode));
        }
      }
      if (rank(status) > rank(worst)) worst = status;
    }
  }
  if (!control.empty() && missing_control == static_cast<int>(control.size())) {
    problems.push_back("no control node (" + control.front() + ", ...)");
    worst = CheckStatus::kFail;
  } else if (missing_control > 0) {
    problems.push_back(std::to_string(missing_control) + " optional control nodes absent");
  }
  std::string evidence = std::to_string(own.size()) + " device nodes, " +
                         std::to_string(control.size() - missing_control) + " control nodes:";
  for (const auto& [kind, n] : kinds) evidence += " " + std::to_string(n) + " " + kind;
  if (!problems.empty()) evidence += "; " + Join(problems, "; ");
  std::string hint;
  if (worst == CheckStatus::kFail) {
    hint =
        "a device without its node cannot be handed to a container (reload the driver, check "
        "the udev rules); a node with execute, set-id or odd world-write bits needs chmod 0666 "
        "or 0660";
  } else if (worst == CheckStatus::kWarn) {
    hint =
        "device nodes should be character devices with mode 0666 or 0660 (regular files are "
        "fixture stand-ins)";
  }
  return Result("device-nodes", worst, evidence, hint);
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

// ---- 6. container runtime and CDI ----

struct ContainerdConfig {
  bool found = false;
  int version = 1;                 // the config file's own `version`
  std::optional<bool> enable_cdi;  // under the CRI plugin
  std::string section;             // where enable_cdi was read
};

ContainerdConfig ReadContainerdConfig(std::string_view text) {
  ContainerdConfig c;
  c.found = true;
  std::string_view section;
  for (std::string_view line : Lines(text)) {
    if (line.starts_with("[")) {
      section = line;
      continue;
    }
    const auto kv = SplitAssignment(line);
    if (!kv) continue;
    if (section.empty() && kv->first == "version") {
      int v = 0;
      std::from_chars(kv->second.data(), kv->second.data() + kv->second.size(), v);
      c.version = v;
    }
    // The CRI plugin: io.containerd.grpc.v1.cri (config version 2, containerd 1.x) or
    // io.containerd.cri.v1.runtime (version 3, containerd 2.x).
    const bool cri = section.find("io.containerd.grpc.v1.cri\"]") != std::string_view::npos ||
                     section.find("io.containerd.cri.v1.runtime\"]") != std::string_view::npos;
    if (cri && kv->first == "enable_cdi") {
      c.enable_cdi = kv->second == "true";
      c.section = std::string(section);
    }
  }
  return c;
}

// The CRI-O config files that exist: etc/crio/crio.conf and etc/crio/crio.conf.d/*.
std::vector<std::string> CrioConfigs(const HostRoot& host) {
  std::vector<std::string> files;
  if (host.Exists("etc/crio/crio.conf")) files.emplace_back("/etc/crio/crio.conf");
  if (StatusOr<std::vector<std::string>> names = host.List("etc/crio/crio.conf.d"); names.ok()) {
    for (const std::string& n : *names) files.push_back("/etc/crio/crio.conf.d/" + n);
  }
  return files;
}

CheckResult CheckContainerRuntime(const HostRoot& host, const std::string& dpkg) {
  std::string package;
  const std::string containerd_version =
      DpkgVersion(dpkg, {"containerd.io", "containerd"}, &package);
  StatusOr<std::string> toml = host.ReadFile("etc/containerd/config.toml");
  if (toml.ok() || !containerd_version.empty()) {
    const ContainerdConfig config = toml.ok() ? ReadContainerdConfig(*toml) : ContainerdConfig{};
    std::string evidence = "containerd " + (containerd_version.empty()
                                                ? std::string("version unknown")
                                                : containerd_version + " (dpkg " + package + ")");
    evidence += "; /etc/containerd/config.toml: ";
    if (!config.found) {
      evidence += "absent";
    } else {
      evidence += "version " + std::to_string(config.version) + ", enable_cdi " +
                  (config.enable_cdi ? (*config.enable_cdi ? "true" : "false") : "not set");
    }
    const std::optional<std::pair<int, int>> v = MajorMinor(containerd_version);
    const bool v2 = v ? AtLeast(*v, 2, 0) : config.version >= 3;  // only 2.x reads version 3
    if (v && !AtLeast(*v, 1, 7)) {
      return Result("container-runtime", CheckStatus::kFail, evidence,
                    "containerd before 1.7 has no CDI: upgrade to 1.7 or later (2.x preferred)");
    }
    if (config.enable_cdi == false || (!v2 && config.enable_cdi != true)) {
      return Result("container-runtime", CheckStatus::kFail, evidence,
                    "set enable_cdi = true under [plugins.\"io.containerd.grpc.v1.cri\"] in "
                    "/etc/containerd/config.toml and restart containerd");
    }
    if (!v) {
      return Result("container-runtime", CheckStatus::kWarn, evidence,
                    "containerd's version is not in the dpkg database: check `containerd "
                    "--version` is 1.7 or later");
    }
    return Result("container-runtime", CheckStatus::kPass, evidence);
  }
  const std::string crio_version = DpkgVersion(dpkg, {"cri-o", "crio"}, &package);
  const std::vector<std::string> crio = CrioConfigs(host);
  if (!crio.empty() || !crio_version.empty()) {
    std::string evidence = "CRI-O " +
                           (crio_version.empty() ? std::string("version unknown") : crio_version) +
                           "; config: " + (crio.empty() ? std::string("absent") : Join(crio, ", "));
    const std::optional<std::pair<int, int>> v = MajorMinor(crio_version);
    if (!v) {
      return Result("container-runtime", CheckStatus::kWarn, evidence,
                    "CRI-O's version is not in the dpkg database: check `crio version` is 1.28 "
                    "or later");
    }
    if (!AtLeast(*v, 1, 28)) {
      return Result("container-runtime", CheckStatus::kFail, evidence,
                    "upgrade CRI-O to 1.28 or later");
    }
    return Result("container-runtime", CheckStatus::kPass, evidence + " (CDI on by default)");
  }
  return Result("container-runtime", CheckStatus::kFail,
                "no /etc/containerd/config.toml, no /etc/crio/crio.conf(.d), neither package in "
                "/var/lib/dpkg/status",
                "install containerd 1.7+ with CDI enabled, or CRI-O 1.28+");
}

CheckResult CheckCdiSpecDirs(const HostRoot& host) {
  std::vector<std::string> seen;
  CheckStatus status = CheckStatus::kPass;
  for (const std::string_view dir : {"etc/cdi", "var/run/cdi"}) {
    StatusOr<std::string> resolved = host.Resolve(dir);
    const std::string path = host.root() + "/" + (resolved.ok() ? *resolved : "");
    struct stat st {};
    if (!resolved.ok() || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      seen.push_back("/" + std::string(dir) + " missing");
      if (status == CheckStatus::kPass) status = CheckStatus::kWarn;
    } else if (::access(path.c_str(), W_OK) != 0) {
      seen.push_back("/" + std::string(dir) + " not writable");
      status = CheckStatus::kFail;
    } else {
      seen.push_back("/" + std::string(dir) + " writable");
    }
  }
  return Result(
      "cdi-spec-dirs", status, Join(seen, ", "),
      status == CheckStatus::kFail
          ? "the plugin writes CDI specs to /var/run/cdi (--cdi-dir): make it writable"
          : "the plugin's hostPath volume creates /var/run/cdi; the runtime must read the "
            "same directory (its default CDI spec dirs are /etc/cdi and /var/run/cdi)");
}

// ---- 7. kubelet ----

CheckResult CheckKubelet(const DoctorOptions& options, const std::string& dpkg) {
  std::string raw = options.kubelet_version;
  std::string source = "--kubelet-version";
  if (raw.empty()) {
    std::string package;
    raw = DpkgVersion(dpkg, {"kubelet"}, &package);
    source = "dpkg kubelet";
  }
  if (raw.empty()) {
    return Result("kubelet", CheckStatus::kWarn,
                  "kubelet version unknown (no kubelet package in /var/lib/dpkg/status)",
                  "pass --kubelet-version (see `kubelet --version`)");
  }
  const std::optional<std::pair<int, int>> v = MajorMinor(raw);
  if (!v) {
    return Result("kubelet", CheckStatus::kWarn, source + ": \"" + raw + "\" is not a version",
                  "pass --kubelet-version as 1.34.1");
  }
  std::string evidence = "kubelet " + raw + " (" + source + ")";
  // resource.k8s.io: v1beta1 from 1.32, v1beta2 from 1.33, v1 from 1.34 (docs/architecture.md);
  // the kubelet's DRA gRPC: v1beta1 from 1.32, v1 from 1.34.
  if (!AtLeast(*v, 1, 32)) {
    return Result("kubelet", CheckStatus::kFail, evidence + ": no DRA beta API",
                  "upgrade the kubelet to 1.34 or later (the plugin needs DRA v1beta1 at least)");
  }
  if (!AtLeast(*v, 1, 34)) {
    return Result("kubelet", CheckStatus::kWarn,
                  evidence + ": resource.k8s.io v1beta1" + (AtLeast(*v, 1, 33) ? ", v1beta2" : "") +
                      "; DRA gRPC v1beta1",
                  "the project supports Kubernetes 1.34 to 1.37: upgrade the kubelet");
  }
  return Result("kubelet", CheckStatus::kPass,
                evidence + ": resource.k8s.io v1, v1beta2, v1beta1; DRA gRPC v1, v1beta1");
}

// ---- 8. support matrix ----

CheckResult CheckSupportMatrix(const DoctorOptions& options, const Facts& facts) {
  if (!options.support) {
    return Result("support-matrix", CheckStatus::kSkip, "no support matrix given");
  }
  const auto& devices = facts.inventory.status.devices;
  if (devices.empty()) return Result("support-matrix", CheckStatus::kSkip, "no accelerator found");
  std::vector<std::string> outside;
  for (const auto& d : devices) {
    const SupportJudgement j = options.support(d);
    if (!j.supported) outside.push_back(d.name + ": " + j.reason);
  }
  const std::string from =
      options.support_source.empty() ? "" : " (" + options.support_source + ")";
  if (!outside.empty()) {
    return Result("support-matrix", CheckStatus::kFail,
                  std::to_string(outside.size()) + " of " + std::to_string(devices.size()) +
                      " devices outside the support matrix" + from + ": " + Join(outside, "; "),
                  "the controller taints these devices xpu.dra.dev/unsupported: upgrade the "
                  "driver, firmware or toolkit, or widen the matrix");
  }
  return Result("support-matrix", CheckStatus::kPass,
                std::to_string(devices.size()) + " devices inside the support matrix" + from);
}

// ---- 9. collective communication ----

CheckResult CheckAscendNetwork(const HostRoot& host, const Facts& facts) {
  std::map<std::string, std::string> hccn;
  StatusOr<std::string> text = host.ReadFile("etc/hccn.conf");
  if (text.ok()) {
    for (std::string_view line : Lines(*text)) {
      if (auto kv = SplitAssignment(line)) hccn[std::string(kv->first)] = std::string(kv->second);
    }
  }
  std::vector<std::string> problems;
  int configured = 0;
  std::map<int64_t, const discovery::DcmiChip*> chips;
  const bool dcmi = facts.dcmi && facts.dcmi->library.loaded;
  if (dcmi) {
    for (const auto& c : facts.dcmi->chips) chips[c.phy_id] = &c;
  }
  int healthy = 0;
  for (const auto& d : facts.inventory.status.devices) {
    if (d.vendor != "huawei") continue;
    const std::string n = std::to_string(d.index);
    const auto address = hccn.find("address_" + n);
    if (address == hccn.end() || !hccn.contains("netmask_" + n)) {
      std::string missing = d.name;
      missing.append(": no address_").append(n).append("/netmask_").append(n);
      problems.push_back(std::move(missing));
    } else {
      ++configured;
    }
    const auto chip = chips.find(d.index);
    if (!dcmi || chip == chips.end()) continue;
    const discovery::DcmiChip& c = *chip->second;
    if (address != hccn.end() && !c.device_ip.empty() && c.device_ip != address->second) {
      problems.push_back(d.name + ": DCMI device IP " + c.device_ip + " != hccn.conf " +
                         address->second);
    }
    if (c.network_health == "ok") {
      ++healthy;
    } else if (!c.network_health.empty()) {
      problems.push_back(d.name + ": RoCE network " + c.network_health);
    }
  }
  std::string evidence =
      "/etc/hccn.conf: " + (text.ok() ? std::to_string(configured) + " devices addressed"
                                      : std::string(text.status().message()));
  evidence += dcmi ? "; DCMI network health ok on " + std::to_string(healthy)
                   : std::string("; DCMI not loaded: network health not read");
  if (!problems.empty()) {
    return Result("collective-network", CheckStatus::kFail, evidence + "; " + Join(problems, "; "),
                  "configure each NPU's RoCE port (hccn_tool -i N -ip -s address ... netmask ...) "
                  "and check its link (hccn_tool -i N -net_health -g)");
  }
  if (!dcmi) {
    return Result("collective-network", CheckStatus::kWarn, evidence,
                  "load DCMI (--vendor-lib-dir) to read the RoCE addresses and their health");
  }
  return Result("collective-network", CheckStatus::kPass, evidence);
}

bool IsRdma(const api::InventoryNic& nic) { return nic.type == "roce" || nic.type == "infiniband"; }

CheckResult CheckCollectiveNetwork(const HostRoot& host, const Facts& facts) {
  if (facts.vendors.empty()) {
    return Result("collective-network", CheckStatus::kSkip, "no accelerator found");
  }
  if (facts.vendors.contains("huawei")) return CheckAscendNetwork(host, facts);
  const auto& nics = facts.inventory.status.nics;
  const auto rdma = std::count_if(nics.begin(), nics.end(), IsRdma);
  const std::string evidence = "/sys/class/net: " + std::to_string(nics.size()) + " NICs, " +
                               std::to_string(rdma) + " RoCE/InfiniBand";
  if (rdma == 0) {
    return Result("collective-network", CheckStatus::kWarn, evidence,
                  "no RDMA NIC: multi-node collectives (NCCL, RCCL, ...) fall back to TCP");
  }
  return Result("collective-network", CheckStatus::kPass, evidence);
}

// ---- 10. NIC pairing ----

CheckResult CheckNicPairing(const Facts& facts) {
  std::map<std::string, const api::InventoryDevice*> by_name;
  for (const auto& d : facts.inventory.status.devices) by_name[d.name] = &d;
  std::vector<std::string> pairs;
  std::vector<std::string> problems;
  int rdma = 0;
  for (const auto& nic : facts.inventory.status.nics) {
    if (!IsRdma(nic)) continue;
    ++rdma;
    const auto d = by_name.find(nic.paired_device);
    if (d == by_name.end()) {
      problems.push_back(nic.name + " serves no device");
    } else if (d->second->pcie_root != nic.pcie_root) {
      problems.push_back(nic.name + " (" + nic.pcie_root + ") and " + d->first + " (" +
                         d->second->pcie_root + ") on different PCIe roots");
    } else {
      pairs.push_back(nic.name + "-" + d->first);
    }
  }
  if (rdma == 0) {
    return Result("nic-pairing", CheckStatus::kSkip,
                  facts.inventory.status.devices.empty() ? "no accelerator found"
                                                         : "no RoCE/InfiniBand NIC to pair");
  }
  std::string evidence = std::to_string(pairs.size()) + " of " + std::to_string(rdma) +
                         " RDMA NICs on their device's PCIe root";
  if (!pairs.empty()) evidence += " (" + Join(pairs, ", ") + ")";
  if (!problems.empty()) {
    return Result("nic-pairing", CheckStatus::kWarn, evidence + "; " + Join(problems, "; "),
                  "GPUDirect RDMA across PCIe roots goes through the CPU: move the NIC next to "
                  "its device");
  }
  return Result("nic-pairing", CheckStatus::kPass, evidence);
}

}  // namespace

std::string_view CheckStatusName(CheckStatus status) {
  return NameAt(kStatusNames, status).value_or("?");
}

CheckStatus JudgeDeviceNode(bool exists, bool is_char_device, unsigned mode) {
  if (!exists) return CheckStatus::kFail;
  if (!is_char_device) return CheckStatus::kWarn;
  const unsigned perm = mode & 07777;
  if (perm == 0666 || perm == 0660) return CheckStatus::kPass;
  if ((perm & 07111) != 0 || (perm & 0002) != 0) return CheckStatus::kFail;
  return CheckStatus::kWarn;
}

StatusOr<DoctorReport> RunChecks(const HostRoot& host, const DoctorOptions& options) {
  Facts facts;
  discovery::DiscoveryOptions d;
  d.host_root = host.root();
  d.vendor_lib_dirs = options.vendor_lib_dirs;
  d.node_name = options.node_name;
  d.probe_vendor_libraries = options.probe_vendor_libraries;
  // Discovery calls each probe at most once; keep what it returned.
  d.probe_nvml = [&](const std::vector<std::string>& dirs) {
    facts.nvml = options.probe_nvml ? options.probe_nvml(dirs) : discovery::ProbeNvml(dirs);
    return *facts.nvml;
  };
  d.probe_dcmi = [&](const std::vector<std::string>& dirs) {
    facts.dcmi = options.probe_dcmi ? options.probe_dcmi(dirs) : discovery::ProbeDcmi(dirs);
    return *facts.dcmi;
  };
  RETURN_IF_ERROR(d.Validate());
  ASSIGN_OR_RETURN(facts.inventory, discovery::Discover(d));
  for (const auto& dev : facts.inventory.status.devices) facts.vendors.insert(dev.vendor);
  // The dpkg database: the one place a Debian/Ubuntu node records which containerd, CRI-O and
  // kubelet it runs without executing them (docs/node-checklist.md).
  StatusOr<std::string> dpkg_text = host.ReadFile("var/lib/dpkg/status");
  const std::string dpkg = dpkg_text.ok() ? *dpkg_text : "";

  DoctorReport report;
  report.node = facts.inventory.metadata.name;
  report.checks = {
      CheckKernel(host),
      CheckIommu(host),
      CheckDevices(facts),
      CheckDriver(host, facts),
      CheckVendorLibrary(facts),
      CheckFirmware(facts),
      CheckToolkit(host, facts),
      CheckDeviceNodes(host, facts),
      CheckDriverFiles(host.root(), facts.vendors, options.driver_files, options.cdi_hook_path),
      CheckHealth(facts),
      CheckContainerRuntime(host, dpkg),
      CheckCdiSpecDirs(host),
      CheckKubelet(options, dpkg),
      CheckSupportMatrix(options, facts),
      CheckCollectiveNetwork(host, facts),
      CheckNicPairing(facts)};
  return report;
}

bool HasFailure(const DoctorReport& report) {
  return std::any_of(report.checks.begin(), report.checks.end(),
                     [](const CheckResult& c) { return c.status == CheckStatus::kFail; });
}

namespace {

std::map<CheckStatus, int> Counts(const DoctorReport& report) {
  std::map<CheckStatus, int> counts = {{CheckStatus::kPass, 0},
                                       {CheckStatus::kWarn, 0},
                                       {CheckStatus::kFail, 0},
                                       {CheckStatus::kSkip, 0}};
  for (const CheckResult& c : report.checks) ++counts[c.status];
  return counts;
}

}  // namespace

std::string FormatText(const DoctorReport& report) {
  std::string out = "node " + report.node + "\n";
  size_t width = 0;
  for (const CheckResult& c : report.checks) width = std::max(width, c.name.size());
  for (const CheckResult& c : report.checks) {
    out += std::string(CheckStatusName(c.status)) + "  " + c.name +
           std::string(width - c.name.size() + 2, ' ') + c.evidence + "\n";
    if (!c.hint.empty()) out += "      " + std::string(width + 2, ' ') + "hint: " + c.hint + "\n";
  }
  std::string summary;
  for (const auto& [status, n] : Counts(report)) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " +
               std::string(CheckStatusName(status));
  }
  return out + "summary: " + summary + "\n";
}

api::Condition ChecklistCondition(const DoctorReport& report, const std::string& now) {
  std::map<CheckStatus, int> counts = Counts(report);
  // The names in the summary, the evidence after it, failures first: a message cut at its cap
  // loses warnings' evidence before anything else.
  std::map<CheckStatus, std::string> names;
  std::map<CheckStatus, std::string> parts;
  for (const CheckResult& c : report.checks) {
    if (c.status != CheckStatus::kFail && c.status != CheckStatus::kWarn) continue;
    names[c.status] += (names[c.status].empty() ? "" : ", ") + c.name;
    // The kubelet health stream splits a False condition's message on ';' and reads each part
    // before its ':' as a device name (HealthMonitor::Update): the evidence keeps no ';', and each
    // part starts with the check's name, never a device's.
    std::string evidence = c.evidence;
    std::replace(evidence.begin(), evidence.end(), ';', ',');
    parts[c.status] +=
        "; " + c.name + ": " + std::string(CheckStatusName(c.status)) + ", " + evidence;
  }
  const int failed = counts[CheckStatus::kFail];
  const int warned = counts[CheckStatus::kWarn];
  auto counted = [&](int n, CheckStatus status) {
    std::string out = std::to_string(n) + " " + std::string(CheckStatusName(status));
    return names[status].empty() ? out : out + " (" + names[status] + ")";
  };
  api::Condition out;
  out.type = "NodeChecklist";
  out.status = failed > 0 ? "False" : "True";
  out.reason = failed > 0 ? "ChecksFailed" : warned > 0 ? "ChecksWarned" : "ChecksPassed";
  out.message = counted(failed, CheckStatus::kFail) + ", " + counted(warned, CheckStatus::kWarn) +
                " of " + std::to_string(report.checks.size()) + " checks (xpuctl doctor)" +
                parts[CheckStatus::kFail] + parts[CheckStatus::kWarn];
  // Capped as discovery caps its conditions' messages.
  if (out.message.size() > 1024) out.message = out.message.substr(0, 1021) + "...";
  out.last_transition_time = now;
  return out;
}

nlohmann::json ToJson(const DoctorReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const CheckResult& c : report.checks) {
    checks.push_back({{"name", c.name},
                      {"status", CheckStatusName(c.status)},
                      {"evidence", c.evidence},
                      {"hint", c.hint}});
  }
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [status, n] : Counts(report)) summary[std::string(CheckStatusName(status))] = n;
  return {{"node", report.node}, {"checks", std::move(checks)}, {"summary", std::move(summary)}};
}

}  // namespace xpu::doctor
