#include "e2e/client/kube_sim_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace xpu::e2e {

StatusOr<std::unique_ptr<KubeSimProcess>> KubeSimProcess::Start(
    const std::string& binary, const std::vector<std::string>& flags,
    std::chrono::seconds timeout) {
  std::unique_ptr<KubeSimProcess> p(new KubeSimProcess());
  std::string templ = (std::filesystem::temp_directory_path() / "xpu-kube-sim-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) return InternalError("mkdtemp failed");
  p->dir_ = templ;
  p->kubeconfig_ = p->dir_ + "/kubeconfig";
  p->client_kubeconfig_ = p->dir_ + "/client-cert-kubeconfig";

  std::vector<std::string> args = {binary,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--kubeconfig-out",
                                   p->kubeconfig_,
                                   "--client-kubeconfig-out",
                                   p->client_kubeconfig_};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return InternalError("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  const int rc = ::posix_spawn(&p->pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  p->out_fd_ = fds[0];
  if (rc != 0) {
    p->pid_ = -1;
    return InternalError("start " + binary + ": posix_spawn failed with " + std::to_string(rc));
  }

  // Wait for "kube-sim: listening on https://...".
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string out;
  const std::string marker = "listening on ";
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return InternalError("start kube-sim: no listening line in time");
    pollfd pfd{p->out_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(p->out_fd_, buf, sizeof(buf));
    if (n <= 0) return InternalError("start kube-sim: exited before listening: " + out);
    out.append(buf, static_cast<size_t>(n));
    const auto at = out.find(marker);
    if (at == std::string::npos) continue;
    const auto eol = out.find('\n', at);
    if (eol == std::string::npos) continue;
    p->url_ = out.substr(at + marker.size(), eol - at - marker.size());
    break;
  }
  return p;
}

KubeSimProcess::~KubeSimProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

StatusOr<api::client::ClusterConfig> KubeSimProcess::Config() const {
  return api::client::LoadKubeconfig(kubeconfig_);
}

StatusOr<SimWithClient> StartSimWithClient(const std::string& binary,
                                           const std::vector<std::string>& namespaces,
                                           const std::vector<std::string>& nodes) {
  namespace kc = api::client;
  SimWithClient out;
  ASSIGN_OR_RETURN(out.sim, KubeSimProcess::Start(binary));
  ASSIGN_OR_RETURN(const kc::ClusterConfig config, out.sim->Config());
  ASSIGN_OR_RETURN(out.client, kc::Client::Create(config));
  // Cluster-scoped core/v1 objects with only their names.
  struct Named {
    kc::ResourceRef ref;
    const char* kind;
    const std::vector<std::string>& names;
  };
  for (const Named& group :
       {Named{kc::Namespaces(), "Namespace", namespaces}, Named{kc::Nodes(), "Node", nodes}}) {
    for (const std::string& name : group.names) {
      const nlohmann::json object = {
          {"apiVersion", "v1"}, {"kind", group.kind}, {"metadata", {{"name", name}}}};
      RETURN_IF_ERROR(out.client->Create(group.ref, "", object).status());
    }
  }
  return out;
}

}  // namespace xpu::e2e
