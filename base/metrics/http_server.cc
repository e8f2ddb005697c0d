#include "base/metrics/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

namespace xpu::metrics {
namespace {

constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kTextContentType = "text/plain; charset=utf-8";

struct HostPort {
  std::string host;  // empty: every IPv4 interface
  std::string port;
  bool ipv6 = false;

  std::string ToString() const {
    const std::string shown = host.empty() ? "0.0.0.0" : host;
    return ipv6 ? "[" + shown + "]:" + port : shown + ":" + port;
  }
};

StatusOr<HostPort> ParseAddress(const std::string& address) {
  HostPort out;
  std::string_view rest = address;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find("]:");
    if (close == std::string_view::npos) {
      return InvalidArgumentError("parse address \"" + address + "\": expected [host]:port");
    }
    out.host = std::string(rest.substr(1, close - 1));
    out.ipv6 = true;
    rest.remove_prefix(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("parse address \"" + address + "\": expected host:port");
    }
    out.host = std::string(rest.substr(0, colon));
    if (out.host.find(':') != std::string::npos) {
      return InvalidArgumentError("parse address \"" + address +
                                  "\": an IPv6 host needs brackets, as in [::1]:9400");
    }
    rest.remove_prefix(colon + 1);
  }
  if (rest.empty() || rest.size() > 5 || rest.find_first_not_of("0123456789") != rest.npos ||
      std::stoi(std::string(rest)) > 65535) {
    return InvalidArgumentError("parse address \"" + address + "\": port must be 0 to 65535");
  }
  out.port = std::string(rest);
  return out;
}

Status ErrnoStatus(const std::string& context, int err) {
  std::string cause = std::error_code(err, std::system_category()).message();
  if (!cause.empty() && cause[0] >= 'A' && cause[0] <= 'Z') {
    cause[0] = static_cast<char>(cause[0] - 'A' + 'a');
  }
  StatusCode code = StatusCode::kInternal;
  if (err == EADDRINUSE) code = StatusCode::kUnavailable;
  if (err == EACCES || err == EPERM) code = StatusCode::kPermissionDenied;
  if (err == EADDRNOTAVAIL) code = StatusCode::kInvalidArgument;
  return Status(code, context + ": " + cause);
}

struct Response {
  int code = 200;
  std::string_view reason = "OK";
  std::string_view content_type = kTextContentType;
  std::string body;
  bool allow_header = false;
};

Response Simple(int code, std::string_view reason, std::string body) {
  Response response;
  response.code = code;
  response.reason = reason;
  response.body = std::move(body);
  return response;
}

Response Probe(const std::function<Status()>& handler) {
  const Status status = handler ? handler() : OkStatus();
  if (status.ok()) return Simple(200, "OK", "ok");
  return Simple(503, "Service Unavailable", status.message() + "\n");
}

// Where the request head ends (after its blank line), or npos while incomplete.
size_t HeadEnd(std::string_view request) {
  const size_t crlf = request.find("\r\n\r\n");
  const size_t lf = request.find("\n\n");
  if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf < lf)) {
    return crlf + 4;
  }
  return lf == std::string_view::npos ? lf : lf + 2;
}

}  // namespace

Status HttpServerOptions::Validate() const {
  const StatusOr<HostPort> parsed = ParseAddress(address);
  if (!parsed.ok()) return parsed.status();
  if (io_timeout.count() <= 0) return InvalidArgumentError("io timeout must be positive");
  if (max_request_bytes < 256) return InvalidArgumentError("max request bytes must be >= 256");
  if (max_connections < 1) return InvalidArgumentError("max connections must be >= 1");
  return OkStatus();
}

HttpServer::HttpServer(HttpServerOptions options) : options_(std::move(options)) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  const std::string what = "listen metrics " + options_.address;
  RETURN_IF_ERROR(options_.Validate().WithContext(what));
  {
    MutexLock lock(mu_);
    if (stopping_ || listen_fd_ >= 0) {
      return FailedPreconditionError(what + ": server already started or stopped");
    }
  }
  const HostPort host_port = *ParseAddress(options_.address);
  const std::string shown = "listen metrics " + host_port.ToString();

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int gai = getaddrinfo(host_port.host.empty() ? "0.0.0.0" : host_port.host.c_str(),
                              host_port.port.c_str(), &hints, &found);
  if (gai != 0) {
    return InvalidArgumentError(shown + ": resolve host: " + gai_strerror(gai));
  }
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    const int err = errno;
    freeaddrinfo(found);
    return ErrnoStatus(shown + ": socket", err);
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool bound = bind(fd, found->ai_addr, found->ai_addrlen) == 0;
  const int bind_err = errno;
  freeaddrinfo(found);
  if (!bound || listen(fd, 16) != 0) {
    const int err = bound ? errno : bind_err;
    close(fd);
    return ErrnoStatus(shown, err);
  }
  sockaddr_storage local{};
  socklen_t local_len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(shown + ": getsockname", err);
  }
  int port = 0;
  if (local.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port);
  } else if (local.ss_family == AF_INET6) {
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port);
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(shown + ": pipe", err);
  }
  listen_fd_ = fd;
  wake_read_fd_ = wake[0];
  wake_write_fd_ = wake[1];
  port_ = port;
  for (int i = 0; i < options_.max_connections; ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return OkStatus();
}

void HttpServer::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (wake_write_fd_ >= 0) {
    const char byte = 1;
    const ssize_t written = write(wake_write_fd_, &byte, 1);
    (void)written;  // the pipe is empty, so it cannot be full; a failure changes nothing
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  {
    MutexLock lock(mu_);
    for (const int fd : pending_) close(fd);
    pending_.clear();
    busy_ = 0;
  }
  CloseFds();
}

void HttpServer::CloseFds() {
  for (int* fd : {&listen_fd_, &wake_read_fd_, &wake_write_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

bool HttpServer::WaitFor(int fd, short events,
                         std::chrono::steady_clock::time_point deadline) const {
  while (true) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{fd, events, 0}, {wake_read_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    if (fds[1].revents != 0) return false;
    if (fds[0].revents != 0) return true;
  }
}

void HttpServer::AcceptLoop() {
  const auto forever = std::chrono::steady_clock::time_point::max();
  while (true) {
    {
      MutexLock lock(mu_);
      cv_.Wait(mu_,
               [this]() REQUIRES(mu_) { return stopping_ || busy_ < options_.max_connections; });
      if (stopping_) return;
    }
    if (!WaitFor(listen_fd_, POLLIN, forever)) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // EAGAIN, ECONNABORTED, EINTR: try again. Out of descriptors: back off so as not to spin.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        WaitFor(wake_read_fd_, POLLIN,
                std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
      }
      continue;
    }
    {
      MutexLock lock(mu_);
      pending_.push_back(fd);
      ++busy_;
    }
    cv_.NotifyAll();
  }
}

void HttpServer::WorkerLoop() {
  while (true) {
    int fd = -1;
    {
      MutexLock lock(mu_);
      cv_.Wait(mu_, [this]() REQUIRES(mu_) { return stopping_ || !pending_.empty(); });
      if (stopping_) return;
      fd = pending_.front();
      pending_.pop_front();
    }
    Serve(fd);
    close(fd);
    {
      MutexLock lock(mu_);
      --busy_;
    }
    cv_.NotifyAll();
  }
}

void HttpServer::Serve(int fd) const {
  const auto deadline = std::chrono::steady_clock::now() + options_.io_timeout;
  std::string request;
  size_t head_end = std::string::npos;
  bool too_large = false;
  char buf[4096];
  while (true) {
    head_end = HeadEnd(request);
    if (head_end != std::string::npos) {
      too_large = head_end > options_.max_request_bytes;
      break;
    }
    if (request.size() > options_.max_request_bytes) {
      too_large = true;
      break;
    }
    if (!WaitFor(fd, POLLIN, deadline)) return;  // a client that never finishes gets nothing
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }

  Response response;
  bool head = false;
  if (too_large) {
    response = Simple(431, "Request Header Fields Too Large", "request too large\n");
  } else {
    std::string_view line(request);
    line = line.substr(0, line.find('\n'));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    const std::string_view method = line.substr(0, sp1);
    std::string_view target;
    std::string_view version;
    if (sp2 != std::string_view::npos) {
      target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      version = line.substr(sp2 + 1);
    }
    const std::string_view path = target.substr(0, target.find_first_of("?#"));
    if (method.empty() || target.empty() || (version != "HTTP/1.1" && version != "HTTP/1.0")) {
      response = Simple(400, "Bad Request", "bad request\n");
    } else if (method != "GET" && method != "HEAD") {
      response = Simple(405, "Method Not Allowed", "method not allowed\n");
      response.allow_header = true;
    } else {
      head = method == "HEAD";
      try {
        if (path == "/metrics" && options_.metrics) {
          response = Simple(200, "OK", options_.metrics());
          response.content_type = kMetricsContentType;
        } else if (path == "/healthz") {
          response = Probe(options_.healthz);
        } else if (path == "/readyz") {
          response = Probe(options_.readyz);
        } else if (auto it = options_.json.find(std::string(path)); it != options_.json.end()) {
          response = Simple(200, "OK", it->second());
          response.content_type = "application/json";
        } else {
          response = Simple(404, "Not Found", "not found\n");
        }
      } catch (...) {
        // A handler bug must not take the process down with it.
        response = Simple(500, "Internal Server Error", "internal error\n");
      }
    }
  }

  std::string out = "HTTP/1.1 " + std::to_string(response.code) + " ";
  out += response.reason;
  out += "\r\nContent-Type: ";
  out += response.content_type;
  out += "\r\nContent-Length: " + std::to_string(response.body.size());
  if (response.allow_header) out += "\r\nAllow: GET, HEAD";
  out += "\r\nConnection: close\r\n\r\n";
  if (!head) out += response.body;

  size_t sent = 0;
  while (sent < out.size()) {
    if (!WaitFor(fd, POLLOUT, deadline + options_.io_timeout)) return;
    const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
}

StatusOr<std::unique_ptr<HttpServer>> StartHttpServer(HttpServerOptions options, Logger& log) {
  if (options.address.empty()) return std::unique_ptr<HttpServer>();
  const std::string address = options.address;
  auto server = std::make_unique<HttpServer>(std::move(options));
  RETURN_IF_ERROR(server->Start());
  log.Info("metrics on " + address + " (port " + std::to_string(server->port()) + ")");
  return server;
}

}  // namespace xpu::metrics
