#include "kubeletplugin/doctor/driver_files_check.h"

#include <sys/stat.h>

#include <string_view>
#include <utility>
#include <vector>

namespace xpu::doctor {
namespace {

constexpr std::string_view kName = "driver-files";

// The vendors' own runtime hooks: where each vendor's container toolkit installs its hook.
const std::vector<std::pair<std::string_view, std::string_view>>& VendorHooks() {
  static const std::vector<std::pair<std::string_view, std::string_view>> hooks = {
      {"nvidia", "/usr/bin/nvidia-container-runtime-hook"},
      {"nvidia", "/usr/bin/nvidia-cdi-hook"},
      {"huawei", "/usr/local/bin/ascend-docker-hook"},
      {"hygon", "/usr/bin/hcu-container-runtime-hook"}};
  return hooks;
}

bool Exists(const std::string& root, std::string_view path) {
  struct stat st {};
  const std::string base = root == "/" ? "" : root;
  return ::stat((base + std::string(path)).c_str(), &st) == 0;
}

// The runtime that serves a vendor whose files are off (RuntimeClass name, as the vendors'
// operators create them).
std::string_view RuntimeOf(std::string_view vendor) {
  if (vendor == "nvidia") return "nvidia (nvidia-container-runtime)";
  if (vendor == "huawei") return "ascend (ascend-docker-runtime)";
  return "the vendor's container runtime";
}

}  // namespace

CheckResult CheckDriverFiles(const std::string& host_root, const std::set<std::string>& vendors,
                             const driverfiles::Policy& policy, const std::string& hook_path) {
  CheckResult r{std::string(kName), CheckStatus::kSkip, "", ""};
  if (vendors.empty()) {
    r.evidence = "no accelerator found";
    return r;
  }
  std::vector<std::string> evidence;
  std::vector<std::string> hints;
  bool failed = false;
  bool warned = false;
  bool any_hook = false;
  for (const std::string& vendor : vendors) {
    if (policy.For(vendor) == driverfiles::Mode::kOff) {
      evidence.push_back(vendor + ": driver files off");
      hints.push_back(vendor + "'s files are off: pods need the RuntimeClass " +
                      std::string(RuntimeOf(vendor)));
      warned = true;
      continue;
    }
    StatusOr<driverfiles::DriverFiles> files =
        driverfiles::FindDriverFiles(vendor, host_root, hook_path);
    if (!files.ok()) {
      evidence.push_back(files.status().message());
      hints.push_back("install the " + vendor +
                      " driver's user-space package of the loaded kernel driver's version, or "
                      "reboot into the installed one");
      failed = true;
      continue;
    }
    if (files->edits.mounts.empty()) {
      if (files->edits.empty() && vendor == "amd") continue;  // ROCm's user space is the image's
      evidence.push_back(vendor + ": no driver files found");
      hints.push_back("no " + vendor + " user-space driver found on the host: containers get none");
      warned = true;
      continue;
    }
    std::string line = vendor + (files->version.empty() ? "" : " " + files->version) + ": " +
                       std::to_string(files->mounted.size()) + " driver files (";
    for (size_t i = 0; i < files->mounted.size() && i < 3; ++i) {
      line += (i == 0 ? "" : ", ") + files->mounted[i];
    }
    line += files->mounted.size() > 3 ? ", ...)" : ")";
    evidence.push_back(line);
    any_hook = any_hook || !files->edits.hooks.empty();
    for (const auto& [hook_vendor, path] : VendorHooks()) {
      if (hook_vendor == vendor && Exists(host_root, path)) {
        evidence.push_back(vendor + "'s own runtime hook " + std::string(path) +
                           " is installed too: the specs do not need it");
      }
    }
  }
  if (any_hook && !Exists(host_root, hook_path)) {
    evidence.push_back("xpu-cdi-hook: " + hook_path + " is missing");
    hints.push_back("the plugin DaemonSet installs xpu-cdi-hook at " + hook_path +
                    " (plugin.cdi.hookDir); without it a container's loader may not find the "
                    "driver libraries");
    warned = true;
  }
  r.status = failed ? CheckStatus::kFail : warned ? CheckStatus::kWarn : CheckStatus::kPass;
  for (const std::string& e : evidence) r.evidence += (r.evidence.empty() ? "" : "; ") + e;
  for (const std::string& h : hints) r.hint += (r.hint.empty() ? "" : "; ") + h;
  return r;
}

}  // namespace xpu::doctor
