// Which HTTP proxy, if any, the client goes through to reach the API server, decided as kubectl
// (Go's net/http) decides it:
//
//   - the kubeconfig cluster's `proxy-url`, when set, for every request;
//   - else HTTPS_PROXY (https_proxy) for an https:// server, HTTP_PROXY (http_proxy) for http://,
//     unless NO_PROXY (no_proxy) names the host, or the host is localhost or a loopback address
//     (never proxied from the environment).
//
// NO_PROXY is a comma-separated list: "*" (every host), an IP address, a CIDR block, or a domain
// ("example.com" and ".example.com" both match example.com's subdomains; the first also matches
// example.com itself), each optionally with ":port". The client reaches the server through the
// proxy with HTTP CONNECT, so TLS stays end to end and is verified as without a proxy; user
// information in the proxy URL becomes a Basic Proxy-Authorization header. Only http:// proxies
// are supported (Go also takes https:// and socks5://); the others are refused with an error.
#ifndef XPU_API_CLIENT_PROXY_H_
#define XPU_API_CLIENT_PROXY_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"

namespace xpu::api::client {

struct ProxyEnvironment {
  std::string https_proxy;
  std::string http_proxy;
  std::string no_proxy;
  // The process's variables, upper case first (as Go reads them).
  static ProxyEnvironment FromProcess();
};

struct Proxy {
  std::string host;           // without an IPv6 literal's brackets
  std::string port;           // "80" when the URL gives none
  std::string authorization;  // "Basic ..." from the URL's user information, or empty
  std::string shown;          // the proxy URL without its user information, for messages
};

// The proxy for a server at `scheme` ("https" or "http"), `host` and `port`: `proxy_url` when set,
// else the environment's; nullopt to connect directly. An unusable proxy URL is an error naming
// where it came from.
StatusOr<std::optional<Proxy>> ProxyFor(std::string_view scheme, std::string_view host,
                                        std::string_view port, const std::string& proxy_url,
                                        const ProxyEnvironment& env);

// "host:port", "[v6]:port", "host" or a bare IPv6 address -> host (an IPv6 literal without its
// brackets) and port ("" when none). An unclosed '[' is returned whole, as the host.
std::pair<std::string_view, std::string_view> SplitHostPort(std::string_view s);

// Whether NO_PROXY's `no_proxy` list names `host` (and `port`).
bool NoProxyMatches(std::string_view no_proxy, std::string_view host, std::string_view port);

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_PROXY_H_
