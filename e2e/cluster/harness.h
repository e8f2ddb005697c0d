// The driver on a test cluster: our controller, and per node our plugin on a fixture host root,
// run as the real binaries against a Cluster (kube-sim or upstream), plus the small object
// helpers the tests share (namespaces, claims, pods, waiting on conditions).
#ifndef XPU_E2E_CLUSTER_HARNESS_H_
#define XPU_E2E_CLUSTER_HARNESS_H_

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/client/client.h"
#include "base/status.h"
#include "e2e/client/child_process.h"
#include "e2e/client/wait.h"
#include "e2e/cluster/cluster.h"
#include "topology/model.h"

namespace xpu::e2e {

// The built-in config (DefaultConfig) in attributes mode, as a file (a config file replaces the
// built-in one whole), for the tests and the demo written for attributes mode, which from 1.36
// is no longer the default of a config without a mode (upstream_admission_test.cc checks it parses
// to exactly that).
inline constexpr const char* kBuiltInConfigAttributes = R"(publishing:
  mode: attributes
capabilityClasses:
- {name: training-large-memory, vendors: [nvidia, huawei, amd, hygon], minMemory: 64Gi, precisions: [bf16]}
- {name: training-standard, minMemory: 32Gi, precisions: [bf16, fp16]}
- {name: inference, minMemory: 16Gi, precisions: [fp16, int8]}
)";

// The minor version asked for with XPU_UPSTREAM_VERSION ("1.34.4" -> 34); 0 for the newest.
int RequestedMinor();

// Why a check that turns `gates` off cannot run at the XPU_UPSTREAM_VERSION asked for: from 1.38
// they are locked on (GA), and an API server started with them off refuses to start, so no
// server lacks `feature` there. "" where the check can run (an unset version is the default
// pin, 1.37).
std::string GatesLockedOn(const std::string& gates, const std::string& feature);

// Eventually with the pace of a real control plane: every 50 ms, for up to a minute by default.
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  return Eventually(std::move(done), timeout, std::chrono::milliseconds(50));
}

// core/v1 pods.
api::client::ResourceRef Pods();

class DriverHarness {
 public:
  static constexpr const char* kNamespace = "xpu-dra";
  static constexpr const char* kDriver = "xpu.dra.dev";

  // `work_dir` holds the plugins' directories, the config and the logs. On destruction the
  // controller and plugins stop and the Nodes it registered are deleted.
  static StatusOr<std::unique_ptr<DriverHarness>> Create(const Cluster& cluster,
                                                         const std::string& work_dir);
  ~DriverHarness();

  // (Re)starts the controller; `config_yaml` "" runs it on its built-in defaults.
  Status StartController(const std::string& config_yaml = "",
                         const std::vector<std::string>& extra_flags = {});
  void StopController();
  ChildProcess* controller() { return controller_.get(); }

  // Registers the Node and starts a plugin for it on the fixture host e2e/fixtures/hosts/<host>
  // (or on the host root `host` when it is an absolute path, e.g. a copy a test may break). The
  // Node is Ready, with the host's labels from e2e/fixtures/node-labels.json (its fabric tiers;
  // keyed by the root's folder name) and then `labels`.
  Status AddNode(const std::string& node, const std::string& host,
                 const std::map<std::string, std::string>& labels = {},
                 const std::vector<std::string>& extra_flags = {});
  Status StopPlugin(const std::string& node);  // SIGTERM
  ChildProcess* plugin(const std::string& node);
  // The kubeconfig the controller, or the plugin of `node`, runs with instead of the cluster's
  // admin one (a test that runs them as the chart's service accounts); "" is the admin's. Read
  // at the next StartController / AddNode.
  void SetControllerKubeconfig(std::string path) { controller_kubeconfig_ = std::move(path); }
  void SetPluginKubeconfig(const std::string& node, std::string path) {
    plugin_kubeconfigs_[node] = std::move(path);
  }
  // The plugin's directories: registry/, plugins/, cdi/, state/ under this.
  std::string NodeDir(const std::string& node) const { return work_dir_ + "/" + node; }

  // The devices of this driver published for `node` (across its slices).
  StatusOr<std::vector<nlohmann::json>> PublishedDevices(const std::string& node);
  // Waits until `node` has at least `count` published devices.
  // The published device `device` of `node`; not found while it is not published.
  StatusOr<nlohmann::json> PublishedDevice(const std::string& node, const std::string& device);
  // Waits until the published `device` of `node` carries the taint `key` (with `effect`, when
  // given).
  Status WaitDeviceTaint(const std::string& node, const std::string& device, const std::string& key,
                         const std::string& effect = "",
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

  Status WaitPublished(const std::string& node, size_t count,
                       std::chrono::milliseconds timeout = std::chrono::seconds(90));
  // Waits until the node's published device order is the one the controller computes (on its
  // default config in `groups` or attributes mode) for the node's NodeInventory with `held`
  // devices allocated. The controller re-orders a pool after allocations and releases
  // (debounced); the first-fit allocator must meet the order the free state asks for.
  Status WaitPublishedOrder(const std::string& node, bool groups, const std::set<std::string>& held,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

  api::client::Client& client() { return *client_; }
  const Cluster& cluster() const { return cluster_; }

 private:
  DriverHarness(const Cluster& cluster, std::string work_dir) noexcept
      : cluster_(cluster), work_dir_(std::move(work_dir)) {}

  const Cluster& cluster_;
  std::string work_dir_;
  std::unique_ptr<api::client::Client> client_;
  std::unique_ptr<ChildProcess> controller_;
  int controller_runs_ = 0;
  std::map<std::string, std::unique_ptr<ChildProcess>> plugins_;
  std::vector<std::string> nodes_;     // registered by AddNode, deleted on destruction
  std::string controller_kubeconfig_;  // "": the cluster's
  std::map<std::string, std::string> plugin_kubeconfigs_;  // node -> kubeconfig
};

// The labels e2e/fixtures/node-labels.json gives the Node of fixture host `host` (empty when
// it lists none).
StatusOr<std::map<std::string, std::string>> FixtureNodeLabels(const std::string& host);

// The topology node described by `node`'s NodeInventory as the plugin published it.
StatusOr<topology::Node> NodeTopology(api::client::Client& client, const std::string& node);

// A node agent (xpu-node-agent) for `node` of `harness`: registration over the plugin's
// sockets, prepare and Running for the pods bound to the node, the node Lease (heartbeat 2 s).
StatusOr<std::unique_ptr<ChildProcess>> StartNodeAgent(DriverHarness& harness,
                                                       const std::string& node);

// A ResourceClaim in `ns` with one request `name` of `count` devices (0: allocationMode All) of
// `device_class`, and optional constraints (JSON array).
nlohmann::json ClaimObject(const std::string& ns, const std::string& name,
                           const std::string& device_class, int count,
                           const nlohmann::json& constraints = nlohmann::json::array());
// A pod in `ns` using the claim `claim` (by name); pinned to `node` when non-empty.
nlohmann::json PodObject(const std::string& ns, const std::string& name, const std::string& claim,
                         const std::string& node = "");
// Creates the namespace; ok if it exists.
Status EnsureNamespace(api::client::Client& client, const std::string& ns);
// The devices allocated to a claim ("" pool/device pairs as "pool/device"), empty if none yet.
std::vector<std::string> AllocatedDevices(const nlohmann::json& claim);
// Deletes pods at once (grace period 0, as the kubelet finally does, through kubectl) and waits
// until they are gone; ok if they do not exist. Upstream only.
Status DeletePodsNow(const Cluster& cluster, const std::string& ns,
                     const std::vector<std::string>& names);
// Deletes pods at once (DeletePodsNow) and the claims of the same names, and waits until the
// claims are gone: the resourceclaim controller lifts their finalizer once it has deallocated
// them, so afterwards the devices are free for the scheduler. Upstream only.
Status ReleaseClaims(const Cluster& cluster, api::client::Client& client, const std::string& ns,
                     const std::vector<std::string>& names);

}  // namespace xpu::e2e

#endif  // XPU_E2E_CLUSTER_HARNESS_H_
