// The per-node facts /autoscaler/pending judges by (controller/pending_facts.h), kept current as
// inventories change: the controller notes an inventory's facts where its pool sync decodes it
// (once per resourceVersion of a live node's inventory; the informer's delete handler forgets
// them), the model part shared between nodes of equal server models; a request reads the facts
// and decodes nothing. Liveness and the devices claims hold stay where
// the controller keeps them; the request joins them with these facts.
//
// Cost: per node one map entry (name, resourceVersion, a shared model pointer and a health
// mask), per distinct model one compiled topology and its slim devices. Thread-safe.
#ifndef XPU_CONTROLLER_PENDING_CACHE_H_
#define XPU_CONTROLLER_PENDING_CACHE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "controller/pending_facts.h"

namespace xpu::controller {

class PendingCache {
 public:
  // An inventory decoded by a pool sync (at resourceVersion `version`): its facts, unless they
  // are of that version already.
  void Note(const std::string& node, const std::string& version,
            const api::NodeInventory& inventory) EXCLUDES(mu_);
  // An inventory deleted.
  void Forget(const std::string& node) EXCLUDES(mu_);

  // The facts of each of `nodes`, in order; a null model where none are kept.
  std::vector<PendingNode> Facts(const std::vector<std::string>& nodes) const EXCLUDES(mu_);

  struct Counts {
    size_t nodes = 0;
    size_t models = 0;   // distinct models shared by those nodes
    uint64_t noted = 0;  // inventory versions noted since start
  };
  Counts counts() const EXCLUDES(mu_);

 private:
  struct Entry {
    std::string version;
    PendingNode facts;
  };
  // Replaces a node's entry; drops models no node holds any more.
  void Put(const std::string& node, Entry entry) REQUIRES(mu_);

  mutable Mutex mu_;
  PendingModels models_ GUARDED_BY(mu_);
  std::map<std::string, Entry> nodes_ GUARDED_BY(mu_);
  uint64_t noted_ GUARDED_BY(mu_) = 0;
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_PENDING_CACHE_H_
