#include "controller/controller.h"

#include <algorithm>
#include <utility>

#include "api/client/events.h"
#include "api/client/objects.h"
#include "api/node_description.h"
#include "base/clock.h"
#include "base/time.h"
#include "controller/class_sync.h"
#include "controller/device_classes.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;
using api::resource::DeviceClass;
using api::resource::ResourceClaim;
using api::resource::ResourceSlice;
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kPluginLeasePrefix = "xpu-dra-plugin-";
constexpr std::string_view kPoolKeyPrefix = "pool/";
const std::string kClassesKey = "classes";
constexpr std::string_view kGangKeyPrefix = "gang/";
constexpr std::chrono::seconds kMutationCacheTtl{60};

std::string PoolKey(const std::string& node) { return std::string(kPoolKeyPrefix) + node; }
std::string GangQueueKey(const std::string& key) { return std::string(kGangKeyPrefix) + key; }

kc::InformerOptions Selected(std::string ns, std::string labels, std::string fields) {
  kc::InformerOptions o;
  o.ns = std::move(ns);
  o.label_selector = std::move(labels);
  o.field_selector = std::move(fields);
  return o;
}

StatusOr<SlicePtr> Decode(const StoredSlice& stored) {
  nlohmann::json j = nlohmann::json::parse(stored.json, nullptr, false);
  if (j.is_discarded()) return InternalError("decode stored slice " + stored.name);
  ASSIGN_OR_RETURN(ResourceSlice slice, api::FromJson<ResourceSlice>(j));
  return std::make_shared<const ResourceSlice>(std::move(slice));
}

// Past the expiry, by a margin, so the re-check sees the Lease expired.
std::chrono::milliseconds UntilExpiry(std::chrono::system_clock::time_point expires) {
  const auto left = expires - std::chrono::system_clock::now();
  return std::chrono::duration_cast<std::chrono::milliseconds>(left) +
         std::chrono::milliseconds(250);
}

}  // namespace

std::string CompactJson(const nlohmann::json& object) {
  if (!object.contains("metadata") || !object["metadata"].contains("managedFields")) {
    return object.dump();
  }
  nlohmann::json copy = object;
  copy["metadata"].erase("managedFields");
  return copy.dump();
}

std::string NodeOfPluginLease(const std::string& lease_name) {
  if (!lease_name.starts_with(kPluginLeasePrefix)) return "";
  return lease_name.substr(kPluginLeasePrefix.size());
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
      class_objects_(std::make_shared<kc::ApiObjects<DeviceClass>>(client, kc::DeviceClasses())),
      gang_objects_(
          std::make_shared<kc::ApiObjects<api::AcceleratorGang>>(client, kc::AcceleratorGangs())),
      slice_objects_(std::make_shared<kc::ApiObjects<ResourceSlice>>(client, kc::ResourceSlices())),
      claim_objects_(std::make_shared<kc::ApiObjects<ResourceClaim>>(client, kc::ResourceClaims())),
      template_objects_(std::make_shared<kc::ApiObjects<api::resource::ResourceClaimTemplate>>(
          client, kc::ResourceClaimTemplates())),
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
    std::string gang;
    {
      MutexLock lock(mu_);
      if (auto h = held_.find(obj->name); h != held_.end()) {
        for (const auto& [key, holding] : holdings_) {
          if (holding.uid == h->second) gang = key;
        }
      }
    }
    if (!gang.empty()) queue_.Add(GangQueueKey(gang));
    // Capacity may have come back (a device healthy again): pending gangs try again.
    QueueGangs(options_.claim_debounce, /*pending_only=*/true);
  };
  inventories_.AddHandlers(
      {inventory_changed, [inventory_changed](const auto&, const auto& n) { inventory_changed(n); },
       inventory_changed});
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

  gangs_.AddHandlers({[this](const auto& g) { OnGang(nullptr, g); },
                      [this](const auto& o, const auto& n) { OnGang(o, n); },
                      [this](const auto& g) { OnGang(g, nullptr); }});

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
  if (stop_.exchange(true)) return;
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
  for (const auto& inv : inventories_.List()) queue_.Add(PoolKey(inv->name));
  std::vector<std::string> pools;
  {
    MutexLock lock(mu_);
    for (const auto& [pool, names] : pool_slices_) pools.push_back(pool);
  }
  for (const std::string& p : pools) {
    if (p != kGangPool) queue_.Add(PoolKey(p));
  }
  queue_.Add(kClassesKey);
  QueueGangs(std::chrono::milliseconds(0));
}

void Controller::OnSlice(const std::shared_ptr<const StoredSlice>& old_slice,
                         const std::shared_ptr<const StoredSlice>& new_slice) {
  std::set<std::string> pools;
  {
    MutexLock lock(mu_);
    if (old_slice) {
      auto& names = pool_slices_[old_slice->pool];
      names.erase(old_slice->name);
      if (names.empty()) pool_slices_.erase(old_slice->pool);
      pools.insert(old_slice->pool);
    }
    if (new_slice) {
      pool_slices_[new_slice->pool].insert(new_slice->name);
      pools.insert(new_slice->pool);
    }
    // The watch has caught up with a write of ours once it shows that version (or a later
    // one) or the slice's deletion: the mutation cache entry has done its job.
    const std::string& name = new_slice ? new_slice->name : old_slice->name;
    if (!new_slice) seen_deleted_[name] = options_.clock->Now() + kMutationCacheTtl;
    if (auto it = written_.find(name); it != written_.end()) {
      if (!new_slice || (it->second.slice &&
                         kc::CompareResourceVersions(new_slice->resource_version,
                                                     it->second.slice->metadata.resource_version)
                                 .value_or(1) >= 0)) {
        written_.erase(it);
      }
    }
  }
  for (const std::string& p : pools) {
    if (p != kGangPool) queue_.Add(PoolKey(p));
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
    for (const auto& [driver, pool, device] : new_claim->devices) {
      if (driver == options_.driver) now_held.emplace_back(pool, device);
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
  if (!pools.empty()) QueueGangs(options_.claim_debounce, /*pending_only=*/true);
}

std::vector<SlicePtr> Controller::ExistingSlices(const std::string& pool) {
  std::set<std::string> names;
  {
    MutexLock lock(mu_);
    if (auto it = pool_slices_.find(pool); it != pool_slices_.end()) names = it->second;
    for (const auto& [name, cached] : written_) {
      if (cached.slice && cached.slice->spec.pool.name == pool) names.insert(name);
    }
  }
  std::vector<SlicePtr> out;
  const auto now = options_.clock->Now();
  std::vector<std::shared_ptr<const StoredSlice>> stored;
  {
    MutexLock lock(mu_);
    for (const std::string& name : names) {
      auto seen = slices_.Get(name);
      auto it = written_.find(name);
      if (it != written_.end() && it->second.expires > now) {
        if (!it->second.slice) continue;  // we deleted it; the watch has not said so yet
        if (!seen || kc::CompareResourceVersions(seen->resource_version,
                                                 it->second.slice->metadata.resource_version)
                             .value_or(-1) < 0) {
          out.push_back(it->second.slice);
          continue;
        }
        written_.erase(it);  // the informer caught up
      }
      if (seen && seen->pool == pool) stored.push_back(seen);
    }
  }
  for (const auto& s : stored) {
    auto decoded = Decode(*s);
    if (decoded.ok()) out.push_back(*decoded);
  }
  return out;
}

void Controller::RememberWrites(const PoolSyncResult& result) {
  const auto expires = options_.clock->Now() + kMutationCacheTtl;
  MutexLock lock(mu_);
  for (const SlicePtr& s : result.written) {
    // The watch may already have shown this version, or even the slice's deletion, before the
    // write's answer came back: then there is nothing to bridge.
    if (seen_deleted_.contains(s->metadata.name)) continue;
    const auto seen = slices_.Get(s->metadata.name);
    if (seen && kc::CompareResourceVersions(seen->resource_version, s->metadata.resource_version)
                        .value_or(-1) >= 0) {
      continue;
    }
    written_[s->metadata.name] = Cached{s, expires};
  }
  for (const std::string& name : result.deleted_names) written_[name] = Cached{nullptr, expires};
}

Status Controller::SyncPoolKey(const std::string& node) {
  if (!CanWrite()) return OkStatus();
  const auto inventory = inventories_.Get(node);
  const auto node_obj = nodes_.Get(node);
  const auto lease = leases_.Get(options_.ns + "/" + std::string(kPluginLeasePrefix) + node);
  bool live = false;
  if (inventory && node_obj && lease) {
    if (auto expires = LeaseExpiry(*lease);
        expires && *expires > std::chrono::system_clock::now()) {
      live = true;
      queue_.AddAfter(PoolKey(node), UntilExpiry(*expires));
    }
  }

  // Unchanged inputs and slices since the last successful sync: nothing to do. This is what
  // makes the periodic re-check at each Lease expiry cheap.
  std::set<std::string> allocated;
  std::shared_ptr<const Config> cfg;
  std::string inputs;
  std::string gang_uid;
  bool memo = false;
  {
    MutexLock lock(mu_);
    if (auto it = allocated_.find(node); it != allocated_.end()) {
      allocated.insert(it->second.begin(), it->second.end());
    }
    cfg = config_;
    inputs = std::string(live ? "live" : "down") + "|" +
             (inventory ? inventory->resource_version : "") + "|" +
             (node_obj ? node_obj->uid : "") + "|" + std::to_string(config_generation_) + "|" +
             (taints_ok_ ? "t" : "-") + (counters_ok_ ? "c" : "-") +
             (partition_type_ok_ ? "p" : "-") + "|";
    if (node_obj) {
      for (const auto& [k, v] : node_obj->labels) inputs.append(k).append("=").append(v) += ",";
    }
    inputs += "|";
    if (auto it = held_.find(node); it != held_.end()) gang_uid = it->second;
    inputs += gang_uid + "|";
    for (const std::string& d : allocated) inputs.append(d) += ",";
    inputs += "|";
    if (auto it = pool_slices_.find(node); it != pool_slices_.end()) {
      for (const std::string& name : it->second) {
        auto seen = slices_.Get(name);
        inputs.append(name).append(":").append(seen ? seen->resource_version : "") += ",";
      }
    }
    // The inputs describe the slices only while the mutation cache is empty: a sync that saw a
    // cached slice the watch had not shown yet must not be remembered as "nothing to do".
    memo = written_.empty();
    if (memo) {
      auto last = last_sync_.find(node);
      if (last != last_sync_.end() && last->second == inputs) return OkStatus();
    }
  }

  std::optional<DesiredPool> desired;
  std::optional<api::NodeInventory> decoded_inventory;
  if (live) {
    nlohmann::json inventory_json = nlohmann::json::parse(inventory->json, nullptr, false);
    auto parsed = api::FromJson<api::NodeInventory>(inventory_json);
    if (!parsed.ok()) return parsed.status().WithContext("decode inventory of node " + node);
    decoded_inventory = std::move(parsed).value();
    // What gang placement needs of it, while it is decoded.
    auto facts = GangFactsOf(*decoded_inventory);
    std::string content;
    if (facts.ok()) {
      nlohmann::json key = api::NodeDescriptionToJson(facts->topology);
      key.erase("name");
      for (const api::InventoryDevice& d : facts->devices) {
        key["devices*"].push_back({d.name, d.vendor, d.model, d.memory, d.health});
        for (const auto& [name, a] : d.attributes) {
          key["devices*"].back().push_back(name + "=" + a.string_value.value_or("") +
                                           (a.bool_value.value_or(false) ? "1" : "0"));
        }
      }
      if (const auto& f = facts->fabric) {
        key["fabric*"] = {f->clique_id, f->cluster_uuid, f->super_pod_id,
                          f->rack_id,   f->leaf,         f->spine};
      }
      content = key.dump();
    }
    MutexLock lock(mu_);
    if (facts.ok()) {
      std::shared_ptr<const GangNodeFacts> shared = shared_facts_[content].lock();
      if (!shared) {
        shared = std::make_shared<const GangNodeFacts>(std::move(facts).value());
        shared_facts_[content] = shared;
      }
      gang_facts_[node] = {inventory->resource_version, std::move(shared)};
    } else {
      gang_facts_.erase(node);
    }
  }
  if (live) {
    NodeFacts facts{node, node_obj->uid, node_obj->labels, gang_uid};
    PublishOptions publish;
    publish.driver = options_.driver;
    publish.version = options_.version;
    publish.taints = taints_ok_;
    publish.counters = counters_ok_;
    publish.partition_type = partition_type_ok_;
    auto built = BuildPool(*decoded_inventory, facts, *cfg, publish, allocated);
    if (!built.ok()) {
      // A bad inventory keeps what is published; the plugin's next write re-queues the pool.
      const std::string msg = "build slices of node " + node + ": " + built.status().message();
      log_->Error(msg);
      RecordEvent({.reason = "InvalidInventory", .message = msg, .about_node = node});
      return OkStatus();
    }
    desired = std::move(built).value();
    if (!options_.node_groups.empty()) {
      CheckTemplateDrift(node, node_obj->labels, *desired, *cfg, publish);
    }
  }

  NodeFacts owner{node, node_obj ? node_obj->uid : "", {}};
  const std::vector<SlicePtr> existing = ExistingSlices(node);
  bool liveness_changed = false;
  {
    MutexLock lock(mu_);
    auto was = live_.find(node);
    liveness_changed = (was != live_.end() && was->second) != live;
    live_[node] = live;
    if (desired) {
      tainted_[node] = desired->tainted;
    } else {
      tainted_.erase(node);
    }
    if (!inventory) live_.erase(node);
  }
  if (liveness_changed) QueueGangs(std::chrono::milliseconds(0));
  log_->Debug("sync pool " + node + ": " + (live ? "live" : "not live") + ", " +
              std::to_string(existing.size()) + " slices, " +
              std::to_string(desired ? desired->slices.size() : 0) + " desired");
  if (!desired && existing.empty()) {
    MutexLock lock(mu_);
    if (memo) {
      last_sync_[node] = inputs;
    } else {
      last_sync_.erase(node);
    }
    return OkStatus();
  }

  SyncOptions sync;
  sync.observe = [this](std::string_view verb, std::string_view res) {
    metrics_->slice_writes.Inc({std::string(verb), std::string(res)});
  };
  sync.can_write = [this] { return CanWrite(); };
  const std::string inventory_version = inventory ? inventory->resource_version : "";
  {
    MutexLock lock(mu_);
    auto it = published_inventory_.find(node);
    sync.bump_on_change = it != published_inventory_.end() && it->second != inventory_version;
  }
  PoolSyncResult result = SyncPool(*client_, api::DriverName(options_.driver), api::PoolName(node),
                                   desired, owner, existing, sync);
  RememberWrites(result);
  if (result.status.ok()) {
    MutexLock lock(mu_);
    if (desired) {
      published_inventory_[node] = inventory_version;
    } else {
      published_inventory_.erase(node);
    }
    // Only a sync that wrote nothing records its inputs: after a write the slices' versions
    // change, and the next sync (from the watch event) confirms the result.
    if (memo && !result.Changed()) {
      last_sync_[node] = inputs;
    } else {
      last_sync_.erase(node);
    }
  }
  if (result.Changed()) {
    log_->Debug("pool " + node + ": " + std::to_string(result.created) + " created, " +
                std::to_string(result.updated) + " updated, " + std::to_string(result.deleted) +
                " deleted, generation " + std::to_string(result.generation));
  }
  auto fall_back = [&](std::atomic<bool>& flag, const std::string& field, const std::string& how) {
    if (!flag.exchange(false)) return;
    const std::string msg = "the API server dropped device " + field + " from the slices of node " +
                            node + " (feature gate off): " + how;
    log_->Warning(msg);
    metrics_->fallbacks.Inc({field});
    RecordEvent({.reason = "FieldsDropped", .message = msg, .about_node = node});
    ResyncAll();
  };
  if (result.dropped_taints) {
    fall_back(taints_ok_, "taints", "tainted devices are left out of the slices from now on");
  }
  if (result.dropped_counters) {
    fall_back(counters_ok_, "counters", "publishing in attributes mode from now on");
  }
  // An alpha field most servers drop: expected, so said once at info level, without an Event.
  if (result.dropped_partition_type && partition_type_ok_.exchange(false)) {
    log_->Info("the API server dropped partitionTypeAttribute from the slices of node " + node +
               " (DRAPartitionableDevicesType off): not published from now on");
    metrics_->fallbacks.Inc({"partitionType"});
    ResyncAll();
  }
  return result.status;
}

Status Controller::SyncClasses() {
  if (!CanWrite()) return OkStatus();
  std::vector<DeviceClass> managed;
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
  while (!synced() && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  while (auto key = queue_.Get()) {
    const bool classes = *key == kClassesKey;
    const bool gang = key->starts_with(kGangKeyPrefix);
    metrics::ScopeTimer timer(metrics_->reconcile_seconds,
                              {classes ? "classes" : (gang ? "gang" : "pool"), "ok"});
    Status s = classes ? SyncClasses()
               : gang  ? SyncGangKey(key->substr(kGangKeyPrefix.size()))
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
  while (!stop_) {
    clock.Sleep(std::chrono::seconds(1), stop_);
    UpdateGauges();
    const auto now = clock.Now();
    {
      MutexLock lock(mu_);
      for (auto it = written_.begin(); it != written_.end();) {
        it = it->second.expires <= now ? written_.erase(it) : std::next(it);
      }
      for (auto it = seen_deleted_.begin(); it != seen_deleted_.end();) {
        it = it->second <= now ? seen_deleted_.erase(it) : std::next(it);
      }
    }
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

void Controller::CheckTemplateDrift(const std::string& node,
                                    const std::map<std::string, std::string>& labels,
                                    const DesiredPool& pool, const Config& config,
                                    const PublishOptions& publish) {
  const auto label = labels.find(std::string(kNodeGroupLabel));
  const NodeGroupProfile* group = nullptr;
  for (const NodeGroupProfile& g : options_.node_groups) {
    if (label != labels.end() && g.name == label->second) group = &g;
  }
  if (group == nullptr) {
    MutexLock lock(mu_);
    drift_.erase(node);
    return;
  }
  std::shared_ptr<const DesiredPool> tmpl;
  {
    MutexLock lock(mu_);
    auto it = templates_.find(group->name);
    if (it != templates_.end() && it->second.first == config_generation_) tmpl = it->second.second;
  }
  if (tmpl == nullptr) {
    StatusOr<DesiredPool> built = TemplatePool(*group, config, publish);
    if (!built.ok()) {
      log_->Warning("node group " + group->name + ": template: " + built.status().message());
      return;
    }
    tmpl = std::make_shared<const DesiredPool>(std::move(built).value());
    MutexLock lock(mu_);
    templates_[group->name] = {config_generation_, tmpl};
  }
  std::string summary;
  for (const std::string& line : TemplateDrift(pool, *tmpl)) {
    summary += (summary.empty() ? "" : "; ") + line;
  }
  bool report = false;
  {
    MutexLock lock(mu_);
    auto& was = drift_[node];
    report = !summary.empty() && (was.first != group->name || was.second != summary);
    was = {group->name, summary};
  }
  if (report) {
    const std::string msg = "the slices of node " + node +
                            " differ from the template of node group " + group->name +
                            " (stale template?): " + summary;
    log_->Warning(msg);
    RecordEvent({.reason = "NodeGroupTemplateDrift", .message = msg, .about_node = node});
  }
}

std::string Controller::PendingJson() {
  std::vector<PendingClaimInput> claims;
  for (const auto& c : claims_.List()) {
    if (c->pending) claims.push_back(*c->pending);
  }
  std::shared_ptr<const Config> cfg = config();
  std::vector<std::string> nodes;
  {
    MutexLock lock(mu_);
    for (const auto& [node, is_live] : live_) {
      if (is_live) nodes.push_back(node);
    }
  }
  size_t next = 0;
  const std::vector<PendingReport> reports = PendingClaims(
      claims,
      [&](LiveNode* out) {
        if (next >= nodes.size()) return false;
        out->name = nodes[next++];
        out->inventory = DecodedInventory(out->name);
        out->allocated.clear();
        MutexLock lock(mu_);
        if (auto it = allocated_.find(out->name); it != allocated_.end()) {
          out->allocated.insert(it->second.begin(), it->second.end());
        }
        return true;
      },
      options_.node_groups, *cfg, options_.driver);
  return controller::PendingJson(reports, options_.node_groups).dump();
}

// ---- Gangs ----

void Controller::QueueGangs(std::chrono::milliseconds delay, bool pending_only) {
  for (const auto& g : gangs_.List()) {
    if (pending_only && (g->status.phase == "Placed" || g->status.phase == "Failed")) continue;
    queue_.AddAfter(GangQueueKey(GangKey(*g)), delay);
  }
}

std::set<std::string> Controller::HoldNodes(const std::string& key, const std::string& uid,
                                            const std::string& version,
                                            const std::vector<std::string>& nodes) {
  std::set<std::string> changed;
  auto it = holdings_.find(key);
  if (it != holdings_.end() && !version.empty() &&
      kc::CompareResourceVersions(version, it->second.version).value_or(1) < 0) {
    return changed;  // older than what we know
  }
  if (it != holdings_.end()) {
    for (const std::string& n : it->second.nodes) {
      auto h = held_.find(n);
      if (h != held_.end() && h->second == it->second.uid) {
        held_.erase(h);
        changed.insert(n);
      }
    }
  }
  if (version.empty() && nodes.empty()) {
    holdings_.erase(key);
    return changed;
  }
  for (const std::string& n : nodes) {
    held_[n] = uid;
    if (!changed.erase(n)) changed.insert(n);
  }
  holdings_[key] = Holding{uid, version, nodes};
  return changed;
}

namespace {

std::vector<std::string> PlacedNodes(const api::AcceleratorGang& gang) {
  std::vector<std::string> nodes;
  if (gang.status.phase != "Placed") return nodes;
  for (const api::GangNode& n : gang.status.nodes) nodes.push_back(n.name);
  return nodes;
}

}  // namespace

void Controller::OnGang(const std::shared_ptr<const api::AcceleratorGang>& old_gang,
                        const std::shared_ptr<const api::AcceleratorGang>& new_gang) {
  const api::AcceleratorGang& any = new_gang ? *new_gang : *old_gang;
  const std::string key = GangKey(any);
  std::set<std::string> changed;
  {
    MutexLock lock(mu_);
    changed = new_gang ? HoldNodes(key, new_gang->metadata.uid, new_gang->metadata.resource_version,
                                   PlacedNodes(*new_gang))
                       : HoldNodes(key, "", "", {});
  }
  for (const std::string& n : changed) queue_.Add(PoolKey(n));
  queue_.Add(GangQueueKey(key));
}

std::shared_ptr<const api::NodeInventory> Controller::DecodedInventory(const std::string& node) {
  const auto stored = inventories_.Get(node);
  if (!stored) return nullptr;
  auto parsed =
      api::FromJson<api::NodeInventory>(nlohmann::json::parse(stored->json, nullptr, false));
  if (!parsed.ok()) return nullptr;
  return std::make_shared<const api::NodeInventory>(std::move(parsed).value());
}

Status Controller::SyncGangKey(const std::string& key) {
  if (!CanWrite()) return OkStatus();
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return OkStatus();
  const kc::ObjectKey okey = kc::ObjectKey::Namespaced(key.substr(0, slash), key.substr(slash + 1));
  MutexLock serial(gang_mu_);
  const auto gang = gangs_.Get(key);

  // The slices of the pool: this gang's, and the highest generation of all.
  std::vector<ResourceSlice> own;
  int64_t top_generation = 0;
  for (const SlicePtr& s : ExistingSlices(std::string(kGangPool))) {
    top_generation = std::max(top_generation, s->spec.pool.generation);
    auto of = GangOfSlice(s->metadata.name);
    if (of && *of == okey) own.push_back(*s);
  }

  GangObjectOptions objects;
  objects.driver = options_.driver;
  std::shared_ptr<const Config> cfg = config();
  // Run sets the mode in force (WithEffectiveMode); a config given unset reads as attributes,
  // as BuildPool reads it, so that the gang's template asks for what the pools publish.
  objects.mode = cfg->mode.value_or(PublishMode::kAttributes);
  std::optional<api::AcceleratorGang> current;
  std::optional<api::AcceleratorGangStatus> next;
  bool moved = false;
  if (gang) {
    current = *gang;
    GangPlanInput in;
    in.gang = &*current;
    in.config = cfg.get();
    in.driver = options_.driver;
    in.now = FormatTime(std::chrono::system_clock::now());
    std::vector<std::pair<std::string, bool>> live;
    std::map<std::string, std::string> held;
    std::map<std::string, std::set<std::string>> allocated;
    uint64_t config_generation = 0;
    {
      MutexLock lock(mu_);
      config_generation = config_generation_;
      for (const auto& [node, is_live] : live_) {
        if (is_live) live.emplace_back(node, true);
      }
      // A placed gang whose members are all live stays where it is: only its members matter
      // (their health), not the 10,000 other nodes.
      if (gang->status.phase == "Placed" || gang->status.phase == "Failed") {
        std::set<std::string> members;
        for (const api::GangNode& n : gang->status.nodes) members.insert(n.name);
        std::vector<std::pair<std::string, bool>> live_members;
        for (const auto& entry : live) {
          if (members.contains(entry.first)) live_members.push_back(entry);
        }
        if (gang->status.phase == "Failed" || live_members.size() == members.size()) {
          live = std::move(live_members);
        }
      }
      for (const auto& [node, uid] : held_) {
        if (uid != gang->metadata.uid) held[node] = uid;
      }
      for (const auto& [pool, devices] : allocated_) {
        allocated[pool] = std::set<std::string>(devices.begin(), devices.end());
      }
    }
    const std::string& cls = api::GangDeviceClass(gang->spec);
    const int k = static_cast<int>(gang->spec.devices_per_node);
    int computed = 0;  // offers computed now (the rest were cached)
    int decoded = 0;   // of which from an inventory decoded now
    const auto started = SteadyClock::now();
    for (const auto& [node, is_live] : live) {
      const auto stored = inventories_.Get(node);
      const auto node_obj = nodes_.Get(node);
      if (!stored || !node_obj) continue;
      GangCandidate c;
      c.name = node;
      c.address = node_obj->address;
      c.labels = node_obj->labels;
      if (auto h = c.labels.find("kubernetes.io/hostname"); h != c.labels.end()) {
        objects.hostnames[node] = h->second;
      }
      if (auto a = allocated.find(node); a != allocated.end()) c.allocated = a->second;
      if (auto h = held.find(node); h != held.end()) c.held_by = h->second;
      std::string inputs = stored->resource_version + "|" + cls + "|" + std::to_string(k) + "|" +
                           std::to_string(config_generation) + "|";
      for (const std::string& d : c.allocated) inputs.append(d) += ",";
      CachedOffer& cached = offers_[node];
      if (cached.inputs != inputs) {
        std::shared_ptr<const GangNodeFacts> facts;
        {
          MutexLock lock(mu_);
          auto f = gang_facts_.find(node);
          if (f != gang_facts_.end() && f->second.first == stored->resource_version) {
            facts = f->second.second;
          }
        }
        ++computed;
        if (!facts) {  // not synced since the inventory changed: decode it now
          ++decoded;
          auto inventory = DecodedInventory(node);
          if (!inventory) continue;
          auto made = GangFactsOf(*inventory);
          if (!made.ok()) continue;
          facts = std::make_shared<const GangNodeFacts>(std::move(made).value());
        }
        cached.inputs = std::move(inputs);
        cached.offer = OfferOf(*facts, c.allocated, *cfg, cls, options_.driver, k);
        cached.fabric = facts->fabric;
      }
      c.offer = cached.offer;
      c.fabric = cached.fabric;
      in.nodes.push_back(std::move(c));
    }
    // Offers and facts of nodes that are gone.
    for (auto it = offers_.begin(); it != offers_.end();) {
      it = inventories_.Get(it->first) ? std::next(it) : offers_.erase(it);
    }
    {
      MutexLock lock(mu_);
      for (auto it = gang_facts_.begin(); it != gang_facts_.end();) {
        it = inventories_.Get(it->first) ? std::next(it) : gang_facts_.erase(it);
      }
      for (auto it = shared_facts_.begin(); it != shared_facts_.end();) {
        it = it->second.expired() ? shared_facts_.erase(it) : std::next(it);
      }
    }
    std::map<std::string, std::shared_ptr<const api::NodeInventory>> members;
    in.inventory_of = [this, &members](const std::string& node) {
      auto& slot = members[node];
      if (!slot) slot = DecodedInventory(node);
      return slot;
    };
    const auto gathered = SteadyClock::now();
    GangPlan plan = PlanGang(in);
    log_->Debug(
        "gang " + key + ": " + std::to_string(in.nodes.size()) + " candidates (" +
        std::to_string(computed) + " offers computed, " + std::to_string(decoded) +
        " inventories decoded) in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(gathered - started).count()) +
        " ms, placed in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - gathered)
                .count()) +
        " ms");
    for (const std::string& note : plan.notes) {
      std::string line = "gang " + key;
      log_->Debug(line.append(": ").append(note));
    }
    moved = plan.moved;
    // The template asks for one scale-up domain when every chosen set lies in one.
    for (const api::GangNode& member : plan.status.nodes) {
      const auto inv = in.inventory_of(member.name);
      if (!inv) continue;
      const auto domains = DeviceScaleUpDomains(*inv);
      std::set<std::string> seen;
      for (const std::string& d : member.devices) {
        auto it = domains.find(d);
        seen.insert(it == domains.end() ? "" : it->second);
      }
      if (seen.size() > 1) objects.scale_up_aligned = false;
    }
    next = std::move(plan.status);
  }
  const GangSyncPlan plan = PlanGangSync(okey, current, next, moved, own, top_generation, objects);
  GangWriters writers{gang_objects_.get(), slice_objects_.get(), claim_objects_.get(),
                      template_objects_.get()};
  GangSyncResult result = ApplyGangSync(plan, writers);
  {
    PoolSyncResult remembered;
    for (auto& slice : result.written_slices) {
      remembered.written.push_back(std::make_shared<const ResourceSlice>(std::move(slice)));
    }
    remembered.deleted_names = result.deleted_slices;
    RememberWrites(remembered);
  }
  metrics_->gang_writes.Inc({result.status.ok() ? "ok" : std::string(WriteResult(result.status))},
                            result.writes);
  if (result.written) {
    std::set<std::string> changed;
    {
      MutexLock lock(mu_);
      changed = HoldNodes(key, result.written->metadata.uid,
                          result.written->metadata.resource_version, PlacedNodes(*result.written));
    }
    for (const std::string& n : changed) queue_.Add(PoolKey(n));
    const api::AcceleratorGangStatus& st = result.written->status;
    std::string nodes;
    for (const api::GangNode& n : st.nodes) nodes += (nodes.empty() ? "" : ",") + n.name;
    log_->Info("gang " + key + ": " + st.phase + (nodes.empty() ? "" : " on " + nodes) +
               (st.conditions.empty() ? "" : " (" + st.conditions.back().message + ")"));
  }
  if (!gang) {
    MutexLock lock(mu_);
    for (const std::string& n : HoldNodes(key, "", "", {})) queue_.Add(PoolKey(n));
  }
  if (result.status.ok() && result.waiting) {
    queue_.AddAfter(GangQueueKey(key), std::chrono::milliseconds(500));
  }
  return result.status;
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
  auto created = client_->Create(kc::Events(), kc::EventNamespace(info.about),
                                 kc::MakeEvent(info, std::chrono::system_clock::now()));
  if (!created.ok()) {
    log_->Debug("record event " + event.reason + ": " + created.status().message());
  }
}

}  // namespace xpu::controller

namespace xpu::api {

using controller::StoredClaim;
using controller::StoredInventory;
using controller::StoredNode;
using controller::StoredSlice;

template <>
StatusOr<StoredInventory> FromJson<StoredInventory>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(NodeInventory inventory, FromJson<NodeInventory>(json));
  return StoredInventory{inventory.metadata.name, inventory.metadata.resource_version,
                         controller::CompactJson(json)};
}

template <>
StatusOr<StoredSlice> FromJson<StoredSlice>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(resource::ResourceSlice slice, FromJson<resource::ResourceSlice>(json));
  return StoredSlice{slice.metadata.name, slice.metadata.resource_version, slice.spec.pool.name,
                     controller::CompactJson(json)};
}

template <>
StatusOr<StoredNode> FromJson<StoredNode>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(core::Node node, FromJson<core::Node>(json));
  std::string address;
  const auto status = json.find("status");
  if (status != json.end() && status->is_object()) {
    const auto addresses = status->find("addresses");
    if (addresses != status->end() && addresses->is_array()) {
      for (const nlohmann::json& a : *addresses) {
        if (a.is_object() && a.value("type", nlohmann::json()) == "InternalIP" &&
            a.contains("address") && a["address"].is_string()) {
          address = a["address"].get<std::string>();
          break;
        }
      }
    }
  }
  return StoredNode{node.metadata.name, node.metadata.uid, node.metadata.labels,
                    std::move(address)};
}

template <>
StatusOr<StoredClaim> FromJson<StoredClaim>(const nlohmann::json& json) {
  ASSIGN_OR_RETURN(resource::ResourceClaim claim, FromJson<resource::ResourceClaim>(json));
  StoredClaim out{claim.metadata.uid, {}};
  if (claim.status.allocation) {
    for (const auto& r : claim.status.allocation->devices.results) {
      out.devices.emplace_back(r.driver, r.pool, r.device);
    }
    return out;
  }
  controller::PendingClaimInput pending;
  pending.ns = claim.metadata.namespace_name;
  pending.name = claim.metadata.name;
  pending.created = claim.metadata.creation_timestamp;
  for (const resource::DeviceRequest& r : claim.spec.devices.requests) {
    controller::ClaimDemand demand;
    demand.request = r.name;
    auto alternative = [](std::string name, std::string device_class, const std::string& mode,
                          int64_t count) {
      return controller::ClaimAlternative{.name = std::move(name),
                                          .device_class = std::move(device_class),
                                          .count = count == 0 ? 1 : count,
                                          .all = mode == "All"};
    };
    if (r.exactly) {
      demand.alternatives.push_back(alternative("", r.exactly->device_class_name,
                                                r.exactly->allocation_mode, r.exactly->count));
    }
    for (const resource::DeviceSubRequest& sub : r.first_available) {
      demand.alternatives.push_back(
          alternative(sub.name, sub.device_class_name, sub.allocation_mode, sub.count));
    }
    pending.demands.push_back(std::move(demand));
  }
  out.pending = std::move(pending);
  return out;
}

}  // namespace xpu::api
