#include "e2e/trials/plugin_trials.h"

#include <algorithm>
#include <atomic>
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

#include "base/mutex.h"
#include "e2e/client/child_process.h"
#include "e2e/client/claims.h"
#include "e2e/client/wait.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "e2e/trials/invariants.h"
#include "e2e/trials/rig.h"

namespace xpu::e2e::trials {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr const char* kNode = "n1";
// Never prepared: an unprepare of it answers once the plugin's start-up reconciliation is done.
constexpr const char* kProbeUid = "00000000-0000-4000-8000-00000000c0de";

// One call the kubelet keeps retrying until every claim in it succeeded.
struct Batch {
  bool prepare = true;
  std::vector<size_t> claims;  // indices into the claim table
};

class PluginTrials {
 public:
  explicit PluginTrials(PluginTrialOptions options)
      : options_(std::move(options)), rng_(options_.plan.seed) {}
  ~PluginTrials() { StopKubelets(); }
  PluginTrials(const PluginTrials&) = delete;
  PluginTrials& operator=(const PluginTrials&) = delete;

  StatusOr<TrialStats> Run();

 private:
  Status SetUp();
  Status StartPlugin();
  // Kill -> restart -> registered -> every kubelet loop idle with nothing to retry -> the disk.
  Status Recover(Clock::time_point killed);
  Status CheckDisk();
  Status Violation(const std::string& what) const;

  void Kubelet(size_t index);
  Batch NextBatch(const std::vector<size_t>& mine, std::mt19937_64& rng) const;
  // Calls the plugin once; returns the claims of `batch` that did not succeed.
  std::vector<size_t> Call(KubeletStandIn& kubelet, const Batch& batch, const std::string& api);
  // Waits before a retry: `delay`, or until the plugin registers again or the loops stop.
  void Backoff(milliseconds delay, uint64_t registration);
  void Pause();
  void Resume();
  bool WaitIdle(Clock::time_point deadline);
  void StopKubelets();

  std::string Dir(const char* sub) const { return options_.plan.work_dir + "/" + sub; }
  std::string RegistrationSocket() const {
    return Dir("registry") + "/" + std::string(DriverHarness::kDriver) + "-reg.sock";
  }
  std::string DraSocket() const { return Dir("plugins") + "/dra.sock"; }

  const PluginTrialOptions options_;
  std::mt19937_64 rng_;  // the killer's
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<ChildProcess> plugin_;
  std::vector<TrialClaim> claims_;
  std::vector<std::thread> kubelets_;
  TrialStats stats_{.part = "plugin", .bound = options_.plan.bound};
  int trial_ = 0;
  int64_t checked_claims_ = 0;  // prepared claims found whole on disk, over all checks

  std::atomic<int> in_flight_{0};  // calls the kubelet loops have open
  Mutex mu_;
  CondVar cv_;
  bool pause_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  int idle_ GUARDED_BY(mu_) = 0;  // loops paused with nothing to retry
  uint64_t registrations_ GUARDED_BY(mu_) = 0;
  std::vector<bool> prepared_ GUARDED_BY(mu_);                // what the kubelet holds, per claim
  std::map<size_t, std::string> last_error_ GUARDED_BY(mu_);  // claims still failing
  std::vector<std::string> violations_ GUARDED_BY(mu_);       // wrong answers
  int64_t calls_ GUARDED_BY(mu_) = 0;
  int64_t failed_calls_ GUARDED_BY(mu_) = 0;
  int64_t claim_errors_ GUARDED_BY(mu_) = 0;
};

Status PluginTrials::Violation(const std::string& what) const {
  return DataLossError("plugin kill " + std::to_string(stats_.kills) + " (trial " +
                       std::to_string(trial_) + "): " + what + "; in " + options_.plan.work_dir +
                       ": the checkpoint (state/), the CDI specs (cdi/) and the logs of the last "
                       "two instances (plugin.log, plugin.previous.log)");
}

Status PluginTrials::SetUp() {
  ClusterOptions cluster;
  cluster.kube_sim_flags = {"--seed", std::to_string(options_.plan.seed)};
  ASSIGN_OR_RETURN(cluster_, Cluster::Start(cluster));
  ASSIGN_OR_RETURN(auto client, cluster_->NewClient());
  for (const char* ns : {DriverHarness::kNamespace, "default"}) {
    RETURN_IF_ERROR(EnsureNamespace(*client, ns));
  }
  RETURN_IF_ERROR(CreateNode(*client, kNode).status());
  for (const char* sub : {"registry", "plugins", "cdi", "state"}) {
    std::error_code ec;
    fs::create_directories(Dir(sub), ec);
    if (ec) return InternalError("create " + Dir(sub) + ": " + ec.message());
  }
  // The host's devices, shuffled and dealt out to claims of one to three devices; one more claim
  // is allocated on another node (the plugin records it with nothing to prepare).
  const std::string inventory =
      SourceDir() + "/e2e/fixtures/hosts-expected/" + options_.host + ".json";
  std::ifstream in(inventory);
  const auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InternalError("read " + inventory + ": not JSON");
  std::vector<std::string> devices;
  for (const auto& d : doc.value("/status/devices"_json_pointer, nlohmann::json::array())) {
    devices.push_back(d.value("name", ""));
  }
  if (devices.size() < 4) return InternalError(inventory + ": fewer than 4 devices");
  std::shuffle(devices.begin(), devices.end(), rng_);
  std::vector<ClaimSpec> specs;
  for (size_t at = 0; at < devices.size();) {
    const size_t n = std::min<size_t>(1 + rng_() % 3, devices.size() - at);
    ClaimSpec spec;
    spec.pool = kNode;
    spec.devices.assign(devices.begin() + static_cast<ptrdiff_t>(at),
                        devices.begin() + static_cast<ptrdiff_t>(at + n));
    specs.push_back(std::move(spec));
    at += n;
  }
  ClaimSpec elsewhere;
  elsewhere.pool = "n2";
  elsewhere.devices = {devices.front()};
  specs.push_back(std::move(elsewhere));
  for (ClaimSpec& spec : specs) {
    spec.name = "claim-" + std::to_string(claims_.size());
    ASSIGN_OR_RETURN(std::string uid, CreateClaim(*client, spec));
    claims_.push_back({spec.ns, spec.name, uid, spec.pool, spec.devices});
  }
  MutexLock lock(mu_);  // no kubelet loop runs yet; the lock is for the analysis
  prepared_.assign(claims_.size(), false);
  return OkStatus();
}

Status PluginTrials::StartPlugin() {
  const std::string log = Dir("plugin.log");
  std::error_code ec;
  fs::rename(log, Dir("plugin.previous.log"), ec);  // the killed instance's log, kept
  std::vector<std::string> args = {
      "--kubeconfig",   cluster_->kubeconfig(),
      "--node-name",    kNode,
      "--host-root",    SourceDir() + "/e2e/fixtures/hosts/" + options_.host,
      "--metrics-addr", "",
      "--log-level",    "warning"};
  const std::pair<const char*, const char*> dirs[] = {{"--plugin-registry-dir", "registry"},
                                                      {"--plugin-dir", "plugins"},
                                                      {"--cdi-dir", "cdi"},
                                                      {"--state-dir", "state"}};
  for (const auto& [flag, sub] : dirs) args.insert(args.end(), {flag, Dir(sub)});
  ASSIGN_OR_RETURN(plugin_, ChildProcess::Start(options_.plugin_binary, args, log));
  return OkStatus();
}

Batch PluginTrials::NextBatch(const std::vector<size_t>& mine, std::mt19937_64& rng) const {
  Batch b;
  b.prepare = rng() % 5 < 3;  // prepares (new, or again for a prepared claim) and unprepares
  for (size_t i : mine) {
    if (rng() % 2 == 0) b.claims.push_back(i);
  }
  if (b.claims.empty()) b.claims.push_back(mine[rng() % mine.size()]);
  return b;
}

std::vector<size_t> PluginTrials::Call(KubeletStandIn& kubelet, const Batch& batch,
                                       const std::string& api) {
  std::vector<KubeletClaim> refs;
  for (size_t i : batch.claims) refs.push_back({claims_[i].ns, claims_[i].name, claims_[i].uid});
  std::map<std::string, std::string> errors;  // uid -> error; "" for success
  std::map<std::string, KubeletPrepareResult> answers;
  Status status;
  ++in_flight_;
  if (batch.prepare) {
    auto r = kubelet.Prepare(DraSocket(), api, refs);
    status = r.status();
    if (r.ok()) answers = std::move(*r);
    for (const auto& [uid, result] : answers) errors[uid] = result.error;
  } else {
    auto r = kubelet.Unprepare(DraSocket(), api, refs);
    status = r.status();
    if (r.ok()) errors = std::move(*r);
  }
  --in_flight_;
  std::vector<size_t> failed;
  MutexLock lock(mu_);
  ++calls_;
  if (!status.ok()) ++failed_calls_;
  for (size_t i : batch.claims) {
    const TrialClaim& c = claims_[i];
    const auto it = errors.find(c.uid);
    if (!status.ok() || it == errors.end() || !it->second.empty()) {
      if (status.ok() && it == errors.end()) {
        violations_.push_back("the plugin's answer has no entry for claim " + c.name);
      }
      if (status.ok()) ++claim_errors_;
      last_error_[i] =
          status.ok() ? (it == errors.end() ? "no answer" : it->second) : status.message();
      failed.push_back(i);
      continue;
    }
    last_error_.erase(i);
    prepared_[i] = batch.prepare;
    if (!batch.prepare) continue;
    for (std::string& v :
         CheckAnswer(c, answers.at(c.uid).devices, kNode, DriverHarness::kDriver)) {
      violations_.push_back(std::move(v));
    }
  }
  return failed;
}

void PluginTrials::Backoff(milliseconds delay, uint64_t registration) {
  MutexLock lock(mu_);
  cv_.WaitFor(mu_, delay, [&]() REQUIRES(mu_) { return stop_ || registrations_ != registration; });
}

// A kubelet loop: a batch of its own claims at a time, a failed call (or a failed claim) retried
// with backoff (10 ms doubling to 0.5 s, and at once when the plugin registers again, as the
// kubelet's plugin watcher wakes its pods) until every claim in it succeeded. It parks between
// batches while the trials pause it, never with a retry outstanding.
void PluginTrials::Kubelet(size_t index) {
  std::mt19937_64 rng(options_.plan.seed * 7919 + index + 1);
  std::vector<size_t> mine;
  for (size_t i = index; i < claims_.size(); i += static_cast<size_t>(options_.kubelets)) {
    mine.push_back(i);
  }
  KubeletStandIn kubelet;
  Batch batch;
  milliseconds delay{10};
  for (;;) {
    uint64_t registration = 0;
    {
      MutexLock lock(mu_);
      if (batch.claims.empty() && pause_ && !stop_) {
        ++idle_;
        cv_.NotifyAll();
        cv_.Wait(mu_, [&]() REQUIRES(mu_) { return !pause_ || stop_; });
        --idle_;
      }
      if (stop_) return;
      registration = registrations_;
    }
    if (batch.claims.empty()) {
      batch = NextBatch(mine, rng);
      delay = milliseconds(10);
    }
    batch.claims = Call(kubelet, batch, rng() % 2 == 0 ? "v1" : "v1beta1");
    if (batch.claims.empty()) continue;
    Backoff(delay, registration);
    delay = std::min(delay * 2, milliseconds(500));
  }
}

StatusOr<TrialStats> PluginTrials::Run() {
  RETURN_IF_ERROR(options_.Validate());
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(SetUp());
  RETURN_IF_ERROR(StartPlugin());
  Pause();
  for (int i = 0; i < options_.kubelets; ++i) {
    kubelets_.emplace_back([this, i] { Kubelet(static_cast<size_t>(i)); });
  }
  RETURN_IF_ERROR(Recover(Clock::now()));  // the first start, checked like a recovery
  stats_.recovery_ms.clear();
  stats_.serving_ms.clear();
  stats_.checks = 0;
  Restarts restarts(options_.plan, &stats_, &rng_, milliseconds(80));
  std::uniform_int_distribution<int64_t> delay(0, options_.plan.max_kill_delay.count());
  while (!restarts.done()) {
    ++trial_;
    Resume();
    std::this_thread::sleep_for(milliseconds(delay(rng_)));
    if (!plugin_->Running()) {
      return Violation("the plugin exited by itself with code " + std::to_string(plugin_->Wait()) +
                       ":\n" + Tail(plugin_->Log(), 20));
    }
    if (in_flight_ > 0) ++stats_.kills_mid_work;
    plugin_->Kill();
    const Clock::time_point killed = Clock::now();
    Pause();
    ASSIGN_OR_RETURN(const Clock::time_point last,
                     restarts.AfterKill(
                         killed, [&] { return StartPlugin(); }, [&] { plugin_->Kill(); }));
    RETURN_IF_ERROR(Recover(last));
    restarts.Progress(start);
  }
  StopKubelets();
  if (const int code = plugin_->Stop(); code != 0) {
    return Violation("the plugin exited with code " + std::to_string(code) + " on SIGTERM");
  }
  MutexLock lock(mu_);
  stats_.counters = {{"kubelet calls", calls_},
                     {"failed calls", failed_calls_},
                     {"claim errors", claim_errors_},
                     {"claims", static_cast<int64_t>(claims_.size())},
                     {"prepared claims checked", checked_claims_}};
  stats_.seconds = MsSince(start) / 1000;
  return stats_;
}

void PluginTrials::Pause() {
  MutexLock lock(mu_);
  pause_ = true;
}

void PluginTrials::Resume() {
  MutexLock lock(mu_);
  pause_ = false;
  cv_.NotifyAll();
}

bool PluginTrials::WaitIdle(Clock::time_point deadline) {
  MutexLock lock(mu_);
  return cv_.WaitUntil(mu_, deadline, [&]() REQUIRES(mu_) { return idle_ == options_.kubelets; });
}

void PluginTrials::StopKubelets() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    cv_.NotifyAll();
  }
  for (std::thread& t : kubelets_) t.join();
  kubelets_.clear();
}

Status PluginTrials::Recover(Clock::time_point killed) {
  const Clock::time_point deadline = killed + options_.plan.bound;
  const auto left = [&] {
    return std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  };
  KubeletStandIn watcher;  // the kubelet's plugin watcher
  const bool registered =
      Eventually([&] { return !plugin_->Running() || watcher.Register(RegistrationSocket()).ok(); },
                 left(), milliseconds(5));
  if (!plugin_->Running()) {
    return Violation("the restarted plugin exited with code " + std::to_string(plugin_->Wait()) +
                     ":\n" + Tail(plugin_->Log(), 20));
  }
  if (!registered) {
    return Violation("the plugin did not register within " +
                     std::to_string(options_.plan.bound.count()) + " ms of the kill");
  }
  stats_.serving_ms.push_back(MsSince(killed));  // registered: the sockets are served
  {
    MutexLock lock(mu_);
    ++registrations_;
    cv_.NotifyAll();
  }
  if (!WaitIdle(deadline)) {
    MutexLock lock(mu_);
    std::string failing;
    for (const auto& [i, error] : last_error_) failing += "\n  " + claims_[i].name + ": " + error;
    return Violation("the kubelet's retries did not all succeed within " +
                     std::to_string(options_.plan.bound.count()) +
                     " ms of the kill; still failing:" + failing);
  }
  stats_.recovery_ms.push_back(MsSince(killed));
  {
    MutexLock lock(mu_);
    if (!violations_.empty()) return Violation(violations_.front());
  }
  return CheckDisk();
}

Status PluginTrials::CheckDisk() {
  // Reconciliation is done once the plugin answers for claims (before, every claim fails).
  KubeletStandIn kubelet;
  const bool started = Eventually(
      [&] {
        auto r = kubelet.Unprepare(DraSocket(), "v1", {{"default", "probe", kProbeUid}});
        return r.ok() && r->contains(kProbeUid) && r->at(kProbeUid).empty();
      },
      options_.plan.bound, milliseconds(5));
  if (!started) return Violation("the plugin does not answer unprepare of an unknown claim");
  ASSIGN_OR_RETURN(PluginDisk disk,
                   ReadPluginDisk(Dir("state"), Dir("cdi"), DriverHarness::kDriver));
  std::set<std::string> prepared;
  {
    MutexLock lock(mu_);
    for (size_t i = 0; i < claims_.size(); ++i) {
      if (prepared_[i]) prepared.insert(claims_[i].uid);
    }
  }
  const std::vector<std::string> broken =
      CheckPluginDisk(claims_, prepared, disk, kNode, DriverHarness::kDriver);
  if (!broken.empty()) {
    std::string what = std::to_string(broken.size()) + " invariant(s) broken:";
    for (const std::string& b : broken) what += "\n  " + b;
    return Violation(what);
  }
  ++stats_.checks;
  checked_claims_ += static_cast<int64_t>(prepared.size());
  return OkStatus();
}

}  // namespace

Status PluginTrialOptions::Validate() const {
  RETURN_IF_ERROR(plan.Validate("--plugin"));
  if (plugin_binary.empty()) return InvalidArgumentError("--plugin: no plugin binary");
  if (kubelets < 1) return InvalidArgumentError("--plugin: no kubelet loop");
  return OkStatus();
}

StatusOr<TrialStats> RunPluginTrials(const PluginTrialOptions& options) {
  return PluginTrials(options).Run();
}

}  // namespace xpu::e2e::trials
