// The object store behind kube-sim: generic JSON objects, one map per resource type keyed by
// namespace/name, a single global resourceVersion counter (as etcd has) and a bounded event
// history that watches read from.
//
// Errors are Status codes that the HTTP layer maps to Kubernetes Status reasons:
//   kNotFound 404 NotFound, kAlreadyExists 409 AlreadyExists, kAborted 409 Conflict,
//   kOutOfRange 410 Expired, kInvalidArgument 422 Invalid, kFailedPrecondition 400 BadRequest,
//   kDeadlineExceeded 504 Timeout (a list at a resourceVersion newer than the store's).
// Objects are stored and returned in their storage (preferred-version) form.
//
// Thread-safe: one mutex guards all state; WaitForEvents blocks on a condition variable.
#ifndef XPU_E2E_KUBESIM_STORE_H_
#define XPU_E2E_KUBESIM_STORE_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/validation.h"
#include "base/mutex.h"
#include "base/status.h"
#include "e2e/kubesim/feature_gates.h"
#include "e2e/kubesim/resources.h"
#include "e2e/kubesim/selectors.h"

namespace xpu::kubesim {

struct StoreOptions {
  std::vector<ResourceType> types = BuiltinResources();
  size_t history = 1000;  // events kept for watches; older resourceVersions get 410
  uint64_t seed = 0;      // uids and generated names; 0 = random
  // The release whose resource.k8s.io validation rules and limits apply.
  api::KubeVersion kube_version = api::KubeVersion::k1_35;
};

struct ListOptions {
  Selector labels;
  Selector fields;
  int64_t limit = 0;           // 0 = no limit
  std::string continue_token;  // from a previous ListResult
  // The resourceVersion / resourceVersionMatch query parameters. Unset or "0": the current
  // state. NotOlderThan (also when the match is unset): the current state, or 504 Timeout "Too
  // large resource version" when newer than the store. Exact: the state at that resourceVersion,
  // rebuilt from the event history (410 Expired when older than the history, 504 when newer).
  // A continue token lists the state its first page saw (410 once that left the history).
  std::string resource_version;
  std::string resource_version_match;
};

struct ListResult {
  std::vector<nlohmann::json> items;
  int64_t resource_version = 0;  // the store's resourceVersion when listed
  std::string continue_token;    // non-empty when more items remain
};

struct Preconditions {
  std::optional<std::string> uid;
  std::optional<std::string> resource_version;
};

struct Event {
  int64_t resource_version = 0;
  size_t type_index = 0;
  std::string type;  // ADDED, MODIFIED, DELETED
  nlohmann::json object;
  // MODIFIED and DELETED: the object before the change (null for ADDED). A watch with selectors
  // uses it to turn a MODIFIED into ADDED or DELETED when the object starts or stops matching.
  nlohmann::json old_object;
};

// What a watch selects: one resource type, optionally one namespace, and selectors.
struct WatchFilter {
  size_t type_index = 0;
  std::string ns;  // empty = all namespaces
  Selector labels;
  Selector fields;
};

struct EventBatch {
  std::vector<Event> events;    // matching events after the requested resourceVersion
  int64_t scanned_through = 0;  // every event up to here was considered (for bookmarks)
};

class Store {
 public:
  explicit Store(StoreOptions options = {});

  const std::vector<ResourceType>& types() const { return options_.types; }
  // Index of (group, resource) in types(), or nullopt.
  std::optional<size_t> FindType(const std::string& group, const std::string& resource) const;

  // Create sets uid, creationTimestamp, resourceVersion, generation 1 and, for a generateName,
  // the name. Namespaced objects need an existing namespace. Status is dropped for types with a
  // status subresource. On a validation failure (kInvalidArgument) the problems go to `causes`
  // when it is not null. Before validation the fields of the gates disabled in `gates` are
  // dropped (see feature_gates.h); the object returned is the one stored.
  StatusOr<nlohmann::json> Create(size_t type, const std::string& ns, nlohmann::json obj,
                                  api::FieldErrors* causes = nullptr,
                                  const FeatureGates& gates = {}) EXCLUDES(mu_);
  StatusOr<nlohmann::json> Get(size_t type, const std::string& ns, const std::string& name) const
      EXCLUDES(mu_);
  StatusOr<ListResult> List(size_t type, const std::string& ns, const ListOptions& options) const
      EXCLUDES(mu_);
  // Update of the main resource (status kept from the stored object when the type has a status
  // subresource) or of /status (only status is taken from `obj`). A non-empty
  // metadata.resourceVersion must match; generation is bumped when spec changes. The main
  // resource drops the fields of the gates disabled in `gates` unless the stored object already
  // uses that gate's fields.
  StatusOr<nlohmann::json> Update(size_t type, const std::string& ns, const std::string& name,
                                  nlohmann::json obj, bool status,
                                  api::FieldErrors* causes = nullptr,
                                  const FeatureGates& gates = {}) EXCLUDES(mu_);
  // Deletes (or, with finalizers, marks deleted) and garbage-collects objects whose
  // ownerReferences name the deleted object's uid. Returns the object as last stored.
  StatusOr<nlohmann::json> Delete(size_t type, const std::string& ns, const std::string& name,
                                  const Preconditions& preconditions) EXCLUDES(mu_);
  // Deletes every object of `type` in `ns` (all namespaces when empty) matching the selectors of
  // `options` (deletecollection), as Delete does one. Returns the objects as last stored.
  StatusOr<std::vector<nlohmann::json>> DeleteCollection(size_t type, const std::string& ns,
                                                         const ListOptions& options) EXCLUDES(mu_);

  int64_t ResourceVersion() const EXCLUDES(mu_);
  // Events with resourceVersion > `after` that match `filter`, waiting until `deadline` while
  // there are none. kOutOfRange (410) when `after` is older than the history; kCancelled after
  // Shutdown.
  StatusOr<EventBatch> WaitForEvents(const WatchFilter& filter, int64_t after,
                                     std::chrono::steady_clock::time_point deadline) const
      EXCLUDES(mu_);
  // Wakes all waiters; later waits return kCancelled at once.
  void Shutdown() EXCLUDES(mu_);

 private:
  using Objects = std::map<std::string, nlohmann::json>;  // "ns/name" -> object

  bool NamespaceExistsLocked(const std::string& ns) const REQUIRES(mu_);
  void RecordLocked(size_t type, const char* event_type, const nlohmann::json& obj,
                    const nlohmann::json& old = nullptr) REQUIRES(mu_);
  StatusOr<nlohmann::json> DeleteLocked(size_t type, const std::string& key,
                                        const Preconditions& preconditions) REQUIRES(mu_);
  // How the objects of `type` at `resource_version` differ from now: key -> the object then, or
  // null when it did not exist (kOutOfRange when the history no longer reaches back that far).
  // A page of a list at an older version merges it with the current objects, so a list's pages
  // cost what they return and the changes since, not a copy of every object per page.
  using Undo = std::map<std::string, const nlohmann::json*>;
  StatusOr<Undo> UndoSinceLocked(size_t type, int64_t resource_version) const REQUIRES(mu_);
  void RemoveLocked(size_t type, const std::string& key) REQUIRES(mu_);
  std::string NewUidLocked() REQUIRES(mu_);
  std::string Key(const std::string& ns, const std::string& name) const { return ns + "/" + name; }
  // `more`: errors found outside the object's own rules, reported first.
  Status Validate(size_t type, const nlohmann::json& obj, const nlohmann::json* old, bool status,
                  api::FieldErrors* causes, api::FieldErrors more = {}) const;
  api::FieldErrors AdminAccessErrorsLocked(size_t type, const std::string& ns,
                                           const nlohmann::json& obj) const REQUIRES(mu_);

  const StoreOptions options_;
  mutable Mutex mu_;
  mutable CondVar changed_;
  std::vector<Objects> objects_ GUARDED_BY(mu_);  // one per type
  int64_t resource_version_ GUARDED_BY(mu_) = 0;
  int64_t compacted_ GUARDED_BY(mu_) = 0;  // events up to here were dropped
  std::deque<Event> history_ GUARDED_BY(mu_);
  std::mt19937_64 random_ GUARDED_BY(mu_);
  bool shutdown_ GUARDED_BY(mu_) = false;
};

// True when `obj` passes `filter` (namespace and selectors; the type is not checked).
bool MatchesFilter(const WatchFilter& filter, const nlohmann::json& obj);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_STORE_H_
