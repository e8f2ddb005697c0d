#include "e2e/client/connect_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/text.h"

namespace xpu::e2e {
namespace {

// How often the loops look at the stop flag.
constexpr int kPollMs = 100;

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The value of header `name` (lower case) in a request head, "" when absent.
std::string Header(const std::string& head, const std::string& name) {
  size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string::npos) {
    at += 2;
    const size_t colon = head.find(':', at);
    const size_t end = head.find("\r\n", at);
    if (colon == std::string::npos || end == std::string::npos || colon > end) continue;
    if (Lower(head.substr(at, colon - at)) == name) {
      return std::string(Trim(head.substr(colon + 1, end - colon - 1)));
    }
  }
  return "";
}

// A TCP connection to 127.0.0.1:`port`, or -1.
int Dial(const std::string& target) {
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos) return -1;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(target.substr(colon + 1))));
  if (::inet_pton(AF_INET, target.substr(0, colon).c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<ConnectProxy>> ConnectProxy::Start(const std::string& refuse) {
  std::unique_ptr<ConnectProxy> proxy(new ConnectProxy());
  proxy->refuse_ = refuse;
  proxy->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (proxy->listen_fd_ < 0 ||
      ::bind(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(proxy->listen_fd_, 16) != 0 ||
      ::getsockname(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return InternalError(std::string("connect proxy: listen: ") + std::strerror(errno));
  }
  proxy->port_ = ntohs(addr.sin_port);
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

ConnectProxy::~ConnectProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    MutexLock lock(mu_);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::vector<std::string> ConnectProxy::targets() const {
  MutexLock lock(mu_);
  return targets_;
}

std::vector<std::string> ConnectProxy::authorizations() const {
  MutexLock lock(mu_);
  return authorizations_;
}

void ConnectProxy::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    MutexLock lock(mu_);
    workers_.emplace_back([this, client] { Serve(client); });
  }
}

void ConnectProxy::Serve(int client) {
  // The request head, byte by byte: nothing after it may be read before the tunnel is up.
  std::string head;
  char c = 0;
  while (!stop_ && !head.ends_with("\r\n\r\n") && head.size() < 8192) {
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    if (::recv(client, &c, 1, 0) != 1) break;
    head.push_back(c);
  }
  const std::string first = head.substr(0, head.find("\r\n"));
  const size_t space = first.find(' ');
  const std::string target =
      first.starts_with("CONNECT ") ? first.substr(8, first.find(' ', 8) - 8) : "";
  {
    MutexLock lock(mu_);
    targets_.push_back(target);
    authorizations_.push_back(Header(head, "proxy-authorization"));
  }
  const int upstream = refuse_.empty() && space != std::string::npos ? Dial(target) : -1;
  if (upstream < 0) {
    WriteAll(client, "HTTP/1.1 " + (refuse_.empty() ? "502 Bad Gateway" : refuse_) +
                         "\r\nContent-Length: 0\r\n\r\n");
    ::close(client);
    return;
  }
  WriteAll(client, "HTTP/1.1 200 Connection established\r\n\r\n");
  std::array<char, 16384> buffer{};
  bool open = true;
  while (open && !stop_) {
    std::array<pollfd, 2> polls = {{{client, POLLIN, 0}, {upstream, POLLIN, 0}}};
    if (::poll(polls.data(), polls.size(), kPollMs) <= 0) continue;
    for (int i = 0; i < 2 && open; ++i) {
      if (polls[static_cast<size_t>(i)].revents == 0) continue;
      const int from = i == 0 ? client : upstream;
      const int to = i == 0 ? upstream : client;
      const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
      open = n > 0 && WriteAll(to, std::string_view(buffer.data(), static_cast<size_t>(n)));
    }
  }
  ::close(upstream);
  ::close(client);
}

}  // namespace xpu::e2e
