// The controller's view of its ResourceSlices between the watch and its own writes: which slices
// each pool has (as the slice informer shows them), and a mutation cache of the slices the
// controller wrote or deleted that the watch has not shown yet. Without it a second sync before
// the watch event arrives would not see a new slice and create it again.
//
// A written slice is held until the watch shows that version (or a later one) or its deletion,
// or for the TTL (60 s); a deletion seen on the watch is remembered as long, so that a write's
// answer arriving after it does not bring the slice back. Thread-safe.
#ifndef XPU_CONTROLLER_SLICE_CACHE_H_
#define XPU_CONTROLLER_SLICE_CACHE_H_

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/client/informer.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "controller/pool_sync.h"
#include "controller/stored_objects.h"

namespace xpu::controller {

// A pool's slices as the watch shows them, for the pool sync's inputs.
struct WatchedSlices {
  std::vector<std::pair<std::string, std::string>> versions;  // name, resourceVersion; by name
  // Writes of the controller's own to this pool that the watch has not shown yet.
  bool writes_in_flight = false;
};

class SliceCache {
 public:
  // `clock` (the TTL) and `slices` (the informer) must outlive the cache.
  SliceCache(const Clock* clock, const api::client::TypedInformer<StoredSlice>* slices);
  SliceCache(const SliceCache&) = delete;
  SliceCache& operator=(const SliceCache&) = delete;

  // The slice informer's event (old null: added; new null: deleted). Returns the pools affected:
  // none when the event only shows a write or deletion of the controller's own (its echo).
  std::set<std::string> Observe(const std::shared_ptr<const StoredSlice>& old_slice,
                                const std::shared_ptr<const StoredSlice>& new_slice) EXCLUDES(mu_);
  // Every pool that has a slice.
  std::vector<std::string> Pools() const EXCLUDES(mu_);
  WatchedSlices Watched(const std::string& pool) const EXCLUDES(mu_);
  // The slices of `pool`: the watch's, decoded, with the cached writes it has not shown yet (and
  // without the slices the controller deleted).
  std::vector<SlicePtr> Existing(const std::string& pool) EXCLUDES(mu_);
  // Holds the writes of a sync until the watch shows them.
  void Remember(const PoolSyncResult& writes) EXCLUDES(mu_);
  // Drops the entries past their TTL.
  void Expire() EXCLUDES(mu_);

 private:
  struct Cached {
    SlicePtr slice;    // null: deleted by us
    std::string pool;  // "" for a deletion of a slice the watch never showed
    std::chrono::steady_clock::time_point expires;
  };
  using CachedMap = std::map<std::string, Cached>;

  // Every change of written_ goes through these two, which keep in_flight_ counted.
  void Hold(const std::string& name, Cached cached) REQUIRES(mu_);
  CachedMap::iterator Drop(CachedMap::iterator it) REQUIRES(mu_);

  const Clock* const clock_;
  const api::client::TypedInformer<StoredSlice>* const slices_;
  mutable Mutex mu_;
  std::map<std::string, std::set<std::string>> pool_slices_ GUARDED_BY(mu_);
  CachedMap written_ GUARDED_BY(mu_);  // the mutation cache
  // How many entries of written_ each pool has: its writes the watch has not shown yet.
  std::map<std::string, int> in_flight_ GUARDED_BY(mu_);
  // Slices whose deletion the watch has shown, until the TTL.
  std::map<std::string, std::chrono::steady_clock::time_point> seen_deleted_ GUARDED_BY(mu_);
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_SLICE_CACHE_H_
