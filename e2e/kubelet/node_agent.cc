#include "e2e/kubelet/node_agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <set>
#include <thread>
#include <utility>

#include "api/client/events.h"
#include "api/client/kubeconfig.h"
#include "api/quantity.h"
#include "api/validation.h"
#include "base/atomic_file.h"
#include "base/flags.h"
#include "base/time.h"

namespace xpu::e2e {
namespace {

namespace kc = api::client;
using nlohmann::json;

#if defined(__x86_64__)
constexpr char kArchitecture[] = "amd64";
#elif defined(__aarch64__)
constexpr char kArchitecture[] = "arm64";
#else
constexpr char kArchitecture[] = "unknown";
#endif

// The pod conditions a running pod has, in the kubelet's order.
constexpr const char* kPodConditions[] = {"PodReadyToStartContainers", "Initialized", "Ready",
                                          "ContainersReady", "PodScheduled"};

constexpr std::chrono::milliseconds kRegistryPoll{500};
constexpr std::chrono::milliseconds kNap{100};

kc::ResourceRef Pods() { return {"", "v1", "pods", true}; }

// JSON access that never throws: nullptr / "" when absent or of another type.
const json* Member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringAt(const json& object, const char* key) {
  const json* member = Member(object, key);
  return member != nullptr && member->is_string() ? member->get<std::string>() : "";
}

const json& Metadata(const json& object) {
  static const json kEmpty = json::object();
  const json* meta = Member(object, "metadata");
  return meta != nullptr ? *meta : kEmpty;
}

// The array at object[key]; nullptr when absent or null; an error naming `where` when it is not
// an array.
StatusOr<const json*> ArrayAt(const json& object, const char* key, const std::string& where) {
  const json* member = Member(object, key);
  if (member == nullptr || member->is_null()) return static_cast<const json*>(nullptr);
  if (!member->is_array()) return InvalidArgumentError(where + ": expected an array");
  return member;
}

std::string Join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// "30.2s".
std::string Seconds(std::chrono::steady_clock::duration d) {
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + "s";
}

// connect(2) to a Unix socket: what "the DRA socket is reachable" means here.
Status DialUnix(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return InvalidArgumentError("dial " + path + ": not a usable Unix socket path");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError("dial " + path + ": socket: " + std::strerror(errno));
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int error = errno;
  ::close(fd);
  if (rc != 0) return UnavailableError("dial " + path + ": " + std::strerror(error));
  return OkStatus();
}

Status ReadStringMember(const json& object, const char* key, const std::string& where,
                        std::string* out) {
  const json* member = Member(object, key);
  if (member == nullptr || !member->is_string() || member->get<std::string>().empty()) {
    return InvalidArgumentError(where + "." + key + ": expected a non-empty string");
  }
  *out = member->get<std::string>();
  return OkStatus();
}

Status ReadStringList(const json& object, const char* key, const std::string& where,
                      std::vector<std::string>* out) {
  ASSIGN_OR_RETURN(const json* list, ArrayAt(object, key, where + "." + key));
  if (list == nullptr) return OkStatus();
  for (size_t i = 0; i < list->size(); ++i) {
    if (!(*list)[i].is_string()) {
      return InvalidArgumentError(where + "." + key + "[" + std::to_string(i) +
                                  "]: expected a string");
    }
    out->push_back((*list)[i].get<std::string>());
  }
  return OkStatus();
}

// `where`.name: "`name`" `problem`.
Status BadName(const std::string& where, const std::string& name, const char* problem) {
  return InvalidArgumentError(where + ".name: \"" + name + "\" " + problem);
}

json RunningContainerStatus(const json& container, const std::string& started_at) {
  return {{"name", StringAt(container, "name")},
          {"image", StringAt(container, "image")},
          {"imageID", ""},
          {"ready", true},
          {"started", true},
          {"restartCount", 0},
          {"state", {{"running", {{"startedAt", started_at}}}}},
          {"lastState", json::object()}};
}

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

namespace {

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

}  // namespace

std::string NodeAgentUsage() {
  NodeAgentOptions unused;
  return "usage: xpu-node-agent --node-name NAME [flags]\n"
         "A test node agent (not a kubelet): registers a Node and keeps its Lease, registers\n"
         "DRA plugins from the plugin registry, prepares the claims of pods bound to the node\n"
         "and marks them Running, unprepares and deletes them on deletion, and wipes the\n"
         "node's ResourceSlices of a plugin that stays unreachable.\n" +
         FlagTableUsage(NodeAgentFlags(&unused), 24);
}

StatusOr<NodeAgentOptions> ParseNodeAgentFlags(const std::vector<std::string>& args, bool* help) {
  NodeAgentOptions o;
  ASSIGN_OR_RETURN(*help, ParseFlagTable(args, NodeAgentFlags(&o)));
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
  current.node_info.architecture = kArchitecture;
  if (!current.unknown.is_object()) current.unknown = json::object();
  current.unknown["addresses"] =
      json::array({{{"type", "InternalIP"}, {"address", options.host_ip}},
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

// ---- Pods and claims ----

StatusOr<std::vector<PodClaimRef>> PodClaims(const json& pod) {
  std::vector<PodClaimRef> out;
  const json* spec = Member(pod, "spec");
  if (spec == nullptr) return out;
  ASSIGN_OR_RETURN(const json* entries, ArrayAt(*spec, "resourceClaims", "spec.resourceClaims"));
  if (entries == nullptr) return out;

  struct Entry {
    std::string name;
    std::string claim;      // resourceClaimName
    std::string template_;  // resourceClaimTemplateName
  };
  std::vector<Entry> wanted;
  std::set<std::string> names;
  for (size_t i = 0; i < entries->size(); ++i) {
    const json& e = (*entries)[i];
    const std::string where = "spec.resourceClaims[" + std::to_string(i) + "]";
    Entry entry{StringAt(e, "name"), StringAt(e, "resourceClaimName"),
                StringAt(e, "resourceClaimTemplateName")};
    if (entry.name.empty()) return InvalidArgumentError(where + ".name: required");
    if (!names.insert(entry.name).second) {
      return BadName(where, entry.name, "is used twice");
    }
    if (entry.claim.empty() == entry.template_.empty()) {
      return InvalidArgumentError(
          where + " (" + entry.name +
          "): exactly one of resourceClaimName and resourceClaimTemplateName must be set");
    }
    wanted.push_back(std::move(entry));
  }

  // status.resourceClaimStatuses: name -> the generated claim (unset: none needed).
  std::map<std::string, std::optional<std::string>> generated;
  if (const json* status = Member(pod, "status"); status != nullptr) {
    ASSIGN_OR_RETURN(const json* statuses,
                     ArrayAt(*status, "resourceClaimStatuses", "status.resourceClaimStatuses"));
    for (size_t i = 0; statuses != nullptr && i < statuses->size(); ++i) {
      const json& s = (*statuses)[i];
      const std::string where = "status.resourceClaimStatuses[" + std::to_string(i) + "]";
      const std::string name = StringAt(s, "name");
      if (name.empty()) return InvalidArgumentError(where + ".name: required");
      if (names.count(name) == 0) {
        return BadName(where, name, "names no spec.resourceClaims entry");
      }
      const json* claim = Member(s, "resourceClaimName");
      if (claim != nullptr && !claim->is_null() && !claim->is_string()) {
        return InvalidArgumentError(where + ".resourceClaimName: expected a string");
      }
      std::optional<std::string> claim_name;
      if (claim != nullptr && claim->is_string() && !claim->get<std::string>().empty()) {
        claim_name = claim->get<std::string>();
      }
      if (!generated.emplace(name, claim_name).second) {
        return BadName(where, name, "is listed twice");
      }
    }
  }

  for (const Entry& entry : wanted) {
    if (!entry.claim.empty()) {
      out.push_back({entry.name, entry.claim});
      continue;
    }
    auto it = generated.find(entry.name);
    if (it == generated.end()) {
      return UnavailableError("waiting for the ResourceClaim of pod claim \"" + entry.name +
                              "\" (template " + entry.template_ +
                              "): not in status.resourceClaimStatuses yet");
    }
    if (it->second) out.push_back({entry.name, *it->second});
  }
  return out;
}

Status ClaimReadyFor(const api::resource::ResourceClaim& claim, const std::string& pod_uid) {
  const std::string what =
      "resourceclaim " + claim.metadata.namespace_name + "/" + claim.metadata.name;
  if (!claim.status.allocation) return UnavailableError(what + ": not allocated yet");
  const auto& reserved = claim.status.reserved_for;
  const bool for_pod = std::any_of(reserved.begin(), reserved.end(), [&](const auto& consumer) {
    return consumer.resource == "pods" && consumer.api_group.empty() && consumer.uid == pod_uid;
  });
  if (!for_pod) return UnavailableError(what + ": not reserved for pod uid " + pod_uid + " yet");
  return OkStatus();
}

std::vector<std::string> ClaimDrivers(const api::resource::ResourceClaim& claim) {
  std::set<std::string> drivers;
  if (claim.status.allocation) {
    for (const auto& result : claim.status.allocation->devices.results) {
      if (!result.driver.empty()) drivers.insert(result.driver);
    }
  }
  return {drivers.begin(), drivers.end()};
}

json ToJson(const PodRecord& record) {
  json claims = json::array();
  for (const ClaimRecord& claim : record.claims) {
    json devices = json::array();
    for (const KubeletDevice& device : claim.devices) {
      devices.push_back({{"requestNames", device.request_names},
                         {"poolName", device.pool_name},
                         {"deviceName", device.device_name},
                         {"cdiDeviceIds", device.cdi_device_ids}});
    }
    claims.push_back({{"name", claim.name},
                      {"uid", claim.uid},
                      {"drivers", claim.drivers},
                      {"devices", devices}});
  }
  return {{"pod", record.pod}, {"namespace", record.ns}, {"uid", record.uid}, {"claims", claims}};
}

StatusOr<PodRecord> PodRecordFromJson(const json& object) {
  if (!object.is_object()) return InvalidArgumentError("pod record: expected an object");
  PodRecord record;
  RETURN_IF_ERROR(ReadStringMember(object, "pod", "pod record", &record.pod));
  RETURN_IF_ERROR(ReadStringMember(object, "namespace", "pod record", &record.ns));
  RETURN_IF_ERROR(ReadStringMember(object, "uid", "pod record", &record.uid));
  ASSIGN_OR_RETURN(const json* claims, ArrayAt(object, "claims", "claims"));
  if (claims == nullptr) return InvalidArgumentError("claims: expected an array");
  for (size_t i = 0; i < claims->size(); ++i) {
    const json& c = (*claims)[i];
    const std::string where = "claims[" + std::to_string(i) + "]";
    if (!c.is_object()) return InvalidArgumentError(where + ": expected an object");
    ClaimRecord claim;
    RETURN_IF_ERROR(ReadStringMember(c, "name", where, &claim.name));
    RETURN_IF_ERROR(ReadStringMember(c, "uid", where, &claim.uid));
    RETURN_IF_ERROR(ReadStringList(c, "drivers", where, &claim.drivers));
    ASSIGN_OR_RETURN(const json* devices, ArrayAt(c, "devices", where + ".devices"));
    for (size_t j = 0; devices != nullptr && j < devices->size(); ++j) {
      const json& d = (*devices)[j];
      const std::string at = where + ".devices[" + std::to_string(j) + "]";
      if (!d.is_object()) return InvalidArgumentError(at + ": expected an object");
      KubeletDevice device;
      RETURN_IF_ERROR(ReadStringList(d, "requestNames", at, &device.request_names));
      RETURN_IF_ERROR(ReadStringMember(d, "poolName", at, &device.pool_name));
      RETURN_IF_ERROR(ReadStringMember(d, "deviceName", at, &device.device_name));
      RETURN_IF_ERROR(ReadStringList(d, "cdiDeviceIds", at, &device.cdi_device_ids));
      claim.devices.push_back(std::move(device));
    }
    record.claims.push_back(std::move(claim));
  }
  return record;
}

std::string PodRecordPath(const std::string& state_dir, const std::string& ns,
                          const std::string& name) {
  return state_dir + "/pods/" + ns + "_" + name + ".json";
}

std::vector<ClaimRecord> ClaimsToUnprepare(const PodRecord& leaving,
                                           const std::vector<PodRecord>& others) {
  std::set<std::string> used;
  for (const PodRecord& other : others) {
    if (other.uid == leaving.uid) continue;
    for (const ClaimRecord& claim : other.claims) used.insert(claim.uid);
  }
  std::vector<ClaimRecord> out;
  std::set<std::string> seen;
  for (const ClaimRecord& claim : leaving.claims) {
    if (used.count(claim.uid) == 0 && seen.insert(claim.uid).second) out.push_back(claim);
  }
  return out;
}

json RunningPodStatus(const json& pod, std::chrono::system_clock::time_point now,
                      const std::string& host_ip) {
  json status = json::object();
  if (const json* current = Member(pod, "status"); current != nullptr && current->is_object()) {
    status = *current;
  }
  const std::string t = FormatTime(now);
  std::string started = StringAt(status, "startTime");
  if (started.empty()) started = t;
  status["phase"] = "Running";
  status["hostIP"] = host_ip;
  status["hostIPs"] = json::array({{{"ip", host_ip}}});
  status["startTime"] = started;

  // Conditions: ours True (keeping the transition time of one already True), others kept.
  std::map<std::string, std::string> true_since;
  json others = json::array();
  if (const json* conditions = Member(status, "conditions");
      conditions != nullptr && conditions->is_array()) {
    for (const json& c : *conditions) {
      const std::string type = StringAt(c, "type");
      if (std::find(std::begin(kPodConditions), std::end(kPodConditions), type) ==
          std::end(kPodConditions)) {
        if (c.is_object()) others.push_back(c);
        continue;
      }
      const std::string since = StringAt(c, "lastTransitionTime");
      if (StringAt(c, "status") == "True" && !since.empty()) true_since[type] = since;
    }
  }
  json conditions = json::array();
  for (const char* type : kPodConditions) {
    auto since = true_since.find(type);
    conditions.push_back({{"type", type},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", since != true_since.end() ? since->second : t}});
  }
  for (json& c : others) conditions.push_back(std::move(c));
  status["conditions"] = std::move(conditions);

  // Container statuses: keep a running container's startedAt.
  std::map<std::string, std::string> started_at;
  for (const char* key : {"containerStatuses", "initContainerStatuses"}) {
    const json* statuses = Member(status, key);
    if (statuses == nullptr || !statuses->is_array()) continue;
    for (const json& s : *statuses) {
      const json* state = Member(s, "state");
      const json* running = state != nullptr ? Member(*state, "running") : nullptr;
      const std::string at = running != nullptr ? StringAt(*running, "startedAt") : "";
      if (!at.empty()) started_at[key + std::string("/") + StringAt(s, "name")] = at;
    }
  }
  auto start_of = [&](const char* key, const std::string& name) {
    auto it = started_at.find(key + std::string("/") + name);
    return it != started_at.end() ? it->second : started;
  };
  const json* spec = Member(pod, "spec");
  json containers = json::array();
  if (const json* list = spec != nullptr ? Member(*spec, "containers") : nullptr;
      list != nullptr && list->is_array()) {
    for (const json& c : *list) {
      const std::string name = StringAt(c, "name");
      if (name.empty()) continue;
      containers.push_back(RunningContainerStatus(c, start_of("containerStatuses", name)));
    }
  }
  status["containerStatuses"] = std::move(containers);
  if (const json* list = spec != nullptr ? Member(*spec, "initContainers") : nullptr;
      list != nullptr && list->is_array() && !list->empty()) {
    json inits = json::array();
    for (const json& c : *list) {
      const std::string name = StringAt(c, "name");
      if (name.empty()) continue;
      if (StringAt(c, "restartPolicy") == "Always") {  // a sidecar keeps running
        inits.push_back(RunningContainerStatus(c, start_of("initContainerStatuses", name)));
        continue;
      }
      inits.push_back({{"name", name},
                       {"image", StringAt(c, "image")},
                       {"imageID", ""},
                       {"ready", true},
                       {"started", false},
                       {"restartCount", 0},
                       {"state",
                        {{"terminated",
                          {{"exitCode", 0},
                           {"reason", "Completed"},
                           {"startedAt", started},
                           {"finishedAt", started}}}}},
                       {"lastState", json::object()}});
    }
    status["initContainerStatuses"] = std::move(inits);
  }
  return status;
}

json PodEvent(const json& pod, const std::string& reason, const std::string& message,
              const std::string& node_name, std::chrono::system_clock::time_point now) {
  const json& meta = Metadata(pod);
  kc::EventInfo info;
  info.about = {"v1", "Pod", StringAt(meta, "namespace"), StringAt(meta, "name"),
                StringAt(meta, "uid")};
  info.reason = reason;
  info.message = message;
  info.component = "xpu-node-agent";
  info.instance = node_name;
  info.host = node_name;
  return kc::MakeEvent(info, now);
}

// ---- The agent ----

NodeAgent::NodeAgent(NodeAgentOptions options, kc::Client* client, Logger* log)
    : options_(std::move(options)), client_(client), log_(log), pods_(client, Pods(), [&] {
        kc::InformerOptions o;
        o.field_selector = "spec.nodeName=" + options_.node_name;
        return o;
      }()) {}

Status NodeAgent::Run(const std::atomic<bool>& stop) {
  RETURN_IF_ERROR(LoadRecords());
  if (Status s = MakeDirectories(options_.plugin_registry_dir, 0750); !s.ok()) {
    log_->Warning("create plugin registry " + options_.plugin_registry_dir + ": " + s.message());
  }
  auto enqueue = [this](const kc::ObjectPtr& pod) { Enqueue(kc::KeyOf(*pod), {}); };
  pods_.AddHandlers({.on_add = enqueue,
                     .on_update = [enqueue](const kc::ObjectPtr& /*old_pod*/,
                                            const kc::ObjectPtr& pod) { enqueue(pod); },
                     .on_delete = enqueue});
  pods_.Start();
  std::thread node_thread([&] { NodeLoop(stop); });
  std::thread plugin_thread([&] { PluginLoop(stop); });
  std::thread pod_thread([&] { PodLoop(stop); });
  node_thread.join();
  plugin_thread.join();
  pod_thread.join();
  pods_.Stop();
  return OkStatus();
}

Status NodeAgent::LoadRecords() {
  const std::string dir = options_.StateDir() + "/pods";
  RETURN_IF_ERROR(MakeDirectories(dir, 0755));
  std::error_code ec;
  std::vector<std::string> paths;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".json") paths.push_back(it->path().string());
  }
  if (ec) return UnavailableError("read pod records " + dir + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    StatusOr<PodRecord> record =
        parsed.is_discarded() ? InvalidArgumentError("not JSON") : PodRecordFromJson(parsed);
    if (!record.ok()) {
      return DataLossError("read pod record " + path + ": " + record.status().message() +
                           " (remove it to forget the pod's prepared claims)");
    }
    if (PodRecordPath(options_.StateDir(), record->ns, record->pod) != path) {
      return DataLossError("read pod record " + path + ": it is about pod " + record->Key());
    }
    log_->Info("adopted pod=" + record->Key() + " uid=" + record->uid +
               " claims=" + std::to_string(record->claims.size()) + " from " + path);
    const std::string key = record->Key();
    states_[key] = PodState{.record = *std::move(record), .running = true, .last_event = ""};
  }
  return OkStatus();
}

// -- Node registration and heartbeats --

void NodeAgent::NodeLoop(const std::atomic<bool>& stop) {
  auto next = Clock::now();
  while (!stop.load()) {
    if (Clock::now() >= next) {
      Status s = Heartbeat();
      if (s.ok()) {
        last_node_error_.clear();
        next = Clock::now() + options_.heartbeat;
      } else {
        if (s.message() != last_node_error_) log_->Warning("node heartbeat: " + s.message());
        last_node_error_ = s.message();
        next = Clock::now() +
               std::min<std::chrono::milliseconds>(options_.heartbeat, std::chrono::seconds(1));
      }
    }
    std::this_thread::sleep_for(kNap);
  }
}

Status NodeAgent::Heartbeat() {
  const std::string& name = options_.node_name;
  StatusOr<json> got = client_->Get(kc::Nodes(), "", name);
  if (!got.ok() && got.status().code() == StatusCode::kNotFound) {
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", name}, {"labels", NodeLabels(options_)}}}};
    got = client_->Create(kc::Nodes(), "", node);
    if (got.ok()) log_->Info("created node=" + name);
    if (!got.ok() && got.status().code() == StatusCode::kAlreadyExists) {
      got = client_->Get(kc::Nodes(), "", name);
    }
  }
  if (!got.ok()) return got.status();
  StatusOr<api::core::Node> node = api::FromJson<api::core::Node>(*got);
  if (!node.ok()) return node.status().WithContext("read node " + name);
  bool relabel = false;
  for (const auto& [key, value] : NodeLabels(options_)) {
    auto [it, added] = node->metadata.labels.emplace(key, value);
    if (added || it->second != value) {
      it->second = value;
      relabel = true;
    }
  }
  if (relabel) {
    ASSIGN_OR_RETURN(json updated, client_->Update(kc::Nodes(), "", api::core::ToJson(*node)));
    node = api::FromJson<api::core::Node>(updated);
    if (!node.ok()) return node.status().WithContext("read node " + name);
    log_->Info("labelled node=" + name);
  }
  node_uid_ = node->metadata.uid;
  node->status =
      BuildNodeStatus(options_, std::move(node->status), std::chrono::system_clock::now());
  const json object = api::core::ToJson(*node);
  StatusOr<json> written = client_->UpdateStatus(kc::Nodes(), "", object);
  if (!written.ok() && written.status().code() == StatusCode::kNotFound) {
    // A simulated server without the status subresource (kube-sim) takes status with the object.
    written = client_->Update(kc::Nodes(), "", object);
  }
  if (written.ok() && !node_ready_logged_) {
    log_->Info("node ready node=" + name + " cpu=" + options_.cpu + " memory=" + options_.memory +
               " pods=" + std::to_string(options_.pods));
    node_ready_logged_ = true;
  }
  // The Lease is renewed even when the status write failed, as the kubelet does.
  Status lease = RenewLease();
  if (!written.ok()) return written.status();
  return lease;
}

Status NodeAgent::RenewLease() {
  const std::string& name = options_.node_name;
  const auto now = std::chrono::system_clock::now();
  StatusOr<json> got = client_->Get(kc::Leases(), kNodeLeaseNamespace, name);
  if (got.ok()) {
    StatusOr<api::core::Lease> lease = api::FromJson<api::core::Lease>(*got);
    if (!lease.ok()) {
      return lease.status().WithContext("read lease " + std::string(kNodeLeaseNamespace) + "/" +
                                        name);
    }
    return client_
        ->Update(kc::Leases(), kNodeLeaseNamespace,
                 api::core::ToJson(RenewedLease(*std::move(lease), name, node_uid_, now)))
        .status();
  }
  if (got.status().code() != StatusCode::kNotFound) return got.status();
  const json lease = api::core::ToJson(RenewedLease(std::nullopt, name, node_uid_, now));
  StatusOr<json> made = client_->Create(kc::Leases(), kNodeLeaseNamespace, lease);
  if (!made.ok() && made.status().code() == StatusCode::kNotFound) {
    // The API server makes kube-node-lease at start; a simulated one may not have it.
    json ns = {
        {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNodeLeaseNamespace}}}};
    StatusOr<json> created = client_->Create(kc::Namespaces(), "", ns);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
    made = client_->Create(kc::Leases(), kNodeLeaseNamespace, lease);
  }
  return made.status();
}

// -- Plugin registration and the wipe --

void NodeAgent::PluginLoop(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    ScanRegistry();
    ProbeDrivers();
    for (auto waited = std::chrono::milliseconds(0); waited < kRegistryPoll && !stop.load();
         waited += kNap) {
      std::this_thread::sleep_for(kNap);
    }
  }
}

void NodeAgent::ScanRegistry() {
  // Only this thread writes sockets_; it reads without the lock and writes with it.
  std::map<std::string, Socket>& sockets = PluginThreadSockets();
  std::map<std::string, std::pair<uint64_t, int64_t>> found;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(options_.plugin_registry_dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string path = it->path().string();
    struct stat st {};
    if (it->path().extension() != ".sock" || ::stat(path.c_str(), &st) != 0 ||
        !S_ISSOCK(st.st_mode)) {
      continue;
    }
    found[path] = {st.st_ino,
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  }
  for (auto it = sockets.begin(); it != sockets.end();) {
    if (auto f = found.find(it->first);
        f != found.end() && f->second == std::pair{it->second.inode, it->second.mtime_ns}) {
      ++it;
      continue;
    }
    if (it->second.info) {
      log_->Info("plugin socket gone path=" + it->first + " driver=" + it->second.info->name);
    }
    MutexLock lock(plugins_mu_);
    it = sockets_.erase(it);
  }
  const auto now = Clock::now();
  for (const auto& [path, identity] : found) {
    if (sockets.count(path) == 0) {
      MutexLock lock(plugins_mu_);
      Socket found_socket;
      found_socket.inode = identity.first;
      found_socket.mtime_ns = identity.second;
      sockets_[path] = std::move(found_socket);
    }
    Socket& socket = sockets.at(path);
    if (socket.info || now < socket.next_try) continue;
    StatusOr<PluginInfo> info = plugin_stand_in_.Register(path);
    if (!info.ok()) {
      socket.backoff = std::clamp(socket.backoff * 2, std::chrono::milliseconds(500),
                                  std::chrono::milliseconds(10'000));
      socket.next_try = now + socket.backoff;
      if (info.status().message() != socket.last_error) {
        log_->Warning("register plugin path=" + path + ": " + info.status().message() +
                      "; retrying");
      }
      socket.last_error = info.status().message();
      continue;
    }
    {
      MutexLock lock(plugins_mu_);
      socket.info = *info;
      socket.sequence = ++registrations_;
    }
    drivers_.try_emplace(info->name);
    log_->Info("registered plugin driver=" + info->name + " endpoint=" + info->endpoint +
               " versions=" + Join(info->supported_versions, ",") + " path=" + path);
    // Pods waiting for this driver need not sit out their backoff.
    for (const kc::ObjectPtr& pod : pods_.List()) Enqueue(kc::KeyOf(*pod), {});
  }
}

void NodeAgent::ProbeDrivers() {
  for (auto& [driver, health] : drivers_) {
    // The newest registered socket of the driver; sockets_ is written only on this thread.
    const Socket* newest = nullptr;
    std::string path;
    for (const auto& [p, socket] : PluginThreadSockets()) {
      if (socket.info && socket.info->name == driver &&
          (newest == nullptr || socket.sequence > newest->sequence)) {
        newest = &socket;
        path = p;
      }
    }
    Status reachable =
        UnavailableError("no registration socket in " + options_.plugin_registry_dir);
    if (newest != nullptr) {
      StatusOr<PluginInfo> info = plugin_stand_in_.GetInfo(path);
      if (!info.ok()) {
        reachable = info.status();
      } else if (info->name != driver) {
        reachable = UnavailableError(path + " now serves driver " + info->name);
      } else {
        reachable = DialUnix(info->endpoint);
      }
    }
    const auto now = Clock::now();
    if (reachable.ok()) {
      if (health.down_since) {
        log_->Info("plugin reachable again driver=" + driver +
                   " after=" + Seconds(now - *health.down_since));
      }
      health = DriverHealth{};
      continue;
    }
    if (!health.down_since) {
      health.down_since = now;
      log_->Warning("plugin unreachable driver=" + driver + ": " + reachable.message() +
                    "; its ResourceSlices go after " + Seconds(options_.wipe_after));
    }
    if (health.wiped || now - *health.down_since < options_.wipe_after) continue;
    int deleted = 0;
    if (Status s = WipeSlices(driver, &deleted); !s.ok()) {
      log_->Error("wipe ResourceSlices driver=" + driver + ": " + s.message() + "; retrying");
      continue;
    }
    health.wiped = true;
    log_->Warning("wiped ResourceSlices driver=" + driver + " node=" + options_.node_name +
                  " deleted=" + std::to_string(deleted) +
                  " unreachable_for=" + Seconds(now - *health.down_since));
  }
}

Status NodeAgent::WipeSlices(const std::string& driver, int* deleted) {
  kc::ListOptions list;
  list.field_selector = "spec.nodeName=" + options_.node_name + ",spec.driver=" + driver;
  ASSIGN_OR_RETURN(kc::ListPage page, client_->ListAll(kc::ResourceSlices(), "", list));
  for (const json& slice : page.items) {
    const json* spec = Member(slice, "spec");
    // Never trust the selector alone with deletions.
    if (spec == nullptr || StringAt(*spec, "nodeName") != options_.node_name ||
        StringAt(*spec, "driver") != driver) {
      continue;
    }
    kc::DeleteOptions precondition;
    precondition.uid = StringAt(Metadata(slice), "uid");
    Status s =
        client_->Delete(kc::ResourceSlices(), "", StringAt(Metadata(slice), "name"), precondition);
    if (s.ok()) {
      ++*deleted;
    } else if (s.code() != StatusCode::kNotFound && s.code() != StatusCode::kAborted) {
      return s;
    }
  }
  return OkStatus();
}

StatusOr<NodeAgent::Endpoint> NodeAgent::EndpointOf(const std::string& driver) {
  MutexLock lock(plugins_mu_);
  const Socket* newest = nullptr;
  for (const auto& [path, socket] : sockets_) {
    if (socket.info && socket.info->name == driver &&
        (newest == nullptr || socket.sequence > newest->sequence)) {
      newest = &socket;
    }
  }
  if (newest == nullptr) return UnavailableError("DRA driver " + driver + " is not registered");
  const auto& versions = newest->info->supported_versions;
  const bool v1 = std::find(versions.begin(), versions.end(), "v1.DRAPlugin") != versions.end();
  return Endpoint{newest->info->endpoint, v1 ? "v1" : "v1beta1"};
}

// -- Pods --

void NodeAgent::Enqueue(const std::string& key, std::chrono::milliseconds delay) {
  const auto due = Clock::now() + delay;
  {
    MutexLock lock(queue_mu_);
    auto [it, added] = queue_.emplace(key, due);
    if (!added && due < it->second) it->second = due;
  }
  queue_cv_.NotifyOne();
}

bool NodeAgent::NextKey(const std::atomic<bool>& stop, std::string* key) {
  MutexLock lock(queue_mu_);
  while (!stop.load()) {
    const auto now = Clock::now();
    auto first = queue_.end();
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (first == queue_.end() || it->second < first->second) first = it;
    }
    if (first != queue_.end() && first->second <= now) {
      *key = first->first;
      queue_.erase(first);
      return true;
    }
    auto until = now + kNap;
    if (first != queue_.end()) until = std::min(until, first->second);
    queue_cv_.WaitUntil(queue_mu_, until);
  }
  return false;
}

void NodeAgent::PodLoop(const std::atomic<bool>& stop) {
  // Until the cache is complete, a missing pod proves nothing: wait for it.
  while (!stop.load() && !pods_.WaitForSync(std::chrono::milliseconds(200))) {
  }
  if (stop.load()) return;
  log_->Info("pods synced node=" + options_.node_name + " count=" + std::to_string(pods_.size()));
  for (const auto& [key, state] : states_) Enqueue(key, {});
  std::string key;
  while (NextKey(stop, &key)) {
    Status s = SyncPod(key);
    if (s.ok()) {
      failures_.erase(key);
      last_error_.erase(key);
      continue;
    }
    const bool fresh = last_error_[key] != s.message();
    last_error_[key] = s.message();
    if (s.code() == StatusCode::kInvalidArgument) {
      if (fresh) log_->Error("pod " + key + ": " + s.message() + " (not retried until it changes)");
      continue;
    }
    const int n = ++failures_[key];
    const auto delay = std::min<std::chrono::milliseconds>(
        kMaxPodBackoff, std::chrono::milliseconds(250) * (1 << std::min(n - 1, 6)));
    log_->Log(fresh ? "info" : "debug", "pod pending pod=" + key + ": " + s.message() +
                                            " (retry in " + std::to_string(delay.count()) + "ms)");
    Enqueue(key, delay);
  }
}

Status NodeAgent::SyncPod(const std::string& key) {
  const kc::ObjectPtr pod = pods_.Get(key);
  const std::string uid = pod != nullptr ? StringAt(Metadata(*pod), "uid") : "";
  auto state = states_.find(key);
  if (state != states_.end() && (pod == nullptr || state->second.record.uid != uid)) {
    // The pod we prepared for is gone (deleted at once, or while we were down) or replaced.
    RETURN_IF_ERROR(Release(key));
    state = states_.end();
  }
  if (pod == nullptr) return OkStatus();
  const json& meta = Metadata(*pod);
  if (const json* deletion = Member(meta, "deletionTimestamp");
      deletion != nullptr && !deletion->is_null()) {
    if (state != states_.end()) RETURN_IF_ERROR(Release(key));
    kc::DeleteOptions options;
    options.uid = uid;
    options.grace_period_seconds = 0;
    Status s =
        client_->Delete(Pods(), StringAt(meta, "namespace"), StringAt(meta, "name"), options);
    if (s.ok()) log_->Info("deleted pod=" + key + " uid=" + uid);
    // NotFound: gone already; Aborted: the uid precondition failed, a new pod has the name.
    if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kAborted) return s;
    return OkStatus();
  }
  const json* status = Member(*pod, "status");
  const std::string phase = status != nullptr ? StringAt(*status, "phase") : "";
  if (phase == "Succeeded" || phase == "Failed") return OkStatus();
  if (state != states_.end() && state->second.running && phase == "Running") return OkStatus();
  return StartPod(key, *pod);
}

Status NodeAgent::StartPod(const std::string& key, const json& pod) {
  ASSIGN_OR_RETURN(std::vector<PodClaimRef> refs, PodClaims(pod));
  const json& meta = Metadata(pod);
  PodRecord record{StringAt(meta, "name"), StringAt(meta, "namespace"), StringAt(meta, "uid"), {}};
  std::set<std::string> seen;
  for (const PodClaimRef& ref : refs) {
    StatusOr<json> got = client_->Get(kc::ResourceClaims(), record.ns, ref.claim);
    if (!got.ok() && got.status().code() == StatusCode::kNotFound) {
      return UnavailableError("waiting for resourceclaim " + record.ns + "/" + ref.claim +
                              " (pod claim " + ref.entry + "): not found");
    }
    if (!got.ok()) return got.status();
    StatusOr<api::resource::ResourceClaim> claim =
        api::FromJson<api::resource::ResourceClaim>(*got);
    if (!claim.ok()) {
      return UnavailableError("read resourceclaim " + record.ns + "/" + ref.claim + ": " +
                              claim.status().message());
    }
    RETURN_IF_ERROR(ClaimReadyFor(*claim, record.uid));
    if (!seen.insert(claim->metadata.uid).second) continue;  // two entries, one claim
    record.claims.push_back({ref.claim, claim->metadata.uid, ClaimDrivers(*claim), {}});
  }

  // From here on the plugin may hold state for the claims: a deletion must unprepare them.
  PodState& state = states_[key];
  if (state.record.uid != record.uid) state = PodState{};
  state.record = std::move(record);
  state.running = false;
  if (Status s = PreparePod(&state); !s.ok()) {
    RecordPodEvent(&state, pod, s.message());
    return s;
  }
  const PodRecord& prepared = state.record;
  const std::string path = PodRecordPath(options_.StateDir(), prepared.ns, prepared.pod);
  if (Status s = WriteFileAtomically(path, ToJson(prepared).dump(2) + "\n", 0644); !s.ok()) {
    return UnavailableError("write pod record: " + s.message());
  }
  RETURN_IF_ERROR(SetRunning(pod));
  state.running = true;
  std::vector<std::string> ids;
  for (const ClaimRecord& claim : prepared.claims) {
    for (const KubeletDevice& device : claim.devices) {
      ids.insert(ids.end(), device.cdi_device_ids.begin(), device.cdi_device_ids.end());
    }
  }
  log_->Info("pod running pod=" + key + " uid=" + prepared.uid +
             " claims=" + std::to_string(prepared.claims.size()) + " cdi=" + Join(ids, ","));
  return OkStatus();
}

Status NodeAgent::PreparePod(PodState* state) {
  PodRecord& record = state->record;
  std::map<std::string, std::vector<size_t>> by_driver;
  for (size_t i = 0; i < record.claims.size(); ++i) {
    for (const std::string& driver : record.claims[i].drivers) by_driver[driver].push_back(i);
  }
  std::vector<std::string> errors;
  for (const auto& [driver, indices] : by_driver) {
    StatusOr<Endpoint> endpoint = EndpointOf(driver);
    if (!endpoint.ok()) {
      errors.push_back(endpoint.status().message());
      continue;
    }
    std::vector<KubeletClaim> batch;
    for (size_t i : indices) {
      batch.push_back({record.ns, record.claims[i].name, record.claims[i].uid});
    }
    auto answer = pod_stand_in_.Prepare(endpoint->socket, endpoint->api, batch);
    if (!answer.ok()) {
      errors.push_back("prepare with driver " + driver + ": " + answer.status().message());
      continue;
    }
    for (size_t i : indices) {
      ClaimRecord& claim = record.claims[i];
      const std::string what =
          "prepare resourceclaim " + record.ns + "/" + claim.name + " with driver " + driver;
      auto it = answer->find(claim.uid);
      if (it == answer->end()) {
        errors.push_back(what + ": the plugin did not answer for it");
      } else if (!it->second.error.empty()) {
        errors.push_back(what + ": " + it->second.error);
      } else {
        for (KubeletDevice device : it->second.devices) {
          device.share_id.reset();
          claim.devices.push_back(std::move(device));
        }
      }
    }
  }
  if (!errors.empty()) return UnavailableError(Join(errors, "; "));
  return OkStatus();
}

Status NodeAgent::SetRunning(const json& pod) {
  json object = pod;
  const json& meta = Metadata(pod);
  const std::string ns = StringAt(meta, "namespace");
  const std::string name = StringAt(meta, "name");
  const std::string uid = StringAt(meta, "uid");
  const std::string what = "update pod " + ns + "/" + name;
  for (int attempt = 0; attempt < 3; ++attempt) {
    object["status"] = RunningPodStatus(object, std::chrono::system_clock::now(), options_.host_ip);
    StatusOr<json> written = client_->UpdateStatus(Pods(), ns, object);
    if (written.ok()) return OkStatus();
    if (written.status().code() != StatusCode::kAborted) return written.status();
    ASSIGN_OR_RETURN(object, client_->Get(Pods(), ns, name));
    if (StringAt(Metadata(object), "uid") != uid) {
      return UnavailableError(what + ": replaced by another pod");
    }
  }
  return Status(StatusCode::kAborted, what + " status: conflicts on every attempt");
}

Status NodeAgent::Release(const std::string& key) {
  auto it = states_.find(key);
  if (it == states_.end()) return OkStatus();
  const PodRecord& record = it->second.record;
  std::vector<PodRecord> others;
  for (const auto& [k, s] : states_) {
    if (k != key) others.push_back(s.record);
  }
  const std::vector<ClaimRecord> claims = ClaimsToUnprepare(record, others);
  std::map<std::string, std::vector<KubeletClaim>> by_driver;
  for (const ClaimRecord& claim : claims) {
    for (const std::string& driver : claim.drivers) {
      by_driver[driver].push_back({record.ns, claim.name, claim.uid});
    }
  }
  std::vector<std::string> errors;
  for (const auto& [driver, batch] : by_driver) {
    StatusOr<Endpoint> endpoint = EndpointOf(driver);
    if (!endpoint.ok()) {
      errors.push_back("unprepare: " + endpoint.status().message());
      continue;
    }
    auto answer = pod_stand_in_.Unprepare(endpoint->socket, endpoint->api, batch);
    if (!answer.ok()) {
      errors.push_back("unprepare with driver " + driver + ": " + answer.status().message());
      continue;
    }
    for (const KubeletClaim& claim : batch) {
      auto result = answer->find(claim.uid);
      if (result != answer->end() && !result->second.empty()) {
        errors.push_back("unprepare resourceclaim " + claim.ns + "/" + claim.name +
                         " with driver " + driver + ": " + result->second);
      }
    }
  }
  if (!errors.empty()) return UnavailableError(Join(errors, "; "));
  RETURN_IF_ERROR(RemoveFileDurably(PodRecordPath(options_.StateDir(), record.ns, record.pod)));
  log_->Info("released pod=" + key + " uid=" + record.uid +
             " unprepared=" + std::to_string(claims.size()));
  states_.erase(it);
  return OkStatus();
}

void NodeAgent::RecordPodEvent(PodState* state, const json& pod, const std::string& message) {
  if (state->last_event == message) return;
  state->last_event = message;
  const std::string ns = StringAt(Metadata(pod), "namespace");
  StatusOr<json> created =
      client_->Create(kc::Events(), ns,
                      PodEvent(pod, "FailedPrepareDynamicResources", message, options_.node_name,
                               std::chrono::system_clock::now()));
  if (!created.ok()) log_->Debug("record event: " + created.status().message());
}

int RunNodeAgent(const NodeAgentOptions& options, const std::atomic<bool>& stop,
                 std::ostream& log_out) {
  Logger log(log_out, options.log_level);
  StatusOr<kc::ClusterConfig> config = kc::ResolveClusterConfig(options.kubeconfig);
  if (!config.ok()) {
    log.Error(config.status().message());
    return 1;
  }
  config->user_agent = "xpu-node-agent";
  kc::ClientOptions client_options;
  client_options.timeout = std::chrono::seconds(15);  // a stop waits for at most one request
  StatusOr<std::unique_ptr<kc::Client>> client = kc::Client::Create(*config, client_options);
  if (!client.ok()) {
    log.Error(client.status().message());
    return 1;
  }
  log.Info("starting node=" + options.node_name + " api=" + config->Describe() +
           " registry=" + options.plugin_registry_dir + " state=" + options.StateDir());
  NodeAgent agent(options, client->get(), &log);
  if (Status s = agent.Run(stop); !s.ok()) {
    log.Error(s.message());
    return 1;
  }
  log.Info("stopped node=" + options.node_name);
  return 0;
}

}  // namespace xpu::e2e
