#include "api/client/transport.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "api/client/proxy.h"
#include "base/mutex.h"

namespace xpu::api::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;
using SteadyTime = std::chrono::steady_clock::time_point;

namespace {
namespace transport_cc {

// Kept-alive connections kept for reuse, at most.
constexpr size_t kMaxIdle = 16;
// How often a running operation looks at the caller's stop flag.
constexpr std::chrono::milliseconds kStopPoll{100};

// How an operation ended, beyond its error code.
enum class Ending { kDone, kTimedOut, kStopped };

// The status of a step that did not succeed: it failed with `ec`, or the deadline or the caller's
// stop ended it. `step` names it within the call ("connect to host:443"), "" for the request.
Status StepFailure(const std::string& where, const std::string& step, Ending ending,
                   const error_code& ec) {
  if (ending == Ending::kStopped) return Status(StatusCode::kCancelled, where + ": stopped");
  const std::string at = step.empty() ? where : where + ": " + step;
  if (ending == Ending::kTimedOut) return Status(StatusCode::kDeadlineExceeded, at + ": timed out");
  return UnavailableError(at + ": " + ec.message());
}

std::string TlsErrorText(const error_code& ec, SSL* ssl) {
  std::string text = ec.message();
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);  // NOLINT(google-runtime-int): OpenSSL's type
    if (verify != X509_V_OK) {
      text += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
    }
  }
  return text;
}

}  // namespace transport_cc
}  // namespace

struct Transport::Endpoint {
  bool https = true;
  std::string host;  // without the brackets of an IPv6 literal
  std::string port;
  std::string host_header;  // host[:port] as the URL wrote it
  std::string path_prefix;  // the URL's path, without a trailing '/'
  // The name the server's certificate is checked against and sent as SNI: the kubeconfig's
  // tls-server-name, else the URL's host.
  std::string tls_name;
  bool tls_name_is_ip = false;
  // The HTTP proxy the connections go through (CONNECT), when one applies (proxy.h).
  std::optional<Proxy> proxy;
  std::string authority;  // host:port, as CONNECT names the server
};

struct Transport::TlsContext {
  asio::ssl::context context{asio::ssl::context::tls_client};
  // Set when the CA or the client certificate did not load: every call fails with it.
  std::string error;
};

struct Transport::Connection {
  asio::io_context io{1};
  asio::ip::tcp::resolver resolver{io};
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;

  beast::tcp_stream& Lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  SSL* Session() { return tls ? tls->native_handle() : nullptr; }

  // Starts one asynchronous operation with `start(on_done)` and runs the I/O context until it
  // ends, the deadline passes or `stop` turns true; then the socket is closed, which ends the
  // operation. The connection is not reused after a timeout or a stop.
  template <typename Start>
  std::pair<error_code, transport_cc::Ending> Run(SteadyTime deadline,
                                                  const std::atomic<bool>* stop, Start start) {
    error_code result;
    bool done = false;
    start([&](error_code ec) {
      result = ec;
      done = true;
    });
    io.restart();
    auto ending = transport_cc::Ending::kDone;
    while (!done) {  // NOLINT(bugprone-infinite-loop): the handlers io.run_for runs set it
      const auto now = std::chrono::steady_clock::now();
      if (ending == transport_cc::Ending::kDone) {
        if (now >= deadline) ending = transport_cc::Ending::kTimedOut;
        if (stop != nullptr && stop->load()) ending = transport_cc::Ending::kStopped;
        if (ending != transport_cc::Ending::kDone) {
          resolver.cancel();
          if (plain || tls) Lowest().close();
        }
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
      io.run_for(std::clamp(left, std::chrono::milliseconds(1), transport_cc::kStopPoll));
    }
    return {result, ending};
  }
};

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4U]);
      out.push_back(kHex[u & 0xFU]);
    }
  }
  return out;
}

Transport::Transport(ClusterConfig config, std::unique_ptr<Endpoint> endpoint)
    : config_(std::move(config)), tokens_(config_), endpoint_(std::move(endpoint)) {}

Transport::~Transport() = default;

StatusOr<std::unique_ptr<Transport>> Transport::Create(const ClusterConfig& config) {
  const std::string& url = config.server;
  auto endpoint = std::make_unique<Endpoint>();
  std::string_view rest = url;
  if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else if (rest.rfind("http://", 0) == 0) {
    endpoint->https = false;
    rest.remove_prefix(7);
  } else {
    return InvalidArgumentError("connect to \"" + url +
                                "\": server must be an https:// or http:// URL");
  }
  const std::string_view authority = rest.substr(0, rest.find('/'));
  if (rest.size() > authority.size()) {
    endpoint->path_prefix = std::string(rest.substr(authority.size()));
  }
  while (!endpoint->path_prefix.empty() && endpoint->path_prefix.back() == '/') {
    endpoint->path_prefix.pop_back();
  }
  endpoint->host_header = std::string(authority);
  if (authority.starts_with('[') && authority.find(']') == std::string_view::npos) {
    return InvalidArgumentError("connect to \"" + url + "\": unclosed '[' in the host");
  }
  const auto [host, port] = SplitHostPort(authority);
  if (host.empty()) return InvalidArgumentError("connect to \"" + url + "\": no host");
  endpoint->host = std::string(host);
  endpoint->port = port.empty() ? (endpoint->https ? "443" : "80") : std::string(port);
  endpoint->authority = (endpoint->host.find(':') != std::string::npos ? "[" + endpoint->host + "]"
                                                                       : endpoint->host) +
                        ":" + endpoint->port;
  ASSIGN_OR_RETURN(endpoint->proxy,
                   ProxyFor(endpoint->https ? "https" : "http", endpoint->host, endpoint->port,
                            config.proxy_url, ProxyEnvironment::FromProcess()));
  endpoint->tls_name = config.tls_server_name.empty() ? endpoint->host : config.tls_server_name;
  error_code ec;
  asio::ip::make_address(endpoint->tls_name, ec);
  endpoint->tls_name_is_ip = !ec;

  std::unique_ptr<Transport> transport(new Transport(config, std::move(endpoint)));
  if (transport->endpoint_->https) {
    auto tls = std::make_unique<TlsContext>();
    auto& ctx = tls->context;
    ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1);
    ctx.set_verify_mode(config.insecure_skip_tls_verify ? asio::ssl::verify_none
                                                        : asio::ssl::verify_peer);
    if (!config.ca_pem.empty()) {
      ctx.add_certificate_authority(asio::buffer(config.ca_pem), ec);
      if (ec) tls->error = "the cluster CA does not load: " + ec.message();
    } else {
      ctx.set_default_verify_paths(ec);
      if (ec) tls->error = "the system trust store does not load: " + ec.message();
    }
    // An exec plugin runs now: its certificate, if it gives one, goes into the context (and
    // stays for the transport's life); a token is kept for the first request.
    std::string cert = config.client_cert_pem;
    std::string key = config.client_key_pem;
    if (transport->tokens_.has_exec()) {
      ASSIGN_OR_RETURN(const ExecCredential cred, transport->tokens_.ExecCredentials());
      cert = cred.client_cert_pem;
      key = cred.client_key_pem;
    }
    if (tls->error.empty() && !cert.empty()) {
      ctx.use_certificate_chain(asio::buffer(cert), ec);
      if (!ec) ctx.use_private_key(asio::buffer(key), asio::ssl::context::pem, ec);
      if (ec) tls->error = "the client certificate or key does not load: " + ec.message();
    }
    transport->tls_ = std::move(tls);
  }
  return transport;
}

std::unique_ptr<Transport::Connection> Transport::TakeIdle() {
  MutexLock lock(mu_);
  if (idle_.empty()) return nullptr;
  auto c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void Transport::PutIdle(std::unique_ptr<Connection> connection) {
  MutexLock lock(mu_);
  if (idle_.size() < transport_cc::kMaxIdle) idle_.push_back(std::move(connection));
}

Status Transport::Connect(Connection& c, const HttpCall& call, SteadyTime deadline,
                          const std::string& where) {
  using transport_cc::Ending;
  const Endpoint& e = *endpoint_;
  const SteadyTime connect_by =
      std::min(deadline, std::chrono::steady_clock::now() + call.connect_timeout);
  using transport_cc::StepFailure;
  // Through a proxy, the TCP connection is the proxy's.
  const std::string& host = e.proxy ? e.proxy->host : e.host;
  const std::string& port = e.proxy ? e.proxy->port : e.port;
  asio::ip::tcp::resolver::results_type addresses;
  auto [resolved, r_end] = c.Run(connect_by, call.stop, [&](auto done) {
    c.resolver.async_resolve(host, port, [&, done](error_code ec, auto results) {
      addresses = std::move(results);
      done(ec);
    });
  });
  if (resolved || r_end != Ending::kDone) {
    return StepFailure(where, "resolve " + host, r_end, resolved);
  }
  if (tls_ != nullptr) {
    c.tls.emplace(c.io, tls_->context);
  } else {
    c.plain.emplace(c.io);
  }
  auto [connected, c_end] = c.Run(connect_by, call.stop, [&](auto done) {
    c.Lowest().async_connect(addresses, [done](error_code ec, const auto&) { done(ec); });
  });
  if (connected || c_end != Ending::kDone) {
    return StepFailure(where, "connect to " + (e.proxy ? "proxy " + e.proxy->shown : e.host_header),
                       c_end, connected);
  }
  // A request goes out as several writes (the TLS records of its header and body). With Nagle's
  // algorithm on, a write waits for the peer's delayed ACK of the one before: 40 ms on Linux, as
  // Go's client (which disables it on every TCP connection) never waits.
  error_code no_delay;
  c.Lowest().socket().set_option(asio::ip::tcp::no_delay(true), no_delay);
  if (e.proxy) RETURN_IF_ERROR(Tunnel(c, connect_by, call.stop, where));
  if (tls_ == nullptr) return OkStatus();

  SSL* ssl = c.Session();
  if (!e.tls_name_is_ip) SSL_set_tlsext_host_name(ssl, e.tls_name.c_str());
  if (!config_.insecure_skip_tls_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const int set = e.tls_name_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, e.tls_name.c_str())
                                     : X509_VERIFY_PARAM_set1_host(param, e.tls_name.c_str(), 0);
    if (set != 1) return FailedPreconditionError(where + ": TLS: cannot verify " + e.tls_name);
  }
  auto [shaken, h_end] = c.Run(connect_by, call.stop, [&](auto done) {
    c.tls->async_handshake(asio::ssl::stream_base::client, done);
  });
  if (h_end != Ending::kDone) return StepFailure(where, "TLS handshake", h_end, shaken);
  if (shaken) {
    if (shaken.category() == asio::error::get_ssl_category()) {
      return FailedPreconditionError(where + ": TLS: " + transport_cc::TlsErrorText(shaken, ssl));
    }
    return UnavailableError(where + ": TLS handshake: " + shaken.message());
  }
  return OkStatus();
}

Status Transport::Tunnel(Connection& c, SteadyTime deadline, const std::atomic<bool>* stop,
                         const std::string& where) {
  using transport_cc::Ending;
  using transport_cc::StepFailure;
  const Endpoint& e = *endpoint_;
  const std::string step = "proxy " + e.proxy->shown + ": CONNECT " + e.authority;
  http::request<http::empty_body> connect{http::verb::connect, e.authority, 11};
  connect.set(http::field::host, e.authority);
  if (!e.proxy->authorization.empty()) {
    connect.set(http::field::proxy_authorization, e.proxy->authorization);
  }
  auto [written, w_end] = c.Run(deadline, stop, [&](auto done) {
    http::async_write(c.Lowest(), connect, [done](error_code ec, size_t) { done(ec); });
  });
  if (written || w_end != Ending::kDone) return StepFailure(where, step, w_end, written);
  // The answer to CONNECT has no body; the tunnel starts right after its header.
  http::response_parser<http::empty_body> parser;
  parser.skip(true);
  beast::flat_buffer buffer;
  auto [read, r_end] = c.Run(deadline, stop, [&](auto done) {
    http::async_read_header(c.Lowest(), buffer, parser,
                            [done](error_code ec, size_t) { done(ec); });
  });
  if (read || r_end != Ending::kDone) return StepFailure(where, step, r_end, read);
  if (const unsigned code = parser.get().result_int(); code != 200) {
    return FailedPreconditionError(where + ": " + step + ": answered " + std::to_string(code) +
                                   " " + std::string{parser.get().reason()});
  }
  // Nothing may come before the server's own bytes, which answer ours.
  if (buffer.size() != 0) return UnavailableError(where + ": " + step + ": data after the answer");
  return OkStatus();
}

StatusOr<HttpResult> Transport::Do(const HttpCall& call) {
  ASSIGN_OR_RETURN(const std::string token, tokens_.Token());
  StatusOr<HttpResult> result = DoWith(call, token);
  // A plugin's token the server refused (revoked, or expired before its stated time).
  if (result.ok() && result->code == 401 && tokens_.Refuse(token)) {
    ASSIGN_OR_RETURN(const std::string again, tokens_.Token());
    if (again != token) return DoWith(call, again);
  }
  return result;
}

StatusOr<HttpResult> Transport::DoWith(const HttpCall& call, const std::string& token) {
  using transport_cc::Ending;
  const std::string where =
      call.method + " " + config_.server + call.path.substr(0, call.path.find('?'));
  if (tls_ != nullptr && !tls_->error.empty()) {
    return FailedPreconditionError(where + ": TLS: " + tls_->error);
  }
  const SteadyTime deadline = std::chrono::steady_clock::now() + call.timeout;

  http::request<http::string_body> request;
  request.method_string(call.method);
  request.target(endpoint_->path_prefix + call.path);
  request.version(11);
  request.set(http::field::host, endpoint_->host_header);
  request.set(http::field::user_agent, config_.user_agent);
  request.set(http::field::accept, "application/json");
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  if (!call.body.empty() || call.method == "POST" || call.method == "PUT") {
    request.set(http::field::content_type, "application/json");
    request.body() = call.body;
  }
  request.keep_alive(true);
  request.prepare_payload();

  using transport_cc::StepFailure;
  // A kept-alive connection the server has closed since fails before any answer arrives: the
  // request is sent again once, on a new connection (as libcurl and Go's client do).
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> c = attempt == 0 ? TakeIdle() : nullptr;
    const bool reused = c != nullptr;
    if (!reused) {
      c = std::make_unique<Connection>();
      if (Status connected = Connect(*c, call, deadline, where); !connected.ok()) return connected;
    }
    auto on_stream = [&](auto&& op) {
      return c->Run(deadline, call.stop, [&](auto done) {
        if (c->tls) {
          op(*c->tls, done);
        } else {
          op(*c->plain, done);
        }
      });
    };
    auto [written, w_end] = on_stream([&](auto& stream, auto done) {
      http::async_write(stream, request, [done](error_code ec, size_t) { done(ec); });
    });
    http::response_parser<http::buffer_body> parser;
    // No limit (lists are large). Not boost::none: Boost 1.74 compares a Content-Length with
    // the optional limit, and any length is greater than none.
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    parser.header_limit(64 * 1024);
    error_code read_ec = written;
    Ending ending = w_end;
    if (!written && w_end == Ending::kDone) {
      std::tie(read_ec, ending) = on_stream([&](auto& stream, auto done) {
        http::async_read_header(stream, c->buffer, parser,
                                [done](error_code ec, size_t) { done(ec); });
      });
    }
    if (read_ec || ending != Ending::kDone) {
      if (reused && ending == Ending::kDone && attempt == 0) continue;
      return StepFailure(where, "", ending, read_ec);
    }

    HttpResult result;
    const auto& head = parser.get();
    result.code = static_cast<long>(head.result_int());  // NOLINT(google-runtime-int)
    if (auto it = head.find(http::field::retry_after); it != head.end()) {
      result.retry_after.assign(it->value().data(), it->value().size());
    }
    if (auto it = head.find(http::field::content_type); it != head.end()) {
      result.content_type.assign(it->value().data(), it->value().size());
    }
    const bool streaming = call.on_data != nullptr && result.code / 100 == 2;
    std::array<char, size_t{64} * 1024> chunk{};
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      auto [body_ec, b_end] = on_stream([&](auto& stream, auto done) {
        // read_some: a watch's events are handed over as they arrive, not once 64 kB are in.
        http::async_read_some(stream, c->buffer, parser,
                              [done](error_code ec, size_t) { done(ec); });
      });
      if (body_ec == http::error::need_buffer) body_ec = {};
      if (body_ec || b_end != Ending::kDone) return StepFailure(where, "", b_end, body_ec);
      const std::string_view got(chunk.data(), chunk.size() - parser.get().body().size);
      if (got.empty()) continue;
      if (!streaming) {
        result.body.append(got);
      } else if (!call.on_data(got)) {
        return Status(StatusCode::kCancelled, where + ": stopped");
      }
    }
    if (parser.get().keep_alive()) PutIdle(std::move(c));
    return result;
  }
}

}  // namespace xpu::api::client
