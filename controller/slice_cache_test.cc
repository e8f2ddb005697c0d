// The slice cache's echo rule: an event that shows exactly a write (or deletion) of the
// controller's own syncs no pool; anything else does.
#include "controller/slice_cache.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "api/client/informer.h"
#include "base/clock.h"

namespace xpu::controller {
namespace {

std::shared_ptr<const StoredSlice> Seen(const std::string& name, const std::string& version,
                                        const std::string& pool) {
  return std::make_shared<const StoredSlice>(StoredSlice{name, version, pool, PackedJson("{}")});
}

SlicePtr Written(const std::string& name, const std::string& version, const std::string& pool) {
  auto slice = std::make_shared<api::resource::ResourceSlice>();
  slice->metadata.name = name;
  slice->metadata.resource_version = version;
  slice->spec.pool.name = pool;
  return slice;
}

TEST_CASE("a slice event that only echoes the controller's own write syncs no pool",
          "[controller][slice_cache]") {
  FakeClock clock;
  // Never started: the cache reads nothing from it here.
  api::client::TypedInformer<StoredSlice> informer(nullptr, api::client::ResourceSlices());
  SliceCache cache(&clock, &informer);
  using Pools = std::set<std::string>;

  PoolSyncResult sync;
  sync.written = {Written("n1-a", "5", "n1"), Written("n2-a", "7", "n2")};
  sync.deleted_names = {"n3-a"};
  cache.Remember(sync);
  CHECK(cache.Watched("n1").writes_in_flight);
  CHECK(cache.Watched("n2").writes_in_flight);
  CHECK_FALSE(cache.Watched("n5").writes_in_flight);  // a pool without writes of ours

  // Our create, as written: nothing to do.
  CHECK(cache.Observe(nullptr, Seen("n1-a", "5", "n1")).empty());
  CHECK_FALSE(cache.Watched("n1").writes_in_flight);  // whatever other pools wait for
  CHECK(cache.Watched("n2").writes_in_flight);
  // Our deletion: nothing to do.
  CHECK(cache.Observe(Seen("n3-a", "3", "n3"), nullptr).empty());
  // A later version than ours (someone changed it after us): the pool is synced.
  CHECK(cache.Observe(Seen("n2-a", "6", "n2"), Seen("n2-a", "8", "n2")) == Pools{"n2"});
  CHECK_FALSE(cache.Watched("n2").writes_in_flight);
  // With nothing of ours in flight, every event syncs its pool.
  CHECK(cache.Observe(Seen("n1-a", "5", "n1"), Seen("n1-a", "9", "n1")) == Pools{"n1"});
  CHECK(cache.Observe(nullptr, Seen("n4-a", "10", "n4")) == Pools{"n4"});
  CHECK(cache.Observe(Seen("n4-a", "10", "n4"), nullptr) == Pools{"n4"});
}

}  // namespace
}  // namespace xpu::controller
