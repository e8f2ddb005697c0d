// Where the API server is and how to authenticate to it: a kubeconfig file (with contexts) or the
// in-cluster service account, resolved into one ClusterConfig that the HTTP transport uses.
//
// Secrets (tokens, keys) are held in memory only as long as the config lives and never appear in
// messages or logs; ClusterConfig::Describe() prints the server and the kind of credentials.
#ifndef XPU_API_CLIENT_KUBECONFIG_H_
#define XPU_API_CLIENT_KUBECONFIG_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "api/client/exec_credential.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::api::client {

struct ClusterConfig {
  std::string server;  // "https://host:port" (or http:// when the server URL says so)
  // Trust: PEM of the cluster CA; empty = the system trust store. insecure_skip_tls_verify is
  // only ever set by a kubeconfig that asks for it.
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // SNI / name to verify, when it differs from the URL's host
  std::string proxy_url;        // the cluster's proxy-url (proxy.h); else the environment's
  // Credentials: a bearer token (inline or re-read from token_file, which rotates for bound
  // service-account tokens) and/or a client certificate and key (PEM).
  std::string token;
  std::string token_file;
  std::string client_cert_pem;
  std::string client_key_pem;
  // A credential plugin (exec_credential.h), run for the token or certificate when one is needed.
  std::optional<ExecConfig> exec;
  std::string ns = "default";  // the context's (or service account's) namespace
  std::string user_agent = "xpu-dra";

  // "https://10.0.0.1:6443 (token file /var/run/...)": no secret material.
  std::string Describe() const;
};

// Reads a kubeconfig. `context` empty = current-context. Relative file paths in it resolve
// against the kubeconfig's directory; *-data fields are base64. Errors name the file and field.
StatusOr<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// The in-cluster service account: KUBERNETES_SERVICE_HOST/PORT from the environment, the token,
// CA and namespace under `sa_dir` (default /var/run/secrets/kubernetes.io/serviceaccount).
StatusOr<ClusterConfig> InClusterConfig(
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// What a binary's --kubeconfig flag means: the file when given; else the in-cluster service
// account when KUBERNETES_SERVICE_HOST is set; else $KUBECONFIG; else an error saying so.
StatusOr<ClusterConfig> ResolveClusterConfig(const std::string& kubeconfig_flag,
                                             const std::string& context = "");

// What a command-line tool's --kubeconfig and --context mean, as kubectl reads them: the file
// when given; else the first file of $KUBECONFIG that exists; else ~/.kube/config when it exists;
// else the in-cluster service account when KUBERNETES_SERVICE_HOST is set; else an error saying
// which were tried. `context` empty = the file's current-context.
StatusOr<ClusterConfig> ResolveUserClusterConfig(const std::string& kubeconfig_flag,
                                                 const std::string& context = "");

// The bearer token to send now: `token`, token_file re-read at most every `refresh`, or the exec
// plugin's (run again once its credential expires). Thread-safe.
class TokenSource {
 public:
  explicit TokenSource(ClusterConfig config,
                       std::chrono::seconds refresh = std::chrono::seconds(60));
  StatusOr<std::string> Token();
  // Whether the credentials come from an exec plugin (configured, and no token or certificate of
  // the kubeconfig's own).
  bool has_exec() const { return exec_ != nullptr; }
  // The exec plugin's whole credential (its certificate too); an error without a plugin.
  StatusOr<ExecCredential> ExecCredentials();
  // The server refused `token` (401): true when a plugin may give another, so the request is worth
  // sending again.
  bool Refuse(const std::string& token);

 private:
  ClusterConfig config_;
  std::unique_ptr<ExecCredentialSource> exec_;  // null without a plugin
  std::chrono::seconds refresh_;
  Mutex mu_;
  std::chrono::steady_clock::time_point read_at_ GUARDED_BY(mu_){};
  std::string cached_ GUARDED_BY(mu_);
};

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_KUBECONFIG_H_
