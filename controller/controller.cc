#include "controller/controller.h"

#include <algorithm>
#include <utility>

#include "api/client/events.h"
#include "api/client/objects.h"
#include "base/clock.h"
#include "base/time.h"
#include "controller/class_sync.h"
#include "controller/device_classes.h"

namespace xpu::controller {
namespace {
namespace controller_cc {

namespace kc = api::client;
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kPluginLeasePrefix = "xpu-dra-plugin-";
constexpr std::string_view kPoolKeyPrefix = "pool/";
const std::string kClassesKey = "classes";
constexpr std::string_view kGangKeyPrefix = "gang/";

std::string PoolKey(const std::string& node) { return std::string(kPoolKeyPrefix) + node; }
std::string GangQueueKey(const std::string& key) { return std::string(kGangKeyPrefix) + key; }

kc::InformerOptions Selected(std::string ns, std::string labels, std::string fields) {
  kc::InformerOptions o;
  o.ns = std::move(ns);
  o.label_selector = std::move(labels);
  o.field_selector = std::move(fields);
  return o;
}

}  // namespace controller_cc
}  // namespace

using namespace controller_cc;  // NOLINT(google-build-using-namespace): this file's helpers

std::string NodeOfPluginLease(const std::string& lease_name) {
  if (!lease_name.starts_with(kPluginLeasePrefix)) return "";
  return lease_name.substr(kPluginLeasePrefix.size());
}

std::string PluginLeaseName(const std::string& node) {
  return std::string(kPluginLeasePrefix) + node;
}

std::optional<std::chrono::system_clock::time_point> Controller::LeaseExpiry(
    const api::core::Lease& lease) const {
  if (!lease.spec.renew_time) return std::nullopt;
  auto renewed = ParseTime(*lease.spec.renew_time);
  if (!renewed.ok()) {
    log_->Warning("plugin lease " + lease.metadata.name + ": " + renewed.status().message());
    return std::nullopt;
  }
  const auto duration = lease.spec.lease_duration_seconds
                            ? std::chrono::seconds(*lease.spec.lease_duration_seconds)
                            : options_.default_lease_duration;
  return *renewed + duration;
}

std::chrono::milliseconds Controller::UntilExpiry(
    std::chrono::system_clock::time_point expires) const {
  const auto left = expires - options_.clock->WallNow();
  return std::chrono::duration_cast<std::chrono::milliseconds>(left) +
         std::chrono::milliseconds(250);
}

void Controller::QueuePool(const std::string& node, std::chrono::milliseconds delay) {
  queue_.AddAfter(PoolKey(node), delay);
}

Controller::Controller(kc::Client* client, CoreOptions options, Config config,
                       ControllerMetrics* metrics, Logger* log)
    : client_(client),
      options_(std::move(options)),
      metrics_(metrics),
      log_(log),
      inventories_(client, kc::NodeInventories()),
      nodes_(client, kc::Nodes()),
      leases_(client, kc::Leases(), Selected(options_.ns, "", "")),
      slices_(client, kc::ResourceSlices(), Selected("", "", "spec.driver=" + options_.driver)),
      claims_(client, kc::ResourceClaims()),
      classes_(client, kc::DeviceClasses(),
               Selected("", std::string(kManagedByLabel) + "=" + std::string(kManagedByValue), "")),
      gangs_(client, kc::AcceleratorGangs()),
      queue_(WorkQueueOptions{.clock = options_.clock}),
      slice_cache_(options_.clock, &slices_),
      class_objects_(std::make_shared<kc::ApiObjects<api::resource::DeviceClass>>(
          client, kc::DeviceClasses())),
      gang_sync_(
          client, options_.driver, options_.clock,
          GangReconciler::Informers{&gangs_, &inventories_, &nodes_},
          GangSeams{
              .can_write = [this] { return CanWrite(); },
              .view = [this] { return GangView(); },
              .existing_slices =
                  [this](const std::string& pool) { return slice_cache_.Existing(pool); },
              .remember_writes = [this](const PoolSyncResult& r) { slice_cache_.Remember(r); },
              .queue_pool = [this](const std::string& node) { QueuePool(node); },
              .queue_gang =
                  [this](const std::string& key, std::chrono::milliseconds delay) {
                    queue_.AddAfter(GangQueueKey(key), delay);
                  },
          },
          metrics, log),
      config_(std::make_shared<const Config>(std::move(config))) {
  partition_type_ok_ = options_.partition_type;
}

Controller::~Controller() { Stop(); }

void Controller::SetCanWrite(std::function<bool()> can_write) { can_write_ = std::move(can_write); }

bool Controller::CanWrite() const { return !can_write_ || can_write_(); }

std::shared_ptr<const Config> Controller::config() const {
  MutexLock lock(mu_);
  return config_;
}

void Controller::SetConfig(Config config) {
  {
    MutexLock lock(mu_);
    config_ = std::make_shared<const Config>(std::move(config));
    ++config_generation_;
  }
  ResyncAll();
}

bool Controller::synced() const {
  return inventories_.synced() && nodes_.synced() && leases_.synced() && slices_.synced() &&
         claims_.synced() && classes_.synced() && gangs_.synced();
}

Status Controller::Start(std::chrono::milliseconds sync_timeout) {
  auto pool_of_node = [this](const auto& obj) {
    if (obj) queue_.Add(PoolKey(obj->name));
  };
  // A member node's inventory (device health, links) feeds its gang's status.
  auto inventory_changed = [this, pool_of_node](const auto& obj) {
    pool_of_node(obj);
    if (!obj) return;
    const std::string gang = gang_sync_.GangHolding(obj->name);
    if (!gang.empty()) queue_.Add(GangQueueKey(gang));
    // Capacity may have come back (a device healthy again): pending gangs try again.
    gang_sync_.QueueGangs(options_.claim_debounce, /*pending_only=*/true);
  };
  inventories_.AddHandlers(
      {inventory_changed, [inventory_changed](const auto&, const auto& n) { inventory_changed(n); },
       inventory_changed});
  // /autoscaler/pending's facts are noted where a pool sync decodes the inventory
  // (DesiredPoolOf), so each version is decoded once; a deleted inventory's are dropped here.
  inventories_.AddHandlers({nullptr, nullptr, [this](const auto& o) { pending_.Forget(o->name); }});
  nodes_.AddHandlers({pool_of_node,
                      [this](const auto& o, const auto& n) {
                        // Heartbeats change status only; labels and uid matter here.
                        if (!o || o->labels != n->labels || o->uid != n->uid) {
                          queue_.Add(PoolKey(n->name));
                        }
                      },
                      pool_of_node});
  auto lease_event = [this](const std::shared_ptr<const api::core::Lease>& lease, bool always) {
    const std::string node = NodeOfPluginLease(lease->metadata.name);
    if (node.empty()) return;
    bool live = false;
    {
      MutexLock lock(mu_);
      auto it = live_.find(node);
      live = it != live_.end() && it->second;
    }
    // A renewal of a live node needs no sync now, only a timer at its new expiry (the earliest
    // timer wins, so a shortened Lease is re-checked in time).
    if (always || !live) {
      queue_.Add(PoolKey(node));
    } else if (auto expires = LeaseExpiry(*lease)) {
      queue_.AddAfter(PoolKey(node), UntilExpiry(*expires));
    }
  };
  leases_.AddHandlers({[lease_event](const auto& l) { lease_event(l, true); },
                       [lease_event](const auto&, const auto& n) { lease_event(n, false); },
                       [lease_event](const auto& l) { lease_event(l, true); }});
  slices_.AddHandlers({[this](const auto& s) { OnSlice(nullptr, s); },
                       [this](const auto& o, const auto& n) { OnSlice(o, n); },
                       [this](const auto& s) { OnSlice(s, nullptr); }});
  claims_.AddHandlers({[this](const auto& c) { OnClaim(nullptr, c); },
                       [this](const auto& o, const auto& n) { OnClaim(o, n); },
                       [this](const auto& c) { OnClaim(c, nullptr); }});
  auto classes_changed = [this](const auto&) {
    queue_.AddAfter(kClassesKey, std::chrono::milliseconds(200));
  };
  classes_.AddHandlers({classes_changed,
                        [classes_changed](const auto&, const auto& n) { classes_changed(n); },
                        classes_changed});

  gangs_.AddHandlers({[this](const auto& g) { gang_sync_.OnGang(nullptr, g); },
                      [this](const auto& o, const auto& n) { gang_sync_.OnGang(o, n); },
                      [this](const auto& g) { gang_sync_.OnGang(g, nullptr); }});

  // The classes first: claims cannot be allocated before their DeviceClasses exist, and the
  // informers' first lists queue every node of the fleet (at 10,000 nodes, minutes of writes).
  queue_.Add(kClassesKey);
  inventories_.Start();
  nodes_.Start();
  leases_.Start();
  slices_.Start();
  claims_.Start();
  classes_.Start();
  gangs_.Start();
  const auto deadline = SteadyClock::now() + sync_timeout;
  auto left = [&] {
    return std::max(
        std::chrono::milliseconds(1),
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now()));
  };
  const bool ok = inventories_.WaitForSync(left()) && nodes_.WaitForSync(left()) &&
                  leases_.WaitForSync(left()) && slices_.WaitForSync(left()) &&
                  claims_.WaitForSync(left()) && classes_.WaitForSync(left()) &&
                  gangs_.WaitForSync(left());
  // Workers sync only from complete caches: a pool synced before the slice informer listed
  // would look empty and get a second set of slices. Until then the queue only collects keys.
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { Worker(); });
  threads_.emplace_back([this] { Periodic(); });
  ResyncAll();
  if (!ok) {
    return Status(StatusCode::kDeadlineExceeded,
                  "start controller: informers did not list within the timeout; still trying");
  }
  return OkStatus();
}

void Controller::Stop() {
  if (!stop_.Set()) return;
  queue_.ShutDown();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  inventories_.Stop();
  nodes_.Stop();
  leases_.Stop();
  slices_.Stop();
  claims_.Stop();
  classes_.Stop();
  gangs_.Stop();
}

void Controller::ResyncAll() {
  // Pools in the background lane: a resync most often finds nothing to do, and it must not hold
  // up a change behind a whole fleet's checks.
  for (const auto& inv : inventories_.List()) queue_.AddBackground(PoolKey(inv->name));
  for (const std::string& p : slice_cache_.Pools()) {
    if (p != kGangPool) queue_.AddBackground(PoolKey(p));
  }
  queue_.Add(kClassesKey);
  gang_sync_.QueueGangs(std::chrono::milliseconds(0));
  // The gang slices too: a gang deleted while this controller was not yet leader (its key was
  // dropped then) is no longer listed, and only its slice says it must go.
  for (const SlicePtr& s : slice_cache_.Existing(std::string(kGangPool))) {
    if (auto gang = GangOfSlice(s->metadata.name)) queue_.Add(GangQueueKey(gang->String()));
  }
}

void Controller::OnSlice(const std::shared_ptr<const StoredSlice>& old_slice,
                         const std::shared_ptr<const StoredSlice>& new_slice) {
  const std::set<std::string> pools = slice_cache_.Observe(old_slice, new_slice);
  // Most are this controller's own writes coming back, before their answers were seen (a skip):
  // a check, in the background lane.
  for (const std::string& p : pools) {
    if (p != kGangPool) queue_.AddBackground(PoolKey(p));
  }
  // A gang's slice changed or went: its gang puts it right.
  const std::string& name = new_slice ? new_slice->name : old_slice->name;
  if (auto gang = GangOfSlice(name)) queue_.Add(GangQueueKey(gang->String()));
}

void Controller::OnClaim(const std::shared_ptr<const StoredClaim>& old_claim,
                         const std::shared_ptr<const StoredClaim>& new_claim) {
  const std::string uid = new_claim ? new_claim->uid : old_claim->uid;
  std::vector<std::pair<std::string, std::string>> now_held;
  if (new_claim) {
    for (const AllocatedDevice& d : new_claim->devices) {
      if (d.driver == options_.driver) now_held.emplace_back(d.pool, d.device);
    }
  }
  std::set<std::string> pools;
  {
    MutexLock lock(mu_);
    auto it = claim_devices_.find(uid);
    if (it != claim_devices_.end()) {
      if (it->second == now_held) return;
      for (const auto& [pool, device] : it->second) {
        auto& held = allocated_[pool];
        if (auto d = held.find(device); d != held.end()) held.erase(d);
        if (held.empty()) allocated_.erase(pool);
        pools.insert(pool);
      }
      claim_devices_.erase(it);
    }
    for (const auto& [pool, device] : now_held) {
      allocated_[pool].insert(device);
      pools.insert(pool);
    }
    if (!now_held.empty()) claim_devices_[uid] = now_held;
  }
  for (const std::string& p : pools) queue_.AddAfter(PoolKey(p), options_.claim_debounce);
  if (!pools.empty()) gang_sync_.QueueGangs(options_.claim_debounce, /*pending_only=*/true);
}

Status Controller::SyncClasses() {
  if (!CanWrite()) return OkStatus();
  std::vector<api::resource::DeviceClass> managed;
  for (const auto& c : classes_.List()) managed.push_back(*c);
  const ClassSyncPlan plan =
      PlanClassSync(DesiredDeviceClasses(*config(), options_.driver), managed);
  ClassSyncHooks hooks;
  hooks.allowed = [this] { return CanWrite(); };
  hooks.observe = [this](std::string_view verb, const Status& s) {
    metrics_->class_writes.Inc({std::string(verb), std::string(WriteResult(s))});
  };
  hooks.warn = [this](const std::string& message) { log_->Warning(message); };
  return ApplyClassSync(plan, *class_objects_, hooks).WithContext("sync deviceclasses");
}

void Controller::Worker() {
  while (!synced() && !stop_.IsSet()) stop_.WaitFor(std::chrono::milliseconds(20));
  while (auto key = queue_.Get()) {
    const bool classes = *key == kClassesKey;
    const bool gang = key->starts_with(kGangKeyPrefix);
    metrics::ScopeTimer timer(metrics_->reconcile_seconds,
                              {classes ? "classes" : (gang ? "gang" : "pool"), "ok"});
    Status s = classes ? SyncClasses()
               : gang  ? gang_sync_.Sync(key->substr(kGangKeyPrefix.size()))
                       : SyncPoolKey(key->substr(kPoolKeyPrefix.size()));
    if (s.ok()) {
      queue_.Forget(*key);
      terminal_.Clear(*key);
    } else {
      timer.SetLabel("result", "error");
      switch (ClassifySyncError(s)) {
        case SyncFailure::kStop:
          break;
        case SyncFailure::kRetry:
          queue_.AddRateLimited(*key);
          log_->Log(s.code() == StatusCode::kAborted ? "debug" : "warning",
                    s.message() + " (retry " + std::to_string(queue_.Failures(*key)) + ")");
          break;
        case SyncFailure::kTerminal:
          queue_.Forget(*key);
          ReportTerminal(*key, classes, s);
          break;
      }
    }
    queue_.Done(*key);
  }
}

void Controller::ReportTerminal(const std::string& key, bool classes, const Status& s) {
  const std::string msg =
      s.message() + " (not retried: synced again when its inputs change, or at the resync)";
  if (!terminal_.Record(key, s)) {
    log_->Debug(msg);
    return;
  }
  log_->Error(msg);
  const bool gang = key.starts_with(kGangKeyPrefix);
  metrics_->terminal_errors.Inc(
      {classes ? "classes" : (gang ? "gang" : "pool"), std::string(StatusCodeName(s.code()))});
  RecordEvent({.reason = "SyncFailed",
               .message = msg,
               .about_node = classes || gang ? std::string() : key.substr(kPoolKeyPrefix.size())});
}

void Controller::Periodic() {
  Clock& clock = *options_.clock;
  Ticker resync(clock, options_.resync);
  while (!stop_.IsSet()) {
    clock.Sleep(std::chrono::seconds(1), stop_);
    UpdateGauges();
    slice_cache_.Expire();
    if (resync.Due()) ResyncAll();
  }
}

void Controller::UpdateGauges() {
  metrics_->queue_depth.Set(static_cast<double>(queue_.Depth()));
  metrics_->queue_delayed.Set(static_cast<double>(queue_.Delayed()));
  metrics_->slices_published.Set(static_cast<double>(slices_.size()));
  int live = 0;
  std::map<std::string, int> tainted;
  {
    MutexLock lock(mu_);
    for (const auto& [node, is_live] : live_) live += is_live ? 1 : 0;
    for (const auto& [node, keys] : tainted_) {
      for (const auto& [key, n] : keys) tainted[key] += n;
    }
  }
  metrics_->nodes.Set({"live"}, live);
  metrics_->nodes.Set({"stale"}, std::max(0, static_cast<int>(inventories_.size()) - live));
  std::map<std::string, int> phases = {{"Pending", 0}, {"Placed", 0}, {"Failed", 0}};
  for (const auto& g : gangs_.List()) {
    ++phases[g->status.phase.empty() ? "Pending" : g->status.phase];
  }
  for (const auto& [phase, n] : phases) metrics_->gangs.Set({phase}, n);
  metrics_->devices_tainted.Clear();
  for (const auto& [key, n] : tainted) metrics_->devices_tainted.Set({key}, n);
  std::map<std::string, int> drifting;
  for (const NodeGroupProfile& g : options_.node_groups) drifting[g.name] = 0;
  {
    MutexLock lock(mu_);
    for (const auto& [node, drift] : drift_) {
      if (!drift.second.empty()) ++drifting[drift.first];
    }
  }
  for (const auto& [group, n] : drifting) metrics_->node_group_drift.Set({group}, n);
}

std::string Controller::PendingJson() {
  std::vector<PendingClaimInput> claims;
  for (const auto& c : claims_.List()) {
    if (c->pending) claims.push_back(*c->pending);
  }
  std::shared_ptr<const Config> cfg = config();
  std::vector<std::string> nodes;
  std::map<std::string, std::vector<std::string>> held;
  {
    MutexLock lock(mu_);
    for (const auto& [node, is_live] : live_) {
      if (!is_live) continue;
      nodes.push_back(node);
      if (auto it = allocated_.find(node); it != allocated_.end()) {
        held[node].assign(it->second.begin(), it->second.end());
      }
    }
  }
  std::vector<PendingNode> facts = pending_.Facts(nodes);
  std::vector<PendingNodeInput> live;
  live.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    PendingNodeInput in{.facts = std::move(facts[i]), .allocated = {}};
    auto it = held.find(nodes[i]);
    if (in.facts.model && it != held.end()) in.allocated = DeviceIds(*in.facts.model, it->second);
    live.push_back(std::move(in));
  }
  const std::vector<PendingReport> reports =
      JudgePendingClaims(claims, live, options_.node_groups, *cfg, options_.driver);
  return controller::PendingJson(reports, options_.node_groups).dump();
}

GangClusterView Controller::GangView() const {
  GangClusterView view;
  const size_t inventories = inventories_.size();
  MutexLock lock(mu_);
  view.liveness_known = judged_.size() >= inventories;
  view.config = config_;
  view.config_generation = config_generation_;
  for (const auto& [node, is_live] : live_) {
    if (is_live) view.live.push_back(node);
  }
  for (const auto& [pool, devices] : allocated_) {
    view.allocated[pool] = std::set<std::string>(devices.begin(), devices.end());
  }
  return view;
}

void Controller::RecordEvent(const Event& event) {
  kc::EventInfo info;
  if (!event.about_node.empty()) {
    info.about = {"v1", "Node", "", event.about_node, ""};
  } else {
    info.about = {"coordination.k8s.io/v1", "Lease", options_.ns, "xpu-dra-controller", ""};
  }
  info.type = event.type;
  info.reason = event.reason;
  info.message = event.message;
  info.component = "xpu-dra-controller";
  info.instance = options_.identity;
  if (Status s = kc::ApiEventRecorder(client_).Record(info, options_.clock->WallNow()); !s.ok()) {
    log_->Debug("record event " + event.reason + ": " + s.message());
  }
}

}  // namespace xpu::controller
