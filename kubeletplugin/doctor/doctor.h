// The node integration checklist (`xpuctl doctor`, docs/node-checklist.md): from the kernel up to
// the kubelet, whether one node is ready to run the plugin and hand its accelerators to
// containers. Each check reads files under the host root, or what the vendor libraries report
// through the discovery's dlopen path, and says pass, warn, fail or skip with the evidence (the
// file or call and the value seen) and, unless it passed, a hint.
//
// The checks reuse the discovery (kubeletplugin/discovery/): which devices there are, their
// versions, device nodes, NICs and health come from one Discover call, whose vendor-library
// probes are wrapped so that the raw NVML/DCMI facts (XID events, DCMI health codes, RoCE
// addresses) are judged too. The support matrix is the controller's (controller/config.h), which
// the plugin side may not include: the caller injects the verdict as a function.
//
// Nothing here changes the host. Problems of the host are check results, never errors; only bad
// options fail. Thread-compatible; no exception escapes.
#ifndef XPU_KUBELETPLUGIN_DOCTOR_DOCTOR_H_
#define XPU_KUBELETPLUGIN_DOCTOR_DOCTOR_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "base/status.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/driverfiles/driver_files.h"

namespace xpu::doctor {

enum class CheckStatus { kPass, kWarn, kFail, kSkip };
std::string_view CheckStatusName(CheckStatus status);  // "pass", "warn", "fail", "skip"

struct CheckResult {
  std::string name;  // "kernel", "iommu", "driver", ... (docs/node-checklist.md)
  CheckStatus status = CheckStatus::kSkip;
  std::string evidence;  // what was read and seen: "/proc/version: 5.15.0-119-generic"
  std::string hint;      // what to do about a warn or fail; empty on pass
};

// Whether one device lies inside the support matrix, with the reason when not (the shape of
// controller::SupportVerdict).
struct SupportJudgement {
  bool supported = true;
  std::string reason;
};

struct DoctorOptions {
  // Directories searched first for libnvidia-ml.so.1 and libdcmi.so (as `xpuctl discover`).
  std::vector<std::string> vendor_lib_dirs;
  // False: no vendor library is loaded; the checks that need one warn.
  bool probe_vendor_libraries = true;
  // The vendor-library seam of DiscoveryOptions; empty: ProbeNvml / ProbeDcmi.
  std::function<discovery::NvmlFacts(const std::vector<std::string>&)> probe_nvml;
  std::function<discovery::DcmiFacts(const std::vector<std::string>&)> probe_dcmi;
  // The kubelet's version ("1.34.1", "v1.34.1"); empty: the kubelet package in the dpkg database.
  std::string kubelet_version;
  // The support-matrix verdict per device; empty: the support-matrix check is skipped.
  std::function<SupportJudgement(const api::InventoryDevice&)> support;
  // Where the matrix came from, for the evidence: "config /etc/xpu-dra/config.yaml".
  std::string support_source;
  // The host's node name; empty: etc/hostname under the host root, else "localhost".
  std::string node_name;
  // The plugin's --cdi-driver-files and --cdi-hook-path, for the driver-files check.
  driverfiles::Policy driver_files;
  std::string cdi_hook_path = std::string(driverfiles::kDefaultHookPath);
};

struct DoctorReport {
  std::string node;
  std::vector<CheckResult> checks;
};

// Every check, in checklist order (hardware first): kernel, iommu, devices, driver,
// vendor-library, firmware, toolkit, device-nodes, driver-files, health, container-runtime,
// cdi-spec-dirs, kubelet, support-matrix, collective-network, nic-pairing. Fails only on bad
// options (a host root that is not a directory, a bad node name).
StatusOr<DoctorReport> RunChecks(const discovery::HostRoot& host, const DoctorOptions& options);

// Whether any check failed.
bool HasFailure(const DoctorReport& report);

// One line per check: "pass  kernel  /proc/version: 6.8.0-45-generic", the hint indented on the
// next line, then "summary: 10 pass, 3 warn, 0 fail, 2 skip".
std::string FormatText(const DoctorReport& report);
// {"node": ..., "checks": [{"name", "status", "evidence", "hint"}], "summary": {"pass", "warn",
// "fail", "skip"}}.
nlohmann::json ToJson(const DoctorReport& report);

// The report as one NodeInventory condition, as the kubelet plugin publishes it at start
// (--node-checklist): type NodeChecklist; status False (reason ChecksFailed) when a check failed,
// else True (ChecksWarned when one warned, else ChecksPassed); the message counts and names them
// ("2 fail (device-nodes, kubelet), 1 warn (iommu) of 15 checks (xpuctl doctor)"), then gives
// each failed, then each warned check's evidence, "; "-separated ("; device-nodes: fail, ..."),
// cut at 1024 characters.
// `now` is the lastTransitionTime.
api::Condition ChecklistCondition(const DoctorReport& report, const std::string& now);

// The verdict on a device or control node (exposed for tests): missing -> fail; not a character
// device -> warn (fixture trees hold regular files); a character device with mode 0666 or 0660
// -> pass; another world-writable mode, or any execute or set-id bit -> fail; any other mode
// (0600, 0640, ...) -> warn. `mode` holds the st_mode permission bits.
CheckStatus JudgeDeviceNode(bool exists, bool is_char_device, unsigned mode);

}  // namespace xpu::doctor

#endif  // XPU_KUBELETPLUGIN_DOCTOR_DOCTOR_H_
