#include "controller/slice_cache.h"

namespace xpu::controller {
namespace {
namespace slice_cache_cc {

constexpr std::chrono::seconds kMutationCacheTtl{60};

// `a` is the same version as `b` or a later one; `unknown` when they do not compare.
bool AtLeast(const std::string& a, const std::string& b, int unknown) {
  return api::client::CompareResourceVersions(a, b).value_or(unknown) >= 0;
}

}  // namespace slice_cache_cc
}  // namespace

SliceCache::SliceCache(const Clock* clock, const api::client::TypedInformer<StoredSlice>* slices)
    : clock_(clock), slices_(slices) {}

void SliceCache::Hold(const std::string& name, Cached cached) {
  if (auto it = written_.find(name); it != written_.end()) Drop(it);
  ++in_flight_[cached.pool];
  written_.emplace(name, std::move(cached));
}

SliceCache::CachedMap::iterator SliceCache::Drop(CachedMap::iterator it) {
  if (auto count = in_flight_.find(it->second.pool); count != in_flight_.end()) {
    if (--count->second == 0) in_flight_.erase(count);
  }
  return written_.erase(it);
}

std::set<std::string> SliceCache::Observe(const std::shared_ptr<const StoredSlice>& old_slice,
                                          const std::shared_ptr<const StoredSlice>& new_slice) {
  std::set<std::string> pools;
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
  // The watch has caught up with a write of ours once it shows that version (or a later one) or
  // the slice's deletion: the mutation cache entry has done its job. When it shows exactly what
  // we wrote (or deleted), the event brings nothing the sync that wrote did not know: the pool is
  // not synced again for it (at 65,000 nodes those echoes were half of a publish's syncs).
  const std::string& name = new_slice ? new_slice->name : old_slice->name;
  if (!new_slice) seen_deleted_[name] = clock_->Now() + slice_cache_cc::kMutationCacheTtl;
  bool own_echo = false;
  if (auto it = written_.find(name); it != written_.end()) {
    if (!new_slice) {
      own_echo = it->second.slice == nullptr;
      Drop(it);
    } else if (it->second.slice &&
               slice_cache_cc::AtLeast(new_slice->resource_version,
                                       it->second.slice->metadata.resource_version, 1)) {
      own_echo = new_slice->resource_version == it->second.slice->metadata.resource_version &&
                 (!old_slice || old_slice->pool == new_slice->pool);
      Drop(it);
    }
  }
  if (own_echo) pools.clear();
  return pools;
}

std::vector<std::string> SliceCache::Pools() const {
  std::vector<std::string> pools;
  MutexLock lock(mu_);
  for (const auto& [pool, names] : pool_slices_) pools.push_back(pool);
  return pools;
}

WatchedSlices SliceCache::Watched(const std::string& pool) const {
  WatchedSlices out;
  MutexLock lock(mu_);
  if (auto it = pool_slices_.find(pool); it != pool_slices_.end()) {
    for (const std::string& name : it->second) {
      auto seen = slices_->Get(name);
      out.versions.emplace_back(name, seen ? seen->resource_version : "");
    }
  }
  out.writes_in_flight = in_flight_.contains(pool);
  return out;
}

std::vector<SlicePtr> SliceCache::Existing(const std::string& pool) {
  std::set<std::string> names;
  {
    MutexLock lock(mu_);
    if (auto it = pool_slices_.find(pool); it != pool_slices_.end()) names = it->second;
    for (const auto& [name, cached] : written_) {
      if (cached.slice && cached.slice->spec.pool.name == pool) names.insert(name);
    }
  }
  std::vector<SlicePtr> out;
  const auto now = clock_->Now();
  std::vector<std::shared_ptr<const StoredSlice>> stored;
  {
    MutexLock lock(mu_);
    for (const std::string& name : names) {
      auto seen = slices_->Get(name);
      auto it = written_.find(name);
      if (it != written_.end() && it->second.expires > now) {
        if (!it->second.slice) continue;  // we deleted it; the watch has not said so yet
        if (!seen || !slice_cache_cc::AtLeast(seen->resource_version,
                                              it->second.slice->metadata.resource_version, -1)) {
          out.push_back(it->second.slice);
          continue;
        }
        Drop(it);  // the informer caught up
      }
      if (seen && seen->pool == pool) stored.push_back(seen);
    }
  }
  for (const auto& s : stored) {
    auto decoded = DecodeSlice(*s);
    if (decoded.ok()) out.push_back(*decoded);
  }
  return out;
}

void SliceCache::Remember(const PoolSyncResult& writes) {
  const auto expires = clock_->Now() + slice_cache_cc::kMutationCacheTtl;
  MutexLock lock(mu_);
  for (const SlicePtr& s : writes.written) {
    // The watch may already have shown this version, or even the slice's deletion, before the
    // write's answer came back: then there is nothing to bridge.
    if (seen_deleted_.contains(s->metadata.name)) continue;
    const auto seen = slices_->Get(s->metadata.name);
    if (seen && slice_cache_cc::AtLeast(seen->resource_version, s->metadata.resource_version, -1)) {
      continue;
    }
    Hold(s->metadata.name, Cached{s, s->spec.pool.name, expires});
  }
  for (const std::string& name : writes.deleted_names) {
    const auto seen = slices_->Get(name);
    Hold(name, Cached{nullptr, seen ? seen->pool : "", expires});
  }
}

void SliceCache::Expire() {
  const auto now = clock_->Now();
  MutexLock lock(mu_);
  for (auto it = written_.begin(); it != written_.end();) {
    it = it->second.expires <= now ? Drop(it) : std::next(it);
  }
  for (auto it = seen_deleted_.begin(); it != seen_deleted_.end();) {
    it = it->second <= now ? seen_deleted_.erase(it) : std::next(it);
  }
}

}  // namespace xpu::controller
