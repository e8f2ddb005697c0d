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

#include "base/time.h"
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
  // A change to a random node: another host's inventory (most often), the inventory or the Node
  // deleted, or made again.
  Status Change();
  std::string OtherHost(const std::string& host);
  std::map<std::string, ExpectedPool> Want() const;
  StatusOr<std::vector<json>> Slices();
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
  std::unique_ptr<DriverHarness> harness_;
  std::vector<std::string> hosts_;
  std::map<std::string, json> inventories_;          // host -> its NodeInventory
  std::map<std::string, std::vector<json>> golden_;  // host -> its slices' devices
  std::vector<SimNode> nodes_;
  std::map<std::string, int64_t> generations_;  // pool -> generation, while it stays published
  TrialStats stats_{.part = "controller", .bound = options_.plan.bound};
  int trial_ = 0;
  int64_t changes_ = 0;
  int64_t checked_pools_ = 0;  // pools found exactly as wanted, over all checks
};

Status ControllerTrials::Violation(const std::string& what) const {
  const ChildProcess* controller = harness_ == nullptr ? nullptr : harness_->controller();
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

std::string ControllerTrials::OtherHost(const std::string& host) {
  std::string other = host;
  while (other == host) other = hosts_[rng_() % hosts_.size()];
  return other;
}

Status ControllerTrials::Change() {
  SimNode& node = nodes_[rng_() % nodes_.size()];
  const uint64_t pick = rng_() % 10;
  ++changes_;
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

Status ControllerTrials::SetFaults(double rate) {
  const json faults = {{"rate", rate}, {"seed", options_.plan.seed}};
  return Retried([&] { return client_->PostPath("/kube-sim/faults", faults); }).status();
}

Status ControllerTrials::StartController() {
  // One identity across restarts: the new instance takes over its own leader Lease at once, as a
  // restarted container of the same pod would not; the trials are about publishing, not election.
  return harness_->StartController(
      "", {"--identity", "crash-trials", "--retry-period", "500ms", "--log-level", "info"});
}

Status ControllerTrials::Converge(Clock::time_point killed) {
  const Clock::time_point deadline = killed + options_.plan.bound;
  std::vector<std::string> diff;
  std::vector<json> slices;
  ChildProcess* controller = harness_->controller();
  const auto converged = [&] {
    if (controller->Log().find("became leader") == std::string::npos) {
      diff = {"the restarted controller has not become leader"};
      return false;
    }
    StatusOr<std::vector<json>> listed = Slices();
    if (!listed.ok()) {
      diff = {"list slices: " + listed.status().message()};
      return false;
    }
    slices = std::move(listed).value();
    diff = SliceDifferences(Want(), slices);
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
  // Still so a little later: nothing left in flight writes a duplicate or takes a slice away.
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    if (!converged()) return Violation("the slices converged, then changed:" + Lines(diff));
  }
  for (const auto& [pool, generation] : PoolGenerations(slices)) {
    const auto [it, fresh] = generations_.emplace(pool, generation);
    if (!fresh && generation < it->second) {
      return Violation("pool " + pool + ": generation went back from " +
                       std::to_string(it->second) + " to " + std::to_string(generation));
    }
    it->second = generation;
  }
  ++stats_.checks;
  checked_pools_ += static_cast<int64_t>(Want().size());
  return OkStatus();
}

Status ControllerTrials::SetUp() {
  ClusterOptions cluster;
  cluster.kube_sim_flags = {"--seed", std::to_string(options_.plan.seed), "--fault-codes",
                            "409,429,500,503"};
  ASSIGN_OR_RETURN(cluster_, Cluster::Start(cluster));
  ASSIGN_OR_RETURN(client_, cluster_->NewClient());
  RETURN_IF_ERROR(EnsureNamespace(*client_, kNamespace));
  RETURN_IF_ERROR(LoadHosts());
  for (int i = 0; i < options_.nodes; ++i) {
    nodes_.push_back({"node-" + std::to_string(i), "", ""});
    RETURN_IF_ERROR(CreateNode(nodes_.back()));
    RETURN_IF_ERROR(PutInventory(nodes_.back(), OtherHost("")));
    RETURN_IF_ERROR(CreatePluginLease(nodes_.back().name));
  }
  ASSIGN_OR_RETURN(harness_, DriverHarness::Create(*cluster_, options_.plan.work_dir));
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
    ChildProcess* controller = harness_->controller();
    if (!controller->Running()) {
      return Violation("the controller exited by itself with code " +
                       std::to_string(controller->Wait()));
    }
    controller->Kill();
    const Clock::time_point killed = Clock::now();
    // Frozen now: what the killed controller left undone.
    ASSIGN_OR_RETURN(std::vector<json> left, Slices());
    if (!SliceDifferences(Want(), left).empty()) ++stats_.kills_mid_work;
    ASSIGN_OR_RETURN(const Clock::time_point last, restarts.AfterKill(
                                                       killed, [&] { return StartController(); },
                                                       [&] { harness_->controller()->Kill(); }));
    RETURN_IF_ERROR(Converge(last));
    restarts.Progress(start);
  }
  // Faults off: the same slices, and a clean stop.
  RETURN_IF_ERROR(SetFaults(0));
  const std::vector<double> recoveries = stats_.recovery_ms;
  RETURN_IF_ERROR(Converge(Clock::now()));
  stats_.recovery_ms = recoveries;
  if (const int code = harness_->controller()->Stop(); code != 0) {
    return Violation("the controller exited with code " + std::to_string(code) + " on SIGTERM");
  }
  stats_.counters = {{"node changes", changes_},
                     {"pools checked", checked_pools_},
                     {"nodes", static_cast<int64_t>(nodes_.size())},
                     {"fault rate %", std::lround(options_.fault_rate * 100)}};
  stats_.seconds = MsSince(start) / 1000;
  return stats_;
}

}  // namespace

Status ControllerTrialOptions::Validate() const {
  RETURN_IF_ERROR(plan.Validate("--controller"));
  if (nodes < 1) return InvalidArgumentError("--controller: no nodes");
  if (fault_rate < 0 || fault_rate > 0.5) {
    return InvalidArgumentError("--controller: the fault rate must be in [0, 0.5]");
  }
  return OkStatus();
}

StatusOr<TrialStats> RunControllerTrials(const ControllerTrialOptions& options) {
  return ControllerTrials(options).Run();
}

}  // namespace xpu::e2e::trials
