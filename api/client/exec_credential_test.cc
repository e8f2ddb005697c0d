// The exec credential protocol: what the plugin is told (KUBERNETES_EXEC_INFO), how its answer is
// read, and when it runs again, with shell-script plugins and a fake clock.
#include "api/client/exec_credential.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "base/testing/temp_dir.h"

namespace xpu::api::client {
namespace {

using nlohmann::json;
using xpu::testing::TempDir;

ExecConfig V1(const std::string& command) {
  ExecConfig e;
  e.where = "users[\"u\"].user.exec";
  e.api_version = std::string(kExecApiV1);
  e.command = command;
  e.interactive_mode = "Never";
  return e;
}

std::string Credential(const json& status, const std::string& api = std::string(kExecApiV1)) {
  return json{{"apiVersion", api}, {"kind", "ExecCredential"}, {"status", status}}.dump();
}

// An executable shell script in `dir`.
std::string Script(const TempDir& dir, const std::string& name, const std::string& body) {
  std::string path = dir.Write(name, "#!/bin/sh\n" + body);
  REQUIRE(::chmod(path.c_str(), 0700) == 0);
  return path;
}

TEST_CASE("exec credential: a token with its expiry, or a certificate and key") {
  const ExecConfig e = V1("p");
  auto token = ParseExecCredential(
      Credential({{"token", "t0k"}, {"expirationTimestamp", "2026-01-01T00:10:00Z"}}), e);
  REQUIRE_OK(token);
  CHECK(token->token == "t0k");
  CHECK(token->client_cert_pem.empty());
  REQUIRE(token->expires);
  CHECK(std::chrono::system_clock::to_time_t(*token->expires) == 1'767'226'200);
  auto cert = ParseExecCredential(
      Credential({{"clientCertificateData", "CERT"}, {"clientKeyData", "KEY"}}), e);
  REQUIRE_OK(cert);
  CHECK(cert->token.empty());
  CHECK(cert->client_cert_pem == "CERT");
  CHECK(cert->client_key_pem == "KEY");
  CHECK_FALSE(cert->expires);
}

TEST_CASE("exec credential: a bad answer names the field, never the secret") {
  const ExecConfig e = V1("p");
  const std::string where = "users[\"u\"].user.exec: the plugin's output: ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"token: secret-1", "not a JSON object"},
      {Credential({{"token", "secret-2"}}, std::string(kExecApiV1beta1)),
       "apiVersion \"client.authentication.k8s.io/v1beta1\", configured "
       "\"client.authentication.k8s.io/v1\""},
      {json{{"apiVersion", kExecApiV1}, {"kind", "Secret"}, {"status", {{"token", "secret-3"}}}}
           .dump(),
       "kind is not ExecCredential"},
      {json{{"apiVersion", kExecApiV1}, {"kind", "ExecCredential"}}.dump(), "no status"},
      {Credential(json::object()), "status has neither a token nor a certificate and key"},
      {Credential({{"clientCertificateData", "secret-4"}}),
       "status has a certificate or a key, not both"},
      {Credential({{"token", 42}}), "status.token: not a string"},
      {Credential({{"token", "secret-5"}, {"expirationTimestamp", "tomorrow"}}),
       "status.expirationTimestamp"},
  };
  for (const auto& [output, want] : cases) {
    INFO(output);
    auto got = ParseExecCredential(output, e);
    CHECK(got.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(got.status().message(), Catch::Matchers::StartsWith(where + want));
    CHECK(got.status().message().find("secret") == std::string::npos);
  }
}

TEST_CASE("exec credential: KUBERNETES_EXEC_INFO, with the cluster only when asked") {
  ExecConfig e = V1("p");
  const ExecClusterInfo cluster{.server = "https://10.0.0.1:6443",
                                .ca_pem = "CA PEM",
                                .insecure_skip_tls_verify = false,
                                .tls_server_name = "api.internal"};
  CHECK(ExecInfo(e, cluster, false) == json::parse(R"({"apiVersion":
      "client.authentication.k8s.io/v1", "kind": "ExecCredential",
      "spec": {"interactive": false}})"));
  e.provide_cluster_info = true;
  CHECK(ExecInfo(e, cluster, true)["spec"] == json::parse(R"({"interactive": true, "cluster": {
      "server": "https://10.0.0.1:6443", "tls-server-name": "api.internal",
      "certificate-authority-data": "Q0EgUEVN"}})"));
}

TEST_CASE("exec credential: the plugin runs with its args and env, once until the expiry") {
  if (::isatty(STDIN_FILENO) == 1) XPU_SKIP("stdin is a terminal: the plugin would be interactive");
  TempDir dir;
  // Each run appends a line to runs; the answer expires 10 minutes after the fake clock's start.
  const std::string plugin = Script(dir, "plugin", R"(
echo run >> "$(dirname "$0")/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$(dirname "$0")/info"
printf '%s|' "$@" > "$(dirname "$0")/args"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
  "status":{"token":"tok-%s","expirationTimestamp":"2026-01-01T00:10:00Z"}}' \
  "$(wc -l < "$(dirname "$0")/runs" | tr -d ' ')-$PROFILE"
)");
  ExecConfig e = V1(plugin);
  e.args = {"get-token", "--cluster", "a b"};
  e.env = {{"PROFILE", "ml"}};
  e.provide_cluster_info = true;
  FakeClock clock;  // 2026-01-01T00:00:00Z
  ExecCredentialSource source(e, {.server = "https://x"}, clock);
  auto first = source.Get();
  REQUIRE_OK(first);
  CHECK(first->token == "tok-1-ml");
  CHECK(source.runs() == 1);
  CHECK(xpu::testing::ReadText(dir.Path("args")) == "get-token|--cluster|a b|");
  CHECK(json::parse(xpu::testing::ReadText(dir.Path("info"))) ==
        json::parse(R"({"apiVersion": "client.authentication.k8s.io/v1", "kind":
            "ExecCredential", "spec": {"interactive": false, "cluster": {"server":
            "https://x"}}})"));

  clock.Advance(std::chrono::minutes(9));
  CHECK(source.Get()->token == "tok-1-ml");  // held
  source.Invalidate("another token");        // not the one held: kept
  CHECK(source.Get()->token == "tok-1-ml");
  CHECK(source.runs() == 1);
  clock.Advance(std::chrono::minutes(1));  // expired
  CHECK(source.Get()->token == "tok-2-ml");
  source.Invalidate("tok-2-ml");  // the server refused it
  CHECK(source.Get()->token == "tok-3-ml");
  CHECK(source.runs() == 3);
}

TEST_CASE("exec credential: a plugin that is missing or fails says so, with the hint") {
  if (::isatty(STDIN_FILENO) == 1) XPU_SKIP("stdin is a terminal: the plugin would be interactive");
  TempDir dir;
  ExecConfig missing = V1("xpu-no-such-plugin");
  missing.install_hint = "install it with your package manager";
  auto none = ExecCredentialSource(missing, {}).Get();
  CHECK(none.status().code() == StatusCode::kFailedPrecondition);
  CHECK(none.status().message() ==
        "users[\"u\"].user.exec: the plugin \"xpu-no-such-plugin\" is not on PATH; install it "
        "with your package manager");

  const std::string failing = Script(dir, "failing", "echo 'session expired' >&2; exit 2\n");
  auto failed = ExecCredentialSource(V1(failing), {}).Get();
  CHECK(failed.status().code() == StatusCode::kUnavailable);
  CHECK(failed.status().message() == "users[\"u\"].user.exec: run " + failing + ": exit status 2");

  const std::string garbage = Script(dir, "garbage", "echo 'token: secret'\n");
  auto bad = ExecCredentialSource(V1(garbage), {}).Get();
  CHECK(bad.status().message() == "users[\"u\"].user.exec: the plugin's output: not a JSON object");

  ExecConfig always = V1(garbage);
  always.interactive_mode = "Always";
  CHECK(ExecCredentialSource(always, {}).Get().status().message() ==
        "users[\"u\"].user.exec: interactiveMode Always, but stdin is not a terminal");
}

}  // namespace
}  // namespace xpu::api::client
