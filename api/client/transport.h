// HTTP/1.1 over TLS (or plain TCP for an http:// server) to the API server, with Boost.Beast and
// OpenSSL: TLS 1.2+ verified against the cluster CA (or the system store) and the server's name
// or IP address, client certificates and bearer tokens, connection reuse across requests,
// timeouts and streamed bodies for watches, through an HTTP proxy when one applies (proxy.h). It
// knows nothing of Kubernetes semantics (client.h does).
#ifndef XPU_API_CLIENT_TRANSPORT_H_
#define XPU_API_CLIENT_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/client/kubeconfig.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::api::client {

struct HttpCall {
  std::string method = "GET";
  std::string path;  // path and query, appended to the server URL
  std::string body;  // JSON, sent when non-empty
  std::chrono::milliseconds timeout{30'000};
  std::chrono::milliseconds connect_timeout{10'000};
  // Streaming: when set, the body is handed over in pieces as it arrives (and not kept);
  // returning false ends the transfer. Only for 2xx answers; an error body is kept as usual.
  std::function<bool(std::string_view)> on_data;
  const std::atomic<bool>* stop = nullptr;  // ends the transfer when it becomes true
};

struct HttpResult {
  long code = 0;  // NOLINT(google-runtime-int): the HTTP status code
  std::string body;
  std::string retry_after;  // the Retry-After header, if any
  std::string content_type;
};

// Transport failures are:
//   kUnavailable       connection refused/reset/dropped, nothing received: safe to retry
//   kDeadlineExceeded  the request timed out
//   kFailedPrecondition TLS setup or verification failed (wrong CA, bad client certificate)
//   kCancelled         `stop` was set or on_data returned false
// Thread-safe: concurrent calls use separate pooled connections.
class Transport {
 public:
  static StatusOr<std::unique_ptr<Transport>> Create(const ClusterConfig& config);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Sends `call` with the current bearer token; a 401 for an exec plugin's token runs the plugin
  // again and, when it gives another token, sends the call once more.
  StatusOr<HttpResult> Do(const HttpCall& call);
  const ClusterConfig& config() const { return config_; }

 private:
  struct Endpoint;    // the server URL's scheme, host, port and path prefix
  struct TlsContext;  // the OpenSSL context every connection's session is made from
  struct Connection;  // one connection to the server, with its own I/O context

  Transport(ClusterConfig config, std::unique_ptr<Endpoint> endpoint);
  StatusOr<HttpResult> DoWith(const HttpCall& call, const std::string& token);
  std::unique_ptr<Connection> TakeIdle();
  void PutIdle(std::unique_ptr<Connection> connection);
  // Connects `c` to the server (TCP, then the TLS handshake) by `deadline`.
  Status Connect(Connection& c, const HttpCall& call,
                 std::chrono::steady_clock::time_point deadline, const std::string& where);
  // Through the proxy: CONNECT to the server, on `c`'s TCP connection to the proxy.
  Status Tunnel(Connection& c, std::chrono::steady_clock::time_point deadline,
                const std::atomic<bool>* stop, const std::string& where);

  ClusterConfig config_;
  TokenSource tokens_;
  std::unique_ptr<Endpoint> endpoint_;
  std::unique_ptr<TlsContext> tls_;  // null for http://
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ GUARDED_BY(mu_);  // kept-alive connections
};

// Percent-encodes a query value (RFC 3986 unreserved characters pass).
std::string QueryEscape(std::string_view value);

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_TRANSPORT_H_
