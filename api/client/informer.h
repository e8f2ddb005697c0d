// Informers: a thread that lists a resource, then watches it from the list's resourceVersion,
// keeping a thread-safe cache and calling event handlers. It resumes a broken watch from the last
// resourceVersion seen (bookmarks included), relists on 410 Gone, and backs off on errors. A
// relist replaces the cache and reports the differences as events, so handlers see every change
// once and never a stale object: an event whose resourceVersion is not newer than the cached
// object's is dropped.
//
// TypedInformer<T> keeps decoded objects (FromJson<T>), which is what consumers use and far
// smaller than JSON trees; Informer keeps the JSON as served. An object that fails to decode is
// left out of the cache and counted (stats().decode_errors) with its message kept in
// last_decode_error(); it never stops the informer.
#ifndef XPU_API_CLIENT_INFORMER_H_
#define XPU_API_CLIENT_INFORMER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/client/client.h"
#include "api/meta.h"
#include "base/mutex.h"

namespace xpu::api::client {

struct InformerOptions {
  std::string ns;  // empty = all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  // Objects per page of the initial list. A page is parsed whole before its objects are
  // decoded one by one: 100 NodeInventories of an 8-GPU node parse into about 7 MB, where
  // client-go's 500 would take 36 MB at the controller's start (docs/performance.md).
  int64_t page_size = 100;
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
  uint64_t decode_errors = 0;  // objects left out because they did not decode
};

// The list/watch engine and cache shared by every informer type. Objects are held type-erased;
// TypedInformer<T> is the interface to use.
class InformerCore {
 public:
  using Item = std::shared_ptr<const void>;
  using Decode = std::function<StatusOr<Item>(nlohmann::json&&)>;
  struct Handlers {
    std::function<void(const Item&)> on_add;
    std::function<void(const Item& old_item, const Item& new_item)> on_update;
    std::function<void(const Item&)> on_delete;  // the last state known
  };

  // `client` must outlive the informer.
  InformerCore(Client* client, ResourceRef ref, InformerOptions options, Decode decode);
  ~InformerCore();  // stops
  InformerCore(const InformerCore&) = delete;
  InformerCore& operator=(const InformerCore&) = delete;

  void AddHandlers(Handlers handlers);
  void Start();
  void Stop();
  bool WaitForSync(std::chrono::milliseconds timeout);
  bool synced() const;
  Item Get(const std::string& key) const;
  std::vector<Item> List() const;
  size_t size() const;
  std::string resource_version() const;
  InformerStats stats() const;
  std::string last_decode_error() const;

 private:
  struct Entry {
    std::string resource_version;
    Item item;
  };
  void Run();
  Status ListAndReplace(bool after_gone);
  Status WatchOnce();
  void Apply(const std::string& type, nlohmann::json object);
  bool SleepFor(std::chrono::steady_clock::duration d);
  // Decodes; on failure counts it, keeps the message and returns null.
  Item DecodeOrCount(nlohmann::json&& object, const std::string& key);

  Client* const client_;
  const ResourceRef ref_;
  const InformerOptions options_;
  const Decode decode_;
  std::vector<Handlers> handlers_;

  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, Entry> cache_ GUARDED_BY(mu_);
  std::string resource_version_ GUARDED_BY(mu_);
  bool synced_ GUARDED_BY(mu_) = false;
  InformerStats stats_ GUARDED_BY(mu_);
  std::string last_decode_error_ GUARDED_BY(mu_);

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

template <typename T>
class TypedInformer {
 public:
  using Ptr = std::shared_ptr<const T>;
  struct Handlers {
    std::function<void(const Ptr&)> on_add;
    std::function<void(const Ptr& old_object, const Ptr& new_object)> on_update;
    std::function<void(const Ptr&)> on_delete;
  };

  // Decodes with FromJson<T>, or with `decode` when given.
  TypedInformer(Client* client, ResourceRef ref, InformerOptions options = {},
                std::function<StatusOr<T>(nlohmann::json&&)> decode = nullptr)
      : core_(client, std::move(ref), std::move(options),
              [decode = std::move(decode)](nlohmann::json&& j) -> StatusOr<InformerCore::Item> {
                StatusOr<T> value = decode ? decode(std::move(j)) : DecodeDefault(std::move(j));
                if (!value.ok()) return value.status();
                return InformerCore::Item(std::make_shared<const T>(std::move(value).value()));
              }) {}

  // Handlers run on the informer's thread, one event at a time, outside the cache lock. Add
  // them before Start.
  void AddHandlers(Handlers h) {
    InformerCore::Handlers core;
    if (h.on_add) core.on_add = [f = h.on_add](const InformerCore::Item& i) { f(Cast(i)); };
    if (h.on_update) {
      core.on_update = [f = h.on_update](const InformerCore::Item& o, const InformerCore::Item& n) {
        f(Cast(o), Cast(n));
      };
    }
    if (h.on_delete) {
      core.on_delete = [f = h.on_delete](const InformerCore::Item& i) { f(Cast(i)); };
    }
    core_.AddHandlers(std::move(core));
  }
  // Start after Stop resumes the watch from the cached resourceVersion (relisting if the server
  // no longer has it), reporting what changed meanwhile as events.
  void Start() { core_.Start(); }
  void Stop() { core_.Stop(); }
  // True once the first list has been stored (handlers have seen its adds).
  bool WaitForSync(std::chrono::milliseconds timeout) { return core_.WaitForSync(timeout); }
  bool synced() const { return core_.synced(); }
  // "namespace/name" or "name"; null when absent.
  Ptr Get(const std::string& key) const { return Cast(core_.Get(key)); }
  std::vector<Ptr> List() const {
    std::vector<Ptr> out;
    for (const auto& item : core_.List()) out.push_back(Cast(item));
    return out;
  }
  size_t size() const { return core_.size(); }
  // The resourceVersion the cache is current to (the last event or bookmark).
  std::string resource_version() const { return core_.resource_version(); }
  InformerStats stats() const { return core_.stats(); }
  std::string last_decode_error() const { return core_.last_decode_error(); }

 private:
  static Ptr Cast(const InformerCore::Item& item) {
    return std::static_pointer_cast<const T>(item);
  }
  static StatusOr<T> DecodeDefault(nlohmann::json&& j) {
    if constexpr (std::is_same_v<T, nlohmann::json>) {
      return std::move(j);
    } else {
      return FromJson<T>(j);
    }
  }

  InformerCore core_;
};

// The JSON as served.
using Informer = TypedInformer<nlohmann::json>;
using ObjectPtr = Informer::Ptr;
using InformerHandlers = Informer::Handlers;

// "namespace/name" or "name" of a JSON object.
std::string KeyOf(const nlohmann::json& object);

// Compares two Kubernetes resourceVersions as the informer does: numerically when both are
// decimal integers (etcd revisions), else unordered (nullopt).
std::optional<int> CompareResourceVersions(const std::string& a, const std::string& b);

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_INFORMER_H_
