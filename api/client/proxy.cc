#include "api/client/proxy.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <charconv>
#include <cstdlib>
#include <string>

#include "base/text.h"

namespace xpu::api::client {
namespace {

std::string Env(const char* upper, const char* lower) {
  for (const char* name : {upper, lower}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  }
  return "";
}

namespace ip = boost::asio::ip;

// An address as Go compares them: an IPv4-mapped IPv6 address is its IPv4 address.
std::optional<ip::address> ParseIp(std::string_view text) {
  boost::system::error_code ec;
  const ip::address a = ip::make_address(std::string(text), ec);
  if (ec) return std::nullopt;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return ip::address(ip::make_address_v4(ip::v4_mapped, a.to_v6()));
  }
  return a;
}

// Whether `a` is in the CIDR block `cidr` ("10.0.0.0/8", "fd00::/8") of its own family.
bool InCidr(const ip::address& a, std::string_view cidr) {
  boost::system::error_code ec;
  if (a.is_v4()) {
    const ip::network_v4 net = ip::make_network_v4(std::string(cidr), ec);
    return !ec && ip::network_v4(a.to_v4(), net.prefix_length()).network() == net.network();
  }
  const ip::network_v6 net = ip::make_network_v6(std::string(cidr), ec);
  return !ec && ip::network_v6(a.to_v6(), net.prefix_length()).network() == net.network();
}

// %XX decoding of a URL's user information.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned value = 0;
    if (s[i] == '%' && i + 2 < s.size() &&
        std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16).ptr == s.data() + i + 3) {
      out.push_back(static_cast<char>(value));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// A proxy URL ("http://user:pass@host:port", or "host:port", read as http://).
StatusOr<Proxy> ParseProxy(std::string_view url, const std::string& from) {
  std::string_view rest = Trim(url);
  if (const size_t scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    const std::string scheme = Lower(rest.substr(0, scheme_end));
    if (scheme != "http") {
      return InvalidArgumentError(from + ": the proxy scheme " + scheme +
                                  ":// is not supported (only http://)");
    }
    rest.remove_prefix(scheme_end + 3);
  }
  rest = rest.substr(0, rest.find('/'));
  Proxy proxy;
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string user = Unescape(rest.substr(0, at));
    proxy.authorization = "Basic " + Base64Encode(user);
    rest.remove_prefix(at + 1);
  }
  const auto [host, port] = SplitHostPort(rest);
  if (host.empty()) return InvalidArgumentError(from + ": the proxy URL has no host");
  int port_number = 0;
  if (!port.empty() && (std::from_chars(port.data(), port.data() + port.size(), port_number).ptr !=
                            port.data() + port.size() ||
                        port_number < 1 || port_number > 65535)) {
    return InvalidArgumentError(from + ": the proxy URL's port is not a number from 1 to 65535");
  }
  proxy.host = std::string(host);
  proxy.port = port.empty() ? "80" : std::string(port);
  proxy.shown = "http://" + std::string(rest);
  return proxy;
}

}  // namespace

std::pair<std::string_view, std::string_view> SplitHostPort(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return {s, ""};
    const std::string_view port =
        close + 1 < s.size() && s[close + 1] == ':' ? s.substr(close + 2) : "";
    return {s.substr(1, close - 1), port};
  }
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || s.find(':') != colon) return {s, ""};  // none, or IPv6
  return {s.substr(0, colon), s.substr(colon + 1)};
}

ProxyEnvironment ProxyEnvironment::FromProcess() {
  return {.https_proxy = Env("HTTPS_PROXY", "https_proxy"),
          .http_proxy = Env("HTTP_PROXY", "http_proxy"),
          .no_proxy = Env("NO_PROXY", "no_proxy")};
}

bool NoProxyMatches(std::string_view no_proxy, std::string_view host, std::string_view port) {
  const std::string h = Lower(host);
  const std::optional<ip::address> addr = ParseIp(h);
  std::string_view list = no_proxy;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string entry = Lower(Trim(list.substr(0, comma)));
    list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    if (entry.empty()) continue;
    if (entry == "*") return true;
    if (entry.find('/') != std::string::npos) {  // a CIDR block
      if (addr && InCidr(*addr, entry)) return true;
      continue;
    }
    if (const std::optional<ip::address> exact = ParseIp(entry)) {  // an address, without a port
      if (addr == exact) return true;
      continue;
    }
    auto [entry_host, entry_port] = SplitHostPort(entry);
    if (const std::optional<ip::address> exact = ParseIp(entry_host)) {  // with a port
      if (addr == exact && (entry_port.empty() || entry_port == port)) return true;
      continue;
    }
    std::string domain(entry_host);
    if (domain.starts_with("*.")) domain.erase(0, 1);
    const bool also_itself = !domain.starts_with(".");
    if (also_itself) domain.insert(0, ".");
    const bool match = h.ends_with(domain) || (also_itself && h == domain.substr(1));
    if (match && (entry_port.empty() || entry_port == port)) return true;
  }
  return false;
}

StatusOr<std::optional<Proxy>> ProxyFor(std::string_view scheme, std::string_view host,
                                        std::string_view port, const std::string& proxy_url,
                                        const ProxyEnvironment& env) {
  if (!proxy_url.empty()) {
    ASSIGN_OR_RETURN(Proxy proxy, ParseProxy(proxy_url, "the cluster's proxy-url"));
    return std::optional<Proxy>(std::move(proxy));
  }
  const bool https = scheme == "https";
  const std::string& url = https ? env.https_proxy : env.http_proxy;
  if (url.empty()) return std::optional<Proxy>();
  const std::string h = Lower(host);
  if (h == "localhost") return std::optional<Proxy>();
  if (const std::optional<ip::address> a = ParseIp(h); a && a->is_loopback()) {
    return std::optional<Proxy>();
  }
  if (NoProxyMatches(env.no_proxy, h, port)) return std::optional<Proxy>();
  ASSIGN_OR_RETURN(Proxy proxy, ParseProxy(url, https ? "HTTPS_PROXY" : "HTTP_PROXY"));
  return std::optional<Proxy>(std::move(proxy));
}

}  // namespace xpu::api::client
