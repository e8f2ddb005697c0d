#include "base/metrics/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/metrics/metrics.h"
#include "base/testing/require_ok.h"
#include "e2e/client/wait.h"

namespace xpu::metrics {
namespace {

// A connected plain TCP client to 127.0.0.1:port; every read gives up after 5 s.
class Client {
 public:
  explicit Client(int port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(fd_ >= 0);
    timeval timeout{};
    timeout.tv_sec = 5;
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() { close(fd_); }

  // This end's port: with the server's, it names the connection in /proc/net/tcp.
  int LocalPort() const {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    return ntohs(addr.sin_port);
  }

  void Send(const std::string& data) const {
    REQUIRE(send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size()));
  }
  // Everything until the server closes (or the read timeout).
  std::string ReadAll() const {
    std::string out;
    char buf[4096];
    while (true) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
};

// Bytes the server has not read yet on its end of the IPv4 connection from `client_port` to
// `server_port` (the rx_queue of /proc/net/tcp), or -1 while the kernel shows no such socket.
long UnreadByServer(int server_port, int client_port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the column names
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues;
    fields >> slot >> local >> remote >> state >> queues;
    const auto port = [](const std::string& address) {
      return std::stoi(address.substr(address.find(':') + 1), nullptr, 16);
    };
    if (port(local) == server_port && port(remote) == client_port) {
      return std::stol(queues.substr(queues.find(':') + 1), nullptr, 16);
    }
  }
  return -1;
}

struct Reply {
  int code = 0;
  std::string head;
  std::string body;

  // The value of a header ("" if absent); names as the server writes them.
  std::string Header(const std::string& name) const {
    const std::string key = "\r\n" + name + ": ";
    const size_t at = head.find(key);
    if (at == std::string::npos) return "";
    const size_t start = at + key.size();
    return head.substr(start, head.find("\r\n", start) - start);
  }
};

Reply Parse(const std::string& raw) {
  Reply reply;
  const size_t end = raw.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  REQUIRE(raw.rfind("HTTP/1.1 ", 0) == 0);
  reply.code = std::stoi(raw.substr(9, 3));
  reply.head = raw.substr(0, end + 2);
  reply.body = raw.substr(end + 4);
  return reply;
}

Reply Request(int port, const std::string& method, const std::string& target) {
  const Client client(port);
  client.Send(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n");
  return Parse(client.ReadAll());
}

// Options for a server on a free loopback port.
HttpServerOptions Loopback() {
  HttpServerOptions options;
  options.address = "127.0.0.1:0";
  return options;
}

std::unique_ptr<HttpServer> Started(const HttpServerOptions& options) {
  auto server = std::make_unique<HttpServer>(options);
  REQUIRE_OK(server->Start());
  return server;
}

TEST_CASE("http server serves metrics, health and readiness over a real socket") {
  Registry registry;
  registry.AddCounter("xpu_dra_test_total", "T.", {"result"}).Inc({"ok"}, 2);
  bool ready = false;
  HttpServerOptions options = Loopback();
  options.metrics = [&registry] { return registry.Render(); };
  options.readyz = [&ready]() -> Status {
    if (ready) return OkStatus();
    return UnavailableError("devices not discovered yet");
  };
  auto server = Started(options);
  const int port = server->port();
  REQUIRE(port > 0);

  const Reply metrics = Request(port, "GET", "/metrics");
  CHECK(metrics.code == 200);
  CHECK(metrics.Header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(metrics.Header("Connection") == "close");
  CHECK(metrics.body == registry.Render());
  CHECK(metrics.Header("Content-Length") == std::to_string(metrics.body.size()));

  const Reply with_query = Request(port, "GET", "/metrics?name[]=x");
  CHECK(with_query.code == 200);

  const Reply head = Request(port, "HEAD", "/metrics");
  CHECK(head.code == 200);
  CHECK(head.body.empty());
  CHECK(head.Header("Content-Length") == std::to_string(metrics.body.size()));

  const Reply healthz = Request(port, "GET", "/healthz");
  CHECK(healthz.code == 200);
  CHECK(healthz.body == "ok");

  const Reply not_ready = Request(port, "GET", "/readyz");
  CHECK(not_ready.code == 503);
  CHECK(not_ready.head.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0) == 0);
  CHECK(not_ready.body == "devices not discovered yet\n");
  ready = true;
  CHECK(Request(port, "GET", "/readyz").code == 200);

  const Reply missing = Request(port, "GET", "/nope");
  CHECK(missing.code == 404);

  const Reply post = Request(port, "POST", "/metrics");
  CHECK(post.code == 405);
  CHECK(post.Header("Allow") == "GET, HEAD");

  server->Stop();
  server->Stop();  // twice is fine
}

TEST_CASE("http server serves the JSON endpoints it is given, and only those") {
  HttpServerOptions options = Loopback();
  options.json["/autoscaler/pending"] = [] { return std::string(R"({"pending":[]})"); };
  auto server = Started(options);
  const Reply pending = Request(server->port(), "GET", "/autoscaler/pending?x=1");
  CHECK(pending.code == 200);
  CHECK(pending.Header("Content-Type") == "application/json");
  CHECK(pending.body == R"({"pending":[]})");
  CHECK(Request(server->port(), "GET", "/autoscaler").code == 404);
  CHECK(Request(server->port(), "POST", "/autoscaler/pending").code == 405);
}

TEST_CASE("http server rejects malformed and oversized requests") {
  HttpServerOptions options = Loopback();
  options.max_request_bytes = 1024;
  auto server = Started(options);

  {
    const Client client(server->port());
    client.Send("hello\r\n\r\n");
    CHECK(Parse(client.ReadAll()).code == 400);
  }
  {
    const Client client(server->port());
    client.Send("GET /healthz HTTP/2.0\r\n\r\n");
    CHECK(Parse(client.ReadAll()).code == 400);
  }
  {
    const Client client(server->port());
    client.Send("GET /healthz HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
    CHECK(Parse(client.ReadAll()).code == 431);
  }
  {
    const Client client(server->port());  // bare LF line endings are accepted
    client.Send("GET /healthz HTTP/1.0\n\n");
    CHECK(Parse(client.ReadAll()).code == 200);
  }
  // No metrics handler: /metrics is not served.
  CHECK(Request(server->port(), "GET", "/metrics").code == 404);
}

TEST_CASE("http server turns a throwing handler into a 500") {
  HttpServerOptions options = Loopback();
  options.metrics = []() -> std::string { throw std::runtime_error("boom"); };
  auto server = Started(options);
  CHECK(Request(server->port(), "GET", "/metrics").code == 500);
  CHECK(Request(server->port(), "GET", "/healthz").code == 200);
}

TEST_CASE("http server binds port 0 and names the address when the port is taken") {
  HttpServerOptions options = Loopback();
  auto first = Started(options);
  const std::string port = std::to_string(first->port());

  HttpServerOptions same = options;
  same.address = "127.0.0.1:" + port;
  HttpServer second(same);
  const Status status = second.Start();
  CHECK(status.code() == StatusCode::kUnavailable);
  CHECK(status.message() == "listen metrics 127.0.0.1:" + port + ": address already in use");

  HttpServerOptions all = options;
  all.address = ":" + port;
  HttpServer third(all);
  CHECK(third.Start().message() == "listen metrics 0.0.0.0:" + port + ": address already in use");

  CHECK(first->Start().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("http server options are validated") {
  HttpServerOptions options;
  CHECK(options.Validate().ok());  // ":9400"
  for (const char* bad : {"9400", "localhost:", "::1:9400", "127.0.0.1:65536", "[::1]9400",
                          "127.0.0.1:http", "127.0.0.1:-1"}) {
    options.address = bad;
    INFO(bad);
    CHECK(options.Validate().code() == StatusCode::kInvalidArgument);
  }
  options.address = "[::1]:0";
  CHECK(options.Validate().ok());
  options.address = "127.0.0.1:0";
  options.max_connections = 0;
  CHECK_FALSE(options.Validate().ok());

  options.max_connections = 1;
  options.address = "127.0.0.1:99999";
  HttpServer server(options);
  const Status status = server.Start();
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK(status.message().rfind("listen metrics 127.0.0.1:99999: parse address", 0) == 0);
}

TEST_CASE("http server stop returns promptly while a client holds a connection open") {
  HttpServerOptions options = Loopback();
  options.max_connections = 1;
  auto server = Started(options);
  const Client idle(server->port());
  idle.Send("GET /heal");  // an unfinished request: the only worker waits on it
  const Client queued(server->port());
  queued.Send("GET /healthz HTTP/1.1\r\n\r\n");
  // The worker has read the unfinished request, so it now waits on the connection for the rest;
  // the queued one waits for the worker.
  REQUIRE(e2e::Eventually([&] { return UnreadByServer(server->port(), idle.LocalPort()) == 0; }));

  const auto start = std::chrono::steady_clock::now();
  server->Stop();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK(idle.ReadAll().empty());  // closed without a response
}

TEST_CASE("http server closes a connection that sends nothing within the timeout") {
  HttpServerOptions options = Loopback();
  options.io_timeout = std::chrono::milliseconds(200);
  options.max_connections = 2;
  auto server = Started(options);
  const Client idle(server->port());
  // A slow client takes one worker; the other still answers.
  CHECK(Request(server->port(), "GET", "/healthz").code == 200);
  const auto start = std::chrono::steady_clock::now();
  CHECK(idle.ReadAll().empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("StartHttpServer: none for an empty address, else started and logged") {
  std::ostringstream out;
  Logger log(out, "info");
  HttpServerOptions options;
  options.address = "";
  auto none = StartHttpServer(options, log);
  REQUIRE_OK(none);
  CHECK(*none == nullptr);
  CHECK(out.str().empty());

  options.address = "127.0.0.1:0";
  auto server = StartHttpServer(options, log);
  REQUIRE_OK(server);
  REQUIRE(*server != nullptr);
  CHECK(Request((*server)->port(), "GET", "/healthz").code == 200);
  CHECK(out.str().find("metrics on 127.0.0.1:0 (port " + std::to_string((*server)->port()) + ")") !=
        std::string::npos);

  options.address = "127.0.0.1:" + std::to_string((*server)->port());
  CHECK(StartHttpServer(options, log).status().code() == StatusCode::kUnavailable);
}

}  // namespace
}  // namespace xpu::metrics
