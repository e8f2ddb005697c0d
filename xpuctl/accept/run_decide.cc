// The pure decisions of `xpuctl accept run` (run.h): what a Job's pods and claims say, the energy
// of a pod's claims, a pod's result and what the cluster adds to it, the label key and the run id.
#include <algorithm>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>
#include <utility>

#include "base/text.h"
#include "xpuctl/accept/internal/json_fields.h"
#include "xpuctl/accept/run.h"

namespace xpu::accept {

using nlohmann::json;

namespace {
namespace run_decide_cc {

using internal::Field;
using internal::NameOf;
using internal::Num;
using internal::Str;

// A pod's condition of `type`, or null.
const json& Condition(const json& pod, const std::string& type) {
  static const json kNull;
  const json& conditions = Field(Field(pod, "status"), "conditions");
  if (!conditions.is_array()) return kNull;
  for (const json& c : conditions) {
    if (Str(c, "type") == type) return c;
  }
  return kNull;
}

// The pod's claims by name (from status.resourceClaimStatuses and spec.resourceClaims), and the
// pod claim names not created yet.
std::vector<std::string> ClaimNamesOf(const json& pod, std::vector<std::string>* pending) {
  std::vector<std::string> names;
  const json& statuses = Field(Field(pod, "status"), "resourceClaimStatuses");
  std::set<std::string> with_status;
  if (statuses.is_array()) {
    for (const json& s : statuses) {
      with_status.insert(Str(s, "name"));
      if (!Str(s, "resourceClaimName").empty()) names.push_back(Str(s, "resourceClaimName"));
    }
  }
  const json& claims = Field(Field(pod, "spec"), "resourceClaims");
  if (claims.is_array()) {
    for (const json& c : claims) {
      if (!Str(c, "resourceClaimName").empty()) {
        names.push_back(Str(c, "resourceClaimName"));
      } else if (pending != nullptr && !with_status.contains(Str(c, "name"))) {
        pending->push_back(Str(c, "name"));
      }
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// The node a claim is allocated on (its allocation's node selector), "" when it is not.
std::string AllocatedNode(const json& claim) {
  const json& allocation = Field(Field(claim, "status"), "allocation");
  if (!allocation.is_object()) return "";
  const json& terms = Field(Field(allocation, "nodeSelector"), "nodeSelectorTerms");
  if (terms.is_array()) {
    for (const json& term : terms) {
      for (const char* kind : {"matchFields", "matchExpressions"}) {
        const json& reqs = Field(term, kind);
        if (!reqs.is_array()) continue;
        for (const json& r : reqs) {
          const json& values = Field(r, "values");
          if ((Str(r, "key") == "metadata.name" || Str(r, "key") == "kubernetes.io/hostname") &&
              values.is_array() && values.size() == 1 && values[0].is_string()) {
            return values[0].get<std::string>();
          }
        }
      }
    }
  }
  return "(any node)";
}

// A container waiting for a reason that will not pass by itself.
std::string WaitingProblem(const json& pod) {
  static const std::set<std::string> kImage = {"ErrImagePull", "ImagePullBackOff",
                                               "InvalidImageName", "ErrImageNeverPull"};
  static const std::set<std::string> kOther = {"CreateContainerConfigError", "CreateContainerError",
                                               "RunContainerError", "CrashLoopBackOff",
                                               "PreStartHookError"};
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const json& statuses = Field(Field(pod, "status"), list);
    if (!statuses.is_array()) continue;
    for (const json& s : statuses) {
      const json& waiting = Field(Field(s, "state"), "waiting");
      const std::string reason = Str(waiting, "reason");
      const std::string message = Str(waiting, "message");
      const std::string tail = message.empty() ? "" : ": " + Abbreviate(message, 300);
      if (kImage.contains(reason)) {
        return std::string("image pull failed (").append(reason).append(")").append(tail);
      }
      if (kOther.contains(reason)) return reason + tail;
    }
  }
  return "";
}

struct PodView {
  JobPhase phase = JobPhase::kWaiting;
  std::string line;
  std::vector<std::string> facts;
};

PodView ViewPod(const json& pod, const std::map<std::string, json>& claims) {
  PodView v;
  const std::string name = NameOf(pod);
  const std::string node = Str(Field(pod, "spec"), "nodeName");
  const std::string phase =
      Str(Field(pod, "status"), "phase").empty() ? "Pending" : Str(Field(pod, "status"), "phase");
  std::vector<std::string> not_created;
  std::vector<std::string> unallocated;
  for (const std::string& c : ClaimNamesOf(pod, &not_created)) {
    auto it = claims.find(c);
    if (it == claims.end()) {
      not_created.push_back(c);
    } else if (AllocatedNode(it->second).empty()) {
      unallocated.push_back(c);
      v.facts.push_back("claim " + c + " not allocated");
    } else {
      v.facts.push_back("claim " + c + " allocated on node " + AllocatedNode(it->second));
    }
  }
  const std::string on = node.empty() ? "" : " on node " + node;
  if (phase == "Succeeded" || phase == "Failed") {
    v.phase = JobPhase::kFinished;
    v.line = "pod " + name + " " + phase + on;
  } else if (phase == "Running") {
    v.phase = JobPhase::kRunning;
    v.line = "pod " + name + " Running" + on;
  } else if (const std::string problem = WaitingProblem(pod); !problem.empty()) {
    v.phase = JobPhase::kStuck;
    v.line = "pod " + name + " " + phase + on + ": " + problem;
  } else if (const json& sched = Condition(pod, "PodScheduled"); Str(sched, "status") == "False") {
    v.phase = JobPhase::kStuck;
    v.line = "pod " + name + " " + phase + ": unschedulable: " + Str(sched, "message");
    if (!unallocated.empty()) v.line += " (claim " + Join(unallocated) + " not allocated)";
  } else if (!not_created.empty() && node.empty()) {
    v.line = "pod " + name + " " + phase + ": claim " + Join(not_created) +
             " not created yet (is the resourceclaim controller running?)";
  } else if (!unallocated.empty()) {
    v.line = "pod " + name + " " + phase + ": not scheduled yet, claim " + Join(unallocated) +
             " not allocated";
  } else if (!node.empty()) {
    v.line = "pod " + name + " " + phase + on +
             ": scheduled, no container started yet (is the kubelet on " + node + " running?)";
  } else {
    v.line = "pod " + name + " " + phase + ": not scheduled yet";
  }
  v.facts.insert(v.facts.begin(), v.line);
  return v;
}

std::string UtcFormat(Clock::WallTime t, const char* format) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, format);
  return out.str();
}

}  // namespace run_decide_cc
using namespace run_decide_cc;  // NOLINT(google-build-using-namespace)
}  // namespace

JobState DecideJob(const JobSnapshot& snapshot, bool timed_out) {
  JobState state;
  int finished = 0;
  int running = 0;
  std::vector<std::string> stuck;
  std::vector<std::string> waiting;
  for (const json& pod : snapshot.pods) {
    PodView v = ViewPod(pod, snapshot.claims);
    state.facts.insert(state.facts.end(), v.facts.begin(), v.facts.end());
    if (v.phase == JobPhase::kFinished) ++finished;
    if (v.phase == JobPhase::kRunning) ++running;
    if (v.phase == JobPhase::kStuck) stuck.push_back(v.line);
    if (v.phase == JobPhase::kWaiting) waiting.push_back(v.line);
  }
  const json& failed = [&]() -> const json& {
    static const json kNull;
    const json& conditions = Field(Field(snapshot.job, "status"), "conditions");
    if (conditions.is_array()) {
      for (const json& c : conditions) {
        if (Str(c, "type") == "Failed" && Str(c, "status") == "True") return c;
      }
    }
    return kNull;
  }();
  const bool all_ended =
      !snapshot.pods.empty() && finished == static_cast<int>(snapshot.pods.size());
  if (finished >= snapshot.pods_wanted || (all_ended && !failed.is_null())) {
    state.phase = JobPhase::kFinished;
  } else if (snapshot.pods.empty() && !failed.is_null()) {
    state.phase = JobPhase::kFinished;
    state.reason = "Job " + snapshot.name + " failed: " + Str(failed, "reason") + ": " +
                   Str(failed, "message");
  } else if (snapshot.pods.empty() && snapshot.job.is_null()) {
    state.phase = JobPhase::kFinished;
    state.reason = "Job " + snapshot.name + " is gone (deleted by someone else?)";
  } else if (snapshot.pods.empty()) {
    state.phase = timed_out ? JobPhase::kStuck : JobPhase::kWaiting;
    state.reason = timed_out ? "Job " + snapshot.name +
                                   " never started: no pod was created (is the job controller "
                                   "running?)"
                             : "Job " + snapshot.name + ": no pod yet";
  } else if (!stuck.empty()) {
    state.phase = JobPhase::kStuck;
    state.reason = Join(stuck, "; ");
  } else if (running > 0) {
    state.phase = JobPhase::kRunning;
    state.reason = waiting.empty() ? "still running" : Join(waiting, "; ");
  } else {
    state.phase = JobPhase::kWaiting;
    state.reason = waiting.empty() ? "waiting for its pods" : Join(waiting, "; ");
  }
  if (timed_out && state.phase == JobPhase::kWaiting && !snapshot.pods.empty()) {
    state.phase = JobPhase::kStuck;
  }
  return state;
}

std::optional<ClaimEnergy> SumEnergy(const std::vector<json>& claims, const std::string& node) {
  ClaimEnergy e;
  std::set<std::pair<std::string, std::string>> seen;
  std::set<std::string> sources;
  for (const json& claim : claims) {
    const json& devices = Field(Field(claim, "status"), "devices");
    if (!devices.is_array()) continue;
    for (const json& d : devices) {
      const json& energy = Field(Field(d, "data"), "energy");
      if (!energy.is_object()) continue;
      if (!node.empty() && !Str(d, "pool").empty() && Str(d, "pool") != node) continue;
      if (!seen.insert({Str(d, "pool"), Str(d, "device")}).second) continue;
      ++e.devices;
      e.joules += Num(energy, "joules");
      e.seconds = std::max(e.seconds, Num(energy, "secondsHeld"));
      e.peak_watts += Num(energy, "peakWatts");
      e.health_events += static_cast<int64_t>(Num(energy, "healthEvents"));
      e.xids += static_cast<int64_t>(Num(energy, "xids"));
      if (!Str(energy, "source").empty()) sources.insert(Str(energy, "source"));
      if (!(Field(energy, "final").is_boolean() && Field(energy, "final").get<bool>())) {
        e.final = false;
      }
    }
  }
  if (e.devices == 0) return std::nullopt;
  e.average_watts = e.seconds > 0 ? e.joules / e.seconds : 0.0;
  e.source = Join(sources, ",");
  return e;
}

void RememberEnergy(const json& claim, SeenEnergy& seen) {
  const json& devices = Field(Field(claim, "status"), "devices");
  if (!devices.is_array()) return;
  for (const json& d : devices) {
    const json& energy = Field(Field(d, "data"), "energy");
    if (!energy.is_object()) continue;
    json& kept = seen.claims[NameOf(claim)][Str(d, "pool") + "/" + Str(d, "device")];
    const json& kept_final = Field(Field(Field(kept, "data"), "energy"), "final");
    const json& now_final = Field(energy, "final");
    const bool kept_is_final = kept_final.is_boolean() && kept_final.get<bool>();
    const bool now_is_final = now_final.is_boolean() && now_final.get<bool>();
    if (!kept_is_final || now_is_final) kept = d;
  }
}

std::vector<json> SeenClaims(const SeenEnergy& seen, const std::vector<std::string>& names) {
  std::vector<json> out;
  for (const std::string& name : names) {
    auto it = seen.claims.find(name);
    if (it == seen.claims.end()) continue;
    json devices = json::array();
    for (const auto& [key, entry] : it->second) devices.push_back(entry);
    out.push_back({{"metadata", {{"name", name}}}, {"status", {{"devices", std::move(devices)}}}});
  }
  return out;
}

std::vector<std::string> PodClaimNames(const json& pod) { return ClaimNamesOf(pod, nullptr); }

std::optional<json> ResultFromPod(const json& pod, const std::string& log) {
  static constexpr std::string_view kPrefix = "XPU-ACCEPT-RESULT ";
  std::optional<json> found;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    json parsed = json::parse(line.substr(kPrefix.size()), nullptr, false);
    if (parsed.is_object()) found = std::move(parsed);
  }
  if (found) return found;
  const json& statuses = Field(Field(pod, "status"), "containerStatuses");
  if (!statuses.is_array()) return std::nullopt;
  for (const json& s : statuses) {
    if (Str(s, "name") != kWorkloadContainer) continue;
    for (const char* state : {"state", "lastState"}) {
      const std::string message = Str(Field(Field(s, state), "terminated"), "message");
      // FallbackToLogsOnError puts the log tail there: the result line may be in it.
      if (message.find(kPrefix) != std::string::npos) return ResultFromPod(json(), message);
      json parsed = json::parse(message, nullptr, false);
      if (parsed.is_object()) return parsed;
    }
  }
  return std::nullopt;
}

json CompleteResult(json result, const json& pod, const std::string& vendor,
                    const std::optional<ClaimEnergy>& energy) {
  const std::string node = Str(Field(pod, "spec"), "nodeName");
  if (Str(result, "node").empty() && !node.empty()) result["node"] = node;
  if (Str(result, "pod").empty() && !NameOf(pod).empty()) result["pod"] = NameOf(pod);
  if (Str(result, "vendor").empty()) result["vendor"] = vendor;
  json& stages = result["stages"];
  if (!stages.is_object()) stages = json::object();
  if (stages.contains("power") && stages["power"].is_object()) {
    json& power = stages["power"];
    if (energy) {
      power["status"] = "pass";
      power["reason"] = "read from the claim's status.devices[].data.energy (" +
                        std::to_string(energy->devices) + " devices, " + energy->source +
                        (energy->final ? ", final" : ", last periodic write") + ")";
      power["joules"] = energy->joules;
      power["averageWatts"] = energy->average_watts;
      power["peakWatts"] = energy->peak_watts;
      power["peakWattsIsUpperBound"] = energy->devices > 1;
      power["seconds"] = energy->seconds;
      power["devices"] = energy->devices;
      power["source"] = energy->source;
      power["final"] = energy->final;
      if (!energy->final) {
        power["note"] =
            "last periodic write, up to one --claim-status-interval before unprepare: the claim "
            "was deallocated before the plugin's final write at unprepare was seen";
      }
      const double tokens = Num(Field(stages, "performance"), "tokens");
      if (tokens > 0) power["joulesPerToken"] = energy->joules / tokens;
    } else {
      power["status"] = "skip";
      power["reason"] =
          "no energy in the claim status (a kubelet plugin without energy accounting, or the API "
          "server dropped status.devices)";
    }
  }
  if (energy && stages.contains("stability") && stages["stability"].is_object()) {
    stages["stability"]["healthEvents"] = energy->health_events;
    stages["stability"]["xids"] = energy->xids;
  }
  return result;
}

bool ResultPassed(const json& result) {
  const json& stages = Field(result, "stages");
  if (!stages.is_object() || stages.empty()) return false;
  for (const auto& [name, stage] : stages.items()) {
    const std::string status = Str(stage, "status");
    if (status != "pass" && status != "skip") return false;
  }
  return true;
}

StatusOr<std::string> AcceptedLabelKey(const std::string& capability_class) {
  const std::string name = "accepted." + capability_class;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  bool valid = !capability_class.empty() && name.size() <= 63 && alnum(name.back());
  for (char c : name) valid = valid && (alnum(c) || c == '-' || c == '_' || c == '.');
  if (!valid) {
    return InvalidArgumentError("--class " + QuoteText(capability_class) +
                                ": --label-nodes needs the label key xpu.dra.dev/" + name +
                                ", whose name part must be at most 63 characters of "
                                "[A-Za-z0-9._-], ending alphanumeric (it has " +
                                std::to_string(name.size()) + ")");
  }
  return "xpu.dra.dev/" + name;
}

std::string NewRunId(const Clock& clock) {
  std::random_device random;
  std::ostringstream suffix;
  suffix << std::hex << std::setw(4) << std::setfill('0') << (random() & 0xffffU);
  return UtcFormat(clock.WallNow(), "%Y%m%d-%H%M%S") + "-" + suffix.str();
}

}  // namespace xpu::accept
