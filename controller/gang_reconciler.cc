#include "controller/gang_reconciler.h"

#include <algorithm>
#include <utility>

#include "api/node_description.h"
#include "base/heap.h"
#include "base/time.h"
#include "controller/slices.h"

namespace xpu::controller {
namespace {
namespace gang_reconciler_cc {

using SteadyClock = std::chrono::steady_clock;

int64_t MillisBetween(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

// True when every member's chosen devices lie in one scale-up domain (or the member's inventory
// cannot be had): the template may then ask for one.
bool ScaleUpAligned(
    const api::AcceleratorGangStatus& status,
    const std::function<std::shared_ptr<const api::NodeInventory>(const std::string&)>&
        inventory_of) {
  bool aligned = true;
  for (const api::GangNode& member : status.nodes) {
    const auto inv = inventory_of(member.name);
    if (!inv) continue;
    const auto domains = DeviceScaleUpDomains(*inv);
    std::set<std::string> seen;
    for (const std::string& d : member.devices) {
      auto it = domains.find(d);
      seen.insert(it == domains.end() ? "" : it->second);
    }
    if (seen.size() > 1) aligned = false;
  }
  return aligned;
}

}  // namespace gang_reconciler_cc
}  // namespace

std::vector<std::string> NodesToConsider(const api::AcceleratorGang& gang,
                                         const std::vector<std::string>& live) {
  if (gang.status.phase != "Placed" && gang.status.phase != "Failed") return live;
  std::set<std::string> members;
  for (const api::GangNode& n : gang.status.nodes) members.insert(n.name);
  std::vector<std::string> live_members;
  for (const std::string& node : live) {
    if (members.contains(node)) live_members.push_back(node);
  }
  if (gang.status.phase == "Failed" || live_members.size() == members.size()) return live_members;
  return live;
}

std::vector<std::string> PlacedNodes(const api::AcceleratorGang& gang) {
  std::vector<std::string> nodes;
  if (gang.status.phase != "Placed") return nodes;
  for (const api::GangNode& n : gang.status.nodes) nodes.push_back(n.name);
  return nodes;
}

std::string GangFactsContent(const GangNodeFacts& facts) {
  nlohmann::json key = api::NodeDescriptionToJson(facts.topology);
  key.erase("name");
  for (const api::InventoryDevice& d : facts.devices) {
    key["devices*"].push_back({d.name, d.vendor, d.model, d.memory, d.health});
    for (const auto& [name, a] : d.attributes) {
      key["devices*"].back().push_back(name + "=" + a.string_value.value_or("") +
                                       (a.bool_value.value_or(false) ? "1" : "0"));
    }
  }
  if (const auto& f = facts.fabric) {
    key["fabric*"] = {f->clique_id, f->cluster_uuid, f->super_pod_id,
                      f->rack_id,   f->leaf,         f->spine};
  }
  return key.dump();
}

GangReconciler::GangReconciler(api::client::Client* client, std::string driver, const Clock* clock,
                               Informers informers, GangSeams seams, ControllerMetrics* metrics,
                               Logger* log)
    : driver_(std::move(driver)),
      clock_(clock),
      informers_(informers),
      seams_(std::move(seams)),
      metrics_(metrics),
      log_(log),
      gang_objects_(client, api::client::AcceleratorGangs()),
      slice_objects_(client, api::client::ResourceSlices()),
      claim_objects_(client, api::client::ResourceClaims()),
      template_objects_(client, api::client::ResourceClaimTemplates()) {}

void GangReconciler::QueueGangs(std::chrono::milliseconds delay, bool pending_only) {
  for (const auto& g : informers_.gangs->List()) {
    if (pending_only && (g->status.phase == "Placed" || g->status.phase == "Failed")) continue;
    seams_.queue_gang(GangKey(*g), delay);
  }
}

std::string GangReconciler::HolderOf(const std::string& node) const {
  MutexLock lock(hold_mu_);
  auto it = held_.find(node);
  return it == held_.end() ? "" : it->second;
}

std::string GangReconciler::GangHolding(const std::string& node) const {
  MutexLock lock(hold_mu_);
  std::string gang;
  if (auto h = held_.find(node); h != held_.end()) {
    for (const auto& [key, holding] : holdings_) {
      if (holding.uid == h->second) gang = key;
    }
  }
  return gang;
}

std::map<std::string, std::string> GangReconciler::HeldByOthers(const std::string& uid) const {
  MutexLock lock(hold_mu_);
  std::map<std::string, std::string> held;
  for (const auto& [node, holder] : held_) {
    if (holder != uid) held[node] = holder;
  }
  return held;
}

std::set<std::string> GangReconciler::HoldNodes(const std::string& key, const std::string& uid,
                                                const std::string& version,
                                                const std::vector<std::string>& nodes) {
  MutexLock lock(hold_mu_);
  std::set<std::string> changed;
  auto it = holdings_.find(key);
  if (it != holdings_.end() && !version.empty() &&
      api::client::CompareResourceVersions(version, it->second.version).value_or(1) < 0) {
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

void GangReconciler::OnGang(const std::shared_ptr<const api::AcceleratorGang>& old_gang,
                            const std::shared_ptr<const api::AcceleratorGang>& new_gang) {
  const api::AcceleratorGang& any = new_gang ? *new_gang : *old_gang;
  const std::string key = GangKey(any);
  const std::set<std::string> changed =
      new_gang ? HoldNodes(key, new_gang->metadata.uid, new_gang->metadata.resource_version,
                           PlacedNodes(*new_gang))
               : HoldNodes(key, "", "", {});
  for (const std::string& n : changed) seams_.queue_pool(n);
  seams_.queue_gang(key, std::chrono::milliseconds(0));
}

void GangReconciler::NoteInventory(const std::string& node, const std::string& version,
                                   const api::NodeInventory& inventory) {
  auto facts = GangFactsOf(inventory);
  const std::string content = facts.ok() ? GangFactsContent(*facts) : "";
  MutexLock lock(facts_mu_);
  if (!facts.ok()) {
    facts_.erase(node);
    return;
  }
  std::shared_ptr<const GangNodeFacts> shared = shared_facts_[content].lock();
  if (!shared) {
    shared = std::make_shared<const GangNodeFacts>(std::move(facts).value());
    shared_facts_[content] = shared;
  }
  facts_[node] = {version, std::move(shared)};
}

std::shared_ptr<const GangNodeFacts> GangReconciler::FactsOf(const std::string& node,
                                                             const std::string& version) const {
  MutexLock lock(facts_mu_);
  auto f = facts_.find(node);
  if (f != facts_.end() && f->second.first == version) return f->second.second;
  return nullptr;
}

bool GangReconciler::OfferFor(GangCandidate& c, const StoredInventory& stored, std::string inputs,
                              const Config& config, const std::string& device_class, int k,
                              GangCandidates& out) {
  CachedOffer& cached = offers_[c.name];
  if (cached.inputs != inputs) {
    std::shared_ptr<const GangNodeFacts> facts = FactsOf(c.name, stored.resource_version);
    ++out.computed;
    if (!facts) {  // not synced since the inventory changed: decode it now
      ++out.decoded;
      auto inventory = DecodedInventoryOrNull(&stored);
      if (!inventory) return false;
      auto made = GangFactsOf(*inventory);
      if (!made.ok()) return false;
      facts = std::make_shared<const GangNodeFacts>(std::move(made).value());
    }
    cached.inputs = std::move(inputs);
    cached.offer = OfferOf(*facts, c.allocated, config, device_class, driver_, k);
    cached.fabric = facts->fabric;
  }
  c.offer = cached.offer;
  c.fabric = cached.fabric;
  return true;
}

GangCandidates GangReconciler::GatherGangCandidates(const api::AcceleratorGang& gang,
                                                    const std::vector<std::string>& nodes,
                                                    const GangClusterView& view) {
  const std::map<std::string, std::string> held = HeldByOthers(gang.metadata.uid);
  const std::string& cls = api::GangDeviceClass(gang.spec);
  const int k = static_cast<int>(gang.spec.devices_per_node);
  GangCandidates out;
  MutexLock lock(offers_mu_);
  for (const std::string& node : nodes) {
    const auto stored = informers_.inventories->Get(node);
    const auto node_obj = informers_.nodes->Get(node);
    if (!stored || !node_obj) continue;
    GangCandidate c;
    c.name = node;
    c.address = node_obj->address;
    c.labels = node_obj->labels;
    if (auto a = view.allocated.find(node); a != view.allocated.end()) c.allocated = a->second;
    if (auto h = held.find(node); h != held.end()) c.held_by = h->second;
    std::string inputs = stored->resource_version + "|" + cls + "|" + std::to_string(k) + "|" +
                         std::to_string(view.config_generation) + "|";
    for (const std::string& d : c.allocated) inputs.append(d) += ",";
    if (!OfferFor(c, *stored, std::move(inputs), *view.config, cls, k, out)) continue;
    out.nodes.push_back(std::move(c));
  }
  return out;
}

void GangReconciler::PruneCaches() {
  // Each cache holds one entry per node whose inventory the informer has, and more only when a
  // node has gone: only then is it walked (a walk asks the informer once per entry, 65,000 times
  // in a large fleet). A stale entry waits at most until the next node is added.
  const size_t inventories = informers_.inventories->size();
  {
    MutexLock lock(offers_mu_);
    for (auto it = offers_.begin(); offers_.size() > inventories && it != offers_.end();) {
      it = informers_.inventories->Get(it->first) ? std::next(it) : offers_.erase(it);
    }
  }
  MutexLock lock(facts_mu_);
  for (auto it = facts_.begin(); facts_.size() > inventories && it != facts_.end();) {
    it = informers_.inventories->Get(it->first) ? std::next(it) : facts_.erase(it);
  }
  for (auto it = shared_facts_.begin(); it != shared_facts_.end();) {
    it = it->second.expired() ? shared_facts_.erase(it) : std::next(it);
  }
}

GangPlan GangReconciler::Place(const std::string& key, const api::AcceleratorGang& gang,
                               const GangClusterView& view, GangObjectOptions& objects) {
  using gang_reconciler_cc::MillisBetween;
  const auto started = std::chrono::steady_clock::now();
  GangCandidates candidates = GatherGangCandidates(gang, NodesToConsider(gang, view.live), view);
  PruneCaches();
  GangPlanInput in;
  in.gang = &gang;
  in.config = view.config.get();
  in.driver = driver_;
  in.now = FormatTime(clock_->WallNow());
  in.nodes = std::move(candidates.nodes);
  std::map<std::string, std::shared_ptr<const api::NodeInventory>> members;
  in.inventory_of = [this, &members](const std::string& node) {
    auto& slot = members[node];
    if (!slot) slot = DecodedInventoryOrNull(informers_.inventories->Get(node).get());
    return slot;
  };
  const auto gathered = std::chrono::steady_clock::now();
  GangPlan plan = PlanGang(in);
  log_->Debug("gang " + key + ": " + std::to_string(in.nodes.size()) + " candidates (" +
              std::to_string(candidates.computed) + " offers computed, " +
              std::to_string(candidates.decoded) + " inventories decoded) in " +
              std::to_string(MillisBetween(started, gathered)) + " ms, placed in " +
              std::to_string(MillisBetween(gathered, std::chrono::steady_clock::now())) + " ms");
  for (const std::string& note : plan.notes) {
    std::string line = "gang " + key;
    log_->Debug(line.append(": ").append(note));
  }
  // The members' kubernetes.io/hostname labels, for the gang device's node selector.
  for (const api::GangNode& member : plan.status.nodes) {
    const auto node = informers_.nodes->Get(member.name);
    if (!node) continue;
    if (auto h = node->labels.find("kubernetes.io/hostname"); h != node->labels.end()) {
      objects.hostnames[member.name] = h->second;
    }
  }
  // The template asks for one scale-up domain when every chosen set lies in one.
  if (!gang_reconciler_cc::ScaleUpAligned(plan.status, in.inventory_of)) {
    objects.scale_up_aligned = false;
  }
  return plan;
}

Status GangReconciler::Sync(const std::string& key) {
  if (!seams_.can_write()) return OkStatus();
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return OkStatus();
  const api::client::ObjectKey okey =
      api::client::ObjectKey::Namespaced(key.substr(0, slash), key.substr(slash + 1));
  MutexLock serial(serial_mu_);
  const auto gang = informers_.gangs->Get(key);

  // The slices of the pool: this gang's, and the highest generation of all.
  std::vector<api::resource::ResourceSlice> own;
  int64_t top_generation = 0;
  for (const SlicePtr& s : seams_.existing_slices(std::string(kGangPool))) {
    top_generation = std::max(top_generation, s->spec.pool.generation);
    auto of = GangOfSlice(s->metadata.name);
    if (of && *of == okey) own.push_back(*s);
  }

  const GangClusterView view = seams_.view();
  if (!view.liveness_known && gang && gang->status.phase == "Placed") {
    return UnavailableError("gang " + key +
                            ": the nodes' liveness is not known yet after the start");
  }
  GangObjectOptions objects;
  objects.driver = driver_;
  // Run sets the mode in force (WithEffectiveMode); a config given unset reads as attributes,
  // as BuildPool reads it, so that the gang's template asks for what the pools publish.
  objects.mode = view.config->mode.value_or(PublishMode::kAttributes);
  std::optional<api::AcceleratorGang> current;
  std::optional<api::AcceleratorGangStatus> next;
  bool moved = false;
  if (gang) {
    current = *gang;
    GangPlan plan = Place(key, *current, view, objects);
    moved = plan.moved;
    next = std::move(plan.status);
    // A placement builds a view of the whole fleet and frees it; glibc keeps those pages in the
    // worker's arena. Giving them back keeps the resident size near what is held (at 10,000
    // nodes with 20 gangs of 64: docs/performance.md, "Gang placement end to end").
    TrimHeap();
  }
  const GangSyncPlan plan = PlanGangSync(okey, current, next, moved, own, top_generation, objects);
  GangSyncResult result = ApplyGangSync(
      plan, GangWriters{&gang_objects_, &slice_objects_, &claim_objects_, &template_objects_});
  AfterApply(key, gang != nullptr, result);
  return result.status;
}

void GangReconciler::AfterApply(const std::string& key, bool exists, GangSyncResult& result) {
  {
    PoolSyncResult remembered;
    for (auto& slice : result.written_slices) {
      remembered.written.push_back(
          std::make_shared<const api::resource::ResourceSlice>(std::move(slice)));
    }
    remembered.deleted_names = result.deleted_slices;
    seams_.remember_writes(remembered);
  }
  metrics_->gang_writes.Inc({result.status.ok() ? "ok" : std::string(WriteResult(result.status))},
                            result.writes);
  if (result.written) {
    for (const std::string& n :
         HoldNodes(key, result.written->metadata.uid, result.written->metadata.resource_version,
                   PlacedNodes(*result.written))) {
      seams_.queue_pool(n);
    }
    const api::AcceleratorGangStatus& st = result.written->status;
    std::string nodes;
    for (const api::GangNode& n : st.nodes) nodes += (nodes.empty() ? "" : ",") + n.name;
    log_->Info("gang " + key + ": " + st.phase + (nodes.empty() ? "" : " on " + nodes) +
               (st.conditions.empty() ? "" : " (" + st.conditions.back().message + ")"));
  }
  if (!exists) {
    for (const std::string& n : HoldNodes(key, "", "", {})) seams_.queue_pool(n);
  }
  if (result.status.ok() && result.waiting) {
    seams_.queue_gang(key, std::chrono::milliseconds(500));
  }
}

}  // namespace xpu::controller
