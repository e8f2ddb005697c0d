#include "controller/pool_sync.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace xpu::controller {
namespace {

namespace kc = api::client;
using api::resource::Device;
using api::resource::ResourceSlice;
using api::resource::ResourceSliceSpec;

// The identity of a slice for matching: its device names and counter-set names.
std::string MatchKey(const ResourceSliceSpec& spec) {
  std::vector<std::string> names;
  for (const Device& d : spec.devices) names.push_back("d:" + d.name);
  for (const auto& c : spec.shared_counters) names.push_back("c:" + c.name);
  std::sort(names.begin(), names.end());
  std::string key;
  for (const std::string& n : names) key += n + ",";
  return key;
}

// Keeps what the server added: members this code does not know, and taint timestamps.
void CarryServerFields(ResourceSliceSpec& desired, const ResourceSliceSpec& existing) {
  desired.unknown = existing.unknown;
  desired.pool.unknown = existing.pool.unknown;
  std::map<std::string, const Device*> by_name;
  for (const Device& d : existing.devices) by_name[d.name] = &d;
  for (Device& d : desired.devices) {
    auto it = by_name.find(d.name);
    if (it == by_name.end()) continue;
    d.unknown = it->second->unknown;
    for (api::resource::DeviceTaint& t : d.taints) {
      for (const api::resource::DeviceTaint& old : it->second->taints) {
        if (old.key == t.key && old.value == t.value && old.effect == t.effect) {
          t.time_added = old.time_added;
          t.unknown = old.unknown;
        }
      }
    }
  }
}

bool HasTaints(const ResourceSliceSpec& spec) {
  return std::any_of(spec.devices.begin(), spec.devices.end(),
                     [](const Device& d) { return !d.taints.empty(); });
}
bool HasCounters(const ResourceSliceSpec& spec) {
  return !spec.shared_counters.empty() ||
         std::any_of(spec.devices.begin(), spec.devices.end(),
                     [](const Device& d) { return !d.consumes_counters.empty(); });
}

}  // namespace

std::string_view WriteResult(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kAborted:
      return "conflict";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "exists";
    default:
      return "error";
  }
}

PoolSyncPlan PlanPoolSync(const api::DriverName& driver_name, const api::PoolName& pool,
                          const std::optional<DesiredPool>& desired, const NodeFacts& node,
                          const std::vector<SlicePtr>& existing, bool bump_on_change) {
  const std::string& driver = driver_name.value();
  const std::string& pool_name = pool.value();
  PoolSyncPlan plan;
  plan.pool = pool_name;
  int64_t generation = 0;
  for (const SlicePtr& s : existing) generation = std::max(generation, s->spec.pool.generation);

  std::vector<SlicePtr> current;
  for (const SlicePtr& s : existing) {
    if (desired && s->spec.pool.generation == generation) {
      current.push_back(s);
    } else {
      plan.deletes.push_back(s);
    }
  }

  // desired index -> matched existing slice
  const size_t want = desired ? desired->slices.size() : 0;
  std::vector<SlicePtr> match(want);
  if (current.size() == 1 && want == 1) {
    match[0] = current[0];
  } else if (want > 0) {
    std::multimap<std::string, SlicePtr> by_key;
    for (const SlicePtr& s : current) by_key.emplace(MatchKey(s->spec), s);
    for (size_t i = 0; i < want; ++i) {
      auto it = by_key.find(MatchKey(desired->slices[i]));
      if (it == by_key.end()) continue;
      match[i] = it->second;
      by_key.erase(it);
    }
    for (auto& [key, s] : by_key) plan.deletes.push_back(s);
  } else {
    plan.deletes.insert(plan.deletes.end(), current.begin(), current.end());
  }

  // Desired specs with the pool fields, first at the current generation.
  std::vector<ResourceSliceSpec> specs;
  auto build = [&](int64_t gen) {
    specs.clear();
    for (size_t i = 0; i < want; ++i) {
      ResourceSliceSpec spec = desired->slices[i];
      spec.driver = std::string(driver);
      spec.pool.name = pool_name;
      spec.pool.generation = gen;
      spec.pool.resource_slice_count = static_cast<int64_t>(want);
      if (match[i]) CarryServerFields(spec, match[i]->spec);
      specs.push_back(std::move(spec));
    }
  };
  build(generation);
  int fresh = 0;
  int changed = 0;
  for (size_t i = 0; i < want; ++i) {
    if (!match[i]) {
      ++fresh;
    } else if (!(specs[i] == match[i]->spec)) {
      ++changed;
    }
  }
  if (fresh > 0 || changed > 1 || (bump_on_change && changed > 0)) {
    ++generation;
    build(generation);
  }
  plan.generation = generation;

  for (size_t i = 0; i < want; ++i) {
    if (!match[i] || specs[i] == match[i]->spec) continue;
    ResourceSlice updated = *match[i];
    updated.spec = specs[i];
    plan.updates.push_back(std::move(updated));
  }
  if (fresh > 0) {
    DesiredPool with_pool = *desired;
    with_pool.slices = specs;
    std::vector<ResourceSlice> objects = SliceObjects(with_pool, node, driver, generation);
    for (size_t i = 0; i < want; ++i) {
      if (!match[i]) plan.creates.push_back(std::move(objects[i]));
    }
  }
  return plan;
}

StatusOr<nlohmann::json> ClientSliceWriter::Create(const nlohmann::json& slice) {
  return client_.Create(kc::ResourceSlices(), "", slice);
}
StatusOr<nlohmann::json> ClientSliceWriter::Update(const nlohmann::json& slice) {
  return client_.Update(kc::ResourceSlices(), "", slice);
}
Status ClientSliceWriter::Delete(const std::string& name, const kc::DeleteOptions& pre) {
  return client_.Delete(kc::ResourceSlices(), "", name, pre);
}

PoolSyncResult ApplyPoolSync(const PoolSyncPlan& plan, SliceWriter& writer,
                             const SyncOptions& options) {
  PoolSyncResult result;
  result.generation = plan.generation;
  const std::string context = "sync pool " + plan.pool;
  auto note = [&](std::string_view verb, const Status& s) {
    if (options.observe) options.observe(verb, WriteResult(s));
  };
  auto allowed = [&]() -> bool {
    if (!options.can_write || options.can_write()) return true;
    result.status = Status(StatusCode::kCancelled, context + ": not the leader, stopped writing");
    return false;
  };

  // 1. Obsolete slices first.
  for (const SlicePtr& s : plan.deletes) {
    if (!allowed()) return result;
    kc::DeleteOptions pre;
    pre.uid = s->metadata.uid;
    pre.resource_version = s->metadata.resource_version;
    Status st = writer.Delete(s->metadata.name, pre);
    note("delete", st);
    if (st.ok() || st.code() == StatusCode::kNotFound) {
      ++result.deleted;
      result.deleted_names.push_back(s->metadata.name);
      continue;
    }
    result.status = st.WithContext(context);
    return result;
  }

  // Counts an update or create, keeps what the server stored and compares it with what was
  // sent; false (with result.status set) when the write or reading its answer failed.
  auto wrote = [&](std::string_view verb, StatusOr<nlohmann::json> answer,
                   const ResourceSliceSpec& sent, int& counter) -> bool {
    note(verb, answer.status());
    if (!answer.ok()) {
      result.status = answer.status().WithContext(context);
      return false;
    }
    ++counter;
    auto obj = api::FromJson<ResourceSlice>(*answer);
    if (!obj.ok()) {
      result.status = obj.status().WithContext("read written slice").WithContext(context);
      return false;
    }
    if (HasTaints(sent) && !HasTaints(obj->spec)) result.dropped_taints = true;
    if (HasCounters(sent) && !HasCounters(obj->spec)) result.dropped_counters = true;
    if (sent.partition_type_attribute && !obj->spec.partition_type_attribute) {
      result.dropped_partition_type = true;
    }
    result.written.push_back(std::make_shared<const ResourceSlice>(std::move(obj).value()));
    return true;
  };

  // 2. Updates of matched slices that changed, 3. creates.
  for (const ResourceSlice& slice : plan.updates) {
    if (!allowed()) return result;
    if (!wrote("update", writer.Update(api::resource::ToJson(slice)), slice.spec, result.updated)) {
      return result;
    }
  }
  for (const ResourceSlice& slice : plan.creates) {
    if (!allowed()) return result;
    if (!wrote("create", writer.Create(api::resource::ToJson(slice)), slice.spec, result.created)) {
      return result;
    }
  }
  return result;
}

PoolSyncResult SyncPool(kc::Client& client, const api::DriverName& driver,
                        const api::PoolName& pool_name, const std::optional<DesiredPool>& desired,
                        const NodeFacts& node, const std::vector<SlicePtr>& existing,
                        const SyncOptions& options) {
  ClientSliceWriter writer(client);
  return ApplyPoolSync(
      PlanPoolSync(driver, pool_name, desired, node, existing, options.bump_on_change), writer,
      options);
}

}  // namespace xpu::controller
