#include "xpuctl/accept/run.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "api/client/transport.h"
#include "base/atomic_file.h"
#include "base/text.h"
#include "base/time.h"
#include "xpuctl/accept/internal/json_fields.h"

namespace xpu::accept {

namespace kc = api::client;
using nlohmann::json;

api::client::ResourceRef Jobs() { return {"batch", "v1", "jobs", true}; }
api::client::ResourceRef Pods() { return {"", "v1", "pods", true}; }

namespace {
namespace run_cc {

using internal::Field;
using internal::NameOf;
using internal::Str;
using internal::UidOf;

// The real cluster.
class RealRunCluster final : public RunCluster {
 public:
  RealRunCluster(kc::Client& client, std::unique_ptr<kc::Transport> transport)
      : client_(client), transport_(std::move(transport)) {}

  StatusOr<json> Get(const kc::ResourceRef& ref, const std::string& ns,
                     const std::string& name) override {
    return client_.Get(ref, ns, name);
  }
  StatusOr<std::vector<json>> List(const kc::ResourceRef& ref, const std::string& ns,
                                   const std::string& label_selector) override {
    kc::ListOptions options;
    options.label_selector = label_selector;
    ASSIGN_OR_RETURN(kc::ListPage page, client_.ListAll(ref, ns, options));
    return std::move(page.items);
  }
  StatusOr<json> Create(const kc::ResourceRef& ref, const std::string& ns,
                        const json& object) override {
    return client_.Create(ref, ns, object);
  }
  StatusOr<json> Update(const kc::ResourceRef& ref, const std::string& ns,
                        const json& object) override {
    return client_.Update(ref, ns, object);
  }
  Status Delete(const kc::ResourceRef& ref, const std::string& ns, const std::string& name,
                std::optional<int64_t> grace_seconds) override {
    if (ref.resource != "jobs") {
      kc::DeleteOptions options;
      options.grace_period_seconds = grace_seconds;
      return client_.Delete(ref, ns, name, options);
    }
    // batch/v1 Jobs orphan their pods unless told otherwise.
    const std::string what = "delete " + ref.Name() + " " + ns + "/" + name;
    if (!kc::IsSafePathSegment(ns) || !kc::IsSafePathSegment(name)) {
      return InvalidArgumentError(what + ": not a valid path segment");
    }
    kc::HttpCall call;
    call.method = "DELETE";
    call.path = "/apis/batch/v1/namespaces/" + ns + "/jobs/" + name;
    call.body =
        json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"propagationPolicy", "Background"}}
            .dump();
    return Send(what, call).status();
  }
  StatusOr<std::string> PodLog(const std::string& ns, const std::string& pod,
                               const std::string& container) override {
    const std::string what = "get pods " + ns + "/" + pod + " log";
    if (!kc::IsSafePathSegment(ns) || !kc::IsSafePathSegment(pod)) {
      return InvalidArgumentError(what + ": not a valid path segment");
    }
    kc::HttpCall call;
    call.path = "/api/v1/namespaces/" + ns + "/pods/" + pod +
                "/log?container=" + kc::QueryEscape(container);
    return Send(what, call);
  }

 private:
  StatusOr<std::string> Send(const std::string& what, const kc::HttpCall& call) {
    ASSIGN_OR_RETURN(kc::HttpResult result, transport_->Do(call));
    if (result.code < 200 || result.code >= 300) {
      return kc::ApiError(what, result.code, result.body);
    }
    return std::move(result.body);
  }

  kc::Client& client_;
  std::unique_ptr<kc::Transport> transport_;
};

}  // namespace run_cc
}  // namespace

StatusOr<std::unique_ptr<RunCluster>> NewRealRunCluster(kc::Client& client) {
  ASSIGN_OR_RETURN(auto transport, kc::Transport::Create(client.config()));
  return std::unique_ptr<RunCluster>(
      std::make_unique<run_cc::RealRunCluster>(client, std::move(transport)));
}

namespace {
namespace run_cc {

StatusOr<kc::ResourceRef> RefOf(const json& object) {
  const std::string kind = Str(object, "kind");
  if (kind == "Job") return Jobs();
  if (kind == "Pod") return Pods();
  if (kind == "ResourceClaimTemplate") return kc::ResourceClaimTemplates();
  if (kind == "ResourceClaim") return kc::ResourceClaims();
  if (kind == "AcceleratorGang") return kc::AcceleratorGangs();
  if (kind == "DeviceClass") return kc::DeviceClasses();
  if (kind == "ConfigMap") return kc::ResourceRef{"", "v1", "configmaps", true};
  return InternalError("apply " + kind + " " + NameOf(object) + ": accept run does not apply " +
                       "this kind");
}

std::string Describe(const kc::ResourceRef& ref, const json& object) {
  const std::string ns = Str(Field(object, "metadata"), "namespace");
  // kubectl's spelling: "job default/accept-x-nvidia".
  return ref.resource.substr(0, ref.resource.size() - 1) + " " + (ns.empty() ? "" : ns + "/") +
         NameOf(object);
}

bool OwnedByAny(const json& object, const std::set<std::string>& uids) {
  const json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (!refs.is_array()) return false;
  return std::any_of(refs.begin(), refs.end(),
                     [&](const json& r) { return uids.contains(Str(r, "uid")); });
}

std::string Seconds(std::chrono::nanoseconds d) {
  std::ostringstream out;
  out << std::chrono::duration<double>(d).count() << " s";
  return out.str();
}

struct Target {
  kc::ResourceRef ref;
  json object;
};

class Runner {
 public:
  Runner(RunCluster& cluster, Clock& clock, const RenderedAcceptance& rendered,
         const RunOptions& options, std::ostream& progress)
      : cluster_(cluster),
        clock_(clock),
        rendered_(rendered),
        options_(options),
        progress_(progress) {}

  StatusOr<RunOutcome> Run() {
    outcome_.run_id = options_.run_id;
    std::string label_key;
    if (options_.label_nodes) {
      ASSIGN_OR_RETURN(label_key, AcceptedLabelKey(options_.capability_class));
    }
    if (Status applied = Apply(); !applied.ok()) {
      if (!options_.keep && !outcome_.created.empty()) Cleanup();
      return applied;
    }
    Wait();
    Collect();
    if (options_.label_nodes) LabelNodes(label_key);
    if (options_.keep) {
      progress_ << "keeping what run " << options_.run_id
                << " created (--keep): " << Join(outcome_.created) << "\n";
    } else {
      Cleanup();
    }
    const bool all_passed = std::all_of(outcome_.results.begin(), outcome_.results.end(),
                                        [](const PodResult& r) { return r.passed; });
    outcome_.exit_code =
        (!outcome_.results.empty() && all_passed && outcome_.unfinished.empty() && !act_failed_)
            ? 0
            : 1;
    return std::move(outcome_);
  }

 private:
  Status Apply() {
    for (const json& original : rendered_.objects) {
      ASSIGN_OR_RETURN(kc::ResourceRef ref, RefOf(original));
      json object = original;
      json& labels = object["metadata"]["labels"];
      labels[std::string(kManagedByLabel)] = kManagedBy;
      labels[std::string(kRunLabel)] = options_.run_id;
      const std::string ns = ref.namespaced ? options_.ns : "";
      if (ref.namespaced) object["metadata"]["namespace"] = ns;
      if (ref.resource == "deviceclasses") {
        auto existing = cluster_.Get(ref, "", NameOf(object));
        if (existing.ok()) continue;  // not ours: left alone
        if (existing.status().code() != StatusCode::kNotFound) {
          return existing.status().WithContext("apply");
        }
      }
      auto created = cluster_.Create(ref, ns, object);
      if (!created.ok()) {
        std::string hint;
        if (created.status().code() == StatusCode::kAlreadyExists) {
          hint = " (left by an earlier run with --keep? delete it or pass another --name)";
        } else if (created.status().code() == StatusCode::kNotFound && ref.namespaced) {
          hint = " (does namespace " + ns + " exist? accept run does not create namespaces)";
        }
        return Status(created.status().code(),
                      "apply " + Describe(ref, object) + ": " + created.status().message() + hint);
      }
      uids_.insert(UidOf(*created));
      if (ref.resource == "jobs") job_uids_.insert(UidOf(*created));
      if (ref.resource == "deviceclasses") created_classes_.push_back(NameOf(object));
      outcome_.created.push_back(Describe(ref, object));
    }
    progress_ << "run " << options_.run_id << ": applied " << Join(outcome_.created) << "\n";
    return OkStatus();
  }

  // The Job's pods: by the labels the job controller sets, owned by the Job we created.
  StatusOr<std::vector<json>> JobPods(const std::string& job) {
    std::vector<json> pods;
    for (const char* label : {"batch.kubernetes.io/job-name=", "job-name="}) {
      ASSIGN_OR_RETURN(auto listed, cluster_.List(Pods(), options_.ns, label + job));
      for (json& pod : listed) {
        const bool seen = std::any_of(pods.begin(), pods.end(),
                                      [&](const json& p) { return UidOf(p) == UidOf(pod); });
        if (!seen && OwnedByAny(pod, job_uids_)) pods.push_back(std::move(pod));
      }
      if (!pods.empty()) break;
    }
    return pods;
  }

  StatusOr<JobSnapshot> Gather(const RenderedJob& job) {
    JobSnapshot s{job.vendor, job.name, job.pods, nullptr, {}, {}};
    auto got = cluster_.Get(Jobs(), options_.ns, job.name);
    if (got.ok()) {
      s.job = std::move(*got);
    } else if (got.status().code() != StatusCode::kNotFound) {
      return got.status();
    }
    ASSIGN_OR_RETURN(s.pods, JobPods(job.name));
    for (const json& pod : s.pods) {
      uids_.insert(UidOf(pod));
      for (const std::string& name : ClaimsOf(pod)) {
        claim_names_.insert(name);
        auto claim = cluster_.Get(kc::ResourceClaims(), options_.ns, name);
        if (claim.ok()) {
          Remember(name, *claim);
          s.claims[name] = std::move(*claim);
        }
      }
    }
    return s;
  }

  void Wait() {
    const auto deadline = clock_.Now() + options_.timeout;
    snapshots_.resize(rendered_.jobs.size());
    states_.resize(rendered_.jobs.size());
    for (size_t i = 0; i < rendered_.jobs.size(); ++i) {
      snapshots_[i] = {rendered_.jobs[i].vendor,
                       rendered_.jobs[i].name,
                       rendered_.jobs[i].pods,
                       nullptr,
                       {},
                       {}};
    }
    std::vector<std::vector<std::string>> printed(rendered_.jobs.size());
    std::string last_error;
    while (true) {
      const bool timed_out = clock_.Now() >= deadline;
      bool all_finished = true;
      for (size_t i = 0; i < rendered_.jobs.size(); ++i) {
        if (states_[i].phase == JobPhase::kFinished) continue;
        auto snapshot = Gather(rendered_.jobs[i]);
        if (snapshot.ok()) {
          snapshots_[i] = std::move(*snapshot);
        } else if (snapshot.status().message() != last_error) {
          last_error = snapshot.status().message();
          progress_ << "warning: " << last_error << " (retrying)\n";
        }
        states_[i] = DecideJob(snapshots_[i], timed_out);
        std::vector<std::string> facts = states_[i].facts;
        if (snapshots_[i].pods.empty()) facts = {states_[i].reason};
        for (const std::string& fact : facts) {
          if (std::find(printed[i].begin(), printed[i].end(), fact) == printed[i].end()) {
            progress_ << rendered_.jobs[i].vendor << ": " << fact << "\n";
          }
        }
        printed[i] = std::move(facts);
        all_finished = all_finished && states_[i].phase == JobPhase::kFinished;
      }
      if (all_finished) return;
      if (timed_out) {
        outcome_.timed_out = true;
        progress_ << "timed out after " << Seconds(options_.timeout)
                  << "; collecting what finished\n";
        return;
      }
      // Until the next poll, the claims' energy every claim_poll: the last write before a
      // claim is deallocated is what is left of it.
      const auto next = std::min(clock_.Now() + options_.poll, deadline);
      while (options_.claim_poll > std::chrono::nanoseconds::zero() &&
             clock_.Now() + options_.claim_poll < next) {
        clock_.Sleep(options_.claim_poll, no_stop_);
        RefreshClaims();
      }
      clock_.Sleep(std::max(next - clock_.Now(), std::chrono::nanoseconds::zero()), no_stop_);
    }
  }

  // The pod's claims: every name its status ever gave (the status of a pod that ended may lose
  // its resourceClaimStatuses).
  std::vector<std::string> ClaimsOf(const json& pod) {
    std::set<std::string>& names = pod_claims_[NameOf(pod)];
    for (const std::string& name : PodClaimNames(pod)) names.insert(name);
    return {names.begin(), names.end()};
  }

  // Re-reads the claims of the Jobs' pods for their energy; a claim deleted or deallocated
  // (its status.devices dropped) is not read again.
  void RefreshClaims() {
    for (const JobSnapshot& snapshot : snapshots_) {
      for (const json& pod : snapshot.pods) {
        for (const std::string& name : ClaimsOf(pod)) ReadClaim(name);
      }
    }
  }

  // One claim, its energy remembered; false when it is gone or deallocated.
  bool ReadClaim(const std::string& name) {
    if (claims_done_.contains(name)) return false;
    auto claim = cluster_.Get(kc::ResourceClaims(), options_.ns, name);
    if (!claim.ok()) {
      if (claim.status().code() == StatusCode::kNotFound) claims_done_.insert(name);
      return false;
    }
    return Remember(name, *claim);
  }

  // Remembers a claim's energy; whether it is allocated. One no longer allocated is done.
  bool Remember(const std::string& name, const json& claim) {
    const bool had = seen_energy_.claims.contains(name);
    RememberEnergy(claim, seen_energy_);
    if (!had && seen_energy_.claims.contains(name)) {
      progress_ << "claim " << name << ": energy in its status ("
                << seen_energy_.claims[name].size() << " devices)\n";
    }
    if (Field(Field(claim, "status"), "allocation").is_object()) {
      claims_allocated_.insert(name);
      return true;
    }
    if (claims_allocated_.contains(name)) claims_done_.insert(name);
    return false;
  }

  // The energy of the pod's claims: re-read until it is final (written at unprepare), the
  // claims are gone or deallocated (the final write will not come), or the wait for it is over;
  // then the last energy seen of each device, final or not.
  std::optional<ClaimEnergy> FinalEnergy(const json& pod, const std::string& node) {
    const std::vector<std::string> names = ClaimsOf(pod);
    const auto deadline = clock_.Now() + options_.final_energy_wait;
    while (true) {
      bool allocated = false;
      for (const std::string& name : names) allocated = ReadClaim(name) || allocated;
      auto energy = SumEnergy(SeenClaims(seen_energy_, names), node);
      if (!energy || energy->final || !allocated || clock_.Now() >= deadline) return energy;
      clock_.Sleep(std::min<std::chrono::nanoseconds>(options_.poll, std::chrono::seconds(1)),
                   no_stop_);
    }
  }

  void CollectPod(const RenderedJob& job, const json& pod) {
    const std::string name = NameOf(pod);
    const std::string node = Str(Field(pod, "spec"), "nodeName");
    auto log = cluster_.PodLog(options_.ns, name, std::string(kWorkloadContainer));
    auto result = ResultFromPod(pod, log.ok() ? *log : "");
    if (!result) {
      std::string why = "Job " + job.name + ": pod " + name + " ended " +
                        Str(Field(pod, "status"), "phase") +
                        " without a result (no XPU-ACCEPT-RESULT line in its log";
      why += log.ok() ? "" : " (" + log.status().message() + ")";
      why += ", no summary in its termination message)";
      progress_ << job.vendor << ": " << why << "\n";
      outcome_.unfinished.push_back({job.vendor, job.name, why});
      return;
    }
    json completed = CompleteResult(std::move(*result), pod, job.vendor, FinalEnergy(pod, node));
    PodResult r{job.vendor, job.name, name, node, "", completed, ResultPassed(completed)};
    r.file = options_.results_dir + "/" + job.vendor + "-" + name + ".json";
    Status written = MakeDirectories(options_.results_dir, 0755);
    if (written.ok()) written = WriteFileAtomically(r.file, completed.dump(2) + "\n", 0644);
    if (!written.ok()) {
      progress_ << "write result " << r.file << ": " << written.message() << "\n";
      r.file.clear();
      act_failed_ = true;
    }
    progress_ << job.vendor << ": pod " << name << " result: " << (r.passed ? "pass" : "fail")
              << (r.file.empty() ? "" : " (" + r.file + ")") << "\n";
    outcome_.results.push_back(std::move(r));
  }

  void Collect() {
    for (size_t i = 0; i < rendered_.jobs.size(); ++i) {
      const RenderedJob& job = rendered_.jobs[i];
      const JobState& state = states_[i];
      for (const json& pod : snapshots_[i].pods) {
        const std::string phase = Str(Field(pod, "status"), "phase");
        if (phase == "Succeeded" || phase == "Failed") CollectPod(job, pod);
      }
      std::string reason = state.reason;
      if (state.phase == JobPhase::kRunning) {
        reason = std::string("still running after ")
                     .append(Seconds(options_.timeout))
                     .append(": ")
                     .append(reason);
      }
      if (state.phase != JobPhase::kFinished && !reason.starts_with("Job " + job.name + " ")) {
        reason = std::string("Job ").append(job.name).append(" did not finish: ").append(reason);
      }
      if (state.phase != JobPhase::kFinished || !reason.empty()) {
        outcome_.unfinished.push_back({job.vendor, job.name, reason});
      }
    }
    for (const Unfinished& u : outcome_.unfinished) {
      progress_ << u.vendor << ": " << u.reason << "\n";
    }
  }

  Status LabelNode(const std::string& node, const std::string& key, const std::string& date) {
    Status last;
    for (int attempt = 0; attempt < 5; ++attempt) {
      ASSIGN_OR_RETURN(json object, cluster_.Get(kc::Nodes(), "", node));
      object["metadata"]["labels"][key] = date;
      auto updated = cluster_.Update(kc::Nodes(), "", object);
      if (updated.ok()) return OkStatus();
      last = updated.status();
      if (last.code() != StatusCode::kAborted) break;
    }
    return last;
  }

  void LabelNodes(const std::string& key) {
    std::map<std::string, bool> passed;  // by node: every run on it passed
    for (const PodResult& r : outcome_.results) {
      if (r.node.empty()) continue;
      auto [it, inserted] = passed.emplace(r.node, r.passed);
      if (!inserted) it->second = it->second && r.passed;
    }
    for (size_t i = 0; i < snapshots_.size(); ++i) {
      const bool unfinished =
          std::any_of(outcome_.unfinished.begin(), outcome_.unfinished.end(),
                      [&](const Unfinished& u) { return u.job == rendered_.jobs[i].name; });
      for (const json& pod : snapshots_[i].pods) {
        const std::string node = Str(Field(pod, "spec"), "nodeName");
        if (unfinished && !node.empty()) passed[node] = false;
      }
    }
    const std::string date = FormatTime(clock_.WallNow()).substr(0, 10);  // yyyy-mm-dd
    for (const auto& [node, ok] : passed) {
      if (!ok) {
        progress_ << "not labelling node " << node << ": its run did not pass every stage\n";
        continue;
      }
      if (Status s = LabelNode(node, key, date); !s.ok()) {
        progress_ << "label node " << node << ": " << s.message() << "\n";
        act_failed_ = true;
        continue;
      }
      progress_ << "labelled node " << node << " " << key << "=" << date << "\n";
      outcome_.labelled_nodes.push_back(node);
    }
  }

  // What is left of the run: objects labelled with its id, the Jobs' pods, the claims made for
  // its pods and gangs, the DeviceClasses it created.
  StatusOr<std::vector<Target>> Leftovers() {
    std::vector<Target> out;
    std::set<std::string> keys;
    auto add = [&](const kc::ResourceRef& ref, json object) {
      if (keys.insert(ref.resource + "/" + NameOf(object)).second) {
        uids_.insert(UidOf(object));
        out.push_back({ref, std::move(object)});
      }
    };
    const std::string selector = std::string(kRunLabel) + "=" + options_.run_id;
    for (const kc::ResourceRef& ref :
         {Jobs(), Pods(), kc::AcceleratorGangs(), kc::ResourceClaimTemplates()}) {
      ASSIGN_OR_RETURN(auto listed, cluster_.List(ref, options_.ns, selector));
      for (json& o : listed) {
        if (ref.resource == "jobs") job_uids_.insert(UidOf(o));
        add(ref, std::move(o));
      }
    }
    for (const RenderedJob& job : rendered_.jobs) {
      ASSIGN_OR_RETURN(auto pods, JobPods(job.name));
      for (json& pod : pods) add(Pods(), std::move(pod));
    }
    ASSIGN_OR_RETURN(auto claims, cluster_.List(kc::ResourceClaims(), options_.ns, ""));
    for (json& claim : claims) {
      const bool ours = Str(Field(Field(claim, "metadata"), "labels"), std::string(kRunLabel)) ==
                            options_.run_id ||
                        claim_names_.contains(NameOf(claim)) || OwnedByAny(claim, uids_);
      if (ours) add(kc::ResourceClaims(), std::move(claim));
    }
    for (const std::string& name : created_classes_) {
      auto got = cluster_.Get(kc::DeviceClasses(), "", name);
      if (got.ok()) add(kc::DeviceClasses(), std::move(*got));
      if (!got.ok() && got.status().code() != StatusCode::kNotFound) return got.status();
    }
    return out;
  }

  void Cleanup() {
    const auto start = clock_.Now();
    std::set<std::string> deleted;
    bool forced = false;
    std::string last_error;
    while (true) {
      auto left = Leftovers();
      if (left.ok() && left->empty()) break;
      if (left.ok()) {
        const bool force = !forced && clock_.Now() - start >= options_.force_delete_after;
        std::vector<std::string> names;
        for (const Target& t : *left) {
          const std::string key = Describe(t.ref, t.object);
          names.push_back(key);
          const bool pod = t.ref.resource == "pods";
          if (deleted.contains(key) && !(force && pod)) continue;
          const std::string ns = t.ref.namespaced ? options_.ns : "";
          Status s = cluster_.Delete(t.ref, ns, NameOf(t.object),
                                     force && pod ? std::optional<int64_t>(0) : std::nullopt);
          if (s.ok() || s.code() == StatusCode::kNotFound) {
            deleted.insert(key);
          } else if (s.message() != last_error) {
            last_error = s.message();
            progress_ << "clean-up: " << last_error << "\n";
          }
        }
        forced = forced || force;
        outcome_.left_behind = std::move(names);
      } else if (left.status().message() != last_error) {
        last_error = left.status().message();
        progress_ << "clean-up: " << last_error << "\n";
      }
      if (clock_.Now() - start >= options_.cleanup_timeout) {
        progress_ << "clean-up: still there after " << Seconds(options_.cleanup_timeout) << ": "
                  << Join(outcome_.left_behind) << "\n";
        return;
      }
      clock_.Sleep(std::min<std::chrono::nanoseconds>(options_.poll, std::chrono::seconds(1)),
                   no_stop_);
    }
    outcome_.left_behind.clear();
    progress_ << "clean-up: deleted " << deleted.size() << " objects of run " << options_.run_id
              << "\n";
  }

  RunCluster& cluster_;
  Clock& clock_;
  const StopFlag no_stop_;  // what the polling loops sleep on: never set, each has its deadline
  const RenderedAcceptance& rendered_;
  const RunOptions& options_;
  std::ostream& progress_;
  RunOutcome outcome_;
  std::vector<JobSnapshot> snapshots_;
  std::vector<JobState> states_;
  std::set<std::string> uids_;      // of the objects of this run seen so far
  std::set<std::string> job_uids_;  // of its Jobs
  std::set<std::string> claim_names_;
  std::map<std::string, std::set<std::string>> pod_claims_;  // by pod name: ClaimsOf
  SeenEnergy seen_energy_;                  // the last energy seen of each claim's devices
  std::set<std::string> claims_allocated_;  // claims seen allocated
  std::set<std::string> claims_done_;       // gone, or deallocated: not read again
  std::vector<std::string> created_classes_;
  bool act_failed_ = false;  // a result file or a node label could not be written
};

}  // namespace run_cc
}  // namespace

StatusOr<RunOutcome> RunAcceptance(RunCluster& cluster, Clock& clock,
                                   const RenderedAcceptance& rendered, const RunOptions& options,
                                   std::ostream& progress) {
  if (options.run_id.empty()) return InvalidArgumentError("accept run: no run id");
  return run_cc::Runner(cluster, clock, rendered, options, progress).Run();
}

}  // namespace xpu::accept
