// A kubeconfig user's exec credential plugin (`users[].user.exec`, the
// client.authentication.k8s.io ExecCredential protocol): the program a managed cluster's
// kubeconfig names to get a credential (`aws eks get-token`, `gke-gcloud-auth-plugin`,
// `kubelogin`), run the way kubectl runs it.
//
// The plugin is run with its args and env over ours, plus KUBERNETES_EXEC_INFO: an ExecCredential
// whose spec says whether it may talk to the user (`interactive`) and, when the kubeconfig sets
// provideClusterInfo, the cluster (server, CA, TLS settings). Its stderr goes to ours, and it gets
// our stdin when interactive: stdin is a terminal and interactiveMode is not Never (Always without
// a terminal is an error). It prints an ExecCredential of the same apiVersion on stdout; its
// status carries a token and/or a client certificate and key (PEM), and an expirationTimestamp.
// The credential is kept until it expires (none: for the life of the source), or until the API
// server refuses its token (Invalidate), and the plugin is run again then. Docs:
// docs/install.md ("xpuctl: exec credential plugins and proxies").
#ifndef XPU_API_CLIENT_EXEC_CREDENTIAL_H_
#define XPU_API_CLIENT_EXEC_CREDENTIAL_H_

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::api::client {

inline constexpr std::string_view kExecApiV1 = "client.authentication.k8s.io/v1";
inline constexpr std::string_view kExecApiV1beta1 = "client.authentication.k8s.io/v1beta1";

struct ExecConfig {
  std::string where;  // `users["name"].user.exec`, for errors
  std::string api_version;
  // A path (absolute, or made absolute against the kubeconfig's folder when it has a '/'), or a
  // name looked up on $PATH when the plugin is run.
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;
  bool provide_cluster_info = false;
  std::string interactive_mode = "IfAvailable";  // "Never", "IfAvailable" or "Always"
};

// What the plugin may be told of the cluster (spec.cluster, with provideClusterInfo).
struct ExecClusterInfo {
  std::string server = {};
  std::string ca_pem = {};
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name = {};
};

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::optional<std::chrono::system_clock::time_point> expires;  // none: does not expire
};

// The KUBERNETES_EXEC_INFO object for a run of `exec`.
nlohmann::json ExecInfo(const ExecConfig& exec, const ExecClusterInfo& cluster, bool interactive);

// Reads a plugin's stdout: an ExecCredential of `exec.api_version` with a status holding a token,
// or a certificate and key, or both. Errors name `exec.where`; none quotes the output (it holds
// secrets).
StatusOr<ExecCredential> ParseExecCredential(std::string_view output, const ExecConfig& exec);

// Runs the plugin when no credential is held or the held one has expired. Thread-safe: calls that
// need a run wait for one run.
class ExecCredentialSource {
 public:
  ExecCredentialSource(ExecConfig exec, ExecClusterInfo cluster, const Clock& clock = RealClock());

  StatusOr<ExecCredential> Get() EXCLUDES(mu_);
  // The server refused `token`: if it is the one held, the next Get runs the plugin again.
  void Invalidate(const std::string& token) EXCLUDES(mu_);
  // How many times the plugin has been run.
  int runs() const EXCLUDES(mu_);

 private:
  StatusOr<ExecCredential> Run() const;

  const ExecConfig exec_;
  const ExecClusterInfo cluster_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::optional<ExecCredential> held_ GUARDED_BY(mu_);
  int runs_ GUARDED_BY(mu_) = 0;
};

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_EXEC_CREDENTIAL_H_
