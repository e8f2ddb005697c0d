#include "e2e/trials/scale_trials.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "bench/controller_run.h"
#include "controller/testing/cluster.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/trials/invariants.h"
#include "e2e/trials/rig.h"

namespace xpu::e2e::trials {
namespace {
namespace scale_trials_cc {

namespace ct = controller::testing;
namespace kc = api::client;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kScaleNamespace = "xpu-dra";
// The two inventories a node switches between, and whose goldens its pool must equal.
constexpr std::array<const char*, 2> kScaleHosts = {"hgx-h200", "pcie-2numa-8gpu"};

// The controller's slice writes on a /metrics page: those that succeeded by verb, and the rest.
struct WriteCounts {
  std::map<std::string, int64_t> ok;  // "create", "update", "delete"
  int64_t failed = 0;
  int64_t Ok() const {
    int64_t n = 0;
    for (const auto& [verb, count] : ok) n += count;
    return n;
  }
  int64_t Of(const std::string& verb) const {
    const auto it = ok.find(verb);
    return it == ok.end() ? 0 : it->second;
  }
};

std::string LabelOf(const std::string& line, const std::string& label) {
  const std::string key = label + "=\"";
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  const size_t end = line.find('"', at + key.size());
  return end == std::string::npos ? "" : line.substr(at + key.size(), end - at - key.size());
}

WriteCounts SliceWriteCounts(const std::string& page) {
  WriteCounts out;
  const std::string series = "\nxpu_dra_controller_slice_writes_total{";
  for (size_t at = page.find(series); at != std::string::npos; at = page.find(series, at + 1)) {
    const size_t end = page.find('\n', at + 1);
    const std::string line = page.substr(at + 1, end == std::string::npos ? end : end - at - 1);
    const size_t value_at = line.rfind(' ');
    if (value_at == std::string::npos) continue;
    const auto value = static_cast<int64_t>(std::stod(line.substr(value_at + 1)));
    if (LabelOf(line, "result") == "ok") {
      out.ok[LabelOf(line, "verb")] += value;
    } else {
      out.failed += value;
    }
  }
  return out;
}

std::string WritesText(const SliceWrites& w) {
  return std::to_string(w.total()) + " (" + std::to_string(w.create) + " create, " +
         std::to_string(w.update) + " update, " + std::to_string(w.remove) + " delete)";
}

class ScaleTrials {
 public:
  explicit ScaleTrials(ScaleTrialOptions options)
      : options_(std::move(options)), rng_(options_.plan.seed) {}
  ~ScaleTrials() {
    for (std::thread& t : writers_) t.join();
  }
  ScaleTrials(const ScaleTrials&) = delete;
  ScaleTrials& operator=(const ScaleTrials&) = delete;

  StatusOr<TrialStats> Run();

 private:
  Status SetUp();
  Status StartController();
  std::string Metrics() const { return HttpGet(port_, "/metrics"); }
  // Waits until the running controller has made `target` more successful slice writes than
  // `base`; false when it has not within the bound.
  StatusOr<bool> WaitProgress(int64_t base, int64_t target);
  // Switches the inventory of `nodes` to the other host, 8 writers at once (returns at once).
  void Switch(const std::vector<int>& nodes);
  Status JoinWriters();
  // The writes the slices need now, summed over the pools; the first differences in `diff`.
  StatusOr<SliceWrites> Needed(std::vector<std::string>* diff);
  // Restarts the controller after the kill at `killed` and waits until the fleet converges and
  // the controller is quiet; records the recovery and the writes made against `needed`.
  Status Recover(int kill, Clock::time_point killed, const SliceWrites& needed,
                 const std::string& at);
  Status Violation(const std::string& what) const;

  const ScaleTrialOptions options_;
  std::mt19937_64 rng_;
  bench::SimFleet fleet_;
  std::unique_ptr<ChildProcess> controller_;
  int controller_runs_ = 0;
  int port_ = 0;
  std::array<std::vector<json>, 2> goldens_;
  std::array<api::NodeInventory, 2> inventories_;
  std::vector<std::string> names_;
  std::vector<std::string> uids_;
  std::vector<int> host_;  // node -> index into kScaleHosts
  std::vector<std::thread> writers_;
  std::atomic<int> write_errors_{0};
  TrialStats stats_{.part = "controller at scale", .bound = options_.plan.bound};
  SliceWrites needed_total_;
  WriteCounts made_total_;
  std::vector<std::string> mismatches_;  // kills whose writes made differ from those needed
};

Status ScaleTrials::Violation(const std::string& what) const {
  return DataLossError("scale kill " + std::to_string(stats_.kills) + ": " + what + "; logs in " +
                       options_.plan.work_dir +
                       (controller_ == nullptr ? "" : " (last: " + controller_->log_path() + ")"));
}

Status ScaleTrials::SetUp() {
  std::error_code ec;
  std::filesystem::create_directories(options_.plan.work_dir, ec);
  if (ec) return InternalError("create " + options_.plan.work_dir + ": " + ec.message());
  for (size_t h = 0; h < kScaleHosts.size(); ++h) {
    const std::string path =
        SourceDir() + "/e2e/fixtures/slices-expected/" + kScaleHosts[h] + ".attributes.json";
    std::ifstream in(path);
    const json list = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (list.is_discarded()) return InternalError("read " + path + ": not JSON");
    goldens_[h] = GoldenSlices(list);
    ASSIGN_OR_RETURN(inventories_[h], ct::FixtureInventory(SourceDir(), kScaleHosts[h], "x"));
  }
  ASSIGN_OR_RETURN(fleet_, bench::StartSimFleet(options_.kube_sim_binary, SourceDir(),
                                                kScaleHosts[0], options_.nodes, {kScaleNamespace}));
  ASSIGN_OR_RETURN(kc::ListPage nodes, fleet_.client->ListAll(kc::Nodes(), ""));
  std::map<std::string, std::string> uid_of;
  for (const json& n : nodes.items) {
    uid_of[n.value("/metadata/name"_json_pointer, "")] = n.value("/metadata/uid"_json_pointer, "");
  }
  for (int i = 0; i < options_.nodes; ++i) {
    names_.push_back("node-" + std::to_string(i));
    const auto it = uid_of.find(names_.back());
    if (it == uid_of.end()) return InternalError("the fleet has no Node " + names_.back());
    uids_.push_back(it->second);
  }
  host_.assign(static_cast<size_t>(options_.nodes), 0);
  return OkStatus();
}

Status ScaleTrials::StartController() {
  if (controller_ != nullptr) controller_->Kill();
  const std::string qps = std::to_string(options_.qps);
  const std::vector<std::string> args = {"--kubeconfig",
                                         fleet_.sim->kubeconfig(),
                                         "--namespace",
                                         kScaleNamespace,
                                         "--qps",
                                         qps,
                                         "--burst",
                                         qps,
                                         "--identity",
                                         "crash-trials",
                                         "--retry-period",
                                         "500ms",
                                         "--log-level",
                                         "info",
                                         "--metrics-addr",
                                         "127.0.0.1:0",
                                         "--claim-debounce",
                                         "200ms"};
  const std::string log =
      options_.plan.work_dir + "/controller-" + std::to_string(++controller_runs_) + ".log";
  ASSIGN_OR_RETURN(controller_, ChildProcess::Start(options_.controller_binary, args, log));
  port_ = bench::MetricsPort(*controller_, std::chrono::seconds(60));
  if (port_ == 0) return Violation("the controller logged no metrics port within 60 s");
  return OkStatus();
}

StatusOr<bool> ScaleTrials::WaitProgress(int64_t base, int64_t target) {
  const Clock::time_point deadline = Clock::now() + options_.plan.bound;
  while (Clock::now() < deadline) {
    if (!controller_->Running()) {
      return Violation("the controller exited with code " + std::to_string(controller_->Wait()));
    }
    if (SliceWriteCounts(Metrics()).Ok() - base >= target) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

void ScaleTrials::Switch(const std::vector<int>& nodes) {
  auto next = std::make_shared<std::atomic<size_t>>(0);
  for (int w = 0; w < 8; ++w) {
    writers_.emplace_back([this, nodes, next] {
      for (size_t k = (*next)++; k < nodes.size(); k = (*next)++) {
        api::NodeInventory inventory = inventories_[static_cast<size_t>(host_[nodes[k]])];
        inventory.metadata.name = names_[static_cast<size_t>(nodes[k])];
        if (!ct::PutInventory(*fleet_.client, std::move(inventory)).ok()) ++write_errors_;
      }
    });
  }
}

Status ScaleTrials::JoinWriters() {
  for (std::thread& t : writers_) t.join();
  writers_.clear();
  if (write_errors_ > 0) {
    return InternalError(std::to_string(write_errors_) + " inventory writes failed");
  }
  return OkStatus();
}

StatusOr<SliceWrites> ScaleTrials::Needed(std::vector<std::string>* diff) {
  kc::ListOptions by_driver;
  by_driver.field_selector = "spec.driver=xpu.dra.dev";
  ASSIGN_OR_RETURN(kc::ListPage page, fleet_.client->ListAll(kc::ResourceSlices(), "", by_driver));
  std::map<std::string, std::vector<json>> pools;
  for (json& s : page.items) {
    std::string pool = s.value("/spec/pool/name"_json_pointer, "");
    pools[pool].push_back(std::move(s));
  }
  SliceWrites total;
  const auto add = [&](const std::string& pool, const ExpectedPool* want) {
    const std::vector<json>& slices = pools[pool];
    const SliceWrites w = WritesNeeded(pool, want, slices);
    total.create += w.create;
    total.update += w.update;
    total.remove += w.remove;
    if (w.total() > 0 && diff->size() < 5) {
      for (std::string& d :
           SliceDifferences(want == nullptr ? std::map<std::string, ExpectedPool>{}
                                            : std::map<std::string, ExpectedPool>{{pool, *want}},
                            slices)) {
        diff->push_back(std::move(d));
      }
    }
  };
  for (size_t i = 0; i < names_.size(); ++i) {
    const ExpectedPool want = {uids_[i], goldens_[static_cast<size_t>(host_[i])]};
    add(names_[i], &want);
    pools.erase(names_[i]);
  }
  std::vector<std::string> others;
  for (const auto& [pool, slices] : pools) others.push_back(pool);
  for (const std::string& pool : others) add(pool, nullptr);
  return total;
}

Status ScaleTrials::Recover(int kill, Clock::time_point killed, const SliceWrites& needed,
                            const std::string& at) {
  RETURN_IF_ERROR(StartController());
  const Clock::time_point deadline = killed + options_.plan.bound;
  Clock::time_point settled = killed;  // ready and leading, or the last write seen since
  bool ready = false;
  int64_t seen = -1;
  WriteCounts made;
  std::vector<std::string> diff;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
    if (!controller_->Running()) {
      return Violation("the controller exited with code " + std::to_string(controller_->Wait()));
    }
    const std::string page = Metrics();
    made = SliceWriteCounts(page);
    if (made.Ok() + made.failed != seen) {
      seen = made.Ok() + made.failed;
      settled = Clock::now();
      continue;
    }
    if (!ready) {
      ready = HttpGet(port_, "/readyz").starts_with("HTTP/1.1 200") &&
              controller_->Log().find("became leader") != std::string::npos;
      if (ready) settled = std::max(settled, Clock::now());
      continue;
    }
    // Quiet for a second with nothing queued: check the fleet.
    if (bench::MetricValue(page, "xpu_dra_controller_queue_depth") > 0 ||
        Clock::now() - settled < std::chrono::seconds(1)) {
      continue;
    }
    diff.clear();
    ASSIGN_OR_RETURN(const SliceWrites left, Needed(&diff));
    if (left.total() == 0) {
      const double recovery_ms =
          std::chrono::duration<double, std::milli>(settled - killed).count();
      stats_.recovery_ms.push_back(recovery_ms);
      ++stats_.checks;
      const SliceWrites done = {made.Of("create"), made.Of("update"), made.Of("delete")};
      needed_total_.create += needed.create;
      needed_total_.update += needed.update;
      needed_total_.remove += needed.remove;
      for (const auto& [verb, count] : made.ok) made_total_.ok[verb] += count;
      made_total_.failed += made.failed;
      const bool same = done.create == needed.create && done.update == needed.update &&
                        done.remove == needed.remove && made.failed == 0;
      const std::string line = "kill " + std::to_string(kill) + " at " + at + ": needed " +
                               WritesText(needed) + ", made " + WritesText(done) + " and " +
                               std::to_string(made.failed) + " failed; converged in " +
                               std::to_string(recovery_ms / 1000).substr(0, 5) + " s";
      std::printf("scale %s%s\n", line.c_str(), same ? "" : "  <- NOT the writes needed");
      std::fflush(stdout);
      if (!same) mismatches_.push_back(line);
      return OkStatus();
    }
  }
  std::string text;
  for (const std::string& d : diff) text += "\n  " + d;
  return Violation("the fleet did not converge within " +
                   std::to_string(options_.plan.bound.count() / 1000) + " s of the kill" + text);
}

StatusOr<TrialStats> ScaleTrials::Run() {
  RETURN_IF_ERROR(options_.Validate());
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(SetUp());
  std::fprintf(stderr, "scale: %d nodes set up in %.0f s\n", options_.nodes, MsSince(start) / 1000);
  RETURN_IF_ERROR(StartController());
  std::vector<int> order(names_.size());
  std::iota(order.begin(), order.end(), 0);
  for (int kill = 1; kill <= options_.plan.kills; ++kill) {
    // The first kill in the first publish; then a random share of the nodes switched.
    int64_t work = options_.nodes;
    const std::string verb = kill == 1 ? "created" : "rewritten";
    const int64_t base = SliceWriteCounts(Metrics()).Ok();
    if (kill > 1) {
      std::shuffle(order.begin(), order.end(), rng_);
      work = std::uniform_int_distribution<int64_t>(std::max(2, options_.nodes / 10),
                                                    options_.nodes)(rng_);
      std::vector<int> chosen(order.begin(), order.begin() + work);
      for (const int n : chosen) host_[static_cast<size_t>(n)] ^= 1;
      Switch(chosen);
    }
    const int64_t target =
        std::uniform_int_distribution<int64_t>(1, std::max<int64_t>(1, work - 1))(rng_);
    ASSIGN_OR_RETURN(const bool reached, WaitProgress(base, target));
    if (!reached) {
      return Violation("the controller did not make " + std::to_string(target) +
                       " slice writes within the bound; /metrics:\n" + Metrics());
    }
    controller_->Kill();
    const Clock::time_point killed = Clock::now();
    ++stats_.kills;
    RETURN_IF_ERROR(JoinWriters());  // every switch written: what the slices must come to
    std::vector<std::string> diff;
    ASSIGN_OR_RETURN(const SliceWrites needed, Needed(&diff));
    if (needed.total() > 0) ++stats_.kills_mid_work;
    const std::string at =
        std::to_string(target) + " slice writes into " + std::to_string(work) + " pools " + verb;
    RETURN_IF_ERROR(Recover(kill, killed, needed, at));
  }
  if (const int code = controller_->Stop(); code != 0) {
    return Violation("the controller exited with code " + std::to_string(code) + " on SIGTERM");
  }
  stats_.counters = {
      {"nodes", options_.nodes},
      {"writes needed", needed_total_.total()},
      {"writes made", made_total_.Ok()},
      {"failed writes", made_total_.failed},
      {"kills with other writes than needed", static_cast<int64_t>(mismatches_.size())}};
  stats_.seconds = MsSince(start) / 1000;
  if (!mismatches_.empty()) {
    std::string text;
    for (const std::string& m : mismatches_) text += "\n  " + m;
    return DataLossError("the writes after recovery were not the writes needed after " +
                         std::to_string(mismatches_.size()) + " of " +
                         std::to_string(stats_.kills) + " kills:" + text + "\n" + Summary(stats_));
  }
  return stats_;
}

}  // namespace scale_trials_cc
}  // namespace

Status ScaleTrialOptions::Validate() const {
  RETURN_IF_ERROR(plan.Validate("--scale-kills"));
  if (nodes < 2) return InvalidArgumentError("--scale-nodes: at least 2 nodes");
  if (plan.kills < 1) return InvalidArgumentError("--scale-kills: at least one kill");
  if (qps < 1) return InvalidArgumentError("--scale-nodes: the controller's QPS must be positive");
  if (controller_binary.empty() || kube_sim_binary.empty()) {
    return InvalidArgumentError("--scale-nodes: the controller and kube-sim binaries are needed");
  }
  return OkStatus();
}

StatusOr<TrialStats> RunScaleTrials(const ScaleTrialOptions& options) {
  return scale_trials_cc::ScaleTrials(options).Run();
}

}  // namespace xpu::e2e::trials
