// An in-memory Objects<T> with the API server's rules, for logic tests without a server:
//  - Create sets uid and resourceVersion, refuses an existing name (kAlreadyExists) and a set
//    resourceVersion (kInvalidArgument); with a status subresource it drops the status.
//  - Update and UpdateStatus refuse a missing object (kNotFound) and a stale resourceVersion
//    (kAborted, a 409 Conflict); with a status subresource Update keeps the stored status and
//    UpdateStatus changes only the status. Each write bumps the resourceVersion.
//  - Get and Delete answer kNotFound for a missing object; Delete answers kAborted when its uid
//    or resourceVersion precondition does not hold.
// Faults: FailNext(verb, status) makes the next call of that verb answer `status` (queued, in
// order); calls() counts the calls of each verb, failed ones included. Thread-safe.
#ifndef XPU_API_CLIENT_TESTING_FAKE_OBJECTS_H_
#define XPU_API_CLIENT_TESTING_FAKE_OBJECTS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/client/objects.h"
#include "base/mutex.h"

namespace xpu::api::client::testing {

enum class FakeVerb { kGet, kCreate, kUpdate, kUpdateStatus, kDelete };

template <typename T>
class FakeObjects final : public Objects<T> {
 public:
  // `kind` names objects in messages ("nodeinventories"); `status_subresource` as the kind's.
  explicit FakeObjects(std::string kind, bool status_subresource = false)
      : kind_(std::move(kind)), status_subresource_(status_subresource) {}

  StatusOr<T> Get(const ObjectKey& key) override {
    MutexLock lock(mu_);
    RETURN_IF_ERROR(Called(FakeVerb::kGet));
    const auto it = objects_.find(key);
    if (it == objects_.end()) return Missing("get", key);
    return it->second;
  }

  StatusOr<T> Create(const T& object) override {
    MutexLock lock(mu_);
    RETURN_IF_ERROR(Called(FakeVerb::kCreate));
    const ObjectMeta& meta = object.metadata;
    if (!meta.resource_version.empty()) {
      return InvalidArgumentError("create " + What(meta) + ": resourceVersion should not be set");
    }
    if (meta.name.empty()) return InvalidArgumentError("create " + kind_ + ": name is required");
    const ObjectKey key = ObjectKey::Of(meta);
    if (objects_.contains(key)) {
      return Status(StatusCode::kAlreadyExists, "create " + What(meta) + ": already exists");
    }
    T stored = object;
    if constexpr (kHasStatus) {
      if (status_subresource_) stored.status = {};
    }
    stored.metadata.uid = "fake-uid-" + std::to_string(++uids_);
    stored.metadata.resource_version = std::to_string(++version_);
    objects_[key] = stored;
    ++writes_;
    return stored;
  }

  StatusOr<T> Update(const T& object) override { return Write(object, FakeVerb::kUpdate); }
  StatusOr<T> UpdateStatus(const T& object) override {
    return Write(object, FakeVerb::kUpdateStatus);
  }

  Status Delete(const ObjectKey& key, const DeleteOptions& preconditions) override {
    MutexLock lock(mu_);
    RETURN_IF_ERROR(Called(FakeVerb::kDelete));
    const auto it = objects_.find(key);
    if (it == objects_.end()) return Missing("delete", key).status();
    const ObjectMeta& meta = it->second.metadata;
    if ((preconditions.uid && *preconditions.uid != meta.uid) ||
        (preconditions.resource_version &&
         *preconditions.resource_version != meta.resource_version)) {
      return Status(StatusCode::kAborted, "delete " + What(meta) + ": precondition failed");
    }
    objects_.erase(it);
    ++writes_;
    return OkStatus();
  }

  // Test controls.
  // Stores `object` as it is, setting a uid and a resourceVersion when they are empty.
  void Put(T object) {
    MutexLock lock(mu_);
    if (object.metadata.uid.empty()) object.metadata.uid = "fake-uid-" + std::to_string(++uids_);
    if (object.metadata.resource_version.empty()) {
      object.metadata.resource_version = std::to_string(++version_);
    }
    ObjectKey key = ObjectKey::Of(object.metadata);
    objects_[std::move(key)] = std::move(object);
  }
  std::optional<T> Find(const ObjectKey& key) const {
    MutexLock lock(mu_);
    const auto it = objects_.find(key);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }
  void FailNext(FakeVerb verb, Status status) {
    MutexLock lock(mu_);
    faults_[verb].push_back(std::move(status));
  }
  int calls(FakeVerb verb) const {
    MutexLock lock(mu_);
    const auto it = calls_.find(verb);
    return it == calls_.end() ? 0 : it->second;
  }
  // Writes that succeeded (create, update, update status, delete).
  int writes() const {
    MutexLock lock(mu_);
    return writes_;
  }

 private:
  static constexpr bool kHasStatus = requires(T t) { t.status; };

  std::string What(const ObjectMeta& meta) const {
    return kind_ + " " + ObjectKey::Of(meta).String();
  }
  StatusOr<T> Missing(const char* verb, const ObjectKey& key) const {
    return NotFoundError(std::string(verb) + " " + kind_ + " " + key.String() + ": not found");
  }
  // Counts the call, and answers the queued fault for its verb, if any.
  Status Called(FakeVerb verb) REQUIRES(mu_) {
    ++calls_[verb];
    std::deque<Status>& queued = faults_[verb];
    if (queued.empty()) {
      return OkStatus();
    }
    Status s = std::move(queued.front());
    queued.pop_front();
    return s;
  }

  StatusOr<T> Write(const T& object, FakeVerb verb) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    RETURN_IF_ERROR(Called(verb));
    const ObjectMeta& meta = object.metadata;
    const ObjectKey key = ObjectKey::Of(meta);
    const auto it = objects_.find(key);
    const char* name = verb == FakeVerb::kUpdate ? "update" : "update status of";
    if (it == objects_.end()) return Missing(name, key);
    T& stored = it->second;
    if (!meta.resource_version.empty() &&
        meta.resource_version != stored.metadata.resource_version) {
      return Status(StatusCode::kAborted, std::string(name) + " " + What(meta) +
                                              ": the object has been modified (resourceVersion " +
                                              meta.resource_version + ", stored " +
                                              stored.metadata.resource_version + ")");
    }
    T next = object;
    if constexpr (kHasStatus) {
      if (status_subresource_ && verb == FakeVerb::kUpdate) next.status = stored.status;
      if (status_subresource_ && verb == FakeVerb::kUpdateStatus) {
        next = stored;
        next.status = object.status;
      }
    }
    next.metadata.uid = stored.metadata.uid;
    next.metadata.resource_version = std::to_string(++version_);
    stored = next;
    ++writes_;
    return next;
  }

  const std::string kind_;
  const bool status_subresource_;
  mutable Mutex mu_;
  std::map<ObjectKey, T> objects_ GUARDED_BY(mu_);
  std::map<FakeVerb, std::deque<Status>> faults_ GUARDED_BY(mu_);
  std::map<FakeVerb, int> calls_ GUARDED_BY(mu_);
  int64_t version_ GUARDED_BY(mu_) = 0;
  int64_t uids_ GUARDED_BY(mu_) = 0;
  int writes_ GUARDED_BY(mu_) = 0;
};

}  // namespace xpu::api::client::testing

#endif  // XPU_API_CLIENT_TESTING_FAKE_OBJECTS_H_
