// The Kubernetes REST semantics of kube-sim, independent of the transport: discovery, resource
// paths, verbs, version conversion, bearer-token and client-certificate auth, fault injection
// and watch streams. The HTTPS server (server.cc) feeds it parsed requests and writes what it
// returns; tests call it directly.
//
// Admin endpoint (authenticated like every request): GET /kube-sim/faults returns the fault
// settings as JSON, POST /kube-sim/faults with a JSON object replaces the members it names:
//   {"rate": 0.1, "codes": [429, 503], "dropRate": 0.05, "watchCloseAfter": 3,
//    "watchCloseAfterMs": 500, "latencyMs": 20, "seed": 42}
// ("seed" restarts the random sequence.)
// GET /kube-sim/feature-gates returns the feature gates (feature_gates.h) as JSON, POST with a JSON
// object of bools sets the gates it names: {"DRADeviceTaints": false}. Unknown gates and non-bool
// values are 400 BadRequest naming the gate; the answer is every gate after the change.
#ifndef XPU_E2E_KUBESIM_API_HANDLER_H_
#define XPU_E2E_KUBESIM_API_HANDLER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/guarded.h"
#include "base/mutex.h"
#include "e2e/kubesim/store.h"

namespace xpu::kubesim {

struct HttpRequest {
  std::string method;         // GET, POST, PUT, PATCH, DELETE
  std::string target;         // path and query, e.g. "/api/v1/nodes?limit=2"
  std::string authorization;  // the Authorization header
  std::string content_type;
  std::string body;
  // The subject of a client certificate the TLS layer verified against kube-sim's CA, e.g.
  // "CN=xpu-dra-test,O=system:masters"; empty when the client sent none. Such a request is
  // authenticated without a token.
  std::string client_certificate = {};  // defaulted: callers may leave it out
};

struct HttpResponse {
  int code = 200;
  std::string body;  // JSON
  std::vector<std::pair<std::string, std::string>> headers;
  // Fault injection: close the connection without writing anything.
  bool drop_connection = false;
};

// What the fault generator does.
struct FaultSettings {
  double rate = 0;                 // share of non-watch resource requests that fail
  std::vector<int> codes = {500};  // picked from in turn by the fault generator
  // Share of resource requests (watches included) answered by closing the connection.
  double drop_rate = 0;
  // Watches end (cleanly, as on a server timeout) after this many events (0 = never) ...
  int64_t watch_close_after = 0;
  // ... or after this many milliseconds (0 = never).
  int64_t watch_close_after_ms = 0;
  // Added to every resource request before it is handled.
  int64_t latency_ms = 0;
};

struct HandlerOptions {
  std::string token;     // the bearer token every request must carry
  FaultSettings faults;  // at start; POST /kube-sim/faults changes them
  uint64_t seed = 1;     // makes the fault sequence reproducible
  std::chrono::milliseconds bookmark_interval{1000};
  std::chrono::seconds default_watch_timeout{1800};
  // "1.34" or "1.35": the release /version reports (validation limits are the store's).
  std::string kube_version = "1.35";
  // The API server feature gates whose disabled fields writes drop (see feature_gates.h).
  FeatureGates feature_gates;
};

// One open watch: newline-terminated WatchEvent JSON lines, in resourceVersion order.
// Not thread-safe; one thread drives it.
class WatchStream {
 public:
  struct Params {
    ResourceType type;
    std::string version;
    WatchFilter filter;
    int64_t from = 0;
    std::vector<nlohmann::json> initial;  // synthetic ADDED events (watch from "0" or unset)
    bool bookmarks = false;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::milliseconds bookmark_interval{1000};
    int64_t close_after_events = 0;  // 0 = no limit
  };
  WatchStream(const Store* store, Params params);

  // Blocks until there is something to send, a bookmark is due or the deadline passes; returns
  // the lines (possibly none). After done() no more lines come.
  std::vector<std::string> Next();
  bool done() const { return done_; }

 private:
  const Store* store_;
  Params params_;
  std::chrono::steady_clock::time_point next_bookmark_;
  int64_t sent_ = 0;
  bool done_ = false;
};

class ApiHandler {
 public:
  // `store` must outlive the handler. Thread-safe.
  ApiHandler(Store* store, HandlerOptions options);

  using Result = std::variant<HttpResponse, std::unique_ptr<WatchStream>>;
  Result Handle(const HttpRequest& request);

  FaultSettings faults() const;
  void set_faults(const FaultSettings& faults);
  FeatureGates feature_gates() const;
  void set_feature_gates(const FeatureGates& gates);

 private:
  // One request on a resource path, parsed (api_handler.cc).
  struct Call;

  bool InjectFault(HttpResponse* response);
  bool DropConnection();
  // Health, /version, the admin endpoints and discovery; nullopt for any other path.
  std::optional<HttpResponse> HandleServerPath(const HttpRequest& request, const std::string& path,
                                               const std::vector<std::string>& segs);
  HttpResponse HandleFaults(const HttpRequest& request);
  HttpResponse HandleFeatureGates(const HttpRequest& request);
  // The verbs on a resource path, after the latency and connection-drop faults (Handle); the
  // collection reads get the selectors Handle read into `list`.
  Result HandleWatch(const Call& call, const ListOptions& list);
  HttpResponse HandleList(const Call& call, ListOptions list);
  HttpResponse HandleDeleteCollection(const Call& call);
  HttpResponse HandleGet(const Call& call);
  HttpResponse HandleCreate(const Call& call);
  HttpResponse HandleUpdate(const Call& call);
  HttpResponse HandlePatch(const Call& call);
  HttpResponse HandleDelete(const Call& call);

  Store* store_;
  const HandlerOptions options_;
  mutable Mutex fault_mu_;
  std::mt19937_64 fault_random_ GUARDED_BY(fault_mu_);
  FaultSettings faults_ GUARDED_BY(fault_mu_);
  Guarded<FeatureGates> feature_gates_;
};

// A Kubernetes Status object for a non-OK `status` (see store.h for the code mapping). With
// `causes`, details.causes lists them ({reason, message, field}) as the API server does for 422.
HttpResponse ErrorResponse(const Status& status, const std::string& name = "",
                           const ResourceType* type = nullptr,
                           const api::FieldErrors* causes = nullptr);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_API_HANDLER_H_
