// A tiny HTTP/1.1 server (plain TCP, no TLS) for a component's observability endpoints:
//   GET /metrics  200, Content-Type "text/plain; version=0.0.4; charset=utf-8", the body from
//                 the `metrics` handler (404 when there is none);
//   GET /healthz  200 "ok", or 503 with the reason when the `healthz` handler returns an error;
//   GET /readyz   the same with the `readyz` handler;
//   GET <path>    200, Content-Type "application/json", the body from the handler `json[path]`
//                 (read-only views such as the controller's /autoscaler/pending);
//   anything else 404; a method other than GET or HEAD 405 (on every path); a malformed request
//   400; a request head larger than `max_request_bytes` 431.
// HEAD answers the same headers without a body. Every response closes the connection.
//
// One accept thread hands connections to at most `max_connections` worker threads; each
// connection gets `io_timeout` to send its request and to take the response. Handlers run on
// the worker threads, so they must be thread-safe; an exception from a handler becomes a 500.
// Start and Stop are called from one thread; Stop returns promptly even while clients hold
// connections open.
#ifndef XPU_BASE_METRICS_HTTP_SERVER_H_
#define XPU_BASE_METRICS_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::metrics {

struct HttpServerOptions {
  // "host:port": ":9400" listens on all IPv4 interfaces, "127.0.0.1:0" on a free port (see
  // HttpServer::port()), "[::1]:9400" on an IPv6 address. The host must be a numeric address
  // or a name that resolves locally.
  std::string address = ":9400";
  // Body of /metrics, e.g. [&registry] { return registry.Render(); }.
  std::function<std::string()> metrics;
  // Liveness and readiness: OK is 200 "ok", an error 503 with its message. Unset means OK.
  std::function<Status()> healthz;
  std::function<Status()> readyz;
  // Further read-only endpoints: path ("/autoscaler/pending") -> JSON body.
  std::map<std::string, std::function<std::string()>> json;
  std::chrono::milliseconds io_timeout{5000};
  size_t max_request_bytes = 8192;
  int max_connections = 4;

  // Checks the address syntax and the limits.
  Status Validate() const;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();  // Stop()s

  // Binds, listens and starts the threads. Errors name the address: "listen metrics
  // 0.0.0.0:9400: address already in use". Fails if already started.
  Status Start();
  // Closes the listener, wakes and joins every thread; open connections are dropped. Safe to
  // call more than once, and before Start.
  void Stop();
  // The bound port once Start succeeded (the chosen one for port 0), else 0.
  int port() const { return port_; }

 private:
  void AcceptLoop();
  void WorkerLoop();
  void Serve(int fd) const;
  // Waits until `fd` is ready for `events`, the deadline passes or Stop wakes us; true if ready.
  bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline) const;
  void CloseFds();

  const HttpServerOptions options_;
  int listen_fd_ = -1;
  int wake_read_fd_ = -1;  // a pipe Stop writes to: readable from then on, wakes every poll
  int wake_write_fd_ = -1;
  int port_ = 0;
  std::thread accept_thread_;
  std::vector<std::thread> workers_;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::deque<int> pending_ GUARDED_BY(mu_);  // accepted connections not yet served
  int busy_ GUARDED_BY(mu_) = 0;             // connections pending or being served
};

// A binary's --metrics-addr endpoint: a started server for `options`, its address and port
// logged, or nullptr when the address is empty (no endpoint).
StatusOr<std::unique_ptr<HttpServer>> StartHttpServer(HttpServerOptions options, Logger& log);

}  // namespace xpu::metrics

#endif  // XPU_BASE_METRICS_HTTP_SERVER_H_
