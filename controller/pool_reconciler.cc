#include "controller/pool_reconciler.h"

#include <map>
#include <utility>

#include "controller/controller.h"

namespace xpu::controller {

PoolDecision DecidePool(const PoolInputs& inputs, const std::optional<PoolInputs>& last) {
  PoolDecision d;
  d.remember = !inputs.writes_in_flight;
  if (d.remember && last && *last == inputs) return d;  // kSkip
  d.owner = NodeFacts{inputs.node.name, inputs.node.uid, {}};
  if (!inputs.live) {
    d.action = PoolAction::kWithdraw;
    return d;
  }
  d.action = PoolAction::kPublish;
  d.node = inputs.node;
  d.publish = inputs.publish;
  return d;
}

Status Controller::SyncPoolKey(const std::string& node) {
  if (!CanWrite()) return OkStatus();
  const PoolGathered gathered = GatherPoolInputs(node);
  {
    // The nodes whose liveness this controller has judged since its start (GangView).
    MutexLock lock(mu_);
    if (gathered.inventory) {
      judged_.insert(node);
    } else {
      judged_.erase(node);
    }
  }
  if (gathered.lease_expires) QueuePool(node, UntilExpiry(*gathered.lease_expires));
  const PoolDecision decision = DecidePool(gathered.inputs, gathered.last);
  if (decision.action == PoolAction::kSkip) return OkStatus();
  std::optional<DesiredPool> desired;
  if (decision.action == PoolAction::kPublish) {
    ASSIGN_OR_RETURN(desired, DesiredPoolOf(gathered, decision));
    // A bad inventory keeps what is published; the plugin's next write re-queues the pool.
    if (!desired) return OkStatus();
  }
  return ApplyPool(gathered, decision, desired);
}

PoolInputs InputsAfterWrites(const PoolInputs& in, const PoolSyncResult& result) {
  std::map<std::string, std::string> versions(in.slices.begin(), in.slices.end());
  for (const SlicePtr& s : result.written) {
    versions[s->metadata.name] = s->metadata.resource_version;
  }
  for (const std::string& name : result.deleted_names) versions.erase(name);
  PoolInputs after = in;
  after.slices.assign(versions.begin(), versions.end());
  return after;
}

PoolGathered Controller::GatherPoolInputs(const std::string& node) {
  PoolGathered g;
  g.inventory = inventories_.Get(node);
  const auto node_obj = nodes_.Get(node);
  const auto lease = leases_.Get(options_.ns + "/" + PluginLeaseName(node));
  PoolInputs& in = g.inputs;
  if (g.inventory && node_obj && lease) {
    if (auto expires = LeaseExpiry(*lease); expires && *expires > options_.clock->WallNow()) {
      in.live = true;
      g.lease_expires = expires;
    }
  }
  if (g.inventory) in.inventory_version = g.inventory->resource_version;
  in.node.name = node;
  if (node_obj) {
    in.node.uid = node_obj->uid;
    in.node.labels = node_obj->labels;
  }
  in.node.gang = gang_sync_.HolderOf(node);
  in.publish.driver = options_.driver;
  in.publish.version = options_.version;
  in.publish.taints = taints_ok_;
  in.publish.counters = counters_ok_;
  in.publish.partition_type = partition_type_ok_;
  // The inputs describe the slices only while the mutation cache is empty: a sync that saw a
  // cached slice the watch had not shown yet must not be remembered as "nothing to do".
  WatchedSlices watched = slice_cache_.Watched(node);
  in.slices = std::move(watched.versions);
  in.writes_in_flight = watched.writes_in_flight;
  MutexLock lock(mu_);
  if (auto it = allocated_.find(node); it != allocated_.end()) {
    in.allocated.insert(it->second.begin(), it->second.end());
  }
  g.config = config_;
  in.config_generation = config_generation_;
  if (auto it = last_sync_.find(node); it != last_sync_.end()) g.last = it->second;
  return g;
}

StatusOr<std::optional<DesiredPool>> Controller::DesiredPoolOf(const PoolGathered& gathered,
                                                               const PoolDecision& decision) {
  const std::string& node = decision.node.name;
  StatusOr<api::NodeInventory> inventory = DecodeInventory(*gathered.inventory);
  if (!inventory.ok()) return inventory.status().WithContext("decode inventory of node " + node);
  // What gang placement and /autoscaler/pending need of it, while it is decoded.
  gang_sync_.NoteInventory(node, gathered.inventory->resource_version, *inventory);
  pending_.Note(node, gathered.inventory->resource_version, *inventory);
  auto built = BuildPool(*inventory, decision.node, *gathered.config, decision.publish,
                         gathered.inputs.allocated);
  if (!built.ok()) {
    const std::string msg = "build slices of node " + node + ": " + built.status().message();
    log_->Error(msg);
    RecordEvent({.reason = "InvalidInventory", .message = msg, .about_node = node});
    return std::optional<DesiredPool>();
  }
  if (!options_.node_groups.empty()) {
    CheckTemplateDrift(node, decision.node.labels, *built, *gathered.config, decision.publish);
  }
  return std::optional<DesiredPool>(std::move(built).value());
}

bool Controller::NoteLiveness(const std::string& node, bool live, bool has_inventory,
                              const std::optional<DesiredPool>& desired) {
  MutexLock lock(mu_);
  auto was = live_.find(node);
  const bool changed = (was != live_.end() && was->second) != live;
  live_[node] = live;
  if (desired) {
    tainted_[node] = desired->tainted;
  } else {
    tainted_.erase(node);
  }
  if (!has_inventory) live_.erase(node);
  return changed;
}

Status Controller::ApplyPool(const PoolGathered& gathered, const PoolDecision& decision,
                             const std::optional<DesiredPool>& desired) {
  const PoolInputs& in = gathered.inputs;
  const std::string& node = in.node.name;
  const std::vector<SlicePtr> existing = slice_cache_.Existing(node);
  if (NoteLiveness(node, in.live, gathered.inventory != nullptr, desired)) {
    gang_sync_.QueueGangs(std::chrono::milliseconds(0));
  }
  log_->Debug("sync pool " + node + ": " + (in.live ? "live" : "not live") + ", " +
              std::to_string(existing.size()) + " slices, " +
              std::to_string(desired ? desired->slices.size() : 0) + " desired");
  if (!desired && existing.empty()) {
    MutexLock lock(mu_);
    if (decision.remember) {
      last_sync_[node] = in;
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
  {
    MutexLock lock(mu_);
    auto it = published_inventory_.find(node);
    sync.bump_on_change = it != published_inventory_.end() && it->second != in.inventory_version;
  }
  PoolSyncResult result = SyncPool(*client_, api::DriverName(options_.driver), api::PoolName(node),
                                   desired, decision.owner, existing, sync);
  slice_cache_.Remember(result);
  if (result.status.ok()) {
    MutexLock lock(mu_);
    if (desired) {
      published_inventory_[node] = in.inventory_version;
    } else {
      published_inventory_.erase(node);
    }
    metrics_->pools_published.Set(static_cast<double>(published_inventory_.size()));
    // A sync that saw no writes of ours in flight records its inputs; after writes, the inputs
    // as the watch is to show them.
    if (decision.remember) {
      last_sync_[node] = result.Changed() ? InputsAfterWrites(in, result) : in;
    } else {
      last_sync_.erase(node);
    }
  }
  if (result.Changed()) {
    log_->Debug("pool " + node + ": " + std::to_string(result.created) + " created, " +
                std::to_string(result.updated) + " updated, " + std::to_string(result.deleted) +
                " deleted, generation " + std::to_string(result.generation));
  }
  FallBackOnDroppedFields(node, result);
  return result.status;
}

void Controller::FallBackOnDroppedFields(const std::string& node, const PoolSyncResult& result) {
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

}  // namespace xpu::controller
