// The Kubernetes REST semantics of kube-sim, independent of the transport: discovery, resource
// paths, verbs, version conversion, bearer-token auth, fault injection and watch streams. The
// HTTPS server (server.h) feeds it parsed requests and writes what it returns; tests call it
// directly.
#ifndef XPU_E2E_KUBESIM_API_HANDLER_H_
#define XPU_E2E_KUBESIM_API_HANDLER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "e2e/kubesim/store.h"

namespace xpu::kubesim {

struct HttpRequest {
  std::string method;         // GET, POST, PUT, PATCH, DELETE
  std::string target;         // path and query, e.g. "/api/v1/nodes?limit=2"
  std::string authorization;  // the Authorization header
  std::string content_type;
  std::string body;
};

struct HttpResponse {
  int code = 200;
  std::string body;  // JSON
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HandlerOptions {
  std::string token;                     // the bearer token every request must carry
  double fault_rate = 0;                 // share of non-watch resource requests that fail
  std::vector<int> fault_codes = {500};  // picked from in turn by the fault generator
  uint64_t seed = 1;                     // makes the fault sequence reproducible
  std::chrono::milliseconds bookmark_interval{1000};
  std::chrono::seconds default_watch_timeout{1800};
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
  bool done_ = false;
};

class ApiHandler {
 public:
  // `store` must outlive the handler. Thread-safe.
  ApiHandler(Store* store, HandlerOptions options);

  using Result = std::variant<HttpResponse, std::unique_ptr<WatchStream>>;
  Result Handle(const HttpRequest& request);

 private:
  bool InjectFault(HttpResponse* response);

  Store* store_;
  const HandlerOptions options_;
  std::mutex fault_mu_;
  std::mt19937_64 fault_random_;  // GUARDED_BY(fault_mu_)
};

// A Kubernetes Status object for a non-OK `status` (see store.h for the code mapping).
HttpResponse ErrorResponse(const Status& status, const std::string& name = "",
                           const ResourceType* type = nullptr);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_API_HANDLER_H_
