#include "e2e/kubelet/node_agent.h"

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

#include "api/client/kubeconfig.h"
#include "base/atomic_file.h"
#include "base/text.h"
#include "base/time.h"

namespace xpu::e2e {
namespace {

namespace kc = api::client;
using nlohmann::json;

constexpr std::chrono::milliseconds kRegistryPoll{500};
constexpr std::chrono::milliseconds kNap{100};

kc::ResourceRef Pods() { return {"", "v1", "pods", true}; }

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

}  // namespace

NodeAgent::NodeAgent(NodeAgentOptions options, kc::Client* client, Logger* log)
    : options_(std::move(options)), client_(client), log_(log), pods_(client, Pods(), [&] {
        kc::InformerOptions o;
        o.field_selector = "spec.nodeName=" + options_.node_name;
        return o;
      }()) {}

Status NodeAgent::Run(const StopFlag& stop) {
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

void NodeAgent::NodeLoop(const StopFlag& stop) {
  auto next = Clock::now();
  while (!stop.IsSet()) {
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

void NodeAgent::PluginLoop(const StopFlag& stop) {
  while (!stop.IsSet()) {
    ScanRegistry();
    ProbeDrivers();
    stop.WaitFor(kRegistryPoll);
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

bool NodeAgent::NextKey(const StopFlag& stop, std::string* key) {
  MutexLock lock(queue_mu_);
  while (!stop.IsSet()) {
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

void NodeAgent::PodLoop(const StopFlag& stop) {
  // Until the cache is complete, a missing pod proves nothing: wait for it.
  while (!stop.IsSet() && !pods_.WaitForSync(std::chrono::milliseconds(200))) {
  }
  if (stop.IsSet()) return;
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

int RunNodeAgent(const NodeAgentOptions& options, const StopFlag& stop, std::ostream& log_out) {
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
