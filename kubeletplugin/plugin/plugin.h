// xpu-dra-plugin: the per-node DaemonSet. It discovers the node's accelerators, publishes the
// NodeInventory and keeps the plugin Lease renewed (rediscovering on a period and when device
// nodes appear or vanish under <host-root>/dev), serves the kubelet (registration, DRA
// prepare/unprepare with CDI specs and a checkpoint, the device health stream), and exposes
// Prometheus metrics, /healthz and /readyz.
//
// Start-up order: the checkpoint is reconciled with the disk first (a corrupt checkpoint stops
// the plugin: it never serves with forgotten claims), then the DRA socket is served, then the
// registration socket appears.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_PLUGIN_H_
#define XPU_KUBELETPLUGIN_PLUGIN_PLUGIN_H_

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/stop.h"

namespace xpu::plugin {

struct PluginOptions {
  std::string node_name;   // --node-name, else $NODE_NAME
  std::string kubeconfig;  // empty: in-cluster service account, else $KUBECONFIG
  std::string driver_name = "xpu.dra.dev";
  std::string host_root = "/";
  // Searched first for NVML and DCMI; empty: the host root's library folders
  // (discovery::HostLibraryDirs), then the loader's default path.
  std::vector<std::string> vendor_lib_dirs;
  std::string ns = "xpu-dra";
  std::chrono::milliseconds rediscover{60'000};
  std::chrono::milliseconds lease_renew{5'000};
  std::chrono::seconds lease_duration{15};
  std::string plugin_dir;  // empty: /var/lib/kubelet/plugins/<driver>
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string cdi_dir = "/var/run/cdi";
  std::string state_dir = "/var/lib/xpu-dra";
  std::string metrics_addr = ":9400";  // empty: no metrics endpoint
  std::string rolling_update_uid;      // the pod uid: per-pod socket names, serialised prepares
  std::chrono::milliseconds health_interval{5'000};  // health probe period
  std::chrono::milliseconds health_resend{10'000};   // health stream resend (kubelet: 30 s)
  // A device unhealthy by a fatal XID is healthy again once NVML answers for it and no fatal XID
  // came for this long (xid_health.h).
  std::chrono::milliseconds health_recovery_settle{60'000};
  std::chrono::milliseconds claim_gc{60'000};  // unprepare claims deleted from the API
  // Device telemetry sampling period for /metrics (xpu_dra_device_*); zero: no telemetry.
  std::chrono::milliseconds telemetry_interval{10'000};
  // Energy per claim (claim_energy.h) is written into the claim's status.devices[].data at most
  // this often while it is held, and once at unprepare; zero: no status writes, metrics only.
  // While a claim is held the telemetry is sampled at least once a second.
  std::chrono::milliseconds claim_status_interval{30'000};
  std::string log_level = "info";  // error, warning, info, debug
  // The kubelet path's client-side API rate limit (0 disables it) and burst: claim GETs and LISTs,
  // the inventory and the Lease. The energy writes have a client of their own, at 10/s or this
  // rate if lower.
  double qps = 50;
  int burst = 100;
  // KEP-5304 device metadata files (Kubernetes 1.36 alpha, 1.37 beta): written per request and
  // mounted at /var/run/dra-device-attributes/<claim>/<request>/<driver>-metadata.json.
  bool device_metadata = false;
  // Run the node checklist (kubeletplugin/doctor, `xpuctl doctor`) at start, and again every
  // node_checklist_interval (zero: at start only), and publish it as the inventory's NodeChecklist
  // condition.
  bool node_checklist = true;
  std::chrono::milliseconds node_checklist_interval{std::chrono::minutes(10)};
  // Where the server cannot carry partitions (no counters): "whole" serves a partitionable device
  // whole, "existing" serves the partitions that exist on it as plain devices instead, "layout"
  // does so after making `partition_layout` at start. Written into the inventory
  // (partitioning.fallback, partitioning.layout).
  std::string partition_fallback = "whole";
  std::string partition_layout;  // "vir05_1c_16g*4,1g.18gb*7": with fallback "layout" only
  // Which vendors' CDI specs carry their user-space driver: "auto", "off", or per vendor
  // ("nvidia=off,huawei=auto"); driverfiles::ParsePolicy. Off: the vendor's runtime hook must be
  // installed (docs/kubelet-plugin.md, "Driver files").
  std::string cdi_driver_files = "auto";
  // The host path of xpu-cdi-hook, which the DaemonSet installs (plugin.cdi.hookDir).
  std::string cdi_hook_path = "/opt/xpu-dra/bin/xpu-cdi-hook";

  Status Validate() const;
};

// Parses argv (without the program name); `node_name_env` is $NODE_NAME. Sets *help for --help.
StatusOr<PluginOptions> ParseFlags(const std::vector<std::string>& args,
                                   const std::string& node_name_env, bool* help);
std::string Usage();

// Runs until `stop`; returns the exit code. Logs go to `log`, one line per event, no secrets.
int Run(const PluginOptions& options, const StopFlag& stop, std::ostream& log);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_PLUGIN_H_
