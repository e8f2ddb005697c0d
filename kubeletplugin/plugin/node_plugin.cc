#include "kubeletplugin/plugin/node_plugin.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "api/client/client.h"
#include "api/client/kubeconfig.h"
#include "api/partitions.h"
#include "base/metrics/http_server.h"
#include "base/mutex.h"
#include "base/time.h"
#include "kubeletplugin/discovery/host_root.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/telemetry.h"
#include "kubeletplugin/discovery/xid_events.h"
#include "kubeletplugin/doctor/doctor.h"
#include "kubeletplugin/driverfiles/driver_files.h"
#include "kubeletplugin/grpc/kubelet_server.h"

namespace xpu::plugin {
namespace {
namespace node_plugin_cc {

// The energy writes' own client: its rate limit (lowered to --qps and --burst where those are).
constexpr double kStatusQps = 10;
constexpr int kStatusBurst = 20;
// The final energy writes at a stop, at most.
constexpr std::chrono::seconds kFinalWritesAtStop{5};

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

std::vector<std::string> VendorLibDirs(const PluginOptions& options) {
  return options.vendor_lib_dirs.empty() ? discovery::HostLibraryDirs(options.host_root)
                                         : options.vendor_lib_dirs;
}

}  // namespace node_plugin_cc
}  // namespace

// The node checklist's condition: set by its thread, read by the inventory overlay.
class NodePlugin::ChecklistHolder {
 public:
  // Keeps `condition`, with the held one's lastTransitionTime while the status is the same (a
  // transition is a change of status, as in Kubernetes' condition helpers). True when that
  // changed what is held.
  bool Set(api::Condition condition) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (condition_) api::CarryTransitionTime(*condition_, &condition);
    if (condition_ == condition) return false;
    condition_ = std::move(condition);
    return true;
  }
  std::optional<api::Condition> Get() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return condition_;
  }

 private:
  mutable Mutex mu_;
  std::optional<api::Condition> condition_ GUARDED_BY(mu_);
};

// The latest inventory, shared by the publisher, the driver and the health monitor: discovery's
// answer with what the XID watcher knows laid over it. Discovery's own answer is kept, so a
// health change between probes is published without a new discovery.
class NodePlugin::InventoryHolder {
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

// Watches <host-root>/dev for device nodes coming and going; sets *wake on a change.
class NodePlugin::DevWatcher {
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

// The XID loop's own state.
struct NodePlugin::XidWatch {
  std::unique_ptr<discovery::XidEventSource> source;
  Clock::SteadyTime opened_at{};
  std::string logged;  // the open error last logged
};

NodePlugin::NodePlugin(PluginOptions options, const StopFlag& stop, std::ostream& log, Clock& clock)
    : options_(std::move(options)),
      stop_(stop),
      clock_(clock),
      log_(log, options_.log_level),
      m_(registry_),
      vendor_lib_dirs_(node_plugin_cc::VendorLibDirs(options_)),
      checklist_(std::make_unique<ChecklistHolder>()),
      xid_health_(clock_, options_.health_recovery_settle),
      inventory_(std::make_unique<InventoryHolder>(
          [this](api::NodeInventory* inventory) { OverlayOn(inventory); })),
      health_(options_.node_name),
      energy_(clock_, {.period = options_.claim_status_interval}),
      trimmer_(clock_, std::chrono::milliseconds(200)),
      telemetry_({.node_name = options_.node_name,
                  .host_root = options_.host_root,
                  .vendor_lib_dirs = vendor_lib_dirs_},
                 [this] { return inventory_->Get(); }) {}

NodePlugin::~NodePlugin() = default;

void NodePlugin::OverlayOn(api::NodeInventory* inventory) {
  if (const Driver* d = pins_.load()) PinPartitions(d->PartitionRecords(), inventory);
  for (api::InventoryDevice& d : inventory->status.devices) {
    if (!d.partitioning) continue;
    d.partitioning->fallback = options_.partition_fallback;
    d.partitioning->layout = node_plugin_cc::LayoutOf(layout_, *d.partitioning);
  }
  if (std::optional<api::Condition> condition = checklist_->Get()) {
    std::erase_if(inventory->status.conditions,
                  [](const api::Condition& c) { return c.type == "NodeChecklist"; });
    inventory->status.conditions.push_back(*std::move(condition));
  }
  ApplyXidFaults(xid_health_.Faults(), xid_health_.settle(), FormatTime(clock_.WallNow()),
                 inventory);
}

int NodePlugin::Start() {
  if (const int code = Connect(); code != 0) return code;
  if (const int code = DiscoverFirst(); code != 0) return code;
  if (const int code = StartDriver(); code != 0) return code;
  if (const int code = StartPublisher(); code != 0) return code;
  return Serve();
}

int NodePlugin::Connect() {
  auto config = api::client::ResolveClusterConfig(options_.kubeconfig);
  if (!config.ok()) {
    log_.Error(config.status().message());
    return 1;
  }
  log_.Info("node " + options_.node_name + ", API server " + config->Describe());
  api::client::ClientOptions client_options;
  client_options.observe = [this](std::string_view verb, int code) {
    m_.api_requests.Inc({std::string(verb), std::to_string(code)});
  };
  client_options.qps = options_.qps;
  client_options.burst = options_.burst;
  auto client = api::client::Client::Create(*config, client_options);
  // Background writes (an energy account per claim, every --claim-status-interval while held and
  // once at unprepare: a GET and a PUT each) share nothing with the kubelet's calls: on the
  // kubelet's client they took two of its tokens per unprepare, and under churn a prepare's GET
  // waited 38 ms for the limiter behind them. At 10 requests/s a write falls behind, never the
  // pod.
  api::client::ClientOptions status_options = client_options;
  status_options.qps = options_.qps > 0 ? std::min(node_plugin_cc::kStatusQps, options_.qps)
                                        : node_plugin_cc::kStatusQps;
  status_options.burst = std::min(node_plugin_cc::kStatusBurst, options_.burst);
  auto status_client = api::client::Client::Create(*config, status_options);
  for (const auto* c : {&client, &status_client}) {
    if (!c->ok()) {
      log_.Error(c->status().message());
      return 1;
    }
  }
  client_ = *std::move(client);
  status_client_ = *std::move(status_client);
  return 0;
}

int NodePlugin::DiscoverFirst() {
  discover_.host_root = options_.host_root;
  discover_.vendor_lib_dirs = vendor_lib_dirs_;
  discover_.node_name = options_.node_name;
  if (Status s = discover_.Validate(); !s.ok()) {
    log_.Error(s.message());
    return 2;
  }
  if (!options_.partition_layout.empty()) {
    StatusOr<std::vector<PartitionLayoutEntry>> parsed =
        ParsePartitionLayout(options_.partition_layout, "--partition-layout");
    if (!parsed.ok()) {
      log_.Error(parsed.status().message());
      return 2;
    }
    layout_ = *std::move(parsed);
  }
  if (StatusOr<api::NodeInventory> first = DiscoverNow(); !first.ok()) {
    log_.Error("discover: " + first.status().message() + "; retrying");
  } else {
    log_.Info("discovered " + std::to_string(first->status.devices.size()) + " devices, rule set " +
              first->status.rule_set);
  }
  return 0;
}

StatusOr<api::NodeInventory> NodePlugin::DiscoverNow() {
  metrics::ScopeTimer timer(m_.discovery_seconds);
  StatusOr<api::NodeInventory> inv = discovery::Discover(discover_);
  if (!inv.ok()) {
    m_.discovery_errors.Inc();
    return inv;
  }
  api::NodeInventory published = inventory_->Set(*std::move(inv));
  UpdateHealth(published);
  return published;
}

void NodePlugin::UpdateHealth(const api::NodeInventory& published) {
  if (health_.Update(published)) {
    uint64_t generation = 0;
    const std::vector<DeviceHealth> health = health_.Snapshot(&generation);
    m_.SetHealth(health);
    for (const DeviceHealth& h : health) {
      energy_.OnHealth(h.pool, h.device, h.health == HealthState::kUnhealthy);
    }
    wake_ = true;  // republish the inventory with the new health
  }
}

int NodePlugin::StartDriver() {
  // The driver: the checkpoint is reconciled before anything is served.
  driver_options_.driver_name = options_.driver_name;
  driver_options_.node_name = options_.node_name;
  driver_options_.host_root = options_.host_root;
  driver_options_.cdi_dir = options_.cdi_dir;
  driver_options_.state_dir = options_.state_dir;
  driver_options_.device_metadata = options_.device_metadata;
  driver_options_.driver_files =
      driverfiles::ParsePolicy(options_.cdi_driver_files, "--cdi-driver-files").value();
  driver_options_.cdi_hook_path = options_.cdi_hook_path;
  driver_options_.plugin_dir = options_.plugin_dir.empty()
                                   ? "/var/lib/kubelet/plugins/" + options_.driver_name
                                   : options_.plugin_dir;
  if (Status s = driver_options_.Validate(); !s.ok()) {
    log_.Error(s.message());
    return 2;
  }
  // The specs name the hook on the host; the container runtime fails a container whose hook is
  // missing, so say so now rather than at the first pod.
  const bool files_on = driver_options_.driver_files.fallback == driverfiles::Mode::kAuto ||
                        !driver_options_.driver_files.by_vendor.empty();
  if (discovery::HostRoot host(options_.host_root);
      files_on && !host.Exists(options_.cdi_hook_path.substr(1))) {
    log_.Log("warning", "driver files: xpu-cdi-hook is not installed at " + options_.cdi_hook_path +
                            " (host root " + options_.host_root +
                            "); containers given driver files will not start until it is "
                            "(plugin.cdi.hookDir, --cdi-hook-path)");
  }
  driver_ = std::make_unique<Driver>(
      driver_options_, client_.get(), [this] { return inventory_->Get(); },
      [this](const std::string& line) { log_.Info(line); });
  AddPartitionBackends();
  if (Status s = driver_->Start(); !s.ok()) {
    log_.Error("refusing to serve: " + s.message() +
               " (the checkpoint must be repaired or removed by an operator; prepared claims "
               "would otherwise be forgotten)");
    return 3;
  }
  pins_ = driver_.get();
  if (!layout_.empty() && driver_->ApplyPartitionLayout(layout_) > 0) {
    if (StatusOr<api::NodeInventory> again = DiscoverNow(); !again.ok()) {
      log_.Error("discover after the partition layout: " + again.status().message());
    }
  }
  if (std::optional<api::NodeInventory> pinned = inventory_->Reapply()) UpdateHealth(*pinned);
  m_.Collect(driver_->stats());
  StartEnergy();
  service_ = std::make_unique<InstrumentedService>(energy_service_.get(), &m_, &trimmer_);
  return 0;
}

void NodePlugin::StartEnergy() {
  auto pci = [this](const std::string& pool, const std::string& device) {
    return pool == options_.node_name
               ? node_plugin_cc::PciAddressOf(inventory_->Get().get(), device)
               : std::string();
  };
  // Claims prepared before a restart: accounted from now, marked "since": "restart".
  for (const auto& [uid, c] : driver_->Snapshot().claims) {
    EnergyClaim claim{.ref = {.ns = c.ns, .name = c.name, .uid = uid}, .devices = {}};
    for (const checkpoint::Device& d : c.devices) {
      claim.devices.push_back({.pool = d.pool,
                               .device = d.device,
                               .pci_address = pci(d.pool, d.device),
                               .share_id = d.share_id});
    }
    energy_.Start(claim, "restart");
  }
  energy_service_ =
      std::make_unique<EnergyAccountingService>(driver_.get(), &energy_, clock_, std::move(pci));
  status_api_ = NewClaimStatusApi(status_client_.get());
  status_writer_ = std::make_unique<ClaimStatusWriter>(status_api_.get(), options_.driver_name);
  if (options_.telemetry_interval.count() <= 0) {
    log_.Log("warning",
             "--telemetry-interval 0: no device telemetry, so energy per claim reads zero");
  }
}

void NodePlugin::AddPartitionBackends() {
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
    StatusOr<std::unique_ptr<discovery::PartitionBackend>> backend = open(vendor_lib_dirs_);
    if (backend.ok()) {
      driver_->AddPartitionBackend(std::move(backend).value());
    } else if (std::shared_ptr<const api::NodeInventory> inv = inventory_->Get();
               inv != nullptr && std::any_of(inv->status.devices.begin(), inv->status.devices.end(),
                                             [&wanted = kind](const api::InventoryDevice& d) {
                                               return d.partitioning && d.partitioning->enabled &&
                                                      d.partitioning->kind == wanted;
                                             })) {
      log_.Info(what + " will not be created at prepare: " + backend.status().message());
    }
  }
}

int NodePlugin::StartPublisher() {
  // The API side: the inventory and the Lease (PublishLoop, once the sockets are served).
  PublisherOptions publish;
  publish.node_name = options_.node_name;
  publish.ns = options_.ns;
  publish.lease_renew = options_.lease_renew;
  publish.lease_duration = options_.lease_duration;
  publish.rediscover = options_.rediscover;
  publish.clock = &clock_;
  if (Status s = publish.Validate(); !s.ok()) {
    log_.Error(s.message());
    return 2;
  }
  publisher_ = std::make_unique<InventoryPublisher>(client_.get(), publish,
                                                    [this] { return DiscoverNow(); });
  return 0;
}

std::string NodePlugin::RenderMetrics() {
  if (driver_ != nullptr) m_.Collect(driver_->stats());
  if (publisher_ != nullptr) m_.Collect(publisher_->stats());
  m_.SetClaimEnergy(energy_.Accounts());
  return registry_.Render() + telemetry_.Rendered();
}

int NodePlugin::Serve() {
  // Metrics, liveness and readiness.
  metrics::HttpServerOptions endpoint;
  endpoint.address = options_.metrics_addr;
  endpoint.metrics = [this] { return RenderMetrics(); };
  endpoint.readyz = [this]() -> Status {
    if (!serving_) return UnavailableError("the kubelet sockets are not served yet");
    if (inventory_->Get() == nullptr) return UnavailableError("no successful discovery yet");
    return OkStatus();
  };
  auto http = metrics::StartHttpServer(std::move(endpoint), log_);
  if (!http.ok()) {
    log_.Error(http.status().message());
    return 1;
  }
  http_ = *std::move(http);

  // The kubelet's sockets: DRA first, then registration.
  KubeletServerOptions server_options;
  server_options.driver_name = options_.driver_name;
  server_options.plugin_dir = options_.plugin_dir;  // empty: the server's default
  server_options.registry_dir = options_.registry_dir;
  server_options.rolling_update_uid = options_.rolling_update_uid;
  server_options.health_resend = options_.health_resend;
  server_options.log = [this](const std::string& line) {
    log_.Log(line.starts_with("ERROR") ? "error" : "info", line);
  };
  server_ = std::make_unique<KubeletServer>(server_options);
  if (Status s = server_->Start(service_.get(), &health_); !s.ok()) {
    log_.Error(s.message());
    return 1;
  }
  serving_ = true;
  log_.Info("serving DRA on " + server_->dra_socket() + ", registration on " +
            server_->registration_socket());

  dev_ = options_.host_root;
  if (dev_.empty() || dev_.back() != '/') dev_ += "/";
  dev_ += "dev";
  watcher_ = std::make_unique<DevWatcher>(dev_, &wake_);
  if (!watcher_->ok()) {
    log_.Log("warning",
             "watch " + dev_ + ": " + std::strerror(errno) + "; periodic rediscovery only");
  }
  return 0;
}

void NodePlugin::HealthLoop(Clock& clock) {
  Ticker probe(clock, options_.health_interval);
  Ticker gc(clock, options_.claim_gc, Ticker::kAtOnce);  // claims deleted while we were down
  while (!Stopping()) {
    if (watcher_->Poll()) log_.Info("device nodes changed under " + dev_ + ": rediscovering");
    if (probe.Due()) {
      if (StatusOr<api::NodeInventory> inv = DiscoverNow(); !inv.ok()) {
        log_.Error("discover: " + inv.status().message());
      }
    }
    if (gc.Due()) {
      if (Status s = driver_->CollectDeletedClaims(); !s.ok()) log_.Error(s.message());
    }
    m_.registered.Set(server_->registered() ? 1 : 0);
    trimmer_.Poll();
    // Short naps: the /dev watcher and the heap trimmer are polled (done ends a nap at once).
    clock.Sleep(std::chrono::milliseconds(100), done_);
  }
}

void NodePlugin::TelemetryLoop(Clock& clock) {
  if (options_.telemetry_interval.count() <= 0) return;
  // Energy per claim integrates power x time at 1 Hz at least: a longer period is shortened to a
  // second while a claim is held.
  const std::chrono::nanoseconds held_period =
      std::min<std::chrono::nanoseconds>(options_.telemetry_interval, std::chrono::seconds(1));
  std::optional<Clock::SteadyTime> last;
  std::vector<std::string> logged;  // errors are logged when they change, not every period
  while (!Stopping()) {
    const std::chrono::nanoseconds period =
        energy_.Holding() ? held_period : std::chrono::nanoseconds(options_.telemetry_interval);
    if (!last || clock.Now() - *last >= period) {
      last = clock.Now();
      metrics::ScopeTimer timer(m_.telemetry_seconds);
      telemetry_.Sample();
      std::vector<EnergyReading> readings;
      for (const discovery::DeviceTelemetry& t : telemetry_.samples()) {
        readings.push_back({.pci_address = t.pci_address,
                            .watts = t.power_watts,
                            .energy_joules = t.energy_joules,
                            .xid_total = t.xid_errors});
      }
      energy_.OnReadings(readings);
      if (std::vector<std::string> errors = telemetry_.errors(); errors != logged) {
        for (const std::string& e : errors) log_.Log("warning", "telemetry: " + e);
        logged = std::move(errors);
      }
    }
    // Until the next sample, a second at most: a claim held since the last sample shortens
    // the period within a second. (A sample that overran its period leaves a short nap, not a
    // busy loop.)
    clock.Sleep(
        std::clamp<std::chrono::nanoseconds>(
            *last + period - clock.Now(), std::chrono::milliseconds(10), std::chrono::seconds(1)),
        done_);
  }
}

void NodePlugin::ClaimStatusLoop(Clock& clock) {
  while (!Stopping()) {
    for (const ClaimEnergy& account : energy_.Due()) {
      if (Stopping()) break;
      WriteClaimStatus(account);
    }
    clock.Sleep(std::chrono::milliseconds(200), done_);
  }
  // The final writes of claims unprepared just before the stop: tried once more, for a few
  // seconds at most (the pod's grace period is the kubelet's; a stop after a large batch's
  // unprepare would otherwise wait on the status client's rate limit for minutes).
  const int left =
      WriteFinalAccounts(energy_.Due(), clock, clock.Now() + node_plugin_cc::kFinalWritesAtStop,
                         [this](const ClaimEnergy& a) { WriteClaimStatus(a); });
  if (left > 0) {
    log_.Log("warning", "stopping: " + std::to_string(left) +
                            " final energy accounts not written to their claims' status (the "
                            "metrics had them until now)");
  }
}

void NodePlugin::WriteClaimStatus(const ClaimEnergy& account) {
  const ClaimStatusWrite w = status_writer_->Write(account);
  energy_.Written(account, w.outcome);
  const char* result = w.outcome == EnergyWriteOutcome::kWritten ? "ok"
                       : w.fallback.empty()                      ? "retry"
                                                                 : "fallback";
  if (w.outcome == EnergyWriteOutcome::kGiveUp && w.fallback.empty() && w.message.empty()) return;
  m_.claim_status_writes.Inc({result});
  if (!w.fallback.empty()) {
    m_.fallbacks.Inc({"status.devices", w.fallback});
    log_.Log("warning", "energy per claim: " + w.message + "; metrics only");
  } else if (!w.message.empty()) {
    log_.Log("debug", "energy per claim: " + w.message);
  }
}

void NodePlugin::XidLoop(Clock& clock) {
  XidWatch watch;
  Ticker check(clock, options_.health_interval);
  while (!Stopping()) {
    const std::shared_ptr<const api::NodeInventory> inv = inventory_->Get();
    if (!node_plugin_cc::HasVendor(inv.get(), "nvidia")) {  // nothing to watch (yet)
      clock.Sleep(std::chrono::seconds(1), done_);
      continue;
    }
    OpenXidSource(clock, &watch);
    // Waits of a second at most, so that `done` is seen promptly; shorter while a faulted GPU
    // is due for its check.
    std::chrono::milliseconds wait = std::chrono::seconds(1);
    if (!xid_health_.Faulted().empty()) {
      wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(check.Left()),
                        std::chrono::milliseconds(10), wait);
    }
    bool changed = false;
    if (watch.source->status().loaded) {
      StatusOr<std::vector<discovery::XidEvent>> events = watch.source->Wait(wait);
      if (events.ok()) {
        changed = OnXidEvents(inv.get(), *events);
      } else {
        clock.Sleep(std::chrono::seconds(1), done_);  // a failing wait may answer at once
      }
    } else {
      clock.Sleep(std::chrono::seconds(1), done_);
    }
    if (check.Due()) changed = CheckFaulted(inv.get(), watch) || changed;
    // Published at once: the health stream now, the inventory by the woken publisher.
    if (changed) {
      if (std::optional<api::NodeInventory> published = inventory_->Reapply()) {
        UpdateHealth(*published);
      }
      wake_ = true;
    }
  }
}

void NodePlugin::OpenXidSource(Clock& clock, XidWatch* watch) {
  // A library that failed to open is tried again a minute later (a driver installed later).
  if (watch->source != nullptr && (watch->source->status().loaded ||
                                   clock.Now() - watch->opened_at <= std::chrono::minutes(1))) {
    return;
  }
  watch->source = nullptr;  // the old handle goes first: one initialisation at a time
  watch->source = discovery::OpenNvmlXidEvents(vendor_lib_dirs_);
  watch->opened_at = clock.Now();
  m_.xid_watched.Set(static_cast<double>(watch->source->watched()));
  if (const std::string& e = watch->source->status().error; !e.empty() && e != watch->logged) {
    log_.Log("warning", "XID watch: nvml: " + e);
    watch->logged = e;
  } else if (watch->source->status().loaded) {
    log_.Info("XID watch: " + std::to_string(watch->source->watched()) + " GPUs");
  }
}

bool NodePlugin::OnXidEvents(const api::NodeInventory* inventory,
                             const std::vector<discovery::XidEvent>& events) {
  bool changed = false;
  for (const discovery::XidEvent& e : events) {
    const std::string device = node_plugin_cc::DeviceAt(inventory, e.pci_address);
    m_.xid_fatal.Inc({std::to_string(e.xid)});
    if (!device.empty()) energy_.OnXid(device);
    log_.Log("warning", "XID " + std::to_string(e.xid) + " on " +
                            (device.empty() ? e.pci_address : device) +
                            (device.empty() ? " (not in the inventory)" : ": unhealthy"));
    if (!device.empty()) changed = xid_health_.OnXid(device, e.xid) || changed;
  }
  return changed;
}

bool NodePlugin::CheckFaulted(const api::NodeInventory* inventory, const XidWatch& watch) {
  bool changed = false;
  for (const std::string& device : xid_health_.Faulted()) {
    const std::string pci = node_plugin_cc::PciAddressOf(inventory, device);
    const Status usable =
        pci.empty() ? NotFoundError("not in the inventory") : watch.source->Check(pci);
    const XidHealth::Checked checked = xid_health_.OnCheck(device, usable);
    changed = changed || checked != XidHealth::Checked::kUnchanged;
    if (checked == XidHealth::Checked::kRecovered) {
      m_.device_recoveries.Inc();
      log_.Info(device + ": recovered from its fatal XID, healthy again");
    }
  }
  return changed;
}

void NodePlugin::ChecklistLoop(Clock& clock) {
  if (!options_.node_checklist) return;
  std::vector<std::string> logged;
  while (!Stopping()) {
    RunChecklist(clock, &logged);
    if (options_.node_checklist_interval.count() <= 0) return;
    clock.Sleep(options_.node_checklist_interval, done_);
  }
}

void NodePlugin::RunChecklist(Clock& clock, std::vector<std::string>* logged) {
  metrics::ScopeTimer timer(m_.checklist_seconds);
  // The support matrix is the controller's: its check is skipped here.
  doctor::DoctorOptions checks;
  checks.vendor_lib_dirs = vendor_lib_dirs_;
  checks.node_name = options_.node_name;
  checks.driver_files = driver_options_.driver_files;
  checks.cdi_hook_path = options_.cdi_hook_path;
  StatusOr<doctor::DoctorReport> report =
      doctor::RunChecks(discovery::HostRoot(options_.host_root), checks);
  std::vector<std::string> lines;
  if (!report.ok()) {
    lines.push_back(report.status().message());
  } else {
    for (const doctor::CheckResult& c : report->checks) {
      if (c.status != doctor::CheckStatus::kFail && c.status != doctor::CheckStatus::kWarn) {
        continue;
      }
      lines.push_back(std::string(doctor::CheckStatusName(c.status)) + " " + c.name + ": " +
                      c.evidence);
    }
  }
  if (lines != *logged) {
    for (const std::string& line : lines) log_.Log("warning", "node checklist: " + line);
    *logged = std::move(lines);
  }
  if (!report.ok()) return;
  if (checklist_->Set(doctor::ChecklistCondition(*report, FormatTime(clock.WallNow()))) &&
      inventory_->Reapply()) {
    wake_ = true;  // published with the condition
  }
}

void NodePlugin::PublishLoop() {
  publisher_->Run(stop_, &wake_, [this](const std::string& line) { log_.Info(line); });
}

void NodePlugin::Finish() { done_.Set(); }

void NodePlugin::Stop() {
  server_->Stop();
  if (http_ != nullptr) http_->Stop();
  log_.Info("stopped after " + std::to_string(publisher_->stats().inventory_writes) +
            " inventory writes");
}

}  // namespace xpu::plugin
