// An informer: a thread that lists a resource, then watches it from the list's resourceVersion,
// keeping a thread-safe cache of the objects and calling event handlers. It resumes a broken
// watch from the last resourceVersion seen (bookmarks included), relists on 410 Gone, and backs
// off on errors. A relist replaces the cache and reports the differences as events, so handlers
// see every change once and never a stale object: an event whose resourceVersion is not newer
// than the cached object's is dropped.
#ifndef XPU_API_CLIENT_INFORMER_H_
#define XPU_API_CLIENT_INFORMER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/client/client.h"

namespace xpu::api::client {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

struct InformerHandlers {
  std::function<void(const ObjectPtr&)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& new_object)> on_update;
  std::function<void(const ObjectPtr&)> on_delete;  // the last state known
};

struct InformerOptions {
  std::string ns;  // empty = all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  int watch_timeout_seconds = 300;
  BackoffPolicy error_backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(5000), 2,
                              1 << 30, std::chrono::seconds(60)};
};

struct InformerStats {
  uint64_t lists = 0;         // full lists, the first included
  uint64_t relists_gone = 0;  // lists forced by 410 Gone
  uint64_t watches = 0;       // watch streams opened
  uint64_t bookmarks = 0;
  uint64_t errors = 0;         // failed lists or watches (retried)
  uint64_t stale_dropped = 0;  // events not newer than the cache
};

class Informer {
 public:
  // `client` must outlive the informer.
  Informer(Client* client, ResourceRef ref, InformerOptions options = {});
  ~Informer();  // stops
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers run on the informer's thread, one event at a time, outside the cache lock. Add
  // them before Start.
  void AddHandlers(InformerHandlers handlers);
  // Start after Stop resumes the watch from the cached resourceVersion (relisting if the
  // server no longer has it), reporting what changed meanwhile as events.
  void Start();
  void Stop();
  // True once the first list has been stored (handlers have seen its adds).
  bool WaitForSync(std::chrono::milliseconds timeout);
  bool synced() const;

  // "namespace/name" or "name".
  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  size_t size() const;
  // The resourceVersion the cache is current to (the last event or bookmark).
  std::string resource_version() const;
  InformerStats stats() const;

  static std::string KeyOf(const nlohmann::json& object);

 private:
  void Run();
  Status ListAndReplace(bool after_gone);
  Status WatchOnce();
  void Apply(const std::string& type, nlohmann::json object);
  bool SleepFor(std::chrono::steady_clock::duration d);

  Client* const client_;
  const ResourceRef ref_;
  const InformerOptions options_;
  std::vector<InformerHandlers> handlers_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, ObjectPtr> cache_;  // GUARDED_BY(mu_)
  std::string resource_version_;            // GUARDED_BY(mu_)
  bool synced_ = false;                     // GUARDED_BY(mu_)
  InformerStats stats_;                     // GUARDED_BY(mu_)

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Compares two Kubernetes resourceVersions as the informer does: numerically when both are
// decimal integers (etcd revisions), else unordered (nullopt).
std::optional<int> CompareResourceVersions(const std::string& a, const std::string& b);

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_INFORMER_H_
