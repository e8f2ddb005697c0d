// xpu-dra-plugin: the per-node DaemonSet. This part: discover the node's accelerators,
// publish the NodeInventory, keep the plugin Lease renewed, and rediscover on a period and when
// device nodes appear or vanish under <host-root>/dev (inotify: cheap, no polling of sysfs).
// The kubelet services (registration, DRA, health) come with the kubelet-plugin issue.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_PLUGIN_H_
#define XPU_KUBELETPLUGIN_PLUGIN_PLUGIN_H_

#include <atomic>
#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "base/status.h"

namespace xpu::plugin {

struct PluginOptions {
  std::string node_name;   // --node-name, else $NODE_NAME
  std::string kubeconfig;  // empty: in-cluster service account, else $KUBECONFIG
  std::string driver_name = "xpu.dra.dev";
  std::string host_root = "/";
  std::vector<std::string> vendor_lib_dirs;
  std::string ns = "xpu-dra";
  std::chrono::milliseconds rediscover{60'000};
  std::chrono::milliseconds lease_renew{5'000};
  std::chrono::seconds lease_duration{15};

  Status Validate() const;
};

// Parses argv (without the program name); `node_name_env` is $NODE_NAME. Sets *help for --help.
StatusOr<PluginOptions> ParseFlags(const std::vector<std::string>& args,
                                   const std::string& node_name_env, bool* help);
std::string Usage();

// Runs until `stop`; returns the exit code. Logs go to `log`, one line per event, no secrets.
int Run(const PluginOptions& options, const std::atomic<bool>& stop, std::ostream& log);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_PLUGIN_H_
