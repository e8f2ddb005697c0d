// NodeAgentOptions and the agent's flags, and the Node documents built from them: labels, status
// and the node Lease (node_agent.h).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "api/quantity.h"
#include "api/validation.h"
#include "base/flags.h"
#include "base/time.h"
#include "e2e/kubelet/node_agent.h"

namespace xpu::e2e {
namespace {
namespace node_agent_flags_cc {

#if defined(__x86_64__)
constexpr char kArchitecture[] = "amd64";
#elif defined(__aarch64__)
constexpr char kArchitecture[] = "arm64";
#else
constexpr char kArchitecture[] = "unknown";
#endif

std::vector<Flag> NodeAgentFlags(NodeAgentOptions* o) {
  return {
      {"--kubeconfig", "FILE", "API access (default: $KUBECONFIG)", StringFlag(&o->kubeconfig)},
      {"--node-name", "NAME", "this node, a DNS subdomain (required)", StringFlag(&o->node_name)},
      {"--node-labels", "K=V,...", "Node labels besides kubernetes.io/hostname",
       ValueFlag([o](const std::string& text) -> Status {
         ASSIGN_OR_RETURN(o->node_labels, ParseNodeLabels(text));
         return OkStatus();
       })},
      {"--cpu", "QUANTITY", "cpu capacity and allocatable (default 64)", StringFlag(&o->cpu)},
      {"--memory", "QUANTITY", "memory capacity and allocatable (default 512Gi)",
       StringFlag(&o->memory)},
      {"--pods", "N", "pods capacity and allocatable (default 110)",
       IntFlag(&o->pods, 1, 1'000'000)},
      {"--host-ip", "IP",
       "the node's InternalIP and the pods' hostIP (default\n"
       "127.0.0.1)",
       StringFlag(&o->host_ip)},
      {"--heartbeat", "DURATION", "node Lease and Ready heartbeat period (default 10s)",
       DurationFlag(&o->heartbeat)},
      {"--plugin-registry-dir", "DIR",
       "where plugins put registration sockets, DIR/*.sock\n"
       "(default /var/lib/kubelet/plugins_registry)",
       StringFlag(&o->plugin_registry_dir)},
      {"--state-dir", "DIR",
       "pod records, DIR/pods/<namespace>_<name>.json with the CDI\n"
       "device ids (default /var/lib/xpu-node-agent/<node-name>)",
       StringFlag(&o->state_dir)},
      {"--wipe-after", "DURATION",
       "delete the node's ResourceSlices of a driver whose plugin\n"
       "has been unreachable this long (default 30s)",
       DurationFlag(&o->wipe_after)},
      LogLevelFlag(&o->log_level),
  };
}

}  // namespace node_agent_flags_cc
}  // namespace

// ---- Options and flags ----

Status NodeAgentOptions::Validate() const {
  if (node_name.empty()) return InvalidArgumentError("--node-name is required");
  RETURN_IF_ERROR(api::ValidateNodeName(node_name, "--node-name"));
  for (const auto& [key, value] : node_labels) {
    RETURN_IF_ERROR(api::ValidateLabelKey(key, "--node-labels"));
    RETURN_IF_ERROR(api::ValidateLabelValue(value, "--node-labels " + key));
  }
  for (const auto& [flag, text] : {std::pair{"--cpu", cpu}, std::pair{"--memory", memory}}) {
    StatusOr<api::Quantity> quantity = api::Quantity::Parse(text);
    if (!quantity.ok()) {
      return InvalidArgumentError(std::string(flag) + ": " + quantity.status().message());
    }
    if (quantity->Sign() <= 0) {
      return InvalidArgumentError(std::string(flag) + ": must be positive, got \"" + text + "\"");
    }
  }
  if (pods <= 0) return InvalidArgumentError("--pods: must be positive");
  unsigned char address[sizeof(in6_addr)];
  if (inet_pton(AF_INET, host_ip.c_str(), address) != 1 &&
      inet_pton(AF_INET6, host_ip.c_str(), address) != 1) {
    return InvalidArgumentError("--host-ip: \"" + host_ip + "\" is not an IP address");
  }
  if (heartbeat.count() <= 0 || heartbeat >= std::chrono::seconds(kNodeLeaseDurationSeconds)) {
    return InvalidArgumentError("--heartbeat: must be positive and shorter than the " +
                                std::to_string(kNodeLeaseDurationSeconds) +
                                " s node lease duration");
  }
  if (plugin_registry_dir.empty() || plugin_registry_dir[0] != '/') {
    return InvalidArgumentError("--plugin-registry-dir: must be an absolute path, got \"" +
                                plugin_registry_dir + "\"");
  }
  if (!state_dir.empty() && state_dir[0] != '/') {
    return InvalidArgumentError("--state-dir: must be an absolute path, got \"" + state_dir + "\"");
  }
  if (wipe_after.count() <= 0) return InvalidArgumentError("--wipe-after: must be positive");
  return Logger::CheckLevelFlag(log_level);
}

std::string NodeAgentOptions::StateDir() const {
  return state_dir.empty() ? "/var/lib/xpu-node-agent/" + node_name : state_dir;
}

StatusOr<std::map<std::string, std::string>> ParseNodeLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) return labels;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("--node-labels: \"" + item + "\" is not key=value");
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    RETURN_IF_ERROR(api::ValidateLabelKey(key, "--node-labels"));
    RETURN_IF_ERROR(api::ValidateLabelValue(value, "--node-labels " + key));
    if (!labels.emplace(key, value).second) {
      return InvalidArgumentError("--node-labels: key \"" + key + "\" is given twice");
    }
    start = end + 1;
  }
  return labels;
}

std::string NodeAgentUsage() {
  NodeAgentOptions unused;
  return "usage: xpu-node-agent --node-name NAME [flags]\n"
         "A test node agent (not a kubelet): registers a Node and keeps its Lease, registers\n"
         "DRA plugins from the plugin registry, prepares the claims of pods bound to the node\n"
         "and marks them Running, unprepares and deletes them on deletion, and wipes the\n"
         "node's ResourceSlices of a plugin that stays unreachable.\n" +
         FlagTableUsage(node_agent_flags_cc::NodeAgentFlags(&unused), 24);
}

StatusOr<NodeAgentOptions> ParseNodeAgentFlags(const std::vector<std::string>& args, bool* help) {
  NodeAgentOptions o;
  ASSIGN_OR_RETURN(*help, ParseFlagTable(args, node_agent_flags_cc::NodeAgentFlags(&o)));
  return o;
}

// ---- The node ----

std::map<std::string, std::string> NodeLabels(const NodeAgentOptions& options) {
  std::map<std::string, std::string> labels = {{"kubernetes.io/hostname", options.node_name}};
  for (const auto& [key, value] : options.node_labels) labels[key] = value;
  return labels;
}

api::core::NodeStatus BuildNodeStatus(const NodeAgentOptions& options,
                                      api::core::NodeStatus current,
                                      std::chrono::system_clock::time_point now) {
  const std::string t = FormatTime(now);
  for (auto* resources : {&current.capacity, &current.allocatable}) {
    (*resources)["cpu"] = options.cpu;
    (*resources)["memory"] = options.memory;
    (*resources)["pods"] = std::to_string(options.pods);
  }
  struct Wanted {
    const char* type;
    const char* status;
    const char* reason;
    const char* message;
  };
  static constexpr Wanted kWanted[] = {
      {"MemoryPressure", "False", "KubeletHasSufficientMemory",
       "xpu-node-agent has sufficient memory available"},
      {"DiskPressure", "False", "KubeletHasNoDiskPressure", "xpu-node-agent has no disk pressure"},
      {"PIDPressure", "False", "KubeletHasSufficientPID",
       "xpu-node-agent has sufficient PID available"},
      {"Ready", "True", "KubeletReady", "xpu-node-agent is posting ready status"},
  };
  for (const Wanted& want : kWanted) {
    auto it = std::find_if(current.conditions.begin(), current.conditions.end(),
                           [&](const api::core::NodeCondition& c) { return c.type == want.type; });
    if (it == current.conditions.end()) {
      current.conditions.push_back(api::core::NodeCondition{});
      it = std::prev(current.conditions.end());
      it->type = want.type;
    }
    if (it->status != want.status || it->last_transition_time.empty()) {
      it->last_transition_time = t;
    }
    it->status = want.status;
    it->reason = want.reason;
    it->message = want.message;
    it->last_heartbeat_time = t;
  }
  current.node_info.operating_system = "linux";
  current.node_info.architecture = node_agent_flags_cc::kArchitecture;
  if (!current.unknown.is_object()) current.unknown = nlohmann::json::object();
  current.unknown["addresses"] =
      nlohmann::json::array({{{"type", "InternalIP"}, {"address", options.host_ip}},
                             {{"type", "Hostname"}, {"address", options.node_name}}});
  return current;
}

api::core::Lease RenewedLease(std::optional<api::core::Lease> current, const std::string& node_name,
                              const std::string& node_uid,
                              std::chrono::system_clock::time_point now) {
  const std::string t = FormatMicroTime(now);
  api::core::Lease lease;
  if (current) {
    lease = *std::move(current);
  } else {
    lease.metadata.name = node_name;
    lease.metadata.namespace_name = kNodeLeaseNamespace;
    if (!node_uid.empty()) {
      api::OwnerReference owner;
      owner.api_version = "v1";
      owner.kind = "Node";
      owner.name = node_name;
      owner.uid = node_uid;
      lease.metadata.owner_references = {owner};
    }
    lease.spec.acquire_time = t;
  }
  lease.spec.holder_identity = node_name;
  lease.spec.lease_duration_seconds = kNodeLeaseDurationSeconds;
  lease.spec.renew_time = t;
  return lease;
}

}  // namespace xpu::e2e
