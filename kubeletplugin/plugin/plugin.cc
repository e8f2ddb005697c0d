#include "kubeletplugin/plugin/plugin.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "api/client/client.h"
#include "api/partitions.h"
#include "api/validation.h"
#include "base/clock.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/metrics/http_server.h"
#include "base/metrics/metrics.h"
#include "base/mutex.h"
#include "base/time.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/telemetry.h"
#include "kubeletplugin/discovery/xid_events.h"
#include "kubeletplugin/doctor/doctor.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driverfiles/driver_files.h"
#include "kubeletplugin/grpc/kubelet_server.h"
#include "kubeletplugin/plugin/device_metrics.h"
#include "kubeletplugin/plugin/metrics.h"
#include "kubeletplugin/plugin/xid_health.h"
#include "kubeletplugin/publisher/publisher.h"

namespace xpu::plugin {
namespace {

// Watches <host-root>/dev for device nodes coming and going; sets *wake on a change.
class DevWatcher {
 public:
  DevWatcher(const std::string& dev_dir, std::atomic<bool>* wake) : wake_(wake) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0) {
      watch_ = inotify_add_watch(fd_, dev_dir.c_str(),
                                 IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB);
    }
  }
  ~DevWatcher() {
    if (fd_ >= 0) ::close(fd_);
  }
  DevWatcher(const DevWatcher&) = delete;
  DevWatcher& operator=(const DevWatcher&) = delete;
  bool ok() const { return fd_ >= 0 && watch_ >= 0; }
  // Drains pending events; true when there were any.
  bool Poll() {
    if (!ok()) return false;
    alignas(inotify_event) char buf[4096];
    bool any = false;
    while (::read(fd_, buf, sizeof(buf)) > 0) any = true;
    if (any) wake_->store(true);
    return any;
  }

 private:
  int fd_ = -1;
  int watch_ = -1;
  std::atomic<bool>* wake_;
};

// The entries of `layout` whose profile `p` has, as written ("vir05_1c_16g*4").
std::string LayoutOf(const std::vector<PartitionLayoutEntry>& layout,
                     const api::InventoryPartitioning& p) {
  std::string out;
  for (const PartitionLayoutEntry& e : layout) {
    if (api::FindProfile(p, e.profile) == nullptr) continue;
    if (!out.empty()) out += ",";
    out += e.profile + "*" + std::to_string(e.count);
  }
  return out.size() <= 256 ? out : out.substr(0, out.rfind(',', 256));
}

}  // namespace

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
  if (health_recovery_settle.count() < 0) {
    return InvalidArgumentError("--health-recovery-settle must not be negative");
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
      {"--telemetry-interval", "DURATION", "device telemetry period (default 10s; 0: none)",
       DurationFlag(&o->telemetry_interval)},
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

namespace {

// The latest inventory, shared by the publisher, the driver and the health monitor: discovery's
// answer with what the XID watcher knows laid over it. Discovery's own answer is kept, so a
// health change between probes is published without a new discovery.
// The node checklist's condition: set once by its thread, read by the inventory overlay.
class ChecklistHolder {
 public:
  void Set(api::Condition condition) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    condition_ = std::move(condition);
  }
  std::optional<api::Condition> Get() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return condition_;
  }

 private:
  mutable Mutex mu_;
  std::optional<api::Condition> condition_ GUARDED_BY(mu_);
};

class InventoryHolder {
 public:
  using Overlay = std::function<void(api::NodeInventory*)>;
  explicit InventoryHolder(Overlay overlay) : overlay_(std::move(overlay)) {}

  // Keeps `discovered` and returns (and holds) it with the overlay applied.
  api::NodeInventory Set(api::NodeInventory discovered) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    discovered_ = std::make_shared<const api::NodeInventory>(std::move(discovered));
    return ApplyLocked();
  }
  // The last discovery with the overlay applied anew; nullopt before the first discovery.
  std::optional<api::NodeInventory> Reapply() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (discovered_ == nullptr) return std::nullopt;
    return ApplyLocked();
  }
  std::shared_ptr<const api::NodeInventory> Get() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return latest_;
  }

 private:
  api::NodeInventory ApplyLocked() REQUIRES(mu_) {
    api::NodeInventory out = *discovered_;
    overlay_(&out);
    latest_ = std::make_shared<const api::NodeInventory>(out);
    return out;
  }

  const Overlay overlay_;
  mutable Mutex mu_;
  std::shared_ptr<const api::NodeInventory> discovered_ GUARDED_BY(mu_);
  std::shared_ptr<const api::NodeInventory> latest_ GUARDED_BY(mu_);
};

// The inventory's name of the device at `pci_address`; "" when it has none there.
std::string DeviceAt(const api::NodeInventory* inventory, const std::string& pci_address) {
  if (inventory == nullptr) return "";
  for (const api::InventoryDevice& d : inventory->status.devices) {
    if (d.pci_address == pci_address) return d.name;
  }
  return "";
}

std::string PciAddressOf(const api::NodeInventory* inventory, const std::string& device) {
  if (inventory == nullptr) return "";
  for (const api::InventoryDevice& d : inventory->status.devices) {
    if (d.name == device) return d.pci_address;
  }
  return "";
}

bool HasVendor(const api::NodeInventory* inventory, std::string_view vendor) {
  return inventory != nullptr &&
         std::any_of(inventory->status.devices.begin(), inventory->status.devices.end(),
                     [&](const api::InventoryDevice& d) { return d.vendor == vendor; });
}

}  // namespace

int Run(const PluginOptions& options, const std::atomic<bool>& stop, std::ostream& log_out) {
  Logger log(log_out, options.log_level);
  metrics::Registry registry;
  PluginMetrics m(registry);

  auto config = api::client::ResolveClusterConfig(options.kubeconfig);
  if (!config.ok()) {
    log.Error(config.status().message());
    return 1;
  }
  log.Info("node " + options.node_name + ", API server " + config->Describe());
  api::client::ClientOptions client_options;
  client_options.observe = [&m](std::string_view verb, int code) {
    m.api_requests.Inc({std::string(verb), std::to_string(code)});
  };
  auto client = api::client::Client::Create(*config, client_options);
  if (!client.ok()) {
    log.Error(client.status().message());
    return 1;
  }

  // Discovery, timed and kept for everyone who needs the devices.
  discovery::DiscoveryOptions discover;
  discover.host_root = options.host_root;
  // No --vendor-lib-dir: the libraries the host's driver installed, under the host root.
  const std::vector<std::string> vendor_lib_dirs =
      options.vendor_lib_dirs.empty() ? discovery::HostLibraryDirs(options.host_root)
                                      : options.vendor_lib_dirs;
  discover.vendor_lib_dirs = vendor_lib_dirs;
  discover.node_name = options.node_name;
  if (Status s = discover.Validate(); !s.ok()) {
    log.Error(s.message());
    return 2;
  }
  // The node checklist (xpuctl doctor): once, on its own thread after start (below), since it runs
  // a discovery of its own, which before registration would double the time to serving. Its
  // condition rides on every inventory published after it finished.
  ChecklistHolder checklist;
  // Fatal XIDs seen between probes, and their verified recoveries (the XID thread below).
  XidHealth xid_health(RealClock(), options.health_recovery_settle);
  // The driver, once made, pins the instance numbers of the partitions it recorded.
  std::atomic<const Driver*> pins{nullptr};
  // The fallback layout, read once: made at start, named in every published inventory.
  std::vector<PartitionLayoutEntry> layout;
  if (!options.partition_layout.empty()) {
    StatusOr<std::vector<PartitionLayoutEntry>> parsed =
        ParsePartitionLayout(options.partition_layout, "--partition-layout");
    if (!parsed.ok()) {
      log.Error(parsed.status().message());
      return 2;
    }
    layout = *std::move(parsed);
  }
  InventoryHolder inventory(
      [&xid_health, &checklist, &pins, &options, &layout](api::NodeInventory* inv) {
        if (const Driver* d = pins.load()) PinPartitions(d->PartitionRecords(), inv);
        for (api::InventoryDevice& d : inv->status.devices) {
          if (!d.partitioning) continue;
          d.partitioning->fallback = options.partition_fallback;
          d.partitioning->layout = LayoutOf(layout, *d.partitioning);
        }
        if (std::optional<api::Condition> condition = checklist.Get()) {
          std::erase_if(inv->status.conditions,
                        [](const api::Condition& c) { return c.type == "NodeChecklist"; });
          inv->status.conditions.push_back(*std::move(condition));
        }
        ApplyXidFaults(xid_health.Faults(), xid_health.settle(), FormatTime(RealClock().WallNow()),
                       inv);
      });
  HealthMonitor health(options.node_name);
  std::atomic<bool> wake{false};
  auto update_health = [&](const api::NodeInventory& published) {
    if (health.Update(published)) {
      uint64_t generation = 0;
      m.SetHealth(health.Snapshot(&generation));
      wake = true;  // republish the inventory with the new health
    }
  };
  auto discover_now = [&]() -> StatusOr<api::NodeInventory> {
    metrics::ScopeTimer timer(m.discovery_seconds);
    StatusOr<api::NodeInventory> inv = discovery::Discover(discover);
    if (!inv.ok()) {
      m.discovery_errors.Inc();
      return inv;
    }
    api::NodeInventory published = inventory.Set(*std::move(inv));
    update_health(published);
    return published;
  };
  if (StatusOr<api::NodeInventory> first = discover_now(); !first.ok()) {
    log.Error("discover: " + first.status().message() + "; retrying");
  } else {
    log.Info("discovered " + std::to_string(first->status.devices.size()) + " devices, rule set " +
             first->status.rule_set);
  }

  // The driver: the checkpoint is reconciled before anything is served.
  DriverOptions driver_options;
  driver_options.driver_name = options.driver_name;
  driver_options.node_name = options.node_name;
  driver_options.host_root = options.host_root;
  driver_options.cdi_dir = options.cdi_dir;
  driver_options.state_dir = options.state_dir;
  driver_options.device_metadata = options.device_metadata;
  driver_options.driver_files =
      driverfiles::ParsePolicy(options.cdi_driver_files, "--cdi-driver-files").value();
  driver_options.cdi_hook_path = options.cdi_hook_path;
  driver_options.plugin_dir = options.plugin_dir.empty()
                                  ? "/var/lib/kubelet/plugins/" + options.driver_name
                                  : options.plugin_dir;
  if (Status s = driver_options.Validate(); !s.ok()) {
    log.Error(s.message());
    return 2;
  }
  // The specs name the hook on the host; the container runtime fails a container whose hook is
  // missing, so say so now rather than at the first pod.
  const bool files_on = driver_options.driver_files.fallback == driverfiles::Mode::kAuto ||
                        !driver_options.driver_files.by_vendor.empty();
  if (discovery::HostRoot host(options.host_root);
      files_on && !host.Exists(options.cdi_hook_path.substr(1))) {
    log.Log("warning", "driver files: xpu-cdi-hook is not installed at " + options.cdi_hook_path +
                           " (host root " + options.host_root +
                           "); containers given driver files will not start until it is "
                           "(plugin.cdi.hookDir, --cdi-hook-path)");
  }
  Driver driver(
      driver_options, client->get(), [&inventory] { return inventory.Get(); },
      [&log](const std::string& line) { log.Info(line); });
  // Partitions created at prepare: DCMI's vNPUs, NVML's MIG instances and DMI's vHCUs, where the
  // library can make them; silent where it cannot, unless the inventory has partitioning of that
  // kind enabled.
  using OpenPartitions =
      StatusOr<std::unique_ptr<discovery::PartitionBackend>> (*)(const std::vector<std::string>&);
  for (const auto& [kind, what, open] :
       {std::tuple<std::string, std::string, OpenPartitions>{"vnpu", "vNPUs",
                                                             &discovery::OpenDcmiPartitions},
        std::tuple<std::string, std::string, OpenPartitions>{"mig", "MIG instances",
                                                             &discovery::OpenNvmlPartitions},
        std::tuple<std::string, std::string, OpenPartitions>{"vhcu", "vHCUs",
                                                             &discovery::OpenHydmiPartitions}}) {
    StatusOr<std::unique_ptr<discovery::PartitionBackend>> backend = open(vendor_lib_dirs);
    if (backend.ok()) {
      driver.AddPartitionBackend(std::move(backend).value());
    } else if (std::shared_ptr<const api::NodeInventory> inv = inventory.Get();
               inv != nullptr && std::any_of(inv->status.devices.begin(), inv->status.devices.end(),
                                             [&wanted = kind](const api::InventoryDevice& d) {
                                               return d.partitioning && d.partitioning->enabled &&
                                                      d.partitioning->kind == wanted;
                                             })) {
      log.Info(what + " will not be created at prepare: " + backend.status().message());
    }
  }
  if (Status s = driver.Start(); !s.ok()) {
    log.Error("refusing to serve: " + s.message() +
              " (the checkpoint must be repaired or removed by an operator; prepared claims "
              "would otherwise be forgotten)");
    return 3;
  }
  pins = &driver;
  if (!layout.empty() && driver.ApplyPartitionLayout(layout) > 0) {
    if (StatusOr<api::NodeInventory> again = discover_now(); !again.ok()) {
      log.Error("discover after the partition layout: " + again.status().message());
    }
  }
  if (std::optional<api::NodeInventory> pinned = inventory.Reapply()) update_health(*pinned);
  m.Collect(driver.stats());
  InstrumentedService service(&driver, &m);

  // The API side: the inventory and the Lease (Run below, once the sockets are served).
  PublisherOptions publish;
  publish.node_name = options.node_name;
  publish.ns = options.ns;
  publish.lease_renew = options.lease_renew;
  publish.lease_duration = options.lease_duration;
  publish.rediscover = options.rediscover;
  if (Status s = publish.Validate(); !s.ok()) {
    log.Error(s.message());
    return 2;
  }
  InventoryPublisher publisher(client->get(), publish, discover_now);

  // Metrics, liveness and readiness.
  std::atomic<bool> serving{false};
  metrics::HttpServerOptions endpoint;
  endpoint.address = options.metrics_addr;
  // Device telemetry: sampled on its own thread (below); the scrape appends the last rendering.
  DeviceTelemetrySampler telemetry({.node_name = options.node_name,
                                    .host_root = options.host_root,
                                    .vendor_lib_dirs = vendor_lib_dirs},
                                   [&inventory] { return inventory.Get(); });
  endpoint.metrics = [&] {
    m.Collect(driver.stats());
    m.Collect(publisher.stats());
    return registry.Render() + telemetry.Rendered();
  };
  endpoint.readyz = [&]() -> Status {
    if (!serving) return UnavailableError("the kubelet sockets are not served yet");
    if (inventory.Get() == nullptr) return UnavailableError("no successful discovery yet");
    return OkStatus();
  };
  auto http = metrics::StartHttpServer(std::move(endpoint), log);
  if (!http.ok()) {
    log.Error(http.status().message());
    return 1;
  }

  // The kubelet's sockets: DRA first, then registration.
  KubeletServerOptions server_options;
  server_options.driver_name = options.driver_name;
  server_options.plugin_dir = options.plugin_dir;  // empty: the server's default
  server_options.registry_dir = options.registry_dir;
  server_options.rolling_update_uid = options.rolling_update_uid;
  server_options.health_resend = options.health_resend;
  server_options.log = [&log](const std::string& line) {
    log.Log(line.starts_with("ERROR") ? "error" : "info", line);
  };
  KubeletServer server(server_options);
  if (Status s = server.Start(&service, &health); !s.ok()) {
    log.Error(s.message());
    return 1;
  }
  serving = true;
  log.Info("serving DRA on " + server.dra_socket() + ", registration on " +
           server.registration_socket());

  std::string dev = options.host_root;
  if (dev.empty() || dev.back() != '/') dev += "/";
  dev += "dev";
  DevWatcher watcher(dev, &wake);
  if (!watcher.ok()) {
    log.Log("warning",
            "watch " + dev + ": " + std::strerror(errno) + "; periodic rediscovery only");
  }
  // Health: probe on its period (and on /dev changes), and collect claims deleted from the API.
  std::atomic<bool> done{false};
  std::thread health_thread([&] {
    Clock& clock = RealClock();
    Ticker probe(clock, options.health_interval);
    Ticker gc(clock, options.claim_gc, Ticker::kAtOnce);  // claims deleted while we were down
    while (!stop.load() && !done.load()) {
      if (watcher.Poll()) log.Info("device nodes changed under " + dev + ": rediscovering");
      if (probe.Due()) {
        if (StatusOr<api::NodeInventory> inv = discover_now(); !inv.ok()) {
          log.Error("discover: " + inv.status().message());
        }
      }
      if (gc.Due()) {
        if (Status s = driver.CollectDeletedClaims(); !s.ok()) log.Error(s.message());
      }
      m.registered.Set(server.registered() ? 1 : 0);
      // Short naps: the /dev watcher is polled, and done is seen promptly.
      clock.Sleep(std::chrono::milliseconds(100), done);
    }
  });
  // Telemetry: apart from the health loop, so that a slow vendor library delays neither.
  std::thread telemetry_thread([&] {
    if (options.telemetry_interval.count() <= 0) return;
    Clock& clock = RealClock();
    Ticker sample(clock, options.telemetry_interval, Ticker::kAtOnce);
    std::vector<std::string> logged;  // errors are logged when they change, not every period
    while (!stop.load() && !done.load()) {
      if (sample.Due()) {
        metrics::ScopeTimer timer(m.telemetry_seconds);
        telemetry.Sample();
        if (std::vector<std::string> errors = telemetry.errors(); errors != logged) {
          for (const std::string& e : errors) log.Log("warning", "telemetry: " + e);
          logged = std::move(errors);
        }
      }
      clock.Sleep(std::chrono::milliseconds(100), done);
    }
  });
  // XIDs: NVML's event set waited on continuously, so a fatal XID makes its GPU unhealthy at
  // once (discovery's probe sees only what arrives while it runs), and faulted GPUs are checked
  // every --health-interval until they recover.
  std::thread xid_thread([&] {
    Clock& clock = RealClock();
    std::unique_ptr<discovery::XidEventSource> source;
    Clock::SteadyTime opened_at{};
    Ticker check(clock, options.health_interval);
    std::string logged;  // the open error last logged
    while (!stop.load() && !done.load()) {
      const std::shared_ptr<const api::NodeInventory> inv = inventory.Get();
      if (!HasVendor(inv.get(), "nvidia")) {  // nothing to watch (yet)
        clock.Sleep(std::chrono::seconds(1), done);
        continue;
      }
      // A library that failed to open is tried again a minute later (a driver installed later).
      if (source == nullptr ||
          (!source->status().loaded && clock.Now() - opened_at > std::chrono::minutes(1))) {
        source = nullptr;  // the old handle goes first: one initialisation at a time
        source = discovery::OpenNvmlXidEvents(vendor_lib_dirs);
        opened_at = clock.Now();
        m.xid_watched.Set(static_cast<double>(source->watched()));
        if (const std::string& e = source->status().error; !e.empty() && e != logged) {
          log.Log("warning", "XID watch: nvml: " + e);
          logged = e;
        } else if (source->status().loaded) {
          log.Info("XID watch: " + std::to_string(source->watched()) + " GPUs");
        }
      }
      bool changed = false;
      // Waits of a second at most, so that `done` is seen promptly; shorter while a faulted GPU
      // is due for its check.
      std::chrono::milliseconds wait = std::chrono::seconds(1);
      if (!xid_health.Faulted().empty()) {
        wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(check.Left()),
                          std::chrono::milliseconds(10), wait);
      }
      StatusOr<std::vector<discovery::XidEvent>> events =
          source->status().loaded
              ? source->Wait(wait)
              : StatusOr<std::vector<discovery::XidEvent>>(UnavailableError("nvml not loaded"));
      if (!events.ok()) {
        clock.Sleep(std::chrono::seconds(1), done);  // a failing wait may answer at once
      } else {
        for (const discovery::XidEvent& e : *events) {
          const std::string device = DeviceAt(inv.get(), e.pci_address);
          m.xid_fatal.Inc({std::to_string(e.xid)});
          log.Log("warning", "XID " + std::to_string(e.xid) + " on " +
                                 (device.empty() ? e.pci_address : device) +
                                 (device.empty() ? " (not in the inventory)" : ": unhealthy"));
          if (!device.empty()) changed = xid_health.OnXid(device, e.xid) || changed;
        }
      }
      if (check.Due()) {
        for (const std::string& device : xid_health.Faulted()) {
          const std::string pci = PciAddressOf(inv.get(), device);
          const Status usable =
              pci.empty() ? NotFoundError("not in the inventory") : source->Check(pci);
          const XidHealth::Checked checked = xid_health.OnCheck(device, usable);
          changed = changed || checked != XidHealth::Checked::kUnchanged;
          if (checked == XidHealth::Checked::kRecovered) {
            m.device_recoveries.Inc();
            log.Info(device + ": recovered from its fatal XID, healthy again");
          }
        }
      }
      // Published at once: the health stream now, the inventory by the woken publisher.
      if (changed) {
        if (std::optional<api::NodeInventory> published = inventory.Reapply()) {
          update_health(*published);
        }
        wake = true;
      }
    }
  });
  // The support matrix is the controller's: its check is skipped here.
  std::thread checklist_thread([&] {
    if (!options.node_checklist) return;
    doctor::DoctorOptions checks;
    checks.vendor_lib_dirs = vendor_lib_dirs;
    checks.node_name = options.node_name;
    checks.driver_files = driver_options.driver_files;
    checks.cdi_hook_path = options.cdi_hook_path;
    StatusOr<doctor::DoctorReport> report =
        doctor::RunChecks(discovery::HostRoot(options.host_root), checks);
    if (!report.ok()) {
      log.Log("warning", "node checklist: " + report.status().message());
      return;
    }
    for (const doctor::CheckResult& c : report->checks) {
      if (c.status != doctor::CheckStatus::kFail && c.status != doctor::CheckStatus::kWarn) {
        continue;
      }
      log.Log("warning", "node checklist: " + std::string(doctor::CheckStatusName(c.status)) + " " +
                             c.name + ": " + c.evidence);
    }
    checklist.Set(doctor::ChecklistCondition(*report, FormatTime(RealClock().WallNow())));
    if (inventory.Reapply()) wake = true;  // published with the condition
  });
  publisher.Run(stop, &wake, [&log](const std::string& line) { log.Info(line); });
  done = true;
  checklist_thread.join();
  health_thread.join();
  telemetry_thread.join();
  xid_thread.join();
  server.Stop();
  if (*http) (*http)->Stop();
  log.Info("stopped after " + std::to_string(publisher.stats().inventory_writes) +
           " inventory writes");
  return 0;
}

}  // namespace xpu::plugin
