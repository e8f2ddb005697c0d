#include "api/client/kubeconfig.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"

namespace xpu::api::client {
namespace {

namespace fs = std::filesystem;

using xpu::testing::TempDir;

// "-----BEGIN CERTIFICATE-----\nCA\n" in base64.
constexpr const char* kCaB64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==";

const char* kTwoContexts = R"(apiVersion: v1
kind: Config
current-context: sim
clusters:
- name: sim
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==
- name: prod
  cluster:
    server: https://prod.example:443
    certificate-authority: ca.crt
contexts:
- name: sim
  context: {cluster: sim, user: tok, namespace: xpu-dra}
- name: prod
  context: {cluster: prod, user: cert}
users:
- name: tok
  user: {token: s3cret}
- name: cert
  user:
    client-certificate: certs/client.crt
    client-key: certs/client.key
)";

TEST_CASE("LoadKubeconfig follows current-context with inline data", "[kubeconfig]") {
  TempDir dir;
  const auto config = LoadKubeconfig(dir.Write("kubeconfig", kTwoContexts));
  REQUIRE_OK(config);
  CHECK(config->server == "https://127.0.0.1:6443");  // trailing slash dropped
  CHECK(config->ca_pem == "-----BEGIN CERTIFICATE-----\nCA\n");
  CHECK(config->token == "s3cret");
  CHECK(config->ns == "xpu-dra");
  CHECK(config->client_cert_pem.empty());
  // Describe never shows the token.
  CHECK(config->Describe() == "https://127.0.0.1:6443 (bearer token)");
  CHECK(config->Describe().find("s3cret") == std::string::npos);
  (void)kCaB64;
}

TEST_CASE("LoadKubeconfig picks a named context and resolves relative files", "[kubeconfig]") {
  TempDir dir;
  dir.Write("ca.crt", "PROD CA");
  fs::create_directories(dir.path() + "/certs");
  dir.Write("certs/client.crt", "CERT");
  dir.Write("certs/client.key", "KEY");
  const auto config = LoadKubeconfig(dir.Write("kubeconfig", kTwoContexts), "prod");
  REQUIRE_OK(config);
  CHECK(config->server == "https://prod.example:443");
  CHECK(config->ca_pem == "PROD CA");
  CHECK(config->client_cert_pem == "CERT");
  CHECK(config->client_key_pem == "KEY");
  CHECK(config->token.empty());
  CHECK(config->ns == "default");
  CHECK(config->Describe() == "https://prod.example:443 (client certificate)");
}

// A kubeconfig whose one context uses cluster c and user u, whose `user` map is `user`.
std::string OneUser(const std::string& user) {
  return R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
users: [{name: u, user: )" +
         user + "}]\n";
}

TEST_CASE("LoadKubeconfig errors name the file and the field", "[kubeconfig]") {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig", kTwoContexts);
  const auto missing_context = LoadKubeconfig(path, "nope");
  CHECK(missing_context.status().code() == StatusCode::kNotFound);
  CHECK(missing_context.status().message() ==
        "load kubeconfig " + path + ": context \"nope\": contexts: no entry named \"nope\"");
  // prod's CA file is not there.
  const auto no_ca = LoadKubeconfig(path, "prod");
  CHECK(no_ca.status().message().find("clusters[\"prod\"].cluster.certificate-authority") !=
        std::string::npos);

  const std::string beta = "apiVersion: client.authentication.k8s.io/v1beta1, command: x";
  // Each file is read on its own and must fail naming the problem.
  const std::vector<std::pair<std::string, std::string>> bad_files = {
      {R"(current-context: a
clusters: [{name: c, cluster: {server: "10.0.0.1:6443"}}]
contexts: [{name: a, context: {cluster: c}}]
)",
       "clusters[\"c\"].cluster.server: \"10.0.0.1:6443\" is not an https:// or http:// URL"},
      {R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x", certificate-authority-data: "!!!"}}]
contexts: [{name: a, context: {cluster: c}}]
)",
       "certificate-authority-data: not valid base64"},
      {R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
users: [{name: u, user: {client-certificate-data: Q0VSVA==}}]
)",
       "client-certificate and client-key go together"},
      {OneUser(R"({auth-provider: {name: gcp}})"),
       "users[\"u\"].user.auth-provider: not supported"},
      {OneUser(R"({exec: {command: aws}})"),
       "users[\"u\"].user.exec.apiVersion: \"\" is not client.authentication.k8s.io/v1 or "
       "client.authentication.k8s.io/v1beta1"},
      {OneUser(R"({exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}})"),
       "users[\"u\"].user.exec.interactiveMode: required in client.authentication.k8s.io/v1"},
      {OneUser(R"({exec: {apiVersion: client.authentication.k8s.io/v1beta1}})"),
       "users[\"u\"].user.exec.command: required"},
      {OneUser("{exec: {" + beta + ", interactiveMode: Sometimes}}"),
       "users[\"u\"].user.exec.interactiveMode: \"Sometimes\" is not Never, IfAvailable or "
       "Always"},
      {OneUser("{exec: {" + beta + ", env: [{value: v}]}}"),
       "users[\"u\"].user.exec.env[0].name: required, without '='"},
  };
  for (size_t i = 0; i < bad_files.size(); ++i) {
    const auto config = LoadKubeconfig(dir.Write("bad-" + std::to_string(i), bad_files[i].first));
    CHECK_THAT(config.status().message(), Catch::Matchers::Contains(bad_files[i].second));
  }

  CHECK(LoadKubeconfig(dir.Write("k6", "[not, a, map")).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(LoadKubeconfig(dir.path() + "/absent").status().code() == StatusCode::kNotFound);
}

TEST_CASE("LoadKubeconfig reads an exec credential plugin", "[kubeconfig]") {
  TempDir dir;
  const std::string eks = R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [--region, eu-west-1, eks, get-token, --cluster-name, prod]
      env: [{name: AWS_PROFILE, value: ml}, {name: EMPTY}]
      installHint: install the AWS CLI
      provideClusterInfo: true
      interactiveMode: Never
)";
  auto config = LoadKubeconfig(dir.Write("eks", eks));
  REQUIRE_OK(config);
  REQUIRE(config->exec);
  const ExecConfig& e = *config->exec;
  CHECK(e.where == "users[\"u\"].user.exec");
  CHECK(e.api_version == "client.authentication.k8s.io/v1");
  CHECK(e.command == "aws");  // a bare name: looked up on PATH when it runs
  CHECK(e.args == std::vector<std::string>{"--region", "eu-west-1", "eks", "get-token",
                                           "--cluster-name", "prod"});
  CHECK(e.env ==
        std::vector<std::pair<std::string, std::string>>{{"AWS_PROFILE", "ml"}, {"EMPTY", ""}});
  CHECK(e.install_hint == "install the AWS CLI");
  CHECK(e.provide_cluster_info);
  CHECK(e.interactive_mode == "Never");
  CHECK(config->Describe() == "https://x (exec plugin aws)");
  CHECK(TokenSource(*config).has_exec());

  // A command with a folder is relative to the kubeconfig's; v1beta1 defaults to IfAvailable.
  config = LoadKubeconfig(dir.Write("relative", R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1,
  command: bin/get-token}}}]
)"));
  REQUIRE_OK(config);
  CHECK(config->exec->command == dir.path() + "/bin/get-token");
  CHECK(config->exec->interactive_mode == "IfAvailable");
  CHECK_FALSE(config->exec->provide_cluster_info);

  // A token of the kubeconfig's own wins: the plugin never runs.
  config = LoadKubeconfig(dir.Write("both", R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t, exec: {apiVersion: client.authentication.k8s.io/v1beta1,
  command: /nonexistent}}}]
)"));
  REQUIRE_OK(config);
  TokenSource both(*config);
  CHECK_FALSE(both.has_exec());
  CHECK(*both.Token() == "t");
}

TEST_CASE("InClusterConfig reads the service account and the service environment", "[kubeconfig]") {
  TempDir dir;
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", "CLUSTER CA");
  dir.Write("namespace", "xpu-dra\n");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  CHECK(InClusterConfig(dir.path()).status().code() == StatusCode::kFailedPrecondition);
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  const auto config = InClusterConfig(dir.path());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  REQUIRE_OK(config);
  CHECK(config->server == "https://[fd00::1]:443");
  CHECK(config->ca_pem == "CLUSTER CA");
  CHECK(config->ns == "xpu-dra");
  CHECK(config->token_file == dir.path() + "/token");
  TokenSource tokens(*config);
  CHECK(*tokens.Token() == "sa-token");
}

TEST_CASE("TokenSource re-reads a rotated token file and survives a missing one", "[kubeconfig]") {
  TempDir dir;
  ClusterConfig config;
  config.token_file = dir.Write("token", "one");
  TokenSource tokens(config, std::chrono::seconds(0));
  CHECK(*tokens.Token() == "one");
  dir.Write("token", "two\n");
  CHECK(*tokens.Token() == "two");
  fs::remove(config.token_file);
  CHECK(*tokens.Token() == "two");  // the last good token while the file is replaced

  ClusterConfig never;
  never.token_file = dir.path() + "/never";
  TokenSource missing(never);
  CHECK(missing.Token().status().code() == StatusCode::kNotFound);
}

TEST_CASE("ResolveClusterConfig: flag, then in-cluster, then KUBECONFIG", "[kubeconfig]") {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig", kTwoContexts);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBECONFIG");
  CHECK(ResolveClusterConfig("").status().code() == StatusCode::kFailedPrecondition);
  CHECK(ResolveClusterConfig(path)->server == "https://127.0.0.1:6443");
  ::setenv("KUBECONFIG", (path + ":/elsewhere").c_str(), 1);
  CHECK(ResolveClusterConfig("")->server == "https://127.0.0.1:6443");
  ::unsetenv("KUBECONFIG");
}

TEST_CASE("ResolveUserClusterConfig: flag, KUBECONFIG, ~/.kube/config, then in-cluster",
          "[kubeconfig]") {
  TempDir dir;
  const std::string path = dir.Write("kubeconfig", kTwoContexts);
  fs::create_directories(dir.Path("home/.kube"));
  dir.Write("ca.crt", "PROD CA");
  fs::create_directories(dir.Path("certs"));
  dir.Write("certs/client.crt", "CERT");
  dir.Write("certs/client.key", "KEY");
  const std::string home_config = dir.Write("home/.kube/config", kTwoContexts);
  const char* saved_home = std::getenv("HOME");
  const std::string home = saved_home != nullptr ? saved_home : "";
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBECONFIG");
  ::setenv("HOME", dir.Path("nowhere").c_str(), 1);
  const auto none = ResolveUserClusterConfig("");
  CHECK(none.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(none.status().message(), Catch::Matchers::StartsWith("find the cluster: no "));

  ::setenv("HOME", dir.Path("home").c_str(), 1);
  CHECK(ResolveUserClusterConfig("")->server == "https://127.0.0.1:6443");  // ~/.kube/config
  // $KUBECONFIG's first file that exists, before ~/.kube/config; --context picks the context.
  ::setenv("KUBECONFIG", (dir.Path("missing") + ":" + path).c_str(), 1);
  auto prod = ResolveUserClusterConfig("", "prod");
  REQUIRE_OK(prod);
  CHECK(prod->server == "https://prod.example:443");
  CHECK(ResolveUserClusterConfig(path, "nope").status().code() == StatusCode::kNotFound);
  ::unsetenv("KUBECONFIG");
  ::setenv("HOME", home.c_str(), 1);
  (void)home_config;
}

}  // namespace
}  // namespace xpu::api::client
