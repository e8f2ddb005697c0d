// The checklist's host checks (internal/checks.h): 1. kernel and IOMMU, 5. device nodes.
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "kubeletplugin/cdi/profiles.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/doctor/internal/checks.h"

namespace xpu::doctor::internal {

using discovery::HostRoot;

namespace {
namespace checks_host_cc {

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

}  // namespace checks_host_cc
}  // namespace

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

// ---- 5. device nodes ----

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
      const checks_host_cc::NodeSeen seen =
          checks_host_cc::StatNode(host, std::string_view{path}.substr(1));
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
        ++kinds["char " + checks_host_cc::OctalMode(seen.mode)];
        if (status != CheckStatus::kPass) {
          problems.push_back(path + " mode " + checks_host_cc::OctalMode(seen.mode));
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

}  // namespace xpu::doctor::internal
