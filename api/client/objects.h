// Typed, per-kind access to the API: the seam between logic that reads and writes Kubernetes
// objects and the client that carries them. Code takes an ObjectReader<T> or Objects<T> instead of
// the whole Client; production hands it ApiObjects<T> (the Client, the kind's resource and the
// codec), tests hand it FakeObjects<T> (api/client/testing/fake_objects.h: an in-memory store with
// the API server's rules), so the logic is tested without a server.
//
// T is a typed object with `metadata` (api::ObjectMeta), read by api::FromJson<T> and written by
// ToJson(const T&), found by argument-dependent lookup. Errors carry the client's codes (client.h):
// kNotFound, kAlreadyExists, kAborted for a resourceVersion conflict, and so on; an answer that
// does not decode is kDataLoss naming the object.
#ifndef XPU_API_CLIENT_OBJECTS_H_
#define XPU_API_CLIENT_OBJECTS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "api/client/client.h"
#include "api/meta.h"
#include "base/status.h"

namespace xpu::api::client {

// Which object of a kind: a cluster-scoped one by its name, a namespaced one by its namespace and
// name. Built only through the named constructors, so that a namespace and a name (two strings)
// are not swapped unseen at a call.
class ObjectKey {
 public:
  static ObjectKey Cluster(std::string name) { return ObjectKey({}, std::move(name)); }
  static ObjectKey Namespaced(std::string ns, std::string name) {
    return ObjectKey(std::move(ns), std::move(name));
  }
  // The object `meta` describes (its namespace is empty for a cluster-scoped kind).
  static ObjectKey Of(const ObjectMeta& meta) { return ObjectKey(meta.namespace_name, meta.name); }

  // Empty for a cluster-scoped object.
  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  // "<ns>/<name>", or "<name>" for a cluster-scoped object: for messages.
  std::string String() const { return ns_.empty() ? name_ : ns_ + "/" + name_; }

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=> as comparing 0
  friend auto operator<=>(const ObjectKey&, const ObjectKey&) = default;

 private:
  ObjectKey(std::string ns, std::string name) : ns_(std::move(ns)), name_(std::move(name)) {}

  std::string ns_;
  std::string name_;
};

template <typename T>
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  virtual StatusOr<T> Get(const ObjectKey& key) = 0;
};

template <typename T>
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  // The namespace and name come from object.metadata. Create refuses a set resourceVersion;
  // Update and UpdateStatus use it, when set, as the optimistic-concurrency precondition.
  virtual StatusOr<T> Create(const T& object) = 0;
  virtual StatusOr<T> Update(const T& object) = 0;
  virtual StatusOr<T> UpdateStatus(const T& object) = 0;
  // `preconditions`: the uid and resourceVersion the object must still have (kAborted if not).
  virtual Status Delete(const ObjectKey& key, const DeleteOptions& preconditions) = 0;
};

template <typename T>
class Objects : public ObjectReader<T>, public ObjectWriter<T> {};

// Objects<T> over the real client. `client` must outlive it.
template <typename T>
class ApiObjects final : public Objects<T> {
 public:
  ApiObjects(Client* client, ResourceRef ref) : client_(client), ref_(std::move(ref)) {}

  StatusOr<T> Get(const ObjectKey& key) override {
    return Decoded(client_->Get(ref_, key.ns(), key.name()), key);
  }
  StatusOr<T> Create(const T& object) override {
    return Written(client_->Create(ref_, object.metadata.namespace_name, ToJson(object)), object);
  }
  StatusOr<T> Update(const T& object) override {
    return Written(client_->Update(ref_, object.metadata.namespace_name, ToJson(object)), object);
  }
  StatusOr<T> UpdateStatus(const T& object) override {
    return Written(client_->UpdateStatus(ref_, object.metadata.namespace_name, ToJson(object)),
                   object);
  }
  Status Delete(const ObjectKey& key, const DeleteOptions& preconditions) override {
    return client_->Delete(ref_, key.ns(), key.name(), preconditions);
  }

 private:
  StatusOr<T> Decoded(StatusOr<nlohmann::json> answer, const ObjectKey& key) const {
    if (!answer.ok()) return answer.status();
    StatusOr<T> typed = FromJson<T>(*answer);
    if (!typed.ok()) {
      return DataLossError("read " + ref_.Name() + " " + key.String() + ": " +
                           typed.status().message());
    }
    return typed;
  }
  StatusOr<T> Written(StatusOr<nlohmann::json> answer, const T& object) const {
    return Decoded(std::move(answer), ObjectKey::Of(object.metadata));
  }

  Client* const client_;
  const ResourceRef ref_;
};

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_OBJECTS_H_
