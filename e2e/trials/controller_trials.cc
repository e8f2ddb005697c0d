#include "e2e/trials/controller_trials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "api/accelerator_gang.h"
#include "base/time.h"
#include "bench/controller_run.h"
#include "e2e/client/wait.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "e2e/trials/invariants.h"
#include "e2e/trials/rig.h"

namespace xpu::e2e::trials {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kDriver = DriverHarness::kDriver;
constexpr const char* kNamespace = DriverHarness::kNamespace;
constexpr const char* kGangNamespace = "train";
constexpr int kGangSlots = 3;  // gangs "gang-0".."gang-2", each made and deleted by the changes

// What an injected fault looks like to the client once its own retries (429 and 5xx) are spent,
// or at once for a 409 Conflict.
bool Transient(const Status& s) {
  static const std::set<StatusCode> kTransient = {
      StatusCode::kAborted, StatusCode::kUnavailable, StatusCode::kInternal,
      StatusCode::kResourceExhausted, StatusCode::kDeadlineExceeded};
  return kTransient.contains(s.code());
}

Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const StatusOr<T>& s) {
  return s.status();
}

// `op` again while it fails with an injected fault: the trials' own writes and reads go through
// the same faults as the controller's.
template <typename F>
auto Retried(F op) -> decltype(op()) {
  auto result = op();
  for (int attempt = 0; attempt < 100 && Transient(StatusOf(result)); ++attempt) {
    std::this_thread::sleep_for(milliseconds(10));
    result = op();
  }
  return result;
}

Status IgnoreNotFound(const Status& s) {
  return s.code() == StatusCode::kNotFound ? OkStatus() : s;
}

std::string Lines(const std::vector<std::string>& lines, size_t most = 12) {
  std::string out;
  for (size_t i = 0; i < lines.size() && i < most; ++i) out += "\n  " + lines[i];
  if (lines.size() > most) out += "\n  ... " + std::to_string(lines.size() - most) + " more";
  return out;
}

// A node as the trials have written it.
struct SimNode {
  std::string name;
  std::string uid;   // the Node's; "" while it is deleted
  std::string host;  // whose inventory it has; "" while the NodeInventory is deleted
};

class ControllerTrials {
 public:
  explicit ControllerTrials(ControllerTrialOptions options)
      : options_(std::move(options)), rng_(options_.plan.seed) {}

  StatusOr<TrialStats> Run();

 private:
  Status SetUp();
  Status LoadHosts();
  Status CreateNode(SimNode& node);
  Status DeleteNode(SimNode& node);
  Status PutInventory(SimNode& node, const std::string& host);
  Status DeleteInventory(SimNode& node);
  Status CreatePluginLease(const std::string& node);
  // A gang slot made (a random spec) when empty, else its gang deleted.
  Status ToggleGang(int slot);
  // A change: to a random node, another host's inventory (most often), the inventory or the
  // Node deleted, or made again; or a gang made or deleted.
  Status Change();
  std::string OtherHost(const std::string& host);
  std::map<std::string, ExpectedPool> Want() const;
  StatusOr<std::vector<json>> Slices();
  // The gangs, their claims and templates, and `slices`, for the gang checks.
  StatusOr<GangWorld> Gangs(std::vector<json> slices);
  // The names ("<ns>/<name>") of the objects of `resource` in the gang namespace.
  StatusOr<std::set<std::string>> NamesIn(const kc::ResourceRef& resource);
  Status SetFaults(double rate);
  Status StartController();
  // Waits until the restarted controller leads and the slices equal Want() (within the bound of
  // `killed`), then checks that they stay so and that no pool's generation went back.
  Status Converge(Clock::time_point killed);
  Status Violation(const std::string& what) const;

  const ControllerTrialOptions options_;
  std::mt19937_64 rng_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<kc::Client> client_;
  std::unique_ptr<ChildProcess> controller_;
  int controller_runs_ = 0;
  std::vector<std::string> hosts_;
  std::map<std::string, json> inventories_;          // host -> its NodeInventory
  std::map<std::string, std::vector<json>> golden_;  // host -> its slices' devices
  std::vector<SimNode> nodes_;
  std::vector<bool> gangs_ = std::vector<bool>(kGangSlots, false);  // slot -> its gang exists
  std::map<std::string, int64_t> generations_;  // pool -> generation, while it stays published
  TrialStats stats_{.part = "controller", .bound = options_.plan.bound};
  int trial_ = 0;
  int64_t changes_ = 0;
  int64_t checked_pools_ = 0;  // pools found exactly as wanted, over all checks
  int64_t gang_changes_ = 0;
  int64_t gangs_whole_ = 0;   // gangs found Placed and whole, over all checks
  int64_t gangs_absent_ = 0;  // gangs found not placed (or gone) and absent, over all checks
};

Status ControllerTrials::Violation(const std::string& what) const {
  const ChildProcess* controller = controller_.get();
  return DataLossError("controller kill " + std::to_string(stats_.kills) + " (trial " +
                       std::to_string(trial_) + "): " + what + "; logs in " +
                       options_.plan.work_dir +
                       (controller == nullptr ? "" : " (last: " + controller->log_path() + ")"));
}

Status ControllerTrials::LoadHosts() {
  const fs::path dir = fs::path(SourceDir()) / "e2e/fixtures/hosts-expected";
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    const std::string host = e.path().stem().string();
    const fs::path golden =
        fs::path(SourceDir()) / "e2e/fixtures/slices-expected" / (host + ".attributes.json");
    std::ifstream inventory_in(e.path());
    std::ifstream golden_in(golden);
    json inventory = json::parse(inventory_in, nullptr, /*allow_exceptions=*/false);
    const json slices = json::parse(golden_in, nullptr, /*allow_exceptions=*/false);
    if (inventory.is_discarded() || slices.is_discarded()) {
      return InternalError("read " + e.path().string() + " or " + golden.string() + ": not JSON");
    }
    inventory.erase("metadata");
    inventories_[host] = std::move(inventory);
    golden_[host] = GoldenSlices(slices);
    hosts_.push_back(host);
  }
  if (ec) return InternalError("list " + dir.string() + ": " + ec.message());
  if (hosts_.size() < 2) return InternalError(dir.string() + ": fewer than two hosts");
  std::sort(hosts_.begin(), hosts_.end());  // directory order is not the seed's
  return OkStatus();
}

Status ControllerTrials::CreateNode(SimNode& node) {
  ASSIGN_OR_RETURN(node.uid, Retried([&] { return trials::CreateNode(*client_, node.name); }));
  return OkStatus();
}

Status ControllerTrials::DeleteNode(SimNode& node) {
  // kube-sim deletes what the Node owns (its slices) as the garbage collector would.
  RETURN_IF_ERROR(
      IgnoreNotFound(Retried([&] { return client_->Delete(kc::Nodes(), "", node.name); })));
  node.uid.clear();
  return OkStatus();
}

Status ControllerTrials::PutInventory(SimNode& node, const std::string& host) {
  json object = inventories_.at(host);
  object["metadata"] = {{"name", node.name}};
  if (node.host.empty()) {
    json bare = object;
    bare.erase("status");
    RETURN_IF_ERROR(
        Retried([&] { return client_->Create(kc::NodeInventories(), "", bare); }).status());
  }
  // Status through its subresource, as the plugin writes it; no resourceVersion: last write wins.
  RETURN_IF_ERROR(
      Retried([&] { return client_->UpdateStatus(kc::NodeInventories(), "", object); }).status());
  node.host = host;
  return OkStatus();
}

Status ControllerTrials::DeleteInventory(SimNode& node) {
  RETURN_IF_ERROR(IgnoreNotFound(
      Retried([&] { return client_->Delete(kc::NodeInventories(), "", node.name); })));
  node.host.clear();
  return OkStatus();
}

Status ControllerTrials::CreatePluginLease(const std::string& node) {
  // Fresh for a day: every node's plugin stays live through the trials.
  const json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", "xpu-dra-plugin-" + node}, {"namespace", kNamespace}}},
                      {"spec",
                       {{"holderIdentity", node},
                        {"leaseDurationSeconds", 86400},
                        {"renewTime", FormatMicroTime(std::chrono::system_clock::now())}}}};
  return Retried([&] { return client_->Create(kc::Leases(), kNamespace, lease); }).status();
}

Status ControllerTrials::ToggleGang(int slot) {
  const std::string name = "gang-" + std::to_string(slot);
  ++gang_changes_;
  if (gangs_[slot]) {
    gangs_[slot] = false;
    return IgnoreNotFound(
        Retried([&] { return client_->Delete(kc::AcceleratorGangs(), kGangNamespace, name); }));
  }
  // One or two nodes of 1 to 8 devices of any device (a DeviceClass the controller does not
  // judge), or of one vendor's class; a member's failure replaces it or fails the gang.
  static const std::vector<std::pair<std::string, std::string>> kClasses = {
      {"deviceClassName", "xpu.dra.dev"},
      {"capabilityClass", "huawei.xpu.dra.dev"},
      {"capabilityClass", "nvidia.xpu.dra.dev"}};
  const auto& [class_field, class_name] = kClasses[rng_() % kClasses.size()];
  const json gang = {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                     {"kind", "AcceleratorGang"},
                     {"metadata", {{"name", name}, {"namespace", kGangNamespace}}},
                     {"spec",
                      {{"nodes", 1 + static_cast<int>(rng_() % 2)},
                       {"devicesPerNode", std::vector<int>{1, 2, 4, 8}[rng_() % 4]},
                       {class_field, class_name},
                       {"onNodeFailure", rng_() % 4 == 0 ? "fail" : "replace"}}}};
  Status made = Retried([&] {
                  return client_->Create(kc::AcceleratorGangs(), kGangNamespace, gang);
                }).status();
  // A create retried after a fault that came once the object was stored finds it there.
  if (!made.ok() && made.code() != StatusCode::kAlreadyExists) return made;
  gangs_[slot] = true;
  return OkStatus();
}

std::string ControllerTrials::OtherHost(const std::string& host) {
  std::string other = host;
  while (other == host) other = hosts_[rng_() % hosts_.size()];
  return other;
}

Status ControllerTrials::Change() {
  ++changes_;
  if (rng_() % 4 == 0) return ToggleGang(static_cast<int>(rng_() % kGangSlots));
  SimNode& node = nodes_[rng_() % nodes_.size()];
  const uint64_t pick = rng_() % 10;
  if (!node.uid.empty() && !node.host.empty() && pick < 6) {
    // Other hardware facts: the pool stays, and its generation must not go back.
    return PutInventory(node, OtherHost(node.host));
  }
  generations_.erase(node.name);                  // a pool withdrawn or made again starts afresh
  if (node.uid.empty()) return CreateNode(node);  // back, with a new uid
  if (node.host.empty()) return PutInventory(node, OtherHost(""));
  return pick < 8 ? DeleteInventory(node) : DeleteNode(node);
}

std::map<std::string, ExpectedPool> ControllerTrials::Want() const {
  std::map<std::string, ExpectedPool> want;
  for (const SimNode& n : nodes_) {
    if (!n.uid.empty() && !n.host.empty()) want[n.name] = {n.uid, golden_.at(n.host)};
  }
  return want;
}

StatusOr<std::vector<json>> ControllerTrials::Slices() {
  kc::ListOptions options;
  options.field_selector = std::string("spec.driver=") + kDriver;
  ASSIGN_OR_RETURN(kc::ListPage page,
                   Retried([&] { return client_->ListAll(kc::ResourceSlices(), "", options); }));
  return std::move(page.items);
}

StatusOr<std::set<std::string>> ControllerTrials::NamesIn(const kc::ResourceRef& resource) {
  ASSIGN_OR_RETURN(kc::ListPage page,
                   Retried([&] { return client_->ListAll(resource, kGangNamespace, {}); }));
  std::set<std::string> names;
  for (const json& o : page.items) {
    names.insert(std::string(kGangNamespace) + "/" + o.value("/metadata/name"_json_pointer, ""));
  }
  return names;
}

StatusOr<GangWorld> ControllerTrials::Gangs(std::vector<json> slices) {
  GangWorld world;
  ASSIGN_OR_RETURN(kc::ListPage gangs, Retried([&] {
                     return client_->ListAll(kc::AcceleratorGangs(), kGangNamespace, {});
                   }));
  world.gangs = std::move(gangs.items);
  world.slices = std::move(slices);
  ASSIGN_OR_RETURN(world.claims, NamesIn(kc::ResourceClaims()));
  ASSIGN_OR_RETURN(world.templates, NamesIn(kc::ResourceClaimTemplates()));
  return world;
}

Status ControllerTrials::SetFaults(double rate) {
  const json faults = {{"rate", rate}, {"seed", options_.plan.seed}};
  return Retried([&] { return client_->PostPath("/kube-sim/faults", faults); }).status();
}

Status ControllerTrials::StartController() {
  // One identity across restarts: the new instance takes over its own leader Lease at once, as a
  // restarted container of the same pod would not; the trials are about publishing, not election.
  // The flags of DriverHarness::StartController, on the built-in config; the binary the options
  // name.
  if (controller_ != nullptr) controller_->Kill();
  const std::vector<std::string> args = {"--kubeconfig",     cluster_->kubeconfig(),
                                         "--namespace",      kNamespace,
                                         "--metrics-addr",   "127.0.0.1:0",
                                         "--claim-debounce", "200ms",
                                         "--identity",       "crash-trials",
                                         "--retry-period",   "500ms",
                                         "--log-level",      "info"};
  const std::string log =
      options_.plan.work_dir + "/controller-" + std::to_string(++controller_runs_) + ".log";
  ASSIGN_OR_RETURN(controller_, ChildProcess::Start(options_.controller_binary, args, log));
  return OkStatus();
}

Status ControllerTrials::Converge(Clock::time_point killed) {
  const Clock::time_point deadline = killed + options_.plan.bound;
  std::vector<std::string> diff;
  std::vector<json> slices;
  std::vector<json> gangs;
  ChildProcess* controller = controller_.get();
  bool slices_right = false;  // the node pools right: any difference left is a gang's
  bool settled = false;       // converged once: the queue may fill again (resyncs, health)
  const auto converged = [&] {
    slices_right = false;
    const std::string log = controller->Log();
    if (log.find("became leader") == std::string::npos) {
      diff = {"the restarted controller has not become leader"};
      return false;
    }
    // Nothing queued (retries may wait): the new leader has acted on what it found.
    const auto at = log.find("(port ");
    if (!settled && at != std::string::npos) {
      const std::string page = HttpGet(std::stoi(log.substr(at + 6)), "/metrics");
      if (page.find("xpu_dra_controller_queue_depth") == std::string::npos ||
          bench::MetricValue(page, "xpu_dra_controller_queue_depth") > 0) {
        diff = {"the controller's work queue is not empty"};
        return false;
      }
    }
    StatusOr<std::vector<json>> listed = Slices();
    if (!listed.ok()) {
      diff = {"list slices: " + listed.status().message()};
      return false;
    }
    slices = std::move(listed).value();
    const std::map<std::string, ExpectedPool> want = Want();
    diff = SliceDifferences(want, slices);
    if (!diff.empty()) return false;
    slices_right = true;
    // Gangs whole or absent: read once the slices are right (the members' attribute included).
    StatusOr<GangWorld> world = Gangs(slices);
    if (!world.ok()) {
      diff = {"list gangs: " + world.status().message()};
      return false;
    }
    diff = UnjudgedGangs(world->gangs);
    if (!diff.empty()) return false;
    std::set<std::string> live;
    for (const auto& [pool, expected] : want) live.insert(pool);
    diff = GangDifferences(*world, live);
    gangs = std::move(world->gangs);
    return diff.empty();
  };
  const bool done =
      Eventually(converged, std::chrono::duration_cast<milliseconds>(deadline - Clock::now()),
                 milliseconds(25));
  if (!controller->Running()) {
    return Violation("the controller exited with code " + std::to_string(controller->Wait()));
  }
  if (!done) {
    return Violation("the slices did not converge within " +
                     std::to_string(options_.plan.bound.count()) +
                     " ms of the kill:" + Lines(diff));
  }
  stats_.recovery_ms.push_back(MsSince(killed));
  settled = true;
  // Still so a little later: nothing left in flight writes a duplicate or takes a slice away.
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    if (converged()) continue;
    if (!slices_right) return Violation("the slices converged, then changed:" + Lines(diff));
    // A gang the new leader moved or failed just now: its status is written first and its
    // members' attribute after (gangs.h), so it must settle, whole or absent, within the bound.
    if (!Eventually(converged, std::chrono::duration_cast<milliseconds>(deadline - Clock::now()),
                    milliseconds(25))) {
      return Violation("a gang did not settle, whole or absent, within the bound:" + Lines(diff));
    }
  }
  for (const auto& [pool, generation] : PoolGenerations(slices)) {
    // Each gang slice is a pool of its own under one name (gangs.h): its top may go back.
    if (pool == api::kGangPoolName) continue;
    const auto [it, fresh] = generations_.emplace(pool, generation);
    if (!fresh && generation < it->second) {
      return Violation("pool " + pool + ": generation went back from " +
                       std::to_string(it->second) + " to " + std::to_string(generation));
    }
    it->second = generation;
  }
  ++stats_.checks;
  checked_pools_ += static_cast<int64_t>(Want().size());
  for (const json& g : gangs) {
    ++(g.value("/status/phase"_json_pointer, "") == "Placed" ? gangs_whole_ : gangs_absent_);
  }
  gangs_absent_ += kGangSlots - static_cast<int64_t>(gangs.size());  // gone: absent too
  return OkStatus();
}

Status ControllerTrials::SetUp() {
  ClusterOptions cluster;
  cluster.kube_sim_flags = {"--seed", std::to_string(options_.plan.seed), "--fault-codes",
                            "409,429,500,503"};
  ASSIGN_OR_RETURN(cluster_, Cluster::Start(cluster));
  ASSIGN_OR_RETURN(client_, cluster_->NewClient());
  RETURN_IF_ERROR(EnsureNamespace(*client_, kNamespace));
  RETURN_IF_ERROR(EnsureNamespace(*client_, kGangNamespace));
  RETURN_IF_ERROR(LoadHosts());
  for (int i = 0; i < options_.nodes; ++i) {
    nodes_.push_back({"node-" + std::to_string(i), "", ""});
    RETURN_IF_ERROR(CreateNode(nodes_.back()));
    RETURN_IF_ERROR(PutInventory(nodes_.back(), OtherHost("")));
    RETURN_IF_ERROR(CreatePluginLease(nodes_.back().name));
  }
  std::error_code ec;
  fs::create_directories(options_.plan.work_dir, ec);
  if (ec) return InternalError("create " + options_.plan.work_dir + ": " + ec.message());
  return OkStatus();
}

StatusOr<TrialStats> ControllerTrials::Run() {
  RETURN_IF_ERROR(options_.Validate());
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(SetUp());
  RETURN_IF_ERROR(StartController());
  RETURN_IF_ERROR(Converge(Clock::now()));  // the first publish, without faults
  stats_.recovery_ms.clear();
  stats_.checks = 0;
  checked_pools_ = 0;
  RETURN_IF_ERROR(SetFaults(options_.fault_rate));
  Restarts restarts(options_.plan, &stats_, &rng_, milliseconds(400));
  std::uniform_int_distribution<int64_t> delay(0, options_.plan.max_kill_delay.count());
  while (!restarts.done()) {
    ++trial_;
    // One to three changes at random moments before the kill, so that it finds publishing under
    // way as often as not.
    const Clock::time_point begun = Clock::now();
    const milliseconds kill_at(delay(rng_));
    std::vector<milliseconds> change_at(1 + rng_() % 3);
    for (milliseconds& at : change_at) at = milliseconds(rng_() % (kill_at.count() + 1));
    std::sort(change_at.begin(), change_at.end());
    for (const milliseconds at : change_at) {
      std::this_thread::sleep_until(begun + at);
      RETURN_IF_ERROR(Change());
    }
    std::this_thread::sleep_until(begun + kill_at);
    ChildProcess* controller = controller_.get();
    if (!controller->Running()) {
      return Violation("the controller exited by itself with code " +
                       std::to_string(controller->Wait()));
    }
    controller->Kill();
    const Clock::time_point killed = Clock::now();
    // Frozen now: what the killed controller left undone.
    ASSIGN_OR_RETURN(std::vector<json> left, Slices());
    if (!SliceDifferences(Want(), left).empty()) ++stats_.kills_mid_work;
    // The reservation (a gang's status) is one write: whole or absent even at the kill.
    ASSIGN_OR_RETURN(const GangWorld frozen, Gangs(std::move(left)));
    if (const auto partial = GangReservationDifferences(frozen.gangs); !partial.empty()) {
      return Violation("a gang's reservation at the kill:" + Lines(partial));
    }
    ASSIGN_OR_RETURN(const Clock::time_point last,
                     restarts.AfterKill(
                         killed, [&] { return StartController(); }, [&] { controller_->Kill(); }));
    RETURN_IF_ERROR(Converge(last));
    restarts.Progress(start);
  }
  // Faults off: the same slices, and a clean stop.
  RETURN_IF_ERROR(SetFaults(0));
  const std::vector<double> recoveries = stats_.recovery_ms;
  RETURN_IF_ERROR(Converge(Clock::now()));
  stats_.recovery_ms = recoveries;
  if (const int code = controller_->Stop(); code != 0) {
    return Violation("the controller exited with code " + std::to_string(code) + " on SIGTERM");
  }
  stats_.counters = {{"node changes", changes_},
                     {"pools checked", checked_pools_},
                     {"gang changes", gang_changes_},
                     {"gangs found whole", gangs_whole_},
                     {"gangs found absent", gangs_absent_},
                     {"nodes", static_cast<int64_t>(nodes_.size())},
                     {"fault rate %", std::lround(options_.fault_rate * 100)}};
  stats_.seconds = MsSince(start) / 1000;
  return stats_;
}

}  // namespace

Status ControllerTrialOptions::Validate() const {
  RETURN_IF_ERROR(plan.Validate("--controller"));
  if (nodes < 1) return InvalidArgumentError("--controller: no nodes");
  if (controller_binary.empty()) return InvalidArgumentError("--controller: no controller binary");
  if (fault_rate < 0 || fault_rate > 0.5) {
    return InvalidArgumentError("--controller: the fault rate must be in [0, 0.5]");
  }
  return OkStatus();
}

StatusOr<TrialStats> RunControllerTrials(const ControllerTrialOptions& options) {
  return ControllerTrials(options).Run();
}

}  // namespace xpu::e2e::trials
