// Which proxy the client goes through: NO_PROXY's forms, the environment against the kubeconfig's
// proxy-url, loopback, credentials, and the URLs refused.
#include "api/client/proxy.h"

#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "base/testing/require_ok.h"

namespace xpu::api::client {
namespace {

TEST_CASE("SplitHostPort: names, IPv4 and IPv6, with and without a port") {
  using Split = std::pair<std::string_view, std::string_view>;
  CHECK(SplitHostPort("api.example.com:6443") == Split{"api.example.com", "6443"});
  CHECK(SplitHostPort("api.example.com") == Split{"api.example.com", ""});
  CHECK(SplitHostPort("10.0.0.1:443") == Split{"10.0.0.1", "443"});
  CHECK(SplitHostPort("[fd00::1]:6443") == Split{"fd00::1", "6443"});
  CHECK(SplitHostPort("[fd00::1]") == Split{"fd00::1", ""});
  CHECK(SplitHostPort("fd00::1") == Split{"fd00::1", ""});  // bare: no port can be told apart
  CHECK(SplitHostPort("[fd00::1") == Split{"[fd00::1", ""});
  CHECK(SplitHostPort("") == Split{"", ""});
}

TEST_CASE("NO_PROXY: every form Go reads") {
  struct Case {
    const char* no_proxy;
    const char* host;
    const char* port;
    bool match;
  };
  const Case cases[] = {
      {"*", "api.example.com", "443", true},
      {"", "api.example.com", "443", false},
      {"example.com", "example.com", "443", true},
      {"example.com", "api.example.com", "443", true},
      {"example.com", "notexample.com", "443", false},
      {".example.com", "api.example.com", "443", true},
      {".example.com", "example.com", "443", false},
      {"*.example.com", "api.example.com", "443", true},
      {"*.example.com", "example.com", "443", false},
      {"Example.COM", "API.example.com", "443", true},
      {"example.com:6443", "api.example.com", "6443", true},
      {"example.com:6443", "api.example.com", "443", false},
      {"10.0.0.0/8", "10.1.2.3", "6443", true},
      {"10.0.0.0/8", "11.1.2.3", "6443", false},
      {"10.96.0.1", "10.96.0.1", "443", true},
      {"10.96.0.1:443", "10.96.0.1", "443", true},
      {"10.96.0.1:443", "10.96.0.1", "6443", false},
      {"fd00::/8", "fd12::1", "443", true},
      {"fd00::/8", "fe80::1", "443", false},
      {"[fd00::1]:443", "fd00::1", "443", true},
      {" other.org , example.com ", "api.example.com", "443", true},
      {",,", "api.example.com", "443", false},
      {"10.0.0.0/8", "api.example.com", "443", false},
  };
  for (const Case& c : cases) {
    INFO(c.no_proxy << " vs " << c.host << ":" << c.port);
    CHECK(NoProxyMatches(c.no_proxy, c.host, c.port) == c.match);
  }
}

TEST_CASE("proxy: the environment by scheme, never for loopback or NO_PROXY") {
  const ProxyEnvironment env{.https_proxy = "http://proxy.corp:3128",
                             .http_proxy = "proxy-plain.corp:8080",
                             .no_proxy = "svc.cluster.local,10.96.0.0/12"};
  auto https = ProxyFor("https", "api.example.com", "443", "", env);
  REQUIRE_OK(https);
  REQUIRE(*https);
  CHECK((*https)->host == "proxy.corp");
  CHECK((*https)->port == "3128");
  CHECK((*https)->authorization.empty());
  CHECK((*https)->shown == "http://proxy.corp:3128");
  auto http = ProxyFor("http", "api.example.com", "80", "", env);
  REQUIRE_OK(http);
  CHECK((*http)->host == "proxy-plain.corp");  // no scheme: read as http://
  CHECK((*http)->port == "8080");
  for (const char* direct : {"localhost", "127.0.0.1", "127.9.9.9", "::1",
                             "kubernetes.default.svc.cluster.local", "10.96.0.1"}) {
    INFO(direct);
    auto none = ProxyFor("https", direct, "443", "", env);
    REQUIRE_OK(none);
    CHECK_FALSE(*none);
  }
  auto nothing = ProxyFor("https", "api.example.com", "443", "", {});
  REQUIRE_OK(nothing);
  CHECK_FALSE(*nothing);
}

TEST_CASE("proxy: the kubeconfig's proxy-url wins, loopback included, with its credentials") {
  const ProxyEnvironment env{
      .https_proxy = "http://env-proxy:1", .http_proxy = "", .no_proxy = "*"};
  auto p = ProxyFor("https", "127.0.0.1", "6443", "http://alice:p%40ss@[fd00::5]:8443/", env);
  REQUIRE_OK(p);
  REQUIRE(*p);
  CHECK((*p)->host == "fd00::5");
  CHECK((*p)->port == "8443");
  CHECK((*p)->authorization == "Basic YWxpY2U6cEBzcw==");  // alice:p@ss
  CHECK((*p)->shown == "http://[fd00::5]:8443");           // no credentials in messages
  auto default_port = ProxyFor("https", "api", "443", "http://squid", env);
  REQUIRE_OK(default_port);
  CHECK((*default_port)->port == "80");
}

TEST_CASE("proxy: URLs that cannot be used are refused, naming where they came from") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"socks5://127.0.0.1:1080",
       "the cluster's proxy-url: the proxy scheme socks5:// is not supported (only http://)"},
      {"https://proxy:443",
       "the cluster's proxy-url: the proxy scheme https:// is not supported (only http://)"},
      {"http://:3128", "the cluster's proxy-url: the proxy URL has no host"},
      {"http://proxy:99999",
       "the cluster's proxy-url: the proxy URL's port is not a number from 1 to 65535"},
  };
  for (const auto& [url, want] : bad) {
    INFO(url);
    CHECK(ProxyFor("https", "api", "443", url, {}).status().message() == want);
  }
  const ProxyEnvironment env{.https_proxy = "socks5://p:1", .http_proxy = "", .no_proxy = ""};
  CHECK(ProxyFor("https", "api", "443", "", env).status().message() ==
        "HTTPS_PROXY: the proxy scheme socks5:// is not supported (only http://)");
}

}  // namespace
}  // namespace xpu::api::client
