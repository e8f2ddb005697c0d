#include "api/client/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/text.h"

namespace xpu::api::client {
namespace {

StatusOr<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("read " + what + " " + path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return DataLossError("read " + what + " " + path + ": read error");
  return text.str();
}

StatusOr<std::string> Base64Decode(const std::string& in, const std::string& field) {
  std::optional<std::string> out = xpu::Base64Decode(in);
  if (!out) return InvalidArgumentError(field + ": not valid base64");
  return std::move(out).value();
}

// One named entry of a kubeconfig list (clusters, users, contexts).
StatusOr<YAML::Node> FindNamed(const YAML::Node& root, const std::string& list,
                               const std::string& key, const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && !entries.IsSequence()) return InvalidArgumentError(list + ": expected a list");
  if (entries) {
    for (size_t i = 0; i < entries.size(); ++i) {
      const YAML::Node entry = entries[i];
      if (entry["name"] && entry["name"].as<std::string>() == name) {
        YAML::Node body = entry[key];
        if (!body || !body.IsMap()) {
          std::string field = list;
          field += "[" + std::to_string(i) + "]." + key;
          return InvalidArgumentError(field + ": expected a map");
        }
        return body;
      }
    }
  }
  return NotFoundError(list + ": no entry named \"" + name + "\"");
}

std::string Str(const YAML::Node& node, const char* key) {
  const YAML::Node v = node[key];
  return v && v.IsScalar() ? v.as<std::string>() : std::string();
}

// A PEM given inline as base64 (`<field>-data`) or as a file path (`<field>`).
StatusOr<std::string> DataOrFile(const YAML::Node& node, const std::string& prefix,
                                 const std::string& field, const std::filesystem::path& dir) {
  if (const std::string data = Str(node, (field + "-data").c_str()); !data.empty()) {
    return Base64Decode(data, prefix + "." + field + "-data");
  }
  if (std::string file = Str(node, field.c_str()); !file.empty()) {
    std::filesystem::path p(file);
    if (p.is_relative()) p = dir / p;
    auto text = ReadFile(p.string(), prefix + "." + field);
    if (!text.ok()) return text.status();
    return std::move(text).value();
  }
  return std::string();
}

// users[].user.exec: the plugin's command, arguments, environment and modes.
StatusOr<ExecConfig> ParseExec(const YAML::Node& node, const std::string& where,
                               const std::filesystem::path& dir) {
  if (!node.IsMap()) return InvalidArgumentError(where + ": expected a map");
  ExecConfig exec;
  exec.where = where;
  exec.api_version = Str(node, "apiVersion");
  if (exec.api_version != kExecApiV1 && exec.api_version != kExecApiV1beta1) {
    return InvalidArgumentError(where + ".apiVersion: \"" + exec.api_version + "\" is not " +
                                std::string(kExecApiV1) + " or " + std::string(kExecApiV1beta1));
  }
  exec.command = Str(node, "command");
  if (exec.command.empty()) return InvalidArgumentError(where + ".command: required");
  // A command with a folder in it is a path, relative to the kubeconfig; a bare name is looked up
  // on PATH when it runs (as kubectl does).
  if (std::filesystem::path p(exec.command);
      exec.command.find('/') != std::string::npos && p.is_relative()) {
    exec.command = (dir / p).string();
  }
  if (const YAML::Node args = node["args"]; args) {
    if (!args.IsSequence()) return InvalidArgumentError(where + ".args: expected a list");
    for (const YAML::Node& a : args) exec.args.push_back(a.as<std::string>());
  }
  if (const YAML::Node env = node["env"]; env) {
    if (!env.IsSequence()) return InvalidArgumentError(where + ".env: expected a list");
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string name = env[i].IsMap() ? Str(env[i], "name") : "";
      if (name.empty() || name.find('=') != std::string::npos) {
        return InvalidArgumentError(where + ".env[" + std::to_string(i) +
                                    "].name: required, without '='");
      }
      exec.env.emplace_back(name, Str(env[i], "value"));
    }
  }
  exec.install_hint = Str(node, "installHint");
  exec.provide_cluster_info = Str(node, "provideClusterInfo") == "true";
  const std::string mode = Str(node, "interactiveMode");
  if (mode.empty() && exec.api_version == kExecApiV1) {
    return InvalidArgumentError(where + ".interactiveMode: required in " + std::string(kExecApiV1));
  }
  if (!mode.empty()) exec.interactive_mode = mode;
  if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable" &&
      exec.interactive_mode != "Always") {
    return InvalidArgumentError(where + ".interactiveMode: \"" + exec.interactive_mode +
                                "\" is not Never, IfAvailable or Always");
  }
  return exec;
}

StatusOr<ClusterConfig> ParseKubeconfig(const YAML::Node& root, const std::string& context_flag,
                                        const std::filesystem::path& dir) {
  if (!root.IsMap()) return InvalidArgumentError("expected a kubeconfig map");
  std::string context_name = context_flag;
  if (context_name.empty()) context_name = Str(root, "current-context");
  if (context_name.empty()) {
    return InvalidArgumentError("current-context: not set and no context given");
  }
  auto context = FindNamed(root, "contexts", "context", context_name);
  if (!context.ok()) return context.status().WithContext("context \"" + context_name + "\"");
  const std::string cluster_name = Str(*context, "cluster");
  const std::string user_name = Str(*context, "user");
  if (cluster_name.empty()) {
    return InvalidArgumentError("contexts[\"" + context_name + "\"].context.cluster: required");
  }
  auto cluster = FindNamed(root, "clusters", "cluster", cluster_name);
  if (!cluster.ok()) return cluster.status();
  ClusterConfig config;
  const std::string cprefix = "clusters[\"" + cluster_name + "\"].cluster";
  config.server = Str(*cluster, "server");
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return InvalidArgumentError(cprefix + ".server: \"" + config.server +
                                "\" is not an https:// or http:// URL");
  }
  while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
  ASSIGN_OR_RETURN(config.ca_pem, DataOrFile(*cluster, cprefix, "certificate-authority", dir));
  config.insecure_skip_tls_verify = Str(*cluster, "insecure-skip-tls-verify") == "true";
  config.tls_server_name = Str(*cluster, "tls-server-name");
  config.proxy_url = Str(*cluster, "proxy-url");
  if (!user_name.empty()) {
    auto user = FindNamed(root, "users", "user", user_name);
    if (!user.ok()) return user.status();
    const std::string uprefix = "users[\"" + user_name + "\"].user";
    config.token = Str(*user, "token");
    if (std::string file = Str(*user, "tokenFile"); !file.empty()) {
      std::filesystem::path p(file);
      config.token_file = (p.is_relative() ? dir / p : p).string();
    }
    ASSIGN_OR_RETURN(config.client_cert_pem, DataOrFile(*user, uprefix, "client-certificate", dir));
    ASSIGN_OR_RETURN(config.client_key_pem, DataOrFile(*user, uprefix, "client-key", dir));
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return InvalidArgumentError(uprefix + ": client-certificate and client-key go together");
    }
    if ((*user)["auth-provider"]) {
      return InvalidArgumentError(uprefix +
                                  ".auth-provider: not supported (kubectl dropped it too); use an "
                                  "exec plugin");
    }
    if (const YAML::Node exec = (*user)["exec"]; exec) {
      ASSIGN_OR_RETURN(config.exec, ParseExec(exec, uprefix + ".exec", dir));
    }
  }
  if (std::string ns = Str(*context, "namespace"); !ns.empty()) config.ns = ns;
  return config;
}

}  // namespace

std::string ClusterConfig::Describe() const {
  std::string auth;
  if (!token_file.empty()) {
    auth = "token file " + token_file;
  } else if (!token.empty()) {
    auth = "bearer token";
  }
  if (!client_cert_pem.empty()) {
    auth += std::string(auth.empty() ? "" : ", ") + "client certificate";
  }
  if (exec) auth += std::string(auth.empty() ? "" : ", ") + "exec plugin " + exec->command;
  if (auth.empty()) auth = "anonymous";
  return server + " (" + auth + (insecure_skip_tls_verify ? ", TLS NOT VERIFIED" : "") + ")";
}

StatusOr<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path, "kubeconfig");
  if (!text.ok()) return text.status();
  try {
    const YAML::Node root = YAML::Load(*text);
    auto config = ParseKubeconfig(root, context, std::filesystem::path(path).parent_path());
    if (!config.ok()) return config.status().WithContext("load kubeconfig " + path);
    return config;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError("load kubeconfig " + path + ": " + e.what());
  }
}

StatusOr<ClusterConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  ClusterConfig config;
  const std::string h = host;
  // An IPv6 service address needs brackets in a URL.
  config.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  config.token_file = sa_dir + "/token";
  auto token = ReadFile(config.token_file, "service account token");
  if (!token.ok()) return token.status().WithContext("in-cluster config");
  auto ca = ReadFile(sa_dir + "/ca.crt", "service account CA");
  if (!ca.ok()) return ca.status().WithContext("in-cluster config");
  config.ca_pem = std::move(ca).value();
  if (auto ns = ReadFile(sa_dir + "/namespace", "service account namespace"); ns.ok()) {
    std::string n = std::move(ns).value();
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    if (!n.empty()) config.ns = n;
  }
  return config;
}

StatusOr<ClusterConfig> ResolveClusterConfig(const std::string& kubeconfig_flag,
                                             const std::string& context) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag, context);
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0') {
    return InClusterConfig();
  }
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first = env;
    first = first.substr(0, first.find(':'));
    return LoadKubeconfig(first, context);
  }
  return FailedPreconditionError(
      "find the API server: no --kubeconfig, not in a cluster (KUBERNETES_SERVICE_HOST unset) "
      "and KUBECONFIG unset");
}

StatusOr<ClusterConfig> ResolveUserClusterConfig(const std::string& kubeconfig_flag,
                                                 const std::string& context) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag, context);
  std::error_code ec;
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string_view files = env;
    while (!files.empty()) {
      const size_t colon = files.find(':');
      const std::string file(files.substr(0, colon));
      if (!file.empty() && std::filesystem::exists(file, ec)) return LoadKubeconfig(file, context);
      files = colon == std::string_view::npos ? "" : files.substr(colon + 1);
    }
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    const std::string file = std::string(home) + "/.kube/config";
    if (std::filesystem::exists(file, ec)) return LoadKubeconfig(file, context);
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host != nullptr && *host != '\0') {
    return InClusterConfig();
  }
  return FailedPreconditionError(
      "find the cluster: no --kubeconfig, no file of $KUBECONFIG exists, no ~/.kube/config, and "
      "not in a cluster (KUBERNETES_SERVICE_HOST unset)");
}

TokenSource::TokenSource(ClusterConfig config, std::chrono::seconds refresh)
    : config_(std::move(config)), refresh_(refresh) {
  // A token or certificate of the kubeconfig's own wins over the plugin, which then never runs
  // (as in kubectl).
  if (config_.exec && config_.token.empty() && config_.token_file.empty() &&
      config_.client_cert_pem.empty()) {
    exec_ = std::make_unique<ExecCredentialSource>(
        *config_.exec, ExecClusterInfo{.server = config_.server,
                                       .ca_pem = config_.ca_pem,
                                       .insecure_skip_tls_verify = config_.insecure_skip_tls_verify,
                                       .tls_server_name = config_.tls_server_name});
  }
}

StatusOr<ExecCredential> TokenSource::ExecCredentials() {
  if (exec_ == nullptr) return FailedPreconditionError("no exec credential plugin");
  return exec_->Get();
}

bool TokenSource::Refuse(const std::string& token) {
  if (exec_ == nullptr) return false;
  exec_->Invalidate(token);
  return true;
}

StatusOr<std::string> TokenSource::Token() {
  if (exec_ != nullptr) {
    ASSIGN_OR_RETURN(ExecCredential cred, exec_->Get());
    return cred.token;
  }
  if (config_.token_file.empty()) return config_.token;
  MutexLock lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (cached_.empty() || now - read_at_ >= refresh_) {
    auto text = ReadFile(config_.token_file, "token file");
    if (!text.ok()) {
      // Keep using the last good token while the file is being rotated.
      if (!cached_.empty()) return cached_;
      return text.status();
    }
    std::string t = std::move(text).value();
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    cached_ = std::move(t);
    read_at_ = now;
  }
  return cached_;
}

}  // namespace xpu::api::client
