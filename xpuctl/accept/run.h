// `xpuctl accept run`: applies what `accept render` writes to a cluster, waits for the Jobs with
// progress on the terminal, collects each pod's result (its log line `XPU-ACCEPT-RESULT {...}`,
// else the summary in its termination message) and each claim's energy
// (status.devices[].data.energy, written by the kubelet plugin), writes one result file per pod,
// optionally labels the nodes that passed, and deletes what it created.
//
// The steps are gather -> decide -> act: the cluster is reached only through RunCluster (the real
// one over api::client; a fake in tests), time only through a Clock, and the decisions
// (DecideJob, SumEnergy, CompleteResult, AcceptedLabelKey) are pure functions of a snapshot.
//
// Exit codes (RunOutcome::exit_code): 0 every Job finished and every stage it ran passed or was
// skipped; 1 a stage failed, a Job did not finish in time (each is reported with why: pending
// reason, image pull, claim not allocated, never started) or the cluster failed us. Bad input
// (class, vendor, policy, flags) is an invalid-argument error before anything is applied (2).
#ifndef XPU_XPUCTL_ACCEPT_RUN_H_
#define XPU_XPUCTL_ACCEPT_RUN_H_

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "base/clock.h"
#include "base/status.h"
#include "xpuctl/accept/jobs.h"

namespace xpu::accept {

// The resources accept run touches besides client.h's.
api::client::ResourceRef Jobs();  // batch/v1
api::client::ResourceRef Pods();  // core/v1

// The cluster, as accept run needs it. Errors are the client's (kNotFound, kAlreadyExists, ...).
class RunCluster {
 public:
  virtual ~RunCluster() = default;
  virtual StatusOr<nlohmann::json> Get(const api::client::ResourceRef& ref, const std::string& ns,
                                       const std::string& name) = 0;
  // Every object matching `label_selector` ("" = all) in `ns` ("" = all namespaces).
  virtual StatusOr<std::vector<nlohmann::json>> List(const api::client::ResourceRef& ref,
                                                     const std::string& ns,
                                                     const std::string& label_selector) = 0;
  virtual StatusOr<nlohmann::json> Create(const api::client::ResourceRef& ref,
                                          const std::string& ns, const nlohmann::json& object) = 0;
  // Optimistic concurrency on metadata.resourceVersion (kAborted on a conflict).
  virtual StatusOr<nlohmann::json> Update(const api::client::ResourceRef& ref,
                                          const std::string& ns, const nlohmann::json& object) = 0;
  // Jobs are deleted with propagationPolicy Background; `grace_seconds` (pods) when set.
  virtual Status Delete(const api::client::ResourceRef& ref, const std::string& ns,
                        const std::string& name, std::optional<int64_t> grace_seconds) = 0;
  // The log of one container of a pod, as text (GET .../pods/NAME/log?container=C).
  virtual StatusOr<std::string> PodLog(const std::string& ns, const std::string& pod,
                                       const std::string& container) = 0;
};

// The real cluster: `client` for objects, a transport of its own for the log text and the Job
// deletes with a propagation policy (Client has neither). `client` must outlive it.
StatusOr<std::unique_ptr<RunCluster>> NewRealRunCluster(api::client::Client& client);

// ---- decide (pure) ----

// What one Job's pods and claims look like at one poll.
struct JobSnapshot {
  std::string vendor;
  std::string name;
  int pods_wanted = 1;
  nlohmann::json job;                            // null: not (or no longer) there
  std::vector<nlohmann::json> pods;              // the Job's pods
  std::map<std::string, nlohmann::json> claims;  // by name: the pods' claims that exist
};

enum class JobPhase {
  kWaiting,   // no pod yet, or pods not scheduled yet with nothing wrong known
  kStuck,     // a pod cannot go on as things are: reason says why (may still resolve)
  kRunning,   // a pod runs
  kFinished,  // every pod ended (Succeeded or Failed), or the Job failed
};

struct JobState {
  JobPhase phase = JobPhase::kWaiting;
  // kStuck/kWaiting: why it does not run ("pod P Pending: unschedulable: 0/1 nodes are
  // available: ..."); kFinished with no pod: the Job's failure. One line per pod otherwise.
  std::string reason;
  std::vector<std::string> facts;  // progress facts, one per pod/claim; printed when they change
};

// `timed_out`: the wait is over, so a Job without pods "never started".
JobState DecideJob(const JobSnapshot& snapshot, bool timed_out);

// The energy of a pod's claims, summed over their devices' status.devices[].data.energy (each
// (pool, device) once; only devices in pool `node`, the node's own, when `node` is set):
// joules = sum; seconds = the longest secondsHeld; averageWatts = joules / seconds; peakWatts =
// the sum of the per-device peaks (an upper bound: the peaks need not coincide); healthEvents
// and xids = sums. Nullopt when no device reports energy.
struct ClaimEnergy {
  double joules = 0;
  double seconds = 0;
  double average_watts = 0;
  double peak_watts = 0;
  int64_t health_events = 0;
  int64_t xids = 0;
  int devices = 0;
  std::string source;  // "nvml-energy-counter", "power-x-time", or both joined with ","
  bool final = true;   // every device's accounting was closed at unprepare
};
std::optional<ClaimEnergy> SumEnergy(const std::vector<nlohmann::json>& claims,
                                     const std::string& node);

// The claims' energy as run has seen it while polling. The plugin writes a device's energy every
// --claim-status-interval while the claim is prepared and once more, final, at unprepare; but the
// claim controller deallocates a finished pod's claim at once, the API server then drops
// status.devices, and the plugin's final write is refused. So run keeps, per claim and device,
// the last energy entry it saw, and uses the final one where it saw it.
struct SeenEnergy {
  // By claim name, then "pool/device": the status.devices[] entry last seen with data.energy.
  std::map<std::string, std::map<std::string, nlohmann::json>> claims;
};

// Records the status.devices[] entries of `claim` that carry data.energy: a newer entry replaces
// the one seen before for its device, except that a final one is never replaced by one that is
// not. Entries that vanished from the claim are kept.
void RememberEnergy(const nlohmann::json& claim, SeenEnergy& seen);

// The claims `names` as SumEnergy reads them: one object per name seen with energy, its
// status.devices the entries last seen.
std::vector<nlohmann::json> SeenClaims(const SeenEnergy& seen,
                                       const std::vector<std::string>& names);

// The names of the ResourceClaims of a pod (status.resourceClaimStatuses, and spec.resourceClaims
// that name a claim), sorted, each once.
std::vector<std::string> PodClaimNames(const nlohmann::json& pod);

// The pod's result: the last log line starting "XPU-ACCEPT-RESULT ", else the workload
// container's termination message (the summary); nullopt when neither holds a JSON object.
std::optional<nlohmann::json> ResultFromPod(const nlohmann::json& pod, const std::string& log);

// Fills what only the cluster knows into `result`: node, pod and vendor when missing;
// stages.power from `energy` (pass with joules, averageWatts, peakWatts, seconds, and
// joulesPerToken = joules / stages.performance.tokens; "final": whether every device's energy was
// the one written at unprepare, with a note when it was the last periodic write instead; skip
// with a reason when the claims had no energy) when the result has a power stage;
// stages.stability.healthEvents/xids from `energy`.
nlohmann::json CompleteResult(nlohmann::json result, const nlohmann::json& pod,
                              const std::string& vendor, const std::optional<ClaimEnergy>& energy);

// Whether every stage of a result passed or was skipped.
bool ResultPassed(const nlohmann::json& result);

// "xpu.dra.dev/accepted.<class>", checked as a label key (name part <= 63 characters,
// alphanumerics, '-', '_', '.' inside); an invalid-argument error naming --class otherwise.
StatusOr<std::string> AcceptedLabelKey(const std::string& capability_class);

// A run id: "<UTC yyyymmdd-hhmmss>-<4 random hex>", valid as a label value.
std::string NewRunId(const Clock& clock);

// ---- act ----

struct RunOptions {
  std::string ns = "default";
  std::string run_id;  // the rendered objects' xpu.dra.dev/accept-run label
  std::string capability_class;
  std::chrono::nanoseconds timeout = std::chrono::hours(1);
  std::chrono::nanoseconds poll = std::chrono::seconds(2);
  // Between two polls, the claims of the Jobs' pods are re-read this often, for their energy.
  std::chrono::nanoseconds claim_poll = std::chrono::seconds(1);
  std::chrono::nanoseconds cleanup_timeout = std::chrono::seconds(60);
  // Pods still there this long into the clean-up (no kubelet confirms) are deleted at once.
  std::chrono::nanoseconds force_delete_after = std::chrono::seconds(10);
  // How long to wait, once a pod ended and while its claims are still allocated, for their
  // energy to be final (written at unprepare); the last energy seen is used then.
  std::chrono::nanoseconds final_energy_wait = std::chrono::seconds(15);
  std::string results_dir = "accept-results";
  bool label_nodes = false;
  bool keep = false;
};

struct PodResult {
  std::string vendor;
  std::string job;
  std::string pod;
  std::string node;
  std::string file;  // where it was written
  nlohmann::json result;
  bool passed = false;
};

struct Unfinished {
  std::string vendor;
  std::string job;
  // A sentence: "Job J never started: no pod was created (is the job controller running?)",
  // "Job J did not finish: pod P Pending: unschedulable: 0/1 nodes are available: ...".
  std::string reason;
};

struct RunOutcome {
  std::string run_id;
  std::vector<PodResult> results;
  std::vector<Unfinished> unfinished;
  std::vector<std::string> labelled_nodes;
  std::vector<std::string> created;      // "Kind ns/name", in apply order
  std::vector<std::string> left_behind;  // what clean-up could not delete in time
  bool timed_out = false;
  int exit_code = 1;
};

// Applies `rendered` (namespaced objects in options.ns), waits, collects, labels and cleans up,
// printing progress to `progress`. Errors: what the cluster refused while applying (after
// cleaning up what was applied). A timeout is not an error: the outcome reports it.
StatusOr<RunOutcome> RunAcceptance(RunCluster& cluster, Clock& clock,
                                   const RenderedAcceptance& rendered, const RunOptions& options,
                                   std::ostream& progress);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_RUN_H_
