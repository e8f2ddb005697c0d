// The HTTPS edge of kube-sim: the only translation unit that includes Boost.Beast and Asio.
// One thread per connection with synchronous I/O: a watch blocks only its own connection, and the
// store's lock is the only shared state.
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
#include <list>
#include <memory>
#include <set>
#include <thread>

#include "base/mutex.h"
#include "base/text.h"
#include "e2e/kubesim/api_handler.h"
#include "e2e/kubesim/kube_sim.h"
#include "e2e/kubesim/tls.h"

namespace xpu::kubesim {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// Open connections, so that shutdown can unblock their threads and wait for them.
class Connections {
 public:
  bool Add(int fd) {
    MutexLock lock(mu_);
    if (stopping_) return false;
    fds_.insert(fd);
    return true;
  }
  void Remove(int fd) {
    MutexLock lock(mu_);
    fds_.erase(fd);
    idle_.NotifyAll();
  }
  void ShutdownAll() {
    MutexLock lock(mu_);
    stopping_ = true;
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  bool WaitIdle(std::chrono::seconds timeout) {
    MutexLock lock(mu_);
    return idle_.WaitFor(mu_, timeout, [&]() REQUIRES(mu_) { return fds_.empty(); });
  }

 private:
  Mutex mu_;
  CondVar idle_;
  std::set<int> fds_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
};

// The connection threads. They are joined, not detached, so that each has fully ended (its
// thread-local OpenSSL state freed) before the process exits; finished ones are reaped as new
// connections arrive.
class Workers {
 public:
  void Start(std::function<void()> fn) {
    MutexLock lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back({std::thread([fn = std::move(fn), done] {
                          fn();
                          done->store(true);
                        }),
                        done});
  }
  void JoinAll() {
    std::list<Worker> all;
    {
      MutexLock lock(mu_);
      all.swap(workers_);
    }
    for (Worker& w : all) w.thread.join();
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  Mutex mu_;
  std::list<Worker> workers_ GUARDED_BY(mu_);
};

// True when the peer closed or sent something during a watch (clients send nothing then).
bool PeerGone(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0;
}

// The RFC 2253 subject of the client certificate when the client sent one and it verified against
// kube-sim's CA; empty otherwise (the request then needs the token).
std::string VerifiedClientSubject(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string subject;
  if (SSL_get_verify_result(ssl) == X509_V_OK) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (bio != nullptr &&
        X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio, &data);
      subject.assign(data, static_cast<size_t>(n));
    }
    BIO_free(bio);
  }
  X509_free(cert);
  return subject;
}

template <typename Stream>
bool WriteChunked(Stream& stream, WatchStream& watch) {
  beast::error_code ec;
  const std::string header =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-cache, private\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  net::write(stream, net::buffer(header), ec);
  const int fd = beast::get_lowest_layer(stream).native_handle();
  while (!ec && !watch.done()) {
    std::string data;
    for (const auto& line : watch.Next()) data += line;
    if (data.empty()) {
      if (PeerGone(fd)) return false;
      continue;
    }
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    net::write(stream, net::buffer(size + data + "\r\n"), ec);
  }
  if (!ec) net::write(stream, net::buffer(std::string("0\r\n\r\n")), ec);
  return !ec;
}

void Serve(tcp::socket socket, ssl::context& tls, ApiHandler& handler, Connections& connections) {
  const int fd = socket.native_handle();
  if (!connections.Add(fd)) return;
  // As the real API server (Go disables Nagle's algorithm on every TCP connection): a response's
  // header and body records would otherwise wait on the client's delayed ACK, 40 ms apiece.
  beast::error_code no_delay;
  socket.set_option(tcp::no_delay(true), no_delay);
  {
    beast::ssl_stream<tcp::socket> stream(std::move(socket), tls);
    beast::error_code ec;
    stream.handshake(ssl::stream_base::server, ec);
    const std::string client = ec ? "" : VerifiedClientSubject(stream.native_handle());
    beast::flat_buffer buffer;
    bool dropped = false;
    while (!ec) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{64} * 1024 * 1024);
      http::read(stream, buffer, parser, ec);
      if (ec) break;
      const auto& req = parser.get();
      HttpRequest request{std::string{req.method_string()},
                          std::string{req.target()},
                          std::string{req[http::field::authorization]},
                          std::string{req[http::field::content_type]},
                          req.body(),
                          client};
      auto result = handler.Handle(request);
      if (auto* watch = std::get_if<std::unique_ptr<WatchStream>>(&result)) {
        if (!WriteChunked(stream, **watch) || !req.keep_alive()) break;
        continue;
      }
      auto& r = std::get<HttpResponse>(result);
      if (r.drop_connection) {
        // Fault injection: the connection goes away without a response.
        beast::get_lowest_layer(stream).close(ec);
        dropped = true;
        break;
      }
      http::response<http::string_body> res{static_cast<http::status>(r.code), req.version()};
      res.set(http::field::content_type,
              !r.body.empty() && r.body[0] == '{' ? "application/json" : "text/plain");
      for (const auto& [k, v] : r.headers) res.set(k, v);
      res.body() = std::move(r.body);
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(stream, res, ec);
      if (!res.keep_alive()) break;
    }
    if (!dropped) stream.shutdown(ec);
  }
  connections.Remove(fd);
}

void Accept(tcp::acceptor& acceptor, ssl::context& tls, ApiHandler& handler,
            Connections& connections, Workers& workers) {
  acceptor.async_accept([&](beast::error_code ec, tcp::socket socket) {
    if (ec) return;  // closed by shutdown
    auto shared = std::make_shared<tcp::socket>(std::move(socket));
    workers.Start([shared, &tls, &handler, &connections] {
      Serve(std::move(*shared), tls, handler, connections);
    });
    Accept(acceptor, tls, handler, connections, workers);
  });
}

}  // namespace

int Run(const Options& options, std::ostream& out, std::ostream& err) {
  if (Status s = options.Validate(); !s.ok()) {
    err << "kube-sim: " << s.message() << "\n";
    return 2;
  }
  auto material = GenerateTlsMaterial();
  if (!material.ok()) {
    err << "kube-sim: " << material.status().message() << "\n";
    return 1;
  }
  std::string token = options.token;
  if (token.empty()) {
    auto random = RandomHex(16);
    if (!random.ok()) {
      err << "kube-sim: " << random.status().message() << "\n";
      return 1;
    }
    token = *random;
  }
  StoreOptions store_options;
  store_options.history = static_cast<size_t>(options.history);
  store_options.seed = options.seed;
  if (Status s = ServeResourceVersions(&store_options.types, options.resource_versions); !s.ok()) {
    err << "kube-sim: " << s.message() << "\n";
    return 1;
  }
  store_options.kube_version =
      api::ParseKubeVersion(options.kube_version).value_or(api::KubeVersion::k1_35);
  Store store(store_options);
  HandlerOptions handler_options;
  handler_options.token = token;
  handler_options.faults = options.faults;
  handler_options.seed = options.seed;
  handler_options.kube_version = options.kube_version;
  handler_options.feature_gates = options.feature_gates;
  ApiHandler handler(&store, handler_options);
  Connections connections;

  try {
    ssl::context tls(ssl::context::tls_server);
    tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    const std::string chain = material->server_cert_pem + material->ca_cert_pem;
    tls.use_certificate_chain(net::buffer(chain));
    tls.use_private_key(net::buffer(material->server_key_pem), ssl::context::pem);
    // Ask for a client certificate but accept the handshake without one or with one that does
    // not verify: as the API server does, such a request falls back to the token (or gets 401).
    tls.add_certificate_authority(net::buffer(material->ca_cert_pem));
    tls.set_verify_mode(ssl::verify_peer);
    tls.set_verify_callback([](bool, ssl::verify_context&) { return true; });

    net::io_context io;
    const auto colon = options.listen.rfind(':');
    const tcp::endpoint endpoint(
        net::ip::make_address(options.listen.substr(0, colon)),
        static_cast<unsigned short>(std::stoi(options.listen.substr(colon + 1))));
    tcp::acceptor acceptor(io, endpoint);
    const auto bound = acceptor.local_endpoint();
    const std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                                     : bound.address().to_string();
    const std::string url = "https://" + host + ":" + std::to_string(bound.port());
    // The kubeconfig is in place before the line that tells waiters the server is ready.
    if (!options.kubeconfig_out.empty()) {
      Status s = WriteFileAtomically(
          options.kubeconfig_out, KubeconfigYaml(url, Base64Encode(material->ca_cert_pem), token));
      if (!s.ok()) {
        err << "kube-sim: " << s.message() << "\n";
        return 1;
      }
    }
    if (!options.client_kubeconfig_out.empty()) {
      auto client = IssueClientCertificate(*material, "xpu-dra-test", "system:masters");
      Status s = client.status();
      if (s.ok()) {
        s = WriteFileAtomically(options.client_kubeconfig_out,
                                ClientCertKubeconfigYaml(url, Base64Encode(material->ca_cert_pem),
                                                         Base64Encode(client->cert_pem),
                                                         Base64Encode(client->key_pem)));
      }
      if (!s.ok()) {
        err << "kube-sim: " << s.message() << "\n";
        return 1;
      }
    }
    out << "kube-sim: listening on " << url << std::endl;
    net::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](beast::error_code, int) {
      beast::error_code ignored;
      acceptor.close(ignored);
      store.Shutdown();
      connections.ShutdownAll();
    });
    Workers workers;
    Accept(acceptor, tls, handler, connections, workers);
    io.run();
    if (!connections.WaitIdle(std::chrono::seconds(5))) {
      // A connection thread is stuck in a write; the process is ending, so do not wait for it.
      err << "kube-sim: stop: connections still open after 5 s" << std::endl;
      std::_Exit(0);
    }
    workers.JoinAll();
  } catch (const std::exception& e) {
    err << "kube-sim: serve " << options.listen << ": " << e.what() << "\n";
    return 1;
  }
  out << "kube-sim: stopped" << std::endl;
  return 0;
}

}  // namespace xpu::kubesim
