// xpu-node-agent: a small per-node agent for end-to-end tests that run the real kube-apiserver and
// kube-scheduler without a kubelet. It is not a kubelet: it runs no containers. It does what the
// kubelet does that a DRA driver sees:
//   - registers a Node (labels, capacity, a Ready condition) and keeps it alive: the node Lease in
//     kube-node-lease and the Ready condition's heartbeat;
//   - finds plugins in the plugin registry directory (DIR/*.sock) and registers them, as the
//     kubelet's plugin watcher does, re-registering a replaced socket;
//   - for each pod bound to the node: waits until its ResourceClaims are allocated and reserved
//     for it, calls NodePrepareResources (one call per driver per pod), records the CDI device
//     ids in <state-dir>/pods/<namespace>_<name>.json and marks the pod Running; on deletion it
//     calls NodeUnprepareResources for claims no other pod on the node uses, removes the record
//     and deletes the pod with grace period 0;
//   - deletes the node's ResourceSlices of a driver whose plugin has been unreachable for
//     --wipe-after (the kubelet's 30 s wipe).
//
// The pure parts are free functions, tested without a server: the flags and the node's documents
// here (node_agent_flags.cc), the pods' in pod_documents.h (claim names of a pod, claim readiness,
// the pod status, the prepare record, unprepare reference counting).
#ifndef XPU_E2E_KUBELET_NODE_AGENT_H_
#define XPU_E2E_KUBELET_NODE_AGENT_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "api/client/informer.h"
#include "api/core.h"
#include "api/resource.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/stop.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "e2e/kubelet/pod_documents.h"

namespace xpu::e2e {

struct NodeAgentOptions {
  std::string kubeconfig;  // --kubeconfig; empty: $KUBECONFIG (api::client::ResolveClusterConfig)
  std::string node_name;   // --node-name, required, a DNS subdomain
  std::map<std::string, std::string> node_labels;  // --node-labels, besides kubernetes.io/hostname
  std::string cpu = "64";                          // --cpu, a quantity
  std::string memory = "512Gi";                    // --memory, a quantity
  int64_t pods = 110;                              // --pods
  std::string host_ip = "127.0.0.1";               // --host-ip: the node's and pods' hostIP
  std::chrono::milliseconds heartbeat{10'000};     // --heartbeat: Lease and Ready heartbeat
  std::string plugin_registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string state_dir;  // --state-dir; empty: /var/lib/xpu-node-agent/<node-name>
  std::chrono::milliseconds wipe_after{30'000};  // --wipe-after
  std::string log_level = "info";                // --log-level

  // A bad option names its flag: "--node-name: ...".
  Status Validate() const;
  // state_dir, or its default for the node.
  std::string StateDir() const;
};

// The kubelet's node Lease.
inline constexpr char kNodeLeaseNamespace[] = "kube-node-lease";
inline constexpr int64_t kNodeLeaseDurationSeconds = 40;
// The longest wait between two attempts at a pod.
inline constexpr std::chrono::milliseconds kMaxPodBackoff{10'000};

// Parses argv (without the program name); sets *help for --help. Errors name the flag.
StatusOr<NodeAgentOptions> ParseNodeAgentFlags(const std::vector<std::string>& args, bool* help);
std::string NodeAgentUsage();

// "k=v,k2=v2" (empty: none). Keys and values follow the label rules; a key given twice, an item
// without '=' or an empty key is an error naming --node-labels.
StatusOr<std::map<std::string, std::string>> ParseNodeLabels(const std::string& text);

// The Node's labels: kubernetes.io/hostname=<node>, then --node-labels (which win).
std::map<std::string, std::string> NodeLabels(const NodeAgentOptions& options);

// The node status the agent posts, from the current one: capacity and allocatable cpu, memory and
// pods; Ready True (KubeletReady) and the pressure conditions False, heartbeat `now`, transition
// time kept while the status is unchanged; nodeInfo's operating system and architecture; the
// InternalIP and Hostname addresses. Everything else in `current` is kept.
api::core::NodeStatus BuildNodeStatus(const NodeAgentOptions& options,
                                      api::core::NodeStatus current,
                                      std::chrono::system_clock::time_point now);

// The node Lease renewed at `now`: holder the node, 40 s, renewTime a MicroTime. A new Lease
// (no `current`) is owned by the Node when `node_uid` is known.
api::core::Lease RenewedLease(std::optional<api::core::Lease> current, const std::string& node_name,
                              const std::string& node_uid,
                              std::chrono::system_clock::time_point now);

// The agent. Run() starts four threads (node heartbeat, plugin watcher, pod informer, pod worker)
// and returns when `stop` becomes true, with every thread joined. Not copyable; Run once.
class NodeAgent {
 public:
  // `client` and `log` must outlive the agent.
  NodeAgent(NodeAgentOptions options, api::client::Client* client, Logger* log);
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Reads the pod records (a record that does not parse is an error: the agent would otherwise
  // forget prepared claims), then runs until `stop`.
  Status Run(const StopFlag& stop);

 private:
  using Clock = std::chrono::steady_clock;

  // A registration socket found in the registry directory.
  struct Socket {
    uint64_t inode = 0;
    int64_t mtime_ns = 0;
    std::optional<PluginInfo> info;  // once registered
    uint64_t sequence = 0;           // registration order: the newest socket serves its driver
    Clock::time_point next_try{};
    std::chrono::milliseconds backoff{0};
    std::string last_error;
  };
  // Reachability of a driver's plugin, for the wipe.
  struct DriverHealth {
    std::optional<Clock::time_point> down_since;
    bool wiped = false;
  };
  // A pod the worker has started preparing (or adopted from its record).
  struct PodState {
    PodRecord record;  // the claims sent to prepare; devices once prepared
    bool running = false;
    std::string last_event;  // the last message recorded as an Event
  };
  struct Endpoint {
    std::string socket;
    std::string api;  // "v1" or "v1beta1"
  };

  Status LoadRecords();
  void NodeLoop(const StopFlag& stop);
  Status Heartbeat();
  Status RenewLease();
  void PluginLoop(const StopFlag& stop);
  void ScanRegistry();
  void ProbeDrivers();
  // sockets_ as the plugin thread reads it: the only thread that writes the map (always with
  // plugins_mu_ held), so it may read without the lock; the other threads take it.
  // NO_THREAD_SAFETY_ANALYSIS: the analysis has no notion of a single writer.
  std::map<std::string, Socket>& PluginThreadSockets() NO_THREAD_SAFETY_ANALYSIS {
    return sockets_;
  }
  Status WipeSlices(const std::string& driver, int* deleted);
  StatusOr<Endpoint> EndpointOf(const std::string& driver);

  void Enqueue(const std::string& key, std::chrono::milliseconds delay);
  bool NextKey(const StopFlag& stop, std::string* key);
  void PodLoop(const StopFlag& stop);
  Status SyncPod(const std::string& key);
  Status StartPod(const std::string& key, const nlohmann::json& pod);
  Status PreparePod(PodState* state);
  Status SetRunning(const nlohmann::json& pod);
  Status Release(const std::string& key);
  void RecordPodEvent(PodState* state, const nlohmann::json& pod, const std::string& message);

  const NodeAgentOptions options_;
  api::client::Client* const client_;
  Logger* const log_;
  api::client::Informer pods_;

  // Node thread only.
  std::string node_uid_;
  bool node_ready_logged_ = false;
  std::string last_node_error_;

  Mutex plugins_mu_;
  std::map<std::string, Socket> sockets_ GUARDED_BY(plugins_mu_);  // by path
  uint64_t registrations_ GUARDED_BY(plugins_mu_) = 0;
  // Plugin thread only.
  std::map<std::string, DriverHealth> drivers_;
  KubeletStandIn plugin_stand_in_;

  Mutex queue_mu_;
  CondVar queue_cv_;
  std::map<std::string, Clock::time_point> queue_ GUARDED_BY(queue_mu_);  // key -> when due

  // Worker thread only (and Run before the threads start).
  std::map<std::string, PodState> states_;  // by "namespace/name"
  std::map<std::string, int> failures_;
  std::map<std::string, std::string> last_error_;
  KubeletStandIn pod_stand_in_;
};

// The binary: the API client from options.kubeconfig, then NodeAgent::Run until `stop`. Returns
// the exit code (0 after a clean stop, 1 when it cannot start). Logs go to `log`.
int RunNodeAgent(const NodeAgentOptions& options, const StopFlag& stop, std::ostream& log);

}  // namespace xpu::e2e

#endif  // XPU_E2E_KUBELET_NODE_AGENT_H_
