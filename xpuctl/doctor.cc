// xpuctl doctor: the node integration checklist (docs/node-checklist.md) of this host or of a
// fixture host root, with the controller's support matrix applied to the devices found.
#include "kubeletplugin/doctor/doctor.h"

#include "controller/config.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunDoctor(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"text", "json"}));
  std::string host_root = "/";
  if (auto it = flags.find("host-root"); it != flags.end()) host_root = it->second;
  doctor::DoctorOptions options;
  options.vendor_lib_dirs = RepeatedFlag(flags, "vendor-lib-dir");
  if (auto it = flags.find("kubelet-version"); it != flags.end()) {
    options.kubelet_version = it->second;
  }
  if (auto it = flags.find("node-name"); it != flags.end()) options.node_name = it->second;
  if (auto it = flags.find("cdi-driver-files"); it != flags.end()) {
    ASSIGN_OR_RETURN(options.driver_files,
                     driverfiles::ParsePolicy(it->second, "--cdi-driver-files"));
  }
  if (auto it = flags.find("cdi-hook-path"); it != flags.end()) {
    options.cdi_hook_path = it->second;
  }
  // The controller's matrix, injected: the checks live on the plugin side, which never includes
  // the controller.
  controller::Config config = controller::DefaultConfig();
  options.support_source = "default config, empty support matrix";
  if (auto it = flags.find("config"); it != flags.end()) {
    ASSIGN_OR_RETURN(config, controller::LoadConfigFile(it->second));
    options.support_source = "config " + it->second + ", " +
                             std::to_string(config.support_matrix.size()) + " support rules";
  }
  options.support = [&config](const api::InventoryDevice& device) {
    const controller::SupportVerdict verdict = controller::CheckSupport(config, device);
    return doctor::SupportJudgement{verdict.supported, verdict.reason};
  };
  ASSIGN_OR_RETURN(const doctor::DoctorReport report,
                   doctor::RunChecks(discovery::HostRoot(host_root), options));
  if (format == "json") {
    out << doctor::ToJson(report).dump(2) << "\n";
  } else {
    out << doctor::FormatText(report);
  }
  return doctor::HasFailure(report) ? kExitInfeasible : kExitOk;
}

}  // namespace xpu::cli::internal
