// xpuctl discover: the NodeInventory of this host (or of a fixture host root).
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/telemetry.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunDiscover(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  discovery::DiscoveryOptions options;
  if (auto it = flags.find("host-root"); it != flags.end()) options.host_root = it->second;
  if (auto it = flags.find("node-name"); it != flags.end()) options.node_name = it->second;
  options.vendor_lib_dirs = RepeatedFlag(flags, "vendor-lib-dir");
  // As the plugin: without --vendor-lib-dir, the libraries the host's driver installed, under
  // the host root.
  if (options.vendor_lib_dirs.empty()) {
    options.vendor_lib_dirs = discovery::HostLibraryDirs(options.host_root);
  }
  if (Status valid = options.Validate(); !valid.ok()) return valid;
  ASSIGN_OR_RETURN(const api::NodeInventory inventory, discovery::Discover(options));
  PrintDocument(api::ToJson(inventory), format, out);
  return kExitOk;
}

}  // namespace xpu::cli::internal
