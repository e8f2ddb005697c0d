// Runs the real kube-sim binary for a test: starts it on a free port with a kubeconfig in a
// private directory, waits for its "listening on" line (a condition, not a sleep), and stops it
// with SIGTERM when the object goes away.
#ifndef XPU_E2E_CLIENT_KUBE_SIM_PROCESS_H_
#define XPU_E2E_CLIENT_KUBE_SIM_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "api/client/kubeconfig.h"
#include "base/status.h"

namespace xpu::e2e {

class KubeSimProcess {
 public:
  // `binary`: the kube-sim executable; `flags`: extra flags beyond --listen, --kubeconfig-out and
  // --client-kubeconfig-out.
  static StatusOr<std::unique_ptr<KubeSimProcess>> Start(
      const std::string& binary, const std::vector<std::string>& flags = {},
      std::chrono::seconds timeout = std::chrono::seconds(30));
  ~KubeSimProcess();
  KubeSimProcess(const KubeSimProcess&) = delete;
  KubeSimProcess& operator=(const KubeSimProcess&) = delete;

  const std::string& url() const { return url_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  // A second kubeconfig that authenticates with a client certificate kube-sim issued.
  const std::string& client_cert_kubeconfig() const { return client_kubeconfig_; }
  const std::string& dir() const { return dir_; }
  StatusOr<api::client::ClusterConfig> Config() const;

 private:
  KubeSimProcess() = default;

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string dir_;
  std::string kubeconfig_;
  std::string client_kubeconfig_;
  std::string url_;
};

// kube-sim (`binary`) with a client of it, and the Namespaces and Nodes (name only) a test starts
// from.
struct SimWithClient {
  std::unique_ptr<KubeSimProcess> sim;
  std::unique_ptr<api::client::Client> client;
};
StatusOr<SimWithClient> StartSimWithClient(const std::string& binary,
                                           const std::vector<std::string>& namespaces,
                                           const std::vector<std::string>& nodes = {});

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLIENT_KUBE_SIM_PROCESS_H_
