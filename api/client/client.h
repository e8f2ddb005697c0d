// A Kubernetes API client over the Transport: typed paths for the resources the driver touches,
// get/list/create/update/update-status/delete with preconditions, paginated and selector lists,
// watch streams with bookmarks, discovery of the served resource.k8s.io version, retries with
// backoff and jitter (honouring Retry-After), a QPS/burst limiter and per-request timeouts.
//
// Objects are nlohmann::json in the form the API serves them. resource.k8s.io objects are always
// exchanged with callers in v1: when the cluster serves only v1beta2 or v1beta1 (discovered once,
// v1 → v1beta2 → v1beta1), bodies are converted on the way out and on the way back in.
//
// Errors say verb, resource, name and cause ("update resourceslices.resource.k8s.io n1-0: 409
// Conflict: the object has been modified..."), with codes:
//   kNotFound 404, kAlreadyExists 409 AlreadyExists, kAborted 409 Conflict (re-read and retry),
//   kOutOfRange 410 Gone/Expired, kInvalidArgument 400/422, kUnauthenticated 401,
//   kPermissionDenied 403, kUnavailable 429/5xx/connection after the retries,
//   kDeadlineExceeded timeouts, kFailedPrecondition TLS failures.
// Thread-safe.
#ifndef XPU_API_CLIENT_CLIENT_H_
#define XPU_API_CLIENT_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/client/kubeconfig.h"
#include "api/client/retry.h"
#include "api/client/transport.h"
#include "api/resource.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::api::client {

// Which resource a call is about.
struct ResourceRef {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // plural
  bool namespaced = false;

  // "resourceslices.resource.k8s.io", or "nodes" in the core group.
  std::string Name() const;
  // "resource.k8s.io/v1", or "v1".
  std::string ApiVersion() const;
};

ResourceRef Namespaces();
ResourceRef Nodes();
ResourceRef Leases();
ResourceRef Events();          // core/v1 Event
ResourceRef ResourceSlices();  // resource.k8s.io, always v1 to callers
ResourceRef DeviceClasses();
ResourceRef ResourceClaims();
ResourceRef ResourceClaimTemplates();
ResourceRef NodeInventories();  // xpu.dra.dev/v1alpha1
ResourceRef AcceleratorGangs();

struct ClientOptions {
  double qps = 50;  // client-side rate limit; <= 0 disables
  int burst = 100;
  std::chrono::milliseconds timeout{30'000};  // per request (watches: see WatchOptions)
  std::chrono::milliseconds connect_timeout{10'000};
  BackoffPolicy backoff;
  uint64_t seed = 0;  // jitter; 0 = random
  // Called after every HTTP attempt with the verb ("get", "list", "watch", "create", "update",
  // "delete", ...) and the status code (0 when no answer came back): the metrics hook. Must be
  // thread-safe and cheap.
  std::function<void(std::string_view verb, int code)> observe;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // page size; 0 = everything at once
  std::string continue_token;
  std::string resource_version;  // "" = most recent
};

struct ListPage {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // of the list, to watch from
  std::string continue_token;    // non-empty when more pages remain
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // resume after this; "" = from now (synthetic ADDED first)
  bool bookmarks = true;
  int timeout_seconds = 300;  // the server ends the stream after this
};

// A watch event: ADDED, MODIFIED, DELETED or BOOKMARK, and the object (a BOOKMARK's object
// carries only metadata.resourceVersion).
struct WatchEvent {
  std::string type;
  nlohmann::json object;
};

struct DeleteOptions {
  std::optional<std::string> uid;               // precondition
  std::optional<std::string> resource_version;  // precondition
  // "gracePeriodSeconds"; unset: the object's default (0 deletes a pod at once, as the kubelet
  // does once its containers are gone).
  std::optional<int64_t> grace_period_seconds;
};

struct ClientStats {
  uint64_t requests = 0;  // HTTP attempts
  uint64_t retries = 0;
  uint64_t throttled = 0;  // 429s received
};

class Client {
 public:
  static StatusOr<std::unique_ptr<Client>> Create(const ClusterConfig& config,
                                                  ClientOptions options = {});

  StatusOr<nlohmann::json> Get(const ResourceRef& ref, const std::string& ns,
                               const std::string& name);
  // One page.
  StatusOr<ListPage> List(const ResourceRef& ref, const std::string& ns,
                          const ListOptions& options = {});
  // Every page, following continue tokens (pages of options.limit; 500 when 0).
  StatusOr<ListPage> ListAll(const ResourceRef& ref, const std::string& ns,
                             ListOptions options = {});
  StatusOr<nlohmann::json> Create(const ResourceRef& ref, const std::string& ns,
                                  const nlohmann::json& object);
  // The object's metadata.resourceVersion, when set, is the optimistic-concurrency precondition.
  StatusOr<nlohmann::json> Update(const ResourceRef& ref, const std::string& ns,
                                  const nlohmann::json& object);
  StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref, const std::string& ns,
                                        const nlohmann::json& object);
  Status Delete(const ResourceRef& ref, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {});

  // Streams events to `on_event` until the server ends the watch (OK), `on_event` returns false
  // or `stop` becomes true (kCancelled), or an error: kOutOfRange when the resourceVersion is
  // too old (relist), others as above. Opening the watch is retried like any request; a stream
  // that breaks is not (the caller resumes from the last resourceVersion it saw).
  Status Watch(const ResourceRef& ref, const std::string& ns, const WatchOptions& options,
               const std::function<bool(WatchEvent&)>& on_event,
               const std::atomic<bool>* stop = nullptr);

  // GET of an arbitrary path (discovery documents, /version).
  StatusOr<nlohmann::json> GetPath(const std::string& path);
  // POST of a JSON body to an arbitrary path (kube-sim's admin endpoints in tests).
  StatusOr<nlohmann::json> PostPath(const std::string& path, const nlohmann::json& body);
  // The resource.k8s.io version the server serves, preferring v1, then v1beta2, then v1beta1.
  // Discovered on first use and cached.
  StatusOr<resource::ResourceVersion> ResourceApiVersion();

  ClientStats stats() const;
  const ClusterConfig& config() const { return transport_->config(); }

 private:
  Client(std::unique_ptr<Transport> transport, ClientOptions options);

  struct Op;
  StatusOr<HttpResult> Call(const Op& op, HttpCall call);
  StatusOr<std::string> Path(const ResourceRef& ref, const std::string& ns, const std::string& name,
                             const std::string& verb);
  StatusOr<ResourceRef> Served(const ResourceRef& ref);
  StatusOr<nlohmann::json> ToServed(const ResourceRef& ref, const ResourceRef& served,
                                    const nlohmann::json& object);
  StatusOr<nlohmann::json> FromServed(const ResourceRef& ref, nlohmann::json object);
  StatusOr<nlohmann::json> Write(const char* verb, const char* method, const ResourceRef& ref,
                                 const std::string& ns, const nlohmann::json& object, bool status);

  std::unique_ptr<Transport> transport_;
  const ClientOptions options_;
  RateLimiter limiter_;
  std::atomic<uint64_t> seed_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> retries_{0};
  std::atomic<uint64_t> throttled_{0};
  Mutex discovery_mu_;
  std::optional<resource::ResourceVersion> resource_version_ GUARDED_BY(discovery_mu_);
};

// Picks the resource.k8s.io version to use from the /apis/resource.k8s.io group document:
// v1, then v1beta2, then v1beta1. kNotFound when none of them is served.
StatusOr<resource::ResourceVersion> PickResourceVersion(const nlohmann::json& group_document);

// The Status for a non-2xx answer: the code mapping above, and a message
// "<verb> <resource> <name>: <http code> <reason>: <message>".
Status ApiError(const std::string& what, long http_code,  // NOLINT(google-runtime-int)
                const std::string& body);

// Whether a name or namespace may go into a URL path: non-empty, no '/', '%', and not "." or "..".
bool IsSafePathSegment(const std::string& segment);

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_CLIENT_H_
