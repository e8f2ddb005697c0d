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

#include "api/client/client.h"
#include "api/meta.h"
#include "base/status.h"

namespace xpu::api::client {

template <typename T>
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // `ns` is empty for a cluster-scoped kind.
  virtual StatusOr<T> Get(const std::string& ns, const std::string& name) = 0;
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
  virtual Status Delete(const std::string& ns, const std::string& name,
                        const DeleteOptions& preconditions) = 0;
};

template <typename T>
class Objects : public ObjectReader<T>, public ObjectWriter<T> {};

// Objects<T> over the real client. `client` must outlive it.
template <typename T>
class ApiObjects final : public Objects<T> {
 public:
  ApiObjects(Client* client, ResourceRef ref) : client_(client), ref_(std::move(ref)) {}

  StatusOr<T> Get(const std::string& ns, const std::string& name) override {
    return Decoded(client_->Get(ref_, ns, name), ns, name);
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
  Status Delete(const std::string& ns, const std::string& name,
                const DeleteOptions& preconditions) override {
    return client_->Delete(ref_, ns, name, preconditions);
  }

 private:
  StatusOr<T> Decoded(StatusOr<nlohmann::json> answer, const std::string& ns,
                      const std::string& name) const {
    if (!answer.ok()) return answer.status();
    StatusOr<T> typed = FromJson<T>(*answer);
    if (!typed.ok()) {
      return DataLossError("read " + ref_.Name() + " " + (ns.empty() ? "" : ns + "/") + name +
                           ": " + typed.status().message());
    }
    return typed;
  }
  StatusOr<T> Written(StatusOr<nlohmann::json> answer, const T& object) const {
    return Decoded(std::move(answer), object.metadata.namespace_name, object.metadata.name);
  }

  Client* const client_;
  const ResourceRef ref_;
};

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_OBJECTS_H_
