// The API client with an exec credential plugin against the real kube-sim binary over HTTPS: a
// token, a token the server refuses once (the plugin runs again), and a client certificate.
// The plugins are shell scripts answering from files the test writes; each run is counted.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "api/client/client.h"
#include "api/client/kubeconfig.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"
#include "e2e/client/kube_sim_process.h"

namespace xpu::e2e {
namespace {

namespace kc = api::client;
using nlohmann::json;
using xpu::testing::TempDir;

// A plugin in `dir` that prints answer-<run>.json, where run counts its runs from 1 (the last
// answer once the runs outnumber them), and records each run in `runs`.
std::string AnsweringPlugin(const TempDir& dir, const std::vector<json>& answers) {
  for (size_t i = 0; i < answers.size(); ++i) {
    dir.Write("answer-" + std::to_string(i + 1) + ".json", answers[i].dump());
  }
  std::string path = dir.Write("plugin", R"(#!/bin/sh
d=$(dirname "$0")
echo run >> "$d/runs"
n=$(wc -l < "$d/runs" | tr -d ' ')
[ -f "$d/answer-$n.json" ] || n=)" + std::to_string(answers.size()) +
                                             R"(
cat "$d/answer-$n.json"
)");
  REQUIRE(::chmod(path.c_str(), 0700) == 0);
  return path;
}

json Answer(const json& status) {
  return {{"apiVersion", "client.authentication.k8s.io/v1beta1"},
          {"kind", "ExecCredential"},
          {"status", status}};
}

// The sim's server and CA, authenticated by `plugin` only.
kc::ClusterConfig WithPlugin(const KubeSimProcess& sim, const std::string& plugin) {
  auto config = sim.Config();
  REQUIRE_OK(config);
  kc::ClusterConfig out;
  out.server = config->server;
  out.ca_pem = config->ca_pem;
  out.exec = kc::ExecConfig{.where = "users[\"sim\"].user.exec",
                            .api_version = std::string(kc::kExecApiV1beta1),
                            .command = plugin,
                            .args = {},
                            .env = {},
                            .install_hint = "",
                            .provide_cluster_info = true,
                            .interactive_mode = "Never"};
  return out;
}

int Runs(const TempDir& dir) {
  const std::string text = xpu::testing::ReadText(dir.Path("runs"));
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

std::unique_ptr<KubeSimProcess> Sim(const std::vector<std::string>& flags) {
  auto sim = KubeSimProcess::Start(XPU_KUBE_SIM_BINARY, flags);
  REQUIRE_OK(sim);
  return std::move(sim).value();
}

TEST_CASE("exec plugin: its token authenticates, and is run once while it holds",
          "[e2e][client][exec]") {
  TempDir dir;
  auto sim = Sim({"--token", "from-the-plugin"});
  const std::string plugin = AnsweringPlugin(
      dir,
      {Answer({{"token", "from-the-plugin"}, {"expirationTimestamp", "2999-01-01T00:00:00Z"}})});
  const kc::ClusterConfig config = WithPlugin(*sim, plugin);
  CHECK(config.Describe() == config.server + " (exec plugin " + plugin + ")");
  auto client = kc::Client::Create(config);
  REQUIRE_OK(client);
  for (int i = 0; i < 3; ++i) {
    // Authenticated: the node is absent.
    CHECK((*client)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kNotFound);
  }
  CHECK(Runs(dir) == 1);
}

TEST_CASE("exec plugin: a refused token runs the plugin again, and the call goes through",
          "[e2e][client][exec]") {
  TempDir dir;
  auto sim = Sim({"--token", "good"});
  // The first answer does not expire by its own account, but the server refuses it.
  const std::string plugin =
      AnsweringPlugin(dir, {Answer({{"token", "revoked"}}), Answer({{"token", "good"}})});
  auto client = kc::Client::Create(WithPlugin(*sim, plugin));
  REQUIRE_OK(client);
  CHECK((*client)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kNotFound);
  CHECK(Runs(dir) == 2);
  CHECK((*client)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kNotFound);
  CHECK(Runs(dir) == 2);

  // A plugin whose every answer is refused: one run more per call, then the 401 stands.
  TempDir dir2;
  auto refused =
      kc::Client::Create(WithPlugin(*sim, AnsweringPlugin(dir2, {Answer({{"token", "wrong"}})})));
  REQUIRE_OK(refused);
  CHECK((*refused)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kUnauthenticated);
}

TEST_CASE("exec plugin: a client certificate from the plugin", "[e2e][client][exec]") {
  TempDir dir;
  auto sim = Sim({});
  auto with_cert = kc::LoadKubeconfig(sim->client_cert_kubeconfig());
  REQUIRE_OK(with_cert);
  const std::string plugin =
      AnsweringPlugin(dir, {Answer({{"clientCertificateData", with_cert->client_cert_pem},
                                    {"clientKeyData", with_cert->client_key_pem}})});
  auto client = kc::Client::Create(WithPlugin(*sim, plugin));
  REQUIRE_OK(client);
  CHECK((*client)->Get(kc::Nodes(), "", "n1").status().code() == StatusCode::kNotFound);
  CHECK(Runs(dir) == 1);

  // A plugin that fails: the client is not made, and the error names the kubeconfig field.
  const std::string failing = dir.Write("failing", "#!/bin/sh\nexit 7\n");
  REQUIRE(::chmod(failing.c_str(), 0700) == 0);
  auto none = kc::Client::Create(WithPlugin(*sim, failing));
  CHECK(none.status().message() == "users[\"sim\"].user.exec: run " + failing + ": exit status 7");
}

}  // namespace
}  // namespace xpu::e2e
