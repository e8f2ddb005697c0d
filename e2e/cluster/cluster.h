// A Kubernetes cluster for end-to-end tests, behind one interface: the real kube-sim binary
// (fast, with fault injection) or the local upstream control plane that scripts/cluster starts
// (etcd, kube-apiserver, kube-scheduler and kube-controller-manager built from pinned sources by
// scripts/build-upstream). Tests that make sense on both run on both.
//
// The upstream control plane is started with --watch-pid of this process, so it is stopped even
// when the test process dies without running destructors. Thread-compatible.
#ifndef XPU_E2E_CLUSTER_CLUSTER_H_
#define XPU_E2E_CLUSTER_CLUSTER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "api/client/kubeconfig.h"
#include "base/status.h"
#include "e2e/client/kube_sim_process.h"

namespace xpu::e2e {

enum class ClusterKind { kKubeSim, kUpstream };
const char* ClusterKindName(ClusterKind kind);  // "kube-sim", "upstream"

struct ClusterOptions {
  ClusterKind kind = ClusterKind::kKubeSim;
  // Upstream: the Kubernetes release ("1.37.2"); "" takes $XPU_UPSTREAM_VERSION, else the newest
  // pinned release. kube-sim: passed as --kube-version when set ("1.34").
  std::string version;
  std::string feature_gates;   // kube-apiserver syntax, given to every component
  std::string runtime_config;  // upstream only: kube-apiserver --runtime-config
  std::vector<std::string> kube_sim_flags;
};

struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;  // kubernetes.io/hostname is added
};

class Cluster {
 public:
  static StatusOr<std::unique_ptr<Cluster>> Start(const ClusterOptions& options);
  ~Cluster();  // stops the cluster (upstream: scripts/cluster down) and removes its directory
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  ClusterKind kind() const { return kind_; }
  // The admin kubeconfig (a bearer token, mode 0600).
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& dir() const { return dir_; }
  // What /version reports, "v1.37.2".
  const std::string& version() const { return version_; }
  // The release's minor version (37), for version-dependent expectations.
  int minor() const { return minor_; }
  // Whether pods are scheduled and claims allocated (a real kube-scheduler runs).
  bool schedules() const { return kind_ == ClusterKind::kUpstream; }

  StatusOr<api::client::ClusterConfig> Config() const;
  StatusOr<std::unique_ptr<api::client::Client>> NewClient() const;

  // Upstream only: runs the pinned kubectl against the cluster; its output, or an error with
  // the output when it exits non-zero.
  StatusOr<std::string> Kubectl(const std::vector<std::string>& args) const;

  // Upstream only: waits until each CustomResourceDefinition (by name) reports Established, for
  // up to a minute in all. Not `kubectl wait --for=condition=Established`: the 1.38 kubectl fails
  // at once, instead of waiting, on a CRD whose status has no conditions yet
  // (".status.conditions accessor error: <nil> is of the type <nil>").
  Status WaitEstablished(const std::vector<std::string>& crds) const;

  // Registers a Node the scheduler can use: Ready, allocatable cpu 64, memory 512Gi, pods 110,
  // the given labels. (A node agent keeps it alive afterwards; without one it stays Ready,
  // since no node-lifecycle controller runs.)
  Status RegisterNode(const NodeSpec& node) const;

  // Upstream: the folder of the pinned binaries. kube-sim: "".
  const std::string& bin_dir() const { return bin_dir_; }

 private:
  Cluster() = default;

  ClusterKind kind_ = ClusterKind::kKubeSim;
  std::string dir_;
  std::string kubeconfig_;
  std::string version_;
  int minor_ = 0;
  std::string bin_dir_;
  std::unique_ptr<KubeSimProcess> kube_sim_;
};

// The project's source tree (scripts/, deploy/, e2e/fixtures/).
std::string SourceDir();

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLUSTER_CLUSTER_H_
