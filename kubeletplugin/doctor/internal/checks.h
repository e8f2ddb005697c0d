// The checks of the node checklist (docs/node-checklist.md), one function each, and what they
// share: the facts of the one Discover call they judge, the result builder and small text
// helpers. RunChecks (doctor.cc) runs them in checklist order. By checklist area:
// checks_host.cc (1. kernel, IOMMU; 5. device nodes), checks_vendor.cc (2. devices, driver,
// vendor library; 3. firmware; 4. toolkit; 11. health), checks_runtime.cc (6. container runtime,
// CDI spec dirs; 7. kubelet; 8. support matrix), checks_network.cc (9. collective network;
// 10. NIC pairing); 5. driver files is driver_files_check.h. Each check reads, never changes, the
// host. Internal to kubeletplugin/doctor.
#ifndef XPU_KUBELETPLUGIN_DOCTOR_INTERNAL_CHECKS_H_
#define XPU_KUBELETPLUGIN_DOCTOR_INTERNAL_CHECKS_H_

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/node_inventory.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/doctor/doctor.h"

namespace xpu::doctor::internal {

// What one Discover call found, with the raw vendor-library facts its probes returned.
struct Facts {
  api::NodeInventory inventory;
  std::optional<discovery::NvmlFacts> nvml;  // set when discovery asked NVML
  std::optional<discovery::DcmiFacts> dcmi;  // set when discovery asked DCMI
  std::set<std::string> vendors;             // of the devices found
};

// ---- What the checks share (doctor.cc) ----

// A check's result; the hint is dropped when it passed.
CheckResult Result(std::string name, CheckStatus status, std::string evidence,
                   std::string hint = "");

// The lines of `text`, trimmed, without empty ones and '#' comments.
std::vector<std::string_view> Lines(std::string_view text);

// "key = value" / "key=value" -> {key, value}, both trimmed; nullopt without '='.
std::optional<std::pair<std::string_view, std::string_view>> SplitAssignment(std::string_view line);

// `parts` joined with `sep` between them.
std::string Join(const std::vector<std::string>& parts, std::string_view sep);

// ---- 1. kernel and IOMMU; 5. device nodes (checks_host.cc) ----

// "kernel": /proc/version read (pass) or not (warn).
CheckResult CheckKernel(const discovery::HostRoot& host);
// "iommu": IOMMU groups exist and no kernel option turns it off (pass), else warn.
CheckResult CheckIommu(const discovery::HostRoot& host);
// "device-nodes": each device's own node and the vendor's control nodes, judged by
// JudgeDeviceNode (doctor.h); no control node at all fails.
CheckResult CheckDeviceNodes(const discovery::HostRoot& host, const Facts& facts);

// ---- 2. devices, driver, vendor library; 3. firmware; 4. toolkit; 11. health
// (checks_vendor.cc) ----

// "devices": accelerators found (pass, counted by model) or none (fail).
CheckResult CheckDevices(const Facts& facts);
// "driver": the driver's version known and a module of it loaded (pass), one of the two (warn),
// neither (fail).
CheckResult CheckDriver(const discovery::HostRoot& host, const Facts& facts);
// "vendor-library": NVML/DCMI loaded (pass), not found (warn), found but failing (fail).
CheckResult CheckVendorLibrary(const Facts& facts);
// "firmware": every device reports one and the same version (pass), else warn.
CheckResult CheckFirmware(const Facts& facts);
// "toolkit": a toolkit version found (pass); none (warn; skip on NVIDIA-only nodes).
CheckResult CheckToolkit(const discovery::HostRoot& host, const Facts& facts);
// "health": the devices' health from discovery and the raw NVML/DCMI facts (XIDs, DCMI health
// codes, links down, failing calls).
CheckResult CheckHealth(const Facts& facts);

// ---- 6. container runtime, CDI spec dirs; 7. kubelet; 8. support matrix
// (checks_runtime.cc) ----

// "container-runtime": containerd (config.toml, dpkg version) or CRI-O with CDI. `dpkg` is the
// text of var/lib/dpkg/status ("" when unreadable).
CheckResult CheckContainerRuntime(const discovery::HostRoot& host, const std::string& dpkg);
// "cdi-spec-dirs": /etc/cdi and /var/run/cdi exist (else warn) and are writable (else fail).
CheckResult CheckCdiSpecDirs(const discovery::HostRoot& host);
// "kubelet": the kubelet's version (options, else dpkg) against the DRA API versions.
CheckResult CheckKubelet(const DoctorOptions& options, const std::string& dpkg);
// "support-matrix": every device inside the injected support matrix (skip without one).
CheckResult CheckSupportMatrix(const DoctorOptions& options, const Facts& facts);

// ---- 9. collective network; 10. NIC pairing (checks_network.cc) ----

// "collective-network": Ascend: hccn.conf addresses and DCMI's RoCE health; others: an RDMA NIC.
CheckResult CheckCollectiveNetwork(const discovery::HostRoot& host, const Facts& facts);
// "nic-pairing": every RDMA NIC serves a device on its own PCIe root (skip without RDMA NICs).
CheckResult CheckNicPairing(const Facts& facts);

}  // namespace xpu::doctor::internal

#endif  // XPU_KUBELETPLUGIN_DOCTOR_INTERNAL_CHECKS_H_
