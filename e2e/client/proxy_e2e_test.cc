// The API client through an HTTP CONNECT proxy to the real kube-sim binary over HTTPS: the
// kubeconfig's proxy-url with credentials, a proxy that refuses, and the environment's proxy,
// which a loopback server never goes through.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "api/client/client.h"
#include "base/testing/require_ok.h"
#include "e2e/client/connect_proxy.h"
#include "e2e/client/kube_sim_process.h"

namespace xpu::e2e {
namespace {

namespace kc = api::client;

std::unique_ptr<KubeSimProcess> Sim() {
  auto sim = KubeSimProcess::Start(XPU_KUBE_SIM_BINARY);
  REQUIRE_OK(sim);
  return std::move(sim).value();
}

std::unique_ptr<ConnectProxy> Proxy(const std::string& refuse = "") {
  auto proxy = ConnectProxy::Start(refuse);
  REQUIRE_OK(proxy);
  return std::move(proxy).value();
}

// "127.0.0.1:<port>" of the sim's URL.
std::string Authority(const KubeSimProcess& sim) {
  const std::string& url = sim.url();
  return url.substr(url.find("://") + 3);
}

TEST_CASE("proxy: the kubeconfig's proxy-url tunnels every call, with its credentials",
          "[e2e][client][proxy]") {
  auto sim = Sim();
  auto proxy = Proxy();
  auto config = sim->Config();
  REQUIRE_OK(config);
  config->proxy_url = "http://ml%2Dteam:s3cret@127.0.0.1:" + std::to_string(proxy->port());
  auto client = kc::Client::Create(*config);
  REQUIRE_OK(client);
  // TLS end to end: the sim's certificate is verified through the tunnel.
  CHECK((*client)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kNotFound);
  CHECK((*client)->Get(kc::Nodes(), "", "n2").status().code() == StatusCode::kNotFound);
  const std::vector<std::string> targets = proxy->targets();
  REQUIRE(!targets.empty());  // one per connection (kept alive between calls)
  for (const std::string& t : targets) CHECK(t == Authority(*sim));
  CHECK(proxy->authorizations().front() == "Basic bWwtdGVhbTpzM2NyZXQ=");  // ml-team:s3cret
}

TEST_CASE("proxy: a proxy that refuses is an error naming it, without its credentials",
          "[e2e][client][proxy]") {
  auto sim = Sim();
  auto proxy = Proxy("407 Proxy Authentication Required");
  auto config = sim->Config();
  REQUIRE_OK(config);
  const std::string shown = "http://127.0.0.1:" + std::to_string(proxy->port());
  config->proxy_url = "http://u:wrong@127.0.0.1:" + std::to_string(proxy->port());
  auto client = kc::Client::Create(*config);
  REQUIRE_OK(client);
  const auto refused = (*client)->Get(kc::Nodes(), "", "n1");
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(refused.status().message(),
             Catch::Matchers::Contains("proxy " + shown + ": CONNECT " + Authority(*sim) +
                                       ": answered 407 Proxy Authentication Required"));
  CHECK(refused.status().message().find("wrong") == std::string::npos);
}

TEST_CASE("proxy: HTTPS_PROXY is not used for a loopback server", "[e2e][client][proxy]") {
  auto sim = Sim();
  auto proxy = Proxy();
  REQUIRE(setenv("HTTPS_PROXY", ("http://127.0.0.1:" + std::to_string(proxy->port())).c_str(), 1) ==
          0);
  auto config = sim->Config();
  REQUIRE_OK(config);
  auto client = kc::Client::Create(*config);
  REQUIRE_OK(client);
  CHECK((*client)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kNotFound);
  CHECK(proxy->targets().empty());
  REQUIRE(unsetenv("HTTPS_PROXY") == 0);
}

}  // namespace
}  // namespace xpu::e2e
