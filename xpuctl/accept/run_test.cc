#include "xpuctl/accept/run.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "api/testing/claim_json.h"
#include "base/testing/temp_dir.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/client/wait.h"

namespace xpu::accept {
namespace {

namespace kc = api::client;
using nlohmann::json;
using namespace std::chrono_literals;

// ---- fixtures ----

json Pod(const std::string& name, const std::string& phase, const std::string& node = "") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"containers", json::array({{{"name", "workload"}, {"image", "x"}}})}}},
              {"status", {{"phase", phase}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

// `pod` with its request "xpu" bound to the claim `claim` (status.resourceClaimStatuses).
json WithClaim(json pod, const std::string& claim) {
  pod["status"]["resourceClaimStatuses"] =
      json::array({{{"name", "xpu"}, {"resourceClaimName", claim}}});
  return pod;
}

json EnergyDevice(const std::string& pool, const std::string& device, double joules, double seconds,
                  double peak, bool final = true) {
  return {{"driver", "xpu.dra.dev"},
          {"pool", pool},
          {"device", device},
          {"data",
           {{"energy",
             {{"joules", joules},
              {"averageWatts", joules / seconds},
              {"peakWatts", peak},
              {"secondsHeld", seconds},
              {"source", "power-x-time"},
              {"samples", 10},
              {"healthEvents", 1},
              {"xids", 0},
              {"final", final}}}}}};
}

json Claim(const std::string& name, const std::string& node, json devices = json::array()) {
  json claim = api::testing::ClaimJson(name, "xpu", "training.nvidia", 2);
  json results = json::array();
  for (const json& d : devices) {
    results.push_back({{"request", "xpu"},
                       {"driver", d["driver"]},
                       {"pool", d["pool"]},
                       {"device", d["device"]}});
  }
  if (!node.empty()) {
    claim["status"]["allocation"] = {
        {"devices", {{"results", results}}},
        {"nodeSelector",
         {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({node})}}})}}})}}}};
  }
  if (!devices.empty()) claim["status"]["devices"] = std::move(devices);
  return claim;
}

// A summary result as the workload writes it to the termination message.
json Summary(const std::string& operators_status = "pass") {
  return {{"schemaVersion", "xpu.dra.dev/acceptance-result/v1"},
          {"vendor", "nvidia"},
          {"image", "registry.example/xpu-accept:nvidia"},
          {"class", "training"},
          {"device", {{"type", "cpu"}, {"count", 1}, {"names", json::array({"cpu"})}}},
          {"startedAt", "2026-01-01T00:00:00Z"},
          {"finishedAt", "2026-01-01T00:01:00Z"},
          {"summary", true},
          {"stages",
           {{"operators", {{"status", operators_status}, {"seconds", 1.5}}},
            {"performance", {{"status", "pass"}, {"tokens", 1000}}},
            {"power", {{"status", "skip"}, {"reason", "measured by the driver"}}},
            {"stability", {{"status", "pass"}, {"errors", 0}}}}}};
}

// What render gives for one vendor: a claim template and a Job on it.
RenderedAcceptance Rendered(const std::string& run_id) {
  const json labels = {{"app.kubernetes.io/managed-by", "xpuctl-accept"},
                       {"xpu.dra.dev/accept-run", run_id}};
  json rct = {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaimTemplate"},
      {"metadata", {{"name", "accept-training-nvidia"}, {"labels", labels}}},
      {"spec",
       {{"spec",
         {{"devices",
           {{"requests",
             json::array(
                 {{{"name", "xpu"},
                   {"exactly", {{"deviceClassName", "training.nvidia"}, {"count", 1}}}}})}}}}}}}};
  json job_labels = labels;
  job_labels["xpu.dra.dev/accept-vendor"] = "nvidia";
  json job = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", "accept-training-nvidia"}, {"labels", job_labels}}},
      {"spec",
       {{"backoffLimit", 0},
        {"template",
         {{"metadata", {{"labels", job_labels}}},
          {"spec",
           {{"restartPolicy", "Never"},
            {"resourceClaims",
             json::array(
                 {{{"name", "xpu"}, {"resourceClaimTemplateName", "accept-training-nvidia"}}})},
            {"containers",
             json::array({{{"name", "workload"},
                           {"image", "registry.example/xpu-accept:nvidia"},
                           {"command", json::array({"python3", "-m", "xpu_acceptance"})},
                           {"resources", {{"claims", json::array({{{"name", "xpu"}}})}}}}})}}}}}}}};
  RenderedAcceptance r;
  r.objects = {rct, job};
  r.jobs.push_back({"nvidia", "accept-training-nvidia", "registry.example/xpu-accept:nvidia",
                    "ResourceClaimTemplate accept-training-nvidia", 1, job});
  r.stages = {"operators", "performance", "power", "stability"};
  return r;
}

// What the job controller and the kubelet would make of the Job: its pod (ended `phase`, the
// summary in the termination message) and the pod's claim, with energy.
std::pair<json, json> PlayedPod(const json& job, const std::string& phase, const json& summary) {
  json pod = Pod("accept-training-nvidia-abcde", phase, "n1");
  pod["metadata"]["labels"] = {
      {"batch.kubernetes.io/job-name", job["metadata"]["name"]},
      {"job-name", job["metadata"]["name"]},
      {"xpu.dra.dev/accept-run", job["metadata"]["labels"]["xpu.dra.dev/accept-run"]}};
  pod["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "batch/v1"},
                                                     {"kind", "Job"},
                                                     {"name", job["metadata"]["name"]},
                                                     {"uid", job["metadata"]["uid"]},
                                                     {"controller", true}}});
  pod["spec"]["resourceClaims"] = job["spec"]["template"]["spec"]["resourceClaims"];
  pod = WithClaim(pod, "accept-training-nvidia-abcde-xpu");
  pod["status"]["containerStatuses"] =
      json::array({{{"name", "workload"},
                    {"state", {{"terminated", {{"exitCode", 0}, {"message", summary.dump()}}}}}}});
  json claim = Claim("accept-training-nvidia-abcde-xpu", "n1",
                     json::array({EnergyDevice("n1", "gpu-0", 7200, 100, 80),
                                  EnergyDevice("n1", "gpu-1", 7350, 100, 81)}));
  return {pod, claim};
}

// An in-memory cluster; `on_list` runs before every List (a controller or kubelet at work).
class FakeCluster final : public RunCluster {
 public:
  std::map<std::string, json> objects;  // "resource|ns|name"
  std::map<std::string, std::string> logs;
  std::function<void(FakeCluster&)> on_list;
  std::vector<std::string> deletes;  // "resource/name grace"
  int next_uid = 1;

  static std::string Key(const kc::ResourceRef& ref, const std::string& ns,
                         const std::string& name) {
    return ref.resource + "|" + (ref.namespaced ? ns : "") + "|" + name;
  }
  void Put(const kc::ResourceRef& ref, json object) {
    object["metadata"]["uid"] = "uid-" + std::to_string(next_uid++);
    const std::string key =
        Key(ref, object["metadata"].value("namespace", ""), object["metadata"]["name"]);
    objects[key] = std::move(object);
  }
  std::vector<json> OfResource(const std::string& resource) const {
    std::vector<json> out;
    for (const auto& [key, o] : objects) {
      if (key.rfind(resource + "|", 0) == 0) out.push_back(o);
    }
    return out;
  }

  StatusOr<json> Get(const kc::ResourceRef& ref, const std::string& ns,
                     const std::string& name) override {
    auto it = objects.find(Key(ref, ns, name));
    if (it == objects.end()) return NotFoundError("get " + ref.resource + " " + name + ": 404");
    return it->second;
  }
  StatusOr<std::vector<json>> List(const kc::ResourceRef& ref, const std::string& ns,
                                   const std::string& selector) override {
    if (on_list) on_list(*this);
    std::vector<json> out;
    for (const json& o : OfResource(ref.resource)) {
      if (!ns.empty() && ref.namespaced && o["metadata"].value("namespace", "") != ns) continue;
      if (!selector.empty()) {
        const auto eq = selector.find('=');
        const json labels = o["metadata"].value("labels", json::object());
        if (labels.value(selector.substr(0, eq), "\x01") != selector.substr(eq + 1)) continue;
      }
      out.push_back(o);
    }
    return out;
  }
  StatusOr<json> Create(const kc::ResourceRef& ref, const std::string& ns,
                        const json& object) override {
    if (objects.contains(Key(ref, ns, object["metadata"]["name"]))) {
      return Status(StatusCode::kAlreadyExists, "create: 409 AlreadyExists");
    }
    Put(ref, object);
    return objects[Key(ref, ns, object["metadata"]["name"])];
  }
  StatusOr<json> Update(const kc::ResourceRef& ref, const std::string& ns,
                        const json& object) override {
    auto it = objects.find(Key(ref, ns, object["metadata"]["name"]));
    if (it == objects.end()) return NotFoundError("update: 404");
    it->second = object;
    return object;
  }
  // A pod bound to a node that is not terminal waits for its kubelet, unless grace is 0.
  Status Delete(const kc::ResourceRef& ref, const std::string& ns, const std::string& name,
                std::optional<int64_t> grace) override {
    deletes.push_back(ref.resource + "/" + name + (grace ? " " + std::to_string(*grace) : ""));
    auto it = objects.find(Key(ref, ns, name));
    if (it == objects.end()) return NotFoundError("delete: 404");
    const json& o = it->second;
    const std::string phase = o.value("status", json::object()).value("phase", "");
    if (ref.resource == "pods" && o["spec"].contains("nodeName") && phase != "Succeeded" &&
        phase != "Failed" && grace != 0) {
      it->second["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
      return OkStatus();
    }
    objects.erase(it);
    return OkStatus();
  }
  StatusOr<std::string> PodLog(const std::string& /*ns*/, const std::string& pod,
                               const std::string& container) override {
    if (container != "workload") return InvalidArgumentError("container " + container);
    auto it = logs.find(pod);
    if (it == logs.end()) return NotFoundError("get pods " + pod + " log: 404");
    return it->second;
  }
};

RunOptions Options(const std::string& dir) {
  RunOptions o;
  o.run_id = "test-run";
  o.capability_class = "training";
  o.timeout = 30s;
  o.poll = 2s;
  o.results_dir = dir + "/results";
  return o;
}

// RunAcceptance of Rendered("test-run") on `cluster` with a fake clock and Options(dir), labelling
// the nodes that pass when `label_nodes`.
StatusOr<RunOutcome> RunOnFake(FakeCluster& cluster, const std::string& dir, std::ostream& progress,
                               bool label_nodes = false) {
  FakeClock clock;
  RunOptions options = Options(dir);
  options.label_nodes = label_nodes;
  return RunAcceptance(cluster, clock, Rendered("test-run"), options, progress);
}

// The run's Job once applied, while its pod has not been played yet; nullptr otherwise.
const json* JobToPlay(const FakeCluster& c) {
  auto job = c.objects.find("jobs|default|accept-training-nvidia");
  if (job == c.objects.end() || c.objects.contains("pods|default|accept-training-nvidia-abcde")) {
    return nullptr;
  }
  return &job->second;
}

// ---- decide ----

TEST_CASE("DecideJob says why a Job does not run", "[accept_run]") {
  JobSnapshot s{"nvidia", "accept-x", 1, json::object(), {}, {}};
  SECTION("no pod: waiting, then never started at the timeout") {
    CHECK(DecideJob(s, false).phase == JobPhase::kWaiting);
    const JobState late = DecideJob(s, true);
    CHECK(late.phase == JobPhase::kStuck);
    CHECK(late.reason ==
          "Job accept-x never started: no pod was created (is the job controller running?)");
  }
  SECTION("unschedulable") {
    json pod = Pod("p", "Pending");
    pod["status"]["conditions"] =
        json::array({{{"type", "PodScheduled"},
                      {"status", "False"},
                      {"reason", "Unschedulable"},
                      {"message", "0/1 nodes are available: 1 cannot allocate all claims."}}});
    pod["spec"]["resourceClaims"] =
        json::array({{{"name", "xpu"}, {"resourceClaimTemplateName", "t"}}});
    pod = WithClaim(pod, "p-xpu");
    s.pods = {pod};
    s.claims["p-xpu"] = Claim("p-xpu", "");
    const JobState st = DecideJob(s, false);
    CHECK(st.phase == JobPhase::kStuck);
    CHECK(st.reason ==
          "pod p Pending: unschedulable: 0/1 nodes are available: 1 cannot allocate all claims. "
          "(claim p-xpu not allocated)");
    CHECK(std::find(st.facts.begin(), st.facts.end(), "claim p-xpu not allocated") !=
          st.facts.end());
  }
  SECTION("image pull") {
    json pod = Pod("p", "Pending", "n1");
    pod["status"]["containerStatuses"] = json::array(
        {{{"name", "workload"},
          {"state", {{"waiting", {{"reason", "ImagePullBackOff"}, {"message", "not found"}}}}}}});
    s.pods = {pod};
    const JobState st = DecideJob(s, false);
    CHECK(st.phase == JobPhase::kStuck);
    CHECK(st.reason == "pod p Pending on node n1: image pull failed (ImagePullBackOff): not found");
  }
  SECTION("claim allocated, scheduled, no kubelet") {
    json pod = Pod("p", "Pending", "n1");
    pod = WithClaim(pod, "p-xpu");
    s.pods = {pod};
    s.claims["p-xpu"] = Claim("p-xpu", "n1");
    const JobState st = DecideJob(s, false);
    CHECK(st.phase == JobPhase::kWaiting);
    CHECK(st.facts == std::vector<std::string>{
                          "pod p Pending on node n1: scheduled, no container started yet (is the "
                          "kubelet on n1 running?)",
                          "claim p-xpu allocated on node n1"});
    CHECK(DecideJob(s, true).phase == JobPhase::kStuck);
  }
  SECTION("running, then finished") {
    s.pods = {Pod("p", "Running", "n1")};
    CHECK(DecideJob(s, false).phase == JobPhase::kRunning);
    s.pods = {Pod("p", "Failed", "n1")};
    CHECK(DecideJob(s, false).phase == JobPhase::kFinished);
    CHECK(DecideJob(s, false).reason.empty());
  }
  SECTION("a gang Job waits for all its pods") {
    s.pods_wanted = 2;
    s.pods = {Pod("p0", "Succeeded", "n1"), Pod("p1", "Running", "n2")};
    CHECK(DecideJob(s, false).phase == JobPhase::kRunning);
  }
  SECTION("a Job that failed without pods") {
    s.job["status"]["conditions"] =
        json::array({{{"type", "Failed"},
                      {"status", "True"},
                      {"reason", "DeadlineExceeded"},
                      {"message", "Job was active longer than specified deadline"}}});
    const JobState st = DecideJob(s, false);
    CHECK(st.phase == JobPhase::kFinished);
    CHECK(st.reason ==
          "Job accept-x failed: DeadlineExceeded: Job was active longer than specified deadline");
  }
}

TEST_CASE("SumEnergy adds the devices of the pod's node", "[accept_run]") {
  const json claim = Claim("c", "n1",
                           json::array({EnergyDevice("n1", "gpu-0", 7200, 100, 80),
                                        EnergyDevice("n1", "gpu-1", 7350, 90, 81, false),
                                        EnergyDevice("n2", "gpu-0", 1000, 100, 10)}));
  const auto e = SumEnergy({claim, claim}, "n1");  // the same claim twice counts once
  REQUIRE(e);
  CHECK(e->devices == 2);
  CHECK(e->joules == Approx(14550));
  CHECK(e->seconds == Approx(100));
  CHECK(e->average_watts == Approx(145.5));
  CHECK(e->peak_watts == Approx(161));
  CHECK(e->health_events == 2);
  CHECK_FALSE(e->final);
  CHECK(e->source == "power-x-time");
  CHECK(SumEnergy({claim}, "")->devices == 3);
  CHECK_FALSE(SumEnergy({Claim("c", "n1")}, "n1"));
}

TEST_CASE("RememberEnergy keeps the last energy seen per device, a final one over the rest",
          "[accept_run]") {
  SeenEnergy seen;
  RememberEnergy(Claim("c", "n1",
                       json::array({EnergyDevice("n1", "gpu-0", 100, 1, 80, false),
                                    EnergyDevice("n1", "gpu-1", 100, 1, 80, false)})),
                 seen);
  RememberEnergy(Claim("c", "n1",
                       json::array({EnergyDevice("n1", "gpu-0", 7200, 100, 80, true),
                                    EnergyDevice("n1", "gpu-1", 7350, 100, 81, false)})),
                 seen);
  // Later: gpu-0 not final again (not taken), gpu-1 gone from the status (the last one kept).
  RememberEnergy(Claim("c", "n1", json::array({EnergyDevice("n1", "gpu-0", 9999, 200, 80, false)})),
                 seen);
  RememberEnergy(Claim("c", ""), seen);  // deallocated: no status.devices
  const auto claims = SeenClaims(seen, {"c", "not-seen"});
  REQUIRE(claims.size() == 1);
  const auto e = SumEnergy(claims, "n1");
  REQUIRE(e);
  CHECK(e->devices == 2);
  CHECK(e->joules == Approx(14550));
  CHECK(e->seconds == Approx(100));
  CHECK_FALSE(e->final);
  CHECK(SeenClaims(seen, {"other"}).empty());
}

TEST_CASE("ResultFromPod reads the log line, else the termination message", "[accept_run]") {
  json pod = Pod("p", "Succeeded", "n1");
  pod["status"]["containerStatuses"] = json::array(
      {{{"name", "workload"},
        {"state", {{"terminated", {{"message", R"({"summary": true, "stages": {}})"}}}}}}});
  const std::string log = "starting\nXPU-ACCEPT-RESULT {\"summary\": false, \"stages\": {}}\nbye\n";
  CHECK(ResultFromPod(pod, log)->at("summary") == false);
  CHECK(ResultFromPod(pod, "no result here\n")->at("summary") == true);
  pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] =
      "Traceback...\nXPU-ACCEPT-RESULT {\"summary\": false}\n";
  CHECK(ResultFromPod(pod, "")->at("summary") == false);
  pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = "Traceback...";
  CHECK_FALSE(ResultFromPod(pod, ""));
}

TEST_CASE("CompleteResult fills power and stability from the claim's energy", "[accept_run]") {
  const json pod = Pod("p", "Succeeded", "n1");
  ClaimEnergy e;
  e.joules = 2000;
  e.seconds = 100;
  e.average_watts = 20;
  e.peak_watts = 30;
  e.health_events = 2;
  e.xids = 1;
  e.devices = 2;
  e.source = "nvml-energy-counter";
  json r = Summary();
  r.erase("vendor");
  const json done = CompleteResult(r, pod, "nvidia", e);
  CHECK(done["vendor"] == "nvidia");
  CHECK(done["node"] == "n1");
  CHECK(done["pod"] == "p");
  const json& power = done["stages"]["power"];
  CHECK(power["status"] == "pass");
  CHECK(power["joules"] == 2000.0);
  CHECK(power["averageWatts"] == 20.0);
  CHECK(power["peakWatts"] == 30.0);
  CHECK(power["seconds"] == 100.0);
  CHECK(power["joulesPerToken"] == Approx(2.0));
  CHECK(done["stages"]["stability"]["healthEvents"] == 2);
  CHECK(done["stages"]["stability"]["xids"] == 1);
  CHECK(ResultPassed(done));

  CHECK(power["final"] == true);
  CHECK_FALSE(power.contains("note"));
  e.final = false;
  const json last = CompleteResult(Summary(), pod, "nvidia", e)["stages"]["power"];
  CHECK(last["status"] == "pass");
  CHECK(last["final"] == false);
  CHECK(last["note"].get<std::string>().find("last periodic write") == 0);
  e.final = true;

  const json none = CompleteResult(Summary(), pod, "nvidia", std::nullopt);
  CHECK(none["stages"]["power"]["status"] == "skip");
  CHECK(none["stages"]["power"]["reason"].get<std::string>().find("no energy in the claim") == 0);
  CHECK_FALSE(ResultPassed(CompleteResult(Summary("fail"), pod, "nvidia", e)));
}

TEST_CASE("AcceptedLabelKey checks the label key", "[accept_run]") {
  CHECK(*AcceptedLabelKey("training-large-memory") == "xpu.dra.dev/accepted.training-large-memory");
  const auto long_class = AcceptedLabelKey(std::string(60, 'a'));
  CHECK(long_class.status().code() == StatusCode::kInvalidArgument);
  CHECK(long_class.status().message().find("--class") == 0);
  CHECK_FALSE(AcceptedLabelKey("bad/class").ok());
  CHECK_FALSE(AcceptedLabelKey("").ok());
  FakeClock clock;
  CHECK(NewRunId(clock).rfind("20260101-000000-", 0) == 0);
}

// ---- act, on the fake ----

TEST_CASE("RunAcceptance: a Job that never starts times out, says why, cleans up", "[accept_run]") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  FakeCluster cluster;
  std::ostringstream progress;
  const auto outcome = RunOnFake(cluster, dir, progress);
  REQUIRE(outcome.ok());
  CHECK(outcome->exit_code == 1);
  CHECK(outcome->timed_out);
  REQUIRE(outcome->unfinished.size() == 1);
  CHECK(outcome->unfinished[0].reason ==
        "Job accept-training-nvidia never started: no pod was created (is the job controller "
        "running?)");
  CHECK(progress.str().find("nvidia: Job accept-training-nvidia: no pod yet") != std::string::npos);
  CHECK(cluster.objects.empty());
  CHECK(outcome->left_behind.empty());
  CHECK(std::find(cluster.deletes.begin(), cluster.deletes.end(), "jobs/accept-training-nvidia") !=
        cluster.deletes.end());
}

TEST_CASE("RunAcceptance: a finished run is collected, labelled and cleaned up", "[accept_run]") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  FakeCluster cluster;
  cluster.Put(kc::Nodes(), {{"metadata", {{"name", "n1"}}}});
  cluster.Put(kc::ResourceClaims(), Claim("theirs", "n1"));  // not the run's: stays
  int polls = 0;
  cluster.on_list = [&polls](FakeCluster& c) {
    const json* job = JobToPlay(c);
    if (job == nullptr || ++polls < 3) return;  // a few polls without a pod first
    auto [pod, claim] = PlayedPod(*job, "Succeeded", Summary());
    c.Put(Pods(), pod);
    c.Put(kc::ResourceClaims(), claim);
    c.logs[pod["metadata"]["name"]] = "XPU-ACCEPT-RESULT " + Summary().dump() + "\n";
  };
  std::ostringstream progress;
  const auto outcome = RunOnFake(cluster, dir, progress, /*label_nodes=*/true);
  INFO(progress.str());
  REQUIRE(outcome.status().ToString() == "ok");
  CHECK(outcome->exit_code == 0);
  REQUIRE(outcome->results.size() == 1);
  const PodResult& r = outcome->results[0];
  CHECK(r.passed);
  CHECK(r.node == "n1");
  CHECK(r.file == dir + "/results/nvidia-accept-training-nvidia-abcde.json");
  std::ifstream file(r.file);
  const json written = json::parse(file);
  CHECK(written["stages"]["power"]["status"] == "pass");
  CHECK(written["stages"]["power"]["joules"] == Approx(14550));
  CHECK(written["stages"]["power"]["joulesPerToken"] == Approx(14.55));
  CHECK(written["pod"] == "accept-training-nvidia-abcde");
  CHECK(progress.str().find("nvidia: pod accept-training-nvidia-abcde Succeeded on node n1") !=
        std::string::npos);
  CHECK(progress.str().find("claim accept-training-nvidia-abcde-xpu allocated on node n1") !=
        std::string::npos);
  CHECK(outcome->labelled_nodes == std::vector<std::string>{"n1"});
  CHECK(cluster.objects["nodes||n1"]["metadata"]["labels"]["xpu.dra.dev/accepted.training"] ==
        "2026-01-01");
  // Left: the node and the other claim.
  CHECK(cluster.objects.size() == 2);
  CHECK(cluster.objects.contains("resourceclaims|default|theirs"));
}

TEST_CASE("RunAcceptance: the energy a claim loses when its pod ends is the last one seen",
          "[accept_run]") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  FakeCluster cluster;
  int polls = 0;
  // Running with the energy of 1 s, then of 100 s; then Succeeded, and the claim controller has
  // deallocated the claim: the API server dropped status.devices, the final write never came, and
  // the pod's status no longer names its claim.
  cluster.on_list = [&polls](FakeCluster& c) {
    auto job = c.objects.find("jobs|default|accept-training-nvidia");
    if (job == c.objects.end() || ++polls > 5) return;  // after 5: the run is cleaning up
    auto [pod, claim] = PlayedPod(job->second, polls >= 5 ? "Succeeded" : "Running", Summary());
    if (polls < 5) {
      pod["status"].erase("containerStatuses");
      const double seconds = polls < 3 ? 1 : 100;
      claim["status"]["devices"] =
          json::array({EnergyDevice("n1", "gpu-0", 72 * seconds, seconds, 80, false),
                       EnergyDevice("n1", "gpu-1", 73.5 * seconds, seconds, 81, false)});
    } else {
      claim["status"].erase("devices");
      claim["status"].erase("allocation");
      pod["status"].erase("resourceClaimStatuses");  // as a pod that ended may lose them
    }
    c.Put(Pods(), pod);
    c.Put(kc::ResourceClaims(), claim);
  };
  std::ostringstream progress;
  const auto outcome = RunOnFake(cluster, dir, progress);
  INFO(progress.str());
  REQUIRE(outcome.status().ToString() == "ok");
  CHECK(outcome->exit_code == 0);
  REQUIRE(outcome->results.size() == 1);
  const json& power = outcome->results[0].result["stages"]["power"];
  CHECK(power["status"] == "pass");
  CHECK(power["joules"] == Approx(14550));
  CHECK(power["seconds"] == Approx(100));
  CHECK(power["final"] == false);
  CHECK(power["note"].get<std::string>().find("last periodic write") == 0);
  CHECK(outcome->results[0].result["stages"]["stability"]["healthEvents"] == 2);
}

TEST_CASE("RunAcceptance: a failed stage exits 1 and labels nothing, a stuck pod is forced out",
          "[accept_run]") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  FakeCluster cluster;
  cluster.Put(kc::Nodes(), {{"metadata", {{"name", "n1"}}}});
  SECTION("failed stage") {
    cluster.on_list = [](FakeCluster& c) {
      const json* job = JobToPlay(c);
      if (job == nullptr) return;
      auto [pod, claim] = PlayedPod(*job, "Failed", Summary("fail"));
      c.Put(Pods(), pod);
      c.Put(kc::ResourceClaims(), claim);
    };
    std::ostringstream progress;
    const auto outcome = RunOnFake(cluster, dir, progress, /*label_nodes=*/true);
    REQUIRE(outcome.ok());
    CHECK(outcome->exit_code == 1);
    REQUIRE(outcome->results.size() == 1);
    CHECK_FALSE(outcome->results[0].passed);
    CHECK(outcome->labelled_nodes.empty());
    CHECK_FALSE(cluster.objects["nodes||n1"]["metadata"].contains("labels"));
    CHECK(cluster.objects.size() == 1);
  }
  SECTION("a pod pending on a node without kubelet") {
    cluster.on_list = [](FakeCluster& c) {
      const json* job = JobToPlay(c);
      if (job == nullptr) return;
      auto [pod, claim] = PlayedPod(*job, "Pending", Summary());
      pod["status"].erase("containerStatuses");
      c.Put(Pods(), pod);
      c.Put(kc::ResourceClaims(), claim);
    };
    std::ostringstream progress;
    const auto outcome = RunOnFake(cluster, dir, progress);
    REQUIRE(outcome.ok());
    CHECK(outcome->exit_code == 1);
    REQUIRE(outcome->unfinished.size() == 1);
    CHECK(outcome->unfinished[0].reason.find("Pending on node n1: scheduled") != std::string::npos);
    CHECK(std::find(cluster.deletes.begin(), cluster.deletes.end(),
                    "pods/accept-training-nvidia-abcde 0") != cluster.deletes.end());
    CHECK(cluster.objects.size() == 1);
  }
}

TEST_CASE("RunAcceptance: an apply that fails cleans up what it applied", "[accept_run]") {
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  FakeCluster cluster;
  json clash = Rendered("other").objects[1];
  clash["metadata"]["namespace"] = "default";
  cluster.Put(Jobs(), clash);
  std::ostringstream progress;
  const auto outcome = RunOnFake(cluster, dir, progress);
  REQUIRE_FALSE(outcome.ok());
  CHECK(outcome.status().message().find("apply job default/accept-training-nvidia") == 0);
  CHECK(outcome.status().message().find("--keep") != std::string::npos);
  // The template this run created is gone; the other run's Job stays.
  CHECK(cluster.objects.size() == 1);
  CHECK(cluster.objects.contains("jobs|default|accept-training-nvidia"));
}

// ---- on the real kube-sim ----

// kube-sim has no job controller, scheduler or kubelet: the test plays them.
struct Sim {
  std::unique_ptr<e2e::KubeSimProcess> process;
  std::unique_ptr<kc::Client> client;
  std::unique_ptr<RunCluster> cluster;
};

Sim StartSim() {
  Sim sim;
  auto started = e2e::StartSimWithClient(XPU_KUBE_SIM_BINARY, {"default"}, {"n1"});
  REQUIRE(started.ok());
  sim.process = std::move(started->sim);
  sim.client = std::move(started->client);
  auto cluster = NewRealRunCluster(*sim.client);
  REQUIRE(cluster.ok());
  sim.cluster = std::move(*cluster);
  return sim;
}

std::vector<std::string> RunObjects(kc::Client& client) {
  std::vector<std::string> left;
  for (const kc::ResourceRef& ref : {Jobs(), Pods(), kc::ResourceClaimTemplates(),
                                     kc::ResourceClaims(), kc::AcceleratorGangs()}) {
    auto listed = client.List(ref, "");
    REQUIRE(listed.ok());
    for (const json& o : listed->items) {
      left.push_back(ref.resource + "/" + o["metadata"]["name"].get<std::string>());
    }
  }
  return left;
}

// A run against kube-sim in real time: the test sets `options` (its polls) and calls Run.
struct OnSim {
  StatusOr<RunOutcome> Run(std::ostream& progress) {
    return RunAcceptance(*sim.cluster, RealClock(), Rendered("test-run"), options, progress);
  }
  Sim sim = StartSim();
  const testing::TempDir temp;
  const std::string& dir = temp.path();
  RunOptions options = Options(dir);
};

TEST_CASE_METHOD(OnSim, "accept run on kube-sim: no job controller, so the Job never starts",
                 "[accept_run][kube_sim]") {
  options.timeout = 2s;
  options.poll = 200ms;
  std::ostringstream progress;
  const auto outcome = Run(progress);
  INFO(progress.str());
  REQUIRE(outcome.status().ToString() == "ok");
  CHECK(outcome->exit_code == 1);
  REQUIRE(outcome->unfinished.size() == 1);
  CHECK(outcome->unfinished[0].reason.find("never started: no pod was created") !=
        std::string::npos);
  CHECK(RunObjects(*sim.client).empty());
}

TEST_CASE_METHOD(OnSim,
                 "accept run on kube-sim: the test plays kubelet, the run collects, labels, "
                 "cleans up",
                 "[accept_run][kube_sim]") {
  options.poll = 100ms;
  options.label_nodes = true;
  // The kubelet: once the Job exists, its pod ended Succeeded and its claim with energy. Catch's
  // assertions stay on the test's thread: this one reports what went wrong as a Status.
  Status played = NotFoundError("the Job never appeared");
  std::thread kubelet([&] {
    auto client = kc::Client::Create(*sim.process->Config());
    if (!client.ok()) {
      played = client.status();
      return;
    }
    json job;
    if (!e2e::Eventually([&] {
          auto got = (*client)->Get(Jobs(), "default", "accept-training-nvidia");
          if (got.ok()) job = *got;
          return got.ok();
        })) {
      return;
    }
    played = [&]() -> Status {
      auto [pod, claim] = PlayedPod(job, "Succeeded", Summary());
      const json claim_status = claim["status"];
      claim.erase("status");
      ASSIGN_OR_RETURN(json created_claim,
                       (*client)->Create(kc::ResourceClaims(), "default", claim));
      created_claim["status"] = claim_status;
      RETURN_IF_ERROR(
          (*client)->UpdateStatus(kc::ResourceClaims(), "default", created_claim).status());
      const json pod_status = pod["status"];
      pod.erase("status");
      ASSIGN_OR_RETURN(json created_pod, (*client)->Create(Pods(), "default", pod));
      created_pod["status"] = pod_status;
      return (*client)->UpdateStatus(Pods(), "default", created_pod).status();
    }();
  });
  std::ostringstream progress;
  const auto outcome = Run(progress);
  kubelet.join();
  INFO(progress.str());
  CHECK(played.ToString() == "ok");
  REQUIRE(outcome.status().ToString() == "ok");
  CHECK(outcome->exit_code == 0);
  REQUIRE(outcome->results.size() == 1);
  std::ifstream file(outcome->results[0].file);
  const json written = json::parse(file);
  CHECK(written["stages"]["power"]["status"] == "pass");
  CHECK(written["stages"]["power"]["averageWatts"] == Approx(145.5));
  CHECK(written["node"] == "n1");
  const auto node = sim.client->Get(kc::Nodes(), "", "n1");
  REQUIRE(node.ok());
  CHECK((*node)["metadata"]["labels"]["xpu.dra.dev/accepted.training"].is_string());
  CHECK(RunObjects(*sim.client).empty());
}

}  // namespace
}  // namespace xpu::accept
