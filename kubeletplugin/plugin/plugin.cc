#include "kubeletplugin/plugin/plugin.h"

#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/validation.h"
#include "base/clock.h"
#include "base/flags.h"
#include "base/log.h"
#include "kubeletplugin/driver/partitions.h"
#include "kubeletplugin/driverfiles/driver_files.h"
#include "kubeletplugin/plugin/node_plugin.h"

namespace xpu::plugin {
Status PluginOptions::Validate() const {
  if (node_name.empty()) {
    return InvalidArgumentError("--node-name (or NODE_NAME) is required");
  }
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(node_name, "--node-name"));
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(driver_name, "--driver-name"));
  RETURN_IF_ERROR(api::ValidateDnsLabel(ns, "--namespace"));
  if (partition_fallback != "whole" && partition_fallback != "existing" &&
      partition_fallback != "layout") {
    return InvalidArgumentError("--partition-fallback: \"" + partition_fallback +
                                "\" is not whole, existing or layout");
  }
  if ((partition_fallback == "layout") != !partition_layout.empty()) {
    return InvalidArgumentError(
        "--partition-layout is given with --partition-fallback layout, and only then");
  }
  if (!partition_layout.empty()) {
    RETURN_IF_ERROR(ParsePartitionLayout(partition_layout, "--partition-layout").status());
  }
  RETURN_IF_ERROR(driverfiles::ParsePolicy(cdi_driver_files, "--cdi-driver-files").status());
  if (cdi_hook_path.empty() || cdi_hook_path[0] != '/') {
    return InvalidArgumentError("--cdi-hook-path: must be an absolute path, got \"" +
                                cdi_hook_path + "\"");
  }
  if (host_root.empty()) return InvalidArgumentError("--host-root: must not be empty");
  if (std::chrono::duration_cast<std::chrono::milliseconds>(lease_duration) <= lease_renew) {
    return InvalidArgumentError("--lease-renew must be shorter than --lease-duration");
  }
  if (!plugin_dir.empty() && plugin_dir[0] != '/') {  // empty: the kubelet's default
    return InvalidArgumentError("--plugin-dir: must be an absolute path, got \"" + plugin_dir +
                                "\"");
  }
  for (const auto& [flag, dir] :
       {std::pair{"--plugin-registry-dir", registry_dir}, std::pair{"--cdi-dir", cdi_dir},
        std::pair{"--state-dir", state_dir}}) {
    if (dir.empty() || dir[0] != '/') {
      return InvalidArgumentError(std::string(flag) + ": must be an absolute path, got \"" + dir +
                                  "\"");
    }
  }
  if (!rolling_update_uid.empty()) {
    RETURN_IF_ERROR(api::ValidateDnsSubdomain(rolling_update_uid, "--rolling-update-uid"));
  }
  RETURN_IF_ERROR(CheckApiRate(qps, burst));
  if (health_recovery_settle.count() < 0) {
    return InvalidArgumentError("--health-recovery-settle must not be negative");
  }
  if (claim_status_interval.count() < 0 ||
      (claim_status_interval.count() > 0 && claim_status_interval < std::chrono::seconds(1))) {
    return InvalidArgumentError("--claim-status-interval: must be 0 (metrics only) or at least 1s");
  }
  if (health_resend >= std::chrono::seconds(30)) {
    return InvalidArgumentError(
        "--health-resend must be shorter than the kubelet's 30 s health timeout");
  }
  return Logger::CheckLevelFlag(log_level);
}

namespace {

std::vector<Flag> PluginFlags(PluginOptions* o) {
  return {
      {"--node-name", "NAME", "this node (default: $NODE_NAME)", StringFlag(&o->node_name)},
      KubeconfigFlag(&o->kubeconfig),
      DriverNameFlag(&o->driver_name),
      {"--host-root", "DIR", "where the host's /sys, /dev, /proc and /etc are (default /)",
       StringFlag(&o->host_root)},
      {"--vendor-lib-dir", "DIR",
       "searched first for libnvidia-ml.so.1 and libdcmi.so\n"
       "(repeatable; default: the host root's usr/lib folders)",
       ValueFlag([o](const std::string& dir) {
         o->vendor_lib_dirs.push_back(dir);
         return OkStatus();
       })},
      {"--namespace", "NS", "the driver's namespace, for the Lease (default xpu-dra)",
       StringFlag(&o->ns)},
      {"--rediscover", "DURATION", "rediscovery period (default 60s; also on /dev changes)",
       DurationFlag(&o->rediscover)},
      {"--lease-renew", "DURATION", "Lease renewal period (default 5s)",
       DurationFlag(&o->lease_renew)},
      {"--lease-duration", "SECS", "Lease duration (default 15)",
       [o](FlagReader& flags) -> Status {
         ASSIGN_OR_RETURN(const auto d, flags.Duration());
         o->lease_duration = std::chrono::duration_cast<std::chrono::seconds>(d);
         return OkStatus();
       }},
      {"--plugin-dir", "DIR",
       "the DRA socket's directory (default\n"
       "/var/lib/kubelet/plugins/<driver>)",
       StringFlag(&o->plugin_dir)},
      {"--plugin-registry-dir", "DIR",
       "the kubelet's plugin registry (default\n"
       "/var/lib/kubelet/plugins_registry)",
       StringFlag(&o->registry_dir)},
      {"--cdi-dir", "DIR", "where CDI specs of prepared claims go (default /var/run/cdi)",
       StringFlag(&o->cdi_dir)},
      {"--state-dir", "DIR", "the checkpoint's directory (default /var/lib/xpu-dra)",
       StringFlag(&o->state_dir)},
      {"--metrics-addr", "ADDR", "/metrics, /healthz, /readyz (default :9400; \"\" disables)",
       StringFlag(&o->metrics_addr)},
      {"--rolling-update-uid", "UID",
       "the pod's uid: per-pod socket names for a rolling update\n"
       "(kubelet >= 1.33), prepares serialised across instances",
       StringFlag(&o->rolling_update_uid)},
      {"--health-interval", "DURATION", "device health probe period (default 5s)",
       DurationFlag(&o->health_interval)},
      {"--health-resend", "DURATION", "health stream resend period (default 10s)",
       DurationFlag(&o->health_resend)},
      {"--health-recovery-settle", "DURATION",
       "a GPU made unhealthy by a fatal XID is healthy again once\n"
       "NVML answers for it and no fatal XID came for this long\n"
       "(default 60s)",
       DurationFlag(&o->health_recovery_settle)},
      {"--telemetry-interval", "DURATION",
       "device telemetry period (default 10s; 0: none, and no\n"
       "energy per claim); at least 1 Hz while a claim is held",
       DurationFlag(&o->telemetry_interval)},
      {"--claim-status-interval", "DURATION",
       "write energy per claim into the claim's status.devices\n"
       "at most this often while held, and once at unprepare\n"
       "(default 30s; 0: metrics only)",
       [o](FlagReader& flags) -> Status {  // a duration, or 0
         ASSIGN_OR_RETURN(const std::string v, flags.Value());
         if (v == "0") {
           o->claim_status_interval = std::chrono::milliseconds::zero();
           return OkStatus();
         }
         ASSIGN_OR_RETURN(o->claim_status_interval, ParseDuration("--claim-status-interval", v));
         return OkStatus();
       }},
      QpsFlag(&o->qps),
      BurstFlag(&o->burst),
      {"--claim-gc", "DURATION", "unprepare claims deleted from the API (default 60s)",
       DurationFlag(&o->claim_gc)},
      {"--cdi-driver-files", "auto|off|VENDOR=auto|off,...",
       "whether a claim's CDI spec carries the vendor's user-space\n"
       "driver (libraries, tools, firmware); off: the vendor's\n"
       "runtime hook must provide it (default auto)",
       StringFlag(&o->cdi_driver_files)},
      {"--cdi-hook-path", "PATH",
       "the host path of xpu-cdi-hook, named by the specs\n"
       "(default /opt/xpu-dra/bin/xpu-cdi-hook)",
       StringFlag(&o->cdi_hook_path)},
      {"--device-metadata", "BOOL",
       "write device metadata files for the containers (KEP-5304,\n"
       "Kubernetes 1.36+; default false)",
       BoolFlag(&o->device_metadata)},
      {"--node-checklist", "BOOL",
       "run the node checklist (xpuctl doctor) at start and publish\n"
       "it as the NodeChecklist condition (default true)",
       BoolFlag(&o->node_checklist)},
      {"--node-checklist-interval", "DURATION",
       "run the node checklist again this often (a driver upgraded,\n"
       "IOMMU or permissions changed); 0: at start only (default 10m)",
       DurationFlag(&o->node_checklist_interval)},
      {"--partition-fallback", "whole|existing|layout",
       "where the API server cannot carry partitions: serve a\n"
       "partitionable device whole, or the partitions that exist on\n"
       "it as plain devices, or those after making --partition-layout\n"
       "at start (default whole)",
       StringFlag(&o->partition_fallback)},
      {"--partition-layout", "LIST",
       "with --partition-fallback layout: PROFILE*COUNT,... made at\n"
       "start on every partitionable device with that profile\n"
       "(vir05_1c_16g*4,1g.18gb*7); never destroyed by the plugin",
       StringFlag(&o->partition_layout)},
      LogLevelFlag(&o->log_level),
  };
}

}  // namespace

std::string Usage() {
  PluginOptions unused;
  return "usage: xpu-dra-plugin [flags]\n"
         "The xpu-dra node plugin: discovers the node's accelerators, publishes its\n"
         "NodeInventory (xpu.dra.dev/v1alpha1) and renews the plugin Lease.\n" +
         FlagTableUsage(PluginFlags(&unused), 24);
}

StatusOr<PluginOptions> ParseFlags(const std::vector<std::string>& args,
                                   const std::string& node_name_env, bool* help) {
  PluginOptions o;
  o.node_name = node_name_env;
  ASSIGN_OR_RETURN(*help, ParseFlagTable(args, PluginFlags(&o)));
  return o;
}

int Run(const PluginOptions& options, const StopFlag& stop, std::ostream& log) {
  NodePlugin plugin(options, stop, log);
  if (const int code = plugin.Start(); code != 0) return code;
  Clock& clock = RealClock();
  std::thread health_thread([&] { plugin.HealthLoop(clock); });
  std::thread telemetry_thread([&] { plugin.TelemetryLoop(clock); });
  std::thread xid_thread([&] { plugin.XidLoop(clock); });
  std::thread status_thread([&] { plugin.ClaimStatusLoop(clock); });
  std::thread checklist_thread([&] { plugin.ChecklistLoop(clock); });
  plugin.PublishLoop();
  plugin.Finish();
  checklist_thread.join();
  health_thread.join();
  telemetry_thread.join();
  xid_thread.join();
  status_thread.join();
  plugin.Stop();
  return 0;
}

}  // namespace xpu::plugin
