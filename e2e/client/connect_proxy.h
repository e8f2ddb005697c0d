// An HTTP CONNECT proxy on 127.0.0.1 for tests of the client's proxy support: it records each
// CONNECT's target and Proxy-Authorization header and relays bytes both ways, or answers every
// CONNECT with a refusal. Stopped (and every thread joined) by its destructor.
#ifndef XPU_E2E_CLIENT_CONNECT_PROXY_H_
#define XPU_E2E_CLIENT_CONNECT_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"

namespace xpu::e2e {

class ConnectProxy {
 public:
  // `refuse` empty: tunnel every CONNECT; else answer each with this status line's code and reason
  // ("407 Proxy Authentication Required").
  static StatusOr<std::unique_ptr<ConnectProxy>> Start(const std::string& refuse = "");
  ~ConnectProxy();
  ConnectProxy(const ConnectProxy&) = delete;
  ConnectProxy& operator=(const ConnectProxy&) = delete;

  int port() const { return port_; }
  // Each CONNECT's target ("127.0.0.1:6443") and Proxy-Authorization value ("" when none).
  std::vector<std::string> targets() const EXCLUDES(mu_);
  std::vector<std::string> authorizations() const EXCLUDES(mu_);

 private:
  ConnectProxy() = default;
  void AcceptLoop();
  void Serve(int client);

  int listen_fd_ = -1;
  int port_ = 0;
  std::string refuse_;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable Mutex mu_;
  std::vector<std::thread> workers_ GUARDED_BY(mu_);
  std::vector<std::string> targets_ GUARDED_BY(mu_);
  std::vector<std::string> authorizations_ GUARDED_BY(mu_);
};

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLIENT_CONNECT_PROXY_H_
