#include "kubeletplugin/doctor/doctor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/text.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/doctor/driver_files_check.h"
#include "kubeletplugin/doctor/internal/checks.h"

namespace xpu::doctor {
namespace {

using discovery::HostRoot;

constexpr std::string_view kStatusNames[] = {"pass", "warn", "fail", "skip"};
static_assert(NamesCover(kStatusNames, CheckStatus::kSkip));

}  // namespace

// ---- What the checks share (internal/checks.h) ----

namespace internal {

CheckResult Result(std::string name, CheckStatus status, std::string evidence, std::string hint) {
  if (status == CheckStatus::kPass) hint.clear();
  return {std::move(name), status, std::move(evidence), std::move(hint)};
}

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

std::optional<std::pair<std::string_view, std::string_view>> SplitAssignment(
    std::string_view line) {
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  return std::pair{Trim(line.substr(0, eq)), Trim(line.substr(eq + 1))};
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

}  // namespace internal

// ---- The checklist ----

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
  internal::Facts facts;
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
      internal::CheckKernel(host),
      internal::CheckIommu(host),
      internal::CheckDevices(facts),
      internal::CheckDriver(host, facts),
      internal::CheckVendorLibrary(facts),
      internal::CheckFirmware(facts),
      internal::CheckToolkit(host, facts),
      internal::CheckDeviceNodes(host, facts),
      CheckDriverFiles(host.root(), facts.vendors, options.driver_files, options.cdi_hook_path),
      internal::CheckHealth(facts),
      internal::CheckContainerRuntime(host, dpkg),
      internal::CheckCdiSpecDirs(host),
      internal::CheckKubelet(options, dpkg),
      internal::CheckSupportMatrix(options, facts),
      internal::CheckCollectiveNetwork(host, facts),
      internal::CheckNicPairing(facts)};
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
