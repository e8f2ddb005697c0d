#include "e2e/cluster/cluster.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/time.h"
#include "e2e/client/child_process.h"
#include "e2e/client/wait.h"

namespace xpu::e2e {
namespace {

// Runs a command to completion; its output, or an error naming it with the output's end.
StatusOr<std::string> Run(const std::string& binary, const std::vector<std::string>& args,
                          const std::string& log_path) {
  ASSIGN_OR_RETURN(auto child, ChildProcess::Start(binary, args, log_path));
  const int code = child->Wait();
  std::string out = child->Log();
  if (code != 0) {
    std::string what = binary;
    for (const auto& a : args) what += " " + a;
    const std::string tail = out.size() > 4000 ? out.substr(out.size() - 4000) : out;
    return InternalError(what + ": exit " + std::to_string(code) + ":\n" + tail);
  }
  return out;
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

int MinorOf(const std::string& version) {  // "v1.37.2" -> 37
  const auto dot = version.find('.');
  if (dot == std::string::npos) return 0;
  return std::atoi(version.c_str() + dot + 1);
}

}  // namespace

const char* ClusterKindName(ClusterKind kind) {
  return kind == ClusterKind::kUpstream ? "upstream" : "kube-sim";
}

std::string SourceDir() { return XPU_SOURCE_DIR; }

StatusOr<std::unique_ptr<Cluster>> Cluster::Start(const ClusterOptions& options) {
  std::unique_ptr<Cluster> c(new Cluster());
  c->kind_ = options.kind;
  if (options.kind == ClusterKind::kKubeSim) {
    std::vector<std::string> flags = options.kube_sim_flags;
    if (!options.version.empty()) flags.insert(flags.end(), {"--kube-version", options.version});
    if (!options.feature_gates.empty()) {
      flags.insert(flags.end(), {"--feature-gates", options.feature_gates});
    }
    ASSIGN_OR_RETURN(c->kube_sim_, KubeSimProcess::Start(XPU_KUBE_SIM_BINARY, flags));
    c->dir_ = c->kube_sim_->dir();
    c->kubeconfig_ = c->kube_sim_->kubeconfig();
    ASSIGN_OR_RETURN(auto client, c->NewClient());
    ASSIGN_OR_RETURN(auto version, client->GetPath("/version"));
    c->version_ = version.value("gitVersion", "");
    c->minor_ = MinorOf(c->version_);
    return c;
  }

  std::string templ = (std::filesystem::temp_directory_path() / "xpu-cluster-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) return InternalError("mkdtemp for the cluster failed");
  c->dir_ = templ;
  std::string version = options.version;
  if (version.empty()) {
    if (const char* env = std::getenv("XPU_UPSTREAM_VERSION"); env != nullptr) version = env;
  }
  std::vector<std::string> args = {"up", c->dir_, "--watch-pid", std::to_string(::getpid())};
  if (!version.empty()) args.insert(args.end(), {"--version", version});
  if (!options.feature_gates.empty()) {
    args.insert(args.end(), {"--feature-gates", options.feature_gates});
  }
  if (!options.runtime_config.empty()) {
    args.insert(args.end(), {"--runtime-config", options.runtime_config});
  }
  auto up = Run(SourceDir() + "/scripts/cluster", args, c->dir_ + "/up.log");
  if (!up.ok()) {
    return Status(up.status().code(),
                  "start the upstream control plane (scripts/cluster up; "
                  "it needs Go and the module proxy to build it once): " +
                      up.status().message());
  }
  const auto env = ReadEnvFile(c->dir_ + "/cluster.env");
  if (!env.contains("VERSION") || !env.contains("KUBECONFIG") || !env.contains("BIN")) {
    return InternalError("scripts/cluster up wrote no complete " + c->dir_ + "/cluster.env");
  }
  c->version_ = env.at("VERSION");
  c->minor_ = MinorOf(c->version_);
  c->kubeconfig_ = env.at("KUBECONFIG");
  c->bin_dir_ = env.at("BIN");
  return c;
}

Cluster::~Cluster() {
  if (kind_ != ClusterKind::kUpstream || dir_.empty()) return;  // KubeSimProcess cleans up
  auto down = Run(SourceDir() + "/scripts/cluster", {"down", dir_}, dir_ + "/down.log");
  if (down.ok() && std::getenv("XPU_KEEP_CLUSTER") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

StatusOr<api::client::ClusterConfig> Cluster::Config() const {
  return api::client::LoadKubeconfig(kubeconfig_);
}

StatusOr<std::unique_ptr<api::client::Client>> Cluster::NewClient() const {
  ASSIGN_OR_RETURN(auto config, Config());
  api::client::ClientOptions options;
  options.qps = 0;  // tests are not throttled by the client
  return api::client::Client::Create(config, options);
}

StatusOr<std::string> Cluster::Kubectl(const std::vector<std::string>& args) const {
  if (kind_ != ClusterKind::kUpstream) {
    return FailedPreconditionError("kubectl runs against the upstream control plane only");
  }
  std::vector<std::string> full = {"--kubeconfig", kubeconfig_, "--request-timeout=30s"};
  full.insert(full.end(), args.begin(), args.end());
  static int calls = 0;
  return Run(bin_dir_ + "/kubectl", full, dir_ + "/kubectl-" + std::to_string(++calls) + ".log");
}

Status Cluster::WaitEstablished(const std::vector<std::string>& crds) const {
  std::string last;  // what the last CRD not yet established said
  const bool established = Eventually(
      [&] {
        for (const std::string& crd : crds) {
          auto status =
              Kubectl({"get", "crd/" + crd, "-o",
                       R"(jsonpath={.status.conditions[?(@.type=="Established")].status})"});
          if (status.ok() && status->starts_with("True")) continue;
          last = "crd/" + crd + ": ";
          last += status.ok() ? "Established is \"" + *status + "\"" : status.status().message();
          return false;
        }
        return true;
      },
      std::chrono::minutes(1), std::chrono::milliseconds(50));
  if (established) return OkStatus();
  return UnavailableError("not Established within a minute: " + last);
}

Status Cluster::RegisterNode(const NodeSpec& node) const {
  ASSIGN_OR_RETURN(auto client, NewClient());
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : node.labels) labels[k] = v;
  labels["kubernetes.io/hostname"] = node.name;
  nlohmann::json object = {{"apiVersion", "v1"},
                           {"kind", "Node"},
                           {"metadata", {{"name", node.name}, {"labels", labels}}}};
  auto created = client->Create(api::client::Nodes(), "", object);
  if (!created.ok()) return created.status();
  const std::string now = FormatTime(std::chrono::system_clock::now());
  const nlohmann::json resources = {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}};
  (*created)["status"] = {{"capacity", resources},
                          {"allocatable", resources},
                          {"conditions",
                           {{{"type", "Ready"},
                             {"status", "True"},
                             {"reason", "KubeletReady"},
                             {"message", "registered by the e2e harness"},
                             {"lastHeartbeatTime", now},
                             {"lastTransitionTime", now}}}}};
  return client->UpdateStatus(api::client::Nodes(), "", *created).status();
}

}  // namespace xpu::e2e
