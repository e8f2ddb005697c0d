#include "api/client/exec_credential.h"

#include <unistd.h>

#include "base/subprocess.h"
#include "base/text.h"
#include "base/time.h"

namespace xpu::api::client {
namespace {

// How long a plugin may run: one that talks to the user (a browser login) gets longer.
constexpr std::chrono::seconds kRunLimit{60};
constexpr std::chrono::minutes kInteractiveRunLimit{10};

// A string member of `status`; a member of another type is an error.
StatusOr<std::string> StatusString(const nlohmann::json& status, const char* key,
                                   const std::string& where) {
  auto it = status.find(key);
  if (it == status.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgumentError(where + ": status." + key + ": not a string");
  return it->get<std::string>();
}

// Whether this run may talk to the user; an error for Always without a terminal.
StatusOr<bool> Interactive(const ExecConfig& exec) {
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  if (exec.interactive_mode == "Never") return false;
  if (exec.interactive_mode == "Always" && !terminal) {
    return FailedPreconditionError(exec.where +
                                   ": interactiveMode Always, but stdin is not a terminal");
  }
  return terminal;
}

}  // namespace

nlohmann::json ExecInfo(const ExecConfig& exec, const ExecClusterInfo& cluster, bool interactive) {
  nlohmann::json spec = {{"interactive", interactive}};
  if (exec.provide_cluster_info) {
    nlohmann::json c = {{"server", cluster.server}};
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    if (!cluster.ca_pem.empty()) c["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
    spec["cluster"] = std::move(c);
  }
  return {{"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", std::move(spec)}};
}

StatusOr<ExecCredential> ParseExecCredential(std::string_view output, const ExecConfig& exec) {
  const std::string where = exec.where + ": the plugin's output";
  const nlohmann::json doc = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return InvalidArgumentError(where + ": not a JSON object");
  const std::string api_version = doc.value("apiVersion", "");
  if (api_version != exec.api_version) {
    return InvalidArgumentError(where + ": apiVersion \"" + api_version + "\", configured \"" +
                                exec.api_version + "\"");
  }
  if (doc.value("kind", "") != "ExecCredential") {
    return InvalidArgumentError(where + ": kind is not ExecCredential");
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return InvalidArgumentError(where + ": no status");
  }
  ExecCredential cred;
  ASSIGN_OR_RETURN(cred.token, StatusString(*status, "token", where));
  ASSIGN_OR_RETURN(cred.client_cert_pem, StatusString(*status, "clientCertificateData", where));
  ASSIGN_OR_RETURN(cred.client_key_pem, StatusString(*status, "clientKeyData", where));
  if (cred.token.empty() && cred.client_cert_pem.empty() && cred.client_key_pem.empty()) {
    return InvalidArgumentError(where + ": status has neither a token nor a certificate and key");
  }
  if (cred.client_cert_pem.empty() != cred.client_key_pem.empty()) {
    return InvalidArgumentError(where + ": status has a certificate or a key, not both");
  }
  ASSIGN_OR_RETURN(const std::string expires, StatusString(*status, "expirationTimestamp", where));
  if (!expires.empty()) {
    StatusOr<std::chrono::system_clock::time_point> t = ParseTime(expires);
    if (!t.ok()) return t.status().WithContext(where + ": status.expirationTimestamp");
    cred.expires = *t;
  }
  return cred;
}

ExecCredentialSource::ExecCredentialSource(ExecConfig exec, ExecClusterInfo cluster,
                                           const Clock& clock)
    : exec_(std::move(exec)), cluster_(std::move(cluster)), clock_(clock) {}

StatusOr<ExecCredential> ExecCredentialSource::Get() {
  MutexLock lock(mu_);
  if (held_ && (!held_->expires || clock_.WallNow() < *held_->expires)) return *held_;
  ++runs_;
  ASSIGN_OR_RETURN(ExecCredential cred, Run());
  held_ = cred;
  return cred;
}

void ExecCredentialSource::Invalidate(const std::string& token) {
  MutexLock lock(mu_);
  if (held_ && held_->token == token) held_.reset();
}

int ExecCredentialSource::runs() const {
  MutexLock lock(mu_);
  return runs_;
}

StatusOr<ExecCredential> ExecCredentialSource::Run() const {
  std::string path = exec_.command;
  if (path.find('/') == std::string::npos) {
    std::optional<std::string> found = FindOnPath(path);
    if (!found) {
      return FailedPreconditionError(exec_.where + ": the plugin \"" + path + "\" is not on PATH" +
                                     (exec_.install_hint.empty() ? "" : "; " + exec_.install_hint));
    }
    path = *found;
  }
  ASSIGN_OR_RETURN(const bool interactive, Interactive(exec_));
  SubprocessOptions options;
  options.inherit_stdin = interactive;
  options.inherit_stderr = true;
  for (const auto& [name, value] : exec_.env) options.env.push_back(name + '=' += value);
  options.env.push_back("KUBERNETES_EXEC_INFO=" + ExecInfo(exec_, cluster_, interactive).dump());
  options.timeout = interactive ? kInteractiveRunLimit : kRunLimit;
  std::vector<std::string> argv = {exec_.command};
  argv.insert(argv.end(), exec_.args.begin(), exec_.args.end());
  StatusOr<std::string> output = RunProgram(path, argv, options);
  if (!output.ok()) {
    std::string hint;
    if (::access(path.c_str(), X_OK) != 0 && !exec_.install_hint.empty()) {
      hint = "; " + exec_.install_hint;
    }
    return Status(output.status().code(), exec_.where + ": " + output.status().message() + hint);
  }
  return ParseExecCredential(*output, exec_);
}

}  // namespace xpu::api::client
