// xpu-demo: the whole driver doing its job. It starts the local upstream control plane
// (scripts/cluster), the xpu-dra controller, and an xpu-dra plugin with a node agent on each node
// of a mixed fleet of fixture hosts; runs workloads through the real kube-scheduler; compares
// every placement with the topology solver's choice on the same free devices; fails a device and
// shows a new claim avoid it; writes out/demo.json and out/report.html; and stops everything.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "base/name_list.h"
#include "base/status.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "e2e/demo/container_view.h"
#include "e2e/demo/report.h"
#include "topology/dot.h"
#include "topology/solver.h"

namespace xpu::demo {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kNs = "demo";
constexpr const char* kDriver = "xpu.dra.dev";
// The node whose host root is a copy, so that the demo can fail one of its devices.
constexpr const char* kFaultHost = "hgx-h200";

const std::vector<std::string>& FleetHosts() {
  static const std::vector<std::string> hosts = {
      "atlas800-9000",   "atlas800t-a3", "atlas200t-a2-box16", "hgx-h200",
      "pcie-2numa-8gpu", "hygon-dcu-8",  "cambricon-mlu370-x8"};
  return hosts;
}

// A small super-pod fabric for the gang scenario: four Atlas 800T A2 in two leaves of one
// super-pod, labelled as a cluster's network tiers are.
const std::vector<std::pair<std::string, std::string>>& GangNodes() {
  static const std::vector<std::pair<std::string, std::string>> nodes = {
      {"a2-1", "a2-leaf-1"}, {"a2-2", "a2-leaf-1"}, {"a2-3", "a2-leaf-2"}, {"a2-4", "a2-leaf-2"}};
  return nodes;
}
constexpr const char* kGangHost = "atlas800t-a2";
constexpr const char* kGangSuperPod = "a2-pod";
constexpr const char* kGangFabricLabel = "xpu.dra.dev/demo-fabric";

// Every node of the demo: the mixed fleet, then the gang fabric.
std::vector<std::string> AllNodes() {
  std::vector<std::string> nodes = FleetHosts();
  for (const auto& [node, leaf] : GangNodes()) nodes.push_back(node);
  return nodes;
}

// A claim template in the demo namespace: one request "devs" (or firstAvailable subrequests).
json Template(const std::string& name, const json& devices) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec", {{"spec", {{"devices", devices}}}}}};
}

json Exactly(const std::string& klass, int count, bool same_domain) {
  json devices = {
      {"requests",
       {{{"name", "devs"}, {"exactly", {{"deviceClassName", klass}, {"count", count}}}}}}};
  if (same_domain) {
    devices["constraints"] = {
        {{"requests", {"devs"}}, {"matchAttribute", "xpu.dra.dev/scaleUpDomain"}}};
  }
  return devices;
}

// A pod whose claim comes from `templ`; pinned to `node` when given.
json PodFromTemplate(const std::string& name, const std::string& templ, const std::string& node) {
  json pod = e2e::PodObject(kNs, name, "", node);
  pod["spec"]["resourceClaims"] =
      json::array({{{"name", "devs"}, {"resourceClaimTemplateName", templ}}});
  return pod;
}

class Demo {
 public:
  Demo(std::string out_dir, std::string lab_report, std::string containers)
      : out_dir_(std::move(out_dir)),
        lab_report_(std::move(lab_report)),
        containers_(std::move(containers)) {}
  Status Run();

 private:
  Status StartFleet();
  // Waits for `pod` to run with its claim allocated, and records the placement.
  Status Record(const std::string& step, const std::string& pod, const std::string& request);
  Status Place(const std::string& step, const json& pod, const std::string& request);
  Status ApplyExample(const std::string& step, const std::string& file, const std::string& request);
  Status Release(const std::vector<std::string>& pods);
  Status AddTemplate(const std::string& name, const json& devices);
  Status FailDevice();
  Status Gangs();
  Status AddGangFabric();
  // Waits for the node's slices, keeps its topology and prints the node's line.
  Status Joined(const std::string& host);
  // Creates the gang and waits until its status has a phase and a Placed condition.
  StatusOr<json> MakeGang(const std::string& name, int nodes, const std::string& max_tier);
  Status WriteReport();
  Status SettleOrder(const std::string& node);
  void Say(const std::string& line, bool story = true);

  std::string out_dir_;
  std::string lab_report_;  // --lab-report: the placement lab's page, for the last section
  std::string containers_;  // --containers: e2e/demo/containers.sh's results
  Clock::time_point start_ = Clock::now();
  std::unique_ptr<e2e::Cluster> cluster_;
  std::unique_ptr<e2e::DriverHarness> harness_;
  std::vector<std::unique_ptr<e2e::ChildProcess>> agents_;
  std::map<std::string, std::string> model_of_;                     // node -> fixture host
  std::map<std::string, topology::Node> topo_;                      // node -> its topology
  std::map<std::string, std::map<std::string, std::string>> held_;  // node -> device -> pod
  std::map<std::string, std::string> node_of_pod_;
  std::map<std::string, std::set<std::string>> sick_;  // node -> unhealthy devices
  std::string fault_root_;
  DemoResult result_;
};

void Demo::Say(const std::string& line, bool story) {
  std::cout << line << std::endl;
  if (story) result_.story.push_back(line);
}

Status Demo::StartFleet() {
  e2e::ClusterOptions options;
  options.kind = e2e::ClusterKind::kUpstream;
  ASSIGN_OR_RETURN(cluster_, e2e::Cluster::Start(options));
  result_.kubernetes_version = cluster_->version();
  const std::string work = cluster_->dir() + "/demo";
  Say("control plane: Kubernetes " + cluster_->version() +
      " (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) in " + cluster_->dir());
  ASSIGN_OR_RETURN(harness_, e2e::DriverHarness::Create(*cluster_, work));
  // The demo walks through the device order first fit meets, which is attributes mode's; from
  // 1.36 a config without a mode publishes groups (docs/controller-config.md).
  RETURN_IF_ERROR(harness_->StartController(e2e::kBuiltInConfigAttributes));
  Say("controller: the built-in config in attributes mode (set in the demo; the default from "
      "Kubernetes 1.36 is groups mode)");
  // The fault host runs on a copy of its host root: the demo takes a device node away later.
  fault_root_ = work + "/hosts/" + kFaultHost;
  std::error_code ec;
  fs::create_directories(work + "/hosts", ec);
  fs::copy(e2e::SourceDir() + "/e2e/fixtures/hosts/" + kFaultHost, fault_root_,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) return InternalError("copy the " + std::string(kFaultHost) + " host: " + ec.message());
  for (const auto& host : FleetHosts()) {
    RETURN_IF_ERROR(harness_->AddNode(host, host == kFaultHost ? fault_root_ : host));
    model_of_[host] = host;
  }
  for (const auto& host : FleetHosts()) {
    ASSIGN_OR_RETURN(auto agent, e2e::StartNodeAgent(*harness_, host));
    agents_.push_back(std::move(agent));
  }
  std::cout << "fleet (one plugin and node agent per node):\n";
  for (const auto& host : FleetHosts()) RETURN_IF_ERROR(Joined(host));
  Say("fleet up: " + std::to_string(FleetHosts().size()) +
      " nodes published their devices; the controller wrote the DeviceClasses");
  return OkStatus();
}

Status Demo::Joined(const std::string& host) {
  RETURN_IF_ERROR(harness_->WaitPublished(host, 1));
  ASSIGN_OR_RETURN(auto topo, e2e::NodeTopology(harness_->client(), host));
  RETURN_IF_ERROR(SettleOrder(host));
  ASSIGN_OR_RETURN(auto devices, harness_->PublishedDevices(host));
  const std::string vendor =
      devices.empty() ? "" : devices[0].value("/attributes/vendor/string"_json_pointer, "");
  const std::string model =
      devices.empty() ? "" : devices[0].value("/attributes/model/string"_json_pointer, "");
  char line[256];
  std::snprintf(line, sizeof(line), "  %-20s %2zu x %-8s %-22s rule set %s", host.c_str(),
                devices.size(), vendor.c_str(), model.c_str(),
                std::string(topology::RuleSetKindName(topo.rule_set())).c_str());
  std::cout << line << "\n";
  topo_.emplace(host, std::move(topo));
  return OkStatus();
}

// The gang fabric joins the cluster only now, so that the earlier jobs did not land on it.
Status Demo::AddGangFabric() {
  for (const auto& [node, leaf] : GangNodes()) {
    RETURN_IF_ERROR(harness_->AddNode(node, kGangHost,
                                      {{"topology.xpu.dra.dev/leaf", leaf},
                                       {"topology.xpu.dra.dev/superpod", kGangSuperPod},
                                       {"topology.xpu.dra.dev/spine", "a2-spine"},
                                       {kGangFabricLabel, "a2"}}));
    model_of_[node] = kGangHost;
    ASSIGN_OR_RETURN(auto agent, e2e::StartNodeAgent(*harness_, node));
    agents_.push_back(std::move(agent));
  }
  for (const auto& [node, leaf] : GangNodes()) RETURN_IF_ERROR(Joined(node));
  Say("gang fabric: 4 Atlas 800T A2 joined, in two leaves of one super-pod (" +
      std::string(kGangSuperPod) + ")");
  return OkStatus();
}

// The controller re-orders a pool after each change; the next claim must meet the new order.
Status Demo::SettleOrder(const std::string& node) {
  std::set<std::string> held;
  for (const auto& [device, pod] : held_[node]) held.insert(device);
  return harness_->WaitPublishedOrder(node, false, held);
}

Status Demo::Record(const std::string& step, const std::string& pod_name,
                    const std::string& request) {
  kc::Client& client = harness_->client();
  json pod;
  json claim;
  const bool placed = e2e::WaitFor(
      [&] {
        auto got = client.Get(e2e::Pods(), kNs, pod_name);
        if (!got.ok() || got->value("/status/phase"_json_pointer, "") != "Running") return false;
        pod = *got;
        const std::string claim_name =
            pod.value("/status/resourceClaimStatuses/0/resourceClaimName"_json_pointer, "");
        auto c = client.Get(kc::ResourceClaims(), kNs, claim_name);
        if (!c.ok()) return false;
        claim = *c;
        return !e2e::AllocatedDevices(claim).empty();
      },
      std::chrono::seconds(90));
  if (!placed) {
    return UnavailableError("pod " + std::string(kNs) + "/" + pod_name +
                            " was not running with an allocated claim within 90 s");
  }
  Placement p;
  p.step = step;
  p.pod = pod_name;
  p.request = request;
  p.node = pod.value("/spec/nodeName"_json_pointer, "");
  p.model = model_of_[p.node];
  for (const auto& r :
       claim.value("/status/allocation/devices/results"_json_pointer, json::array())) {
    if (r.value("driver", "") != kDriver) continue;
    p.devices.push_back(r.value("device", ""));
    const std::string req = r.value("request", "");
    if (req.find('/') != std::string::npos) p.note = "firstAvailable chose " + req;
  }
  const auto topo = topo_.find(p.node);
  if (topo == topo_.end()) return InternalError("pod placed on unknown node " + p.node);
  std::vector<std::string> busy;
  for (const auto& [device, holder] : held_[p.node]) busy.push_back(device);
  busy.insert(busy.end(), sick_[p.node].begin(), sick_[p.node].end());
  ASSIGN_OR_RETURN(auto used, topo->second.ParseDeviceList(JoinNames(busy)));
  ASSIGN_OR_RETURN(auto picked, topo->second.ParseDeviceList(JoinNames(p.devices)));
  const topology::DeviceSet free = topo->second.All() - used;
  p.free_before = free.size();
  const auto best = topology::Solve(topo->second, free, picked.size());
  if (best.feasible) p.solver = topo->second.Names(best.devices);
  p.rules_hold = topology::RuleAllows(topo->second, picked) && (picked & used).empty();
  p.as_good = p.rules_hold && best.feasible &&
              !best.score.BetterThan(topology::Evaluate(topo->second, free, picked));
  for (const auto& d : p.devices) held_[p.node][d] = pod_name;
  node_of_pod_[pod_name] = p.node;
  std::cout << SummaryLine(p) << std::endl;
  result_.placements.push_back(std::move(p));
  return SettleOrder(result_.placements.back().node);
}

Status Demo::AddTemplate(const std::string& name, const json& devices) {
  return harness_->client()
      .Create(kc::ResourceClaimTemplates(), kNs, Template(name, devices))
      .status();
}

Status Demo::Place(const std::string& step, const json& pod, const std::string& request) {
  RETURN_IF_ERROR(harness_->client().Create(e2e::Pods(), kNs, pod).status());
  return Record(step, pod.at("metadata").value("name", ""), request);
}

// Applies an example of deploy/examples/ (a claim template and a Job) and records the Job's pod.
Status Demo::ApplyExample(const std::string& step, const std::string& file,
                          const std::string& request) {
  const std::string path = e2e::SourceDir() + "/deploy/examples/" + file;
  ASSIGN_OR_RETURN(auto applied, cluster_->Kubectl({"apply", "-n", kNs, "-f", path, "-o", "name"}));
  std::string job;
  std::istringstream lines(applied);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("job.batch/", 0) == 0) job = line.substr(10);
  }
  if (job.empty()) return FailedPreconditionError(path + ": no Job in it");
  std::string pod;
  e2e::WaitFor([&] {
    kc::ListOptions options;
    options.label_selector = "job-name=" + job;
    auto pods = harness_->client().List(e2e::Pods(), kNs, options);
    if (pods.ok() && !pods->items.empty()) {
      pod = pods->items[0].value("/metadata/name"_json_pointer, "");
    }
    return !pod.empty();
  });
  if (pod.empty()) return UnavailableError("Job " + job + " made no pod within 60 s");
  return Record(step, pod, request + " (deploy/examples/" + file + ")");
}

Status Demo::Release(const std::vector<std::string>& pods) {
  RETURN_IF_ERROR(e2e::DeletePodsNow(*cluster_, kNs, pods));
  std::set<std::string> nodes;
  for (const auto& pod : pods) {
    const std::string node = node_of_pod_[pod];
    nodes.insert(node);
    for (auto it = held_[node].begin(); it != held_[node].end();) {
      it = it->second == pod ? held_[node].erase(it) : std::next(it);
    }
  }
  // The claims from templates go with their pods (the resourceclaim controller deletes them).
  const bool gone = e2e::WaitFor([&] {
    auto claims = harness_->client().List(kc::ResourceClaims(), kNs);
    if (!claims.ok()) return false;
    for (const auto& c : claims->items) {
      const std::string owner = c.value("/metadata/ownerReferences/0/name"_json_pointer, "");
      for (const auto& pod : pods) {
        if (owner == pod) return false;
      }
    }
    return true;
  });
  if (!gone) return UnavailableError("the claims of released pods were not deleted in 60 s");
  for (const auto& node : nodes) RETURN_IF_ERROR(SettleOrder(node));
  return OkStatus();
}

Status Demo::FailDevice() {
  const std::string node = kFaultHost;
  const auto& topo = topo_.at(node);
  // The node's jobs finish first, so that the fault hits a free device and the claim after it
  // has the whole node to choose from.
  std::set<std::string> running;
  for (const auto& [device, pod] : held_[node]) running.insert(pod);
  if (!running.empty()) {
    const std::vector<std::string> pods(running.begin(), running.end());
    RETURN_IF_ERROR(Release(pods));
    Say("release: the jobs on " + node + " finished (" + JoinNames(pods) + ")");
  }
  std::string victim;
  for (int id = 0; id < topo.size() && victim.empty(); ++id) {
    const std::string name = topo.device(id).name;
    if (held_[node].count(name) == 0) victim = name;
  }
  if (victim.empty()) return FailedPreconditionError("no free device on " + node + " to fail");
  ASSIGN_OR_RETURN(auto published, harness_->PublishedDevice(node, victim));
  const int index = published.value("/attributes/index/int"_json_pointer, -1);
  const std::string dev = fault_root_ + "/dev/nvidia" + std::to_string(index);
  std::error_code ec;
  if (index < 0 || !fs::remove(dev, ec)) return InternalError("cannot remove " + dev);
  Say("fault: " + node + " " + victim + " loses its device node (/dev/nvidia" +
      std::to_string(index) + "), as a GPU that fell off the bus");
  const auto tainted_at = Clock::now();
  RETURN_IF_ERROR(harness_->WaitDeviceTaint(node, victim, "xpu.dra.dev/unhealthy"));
  sick_[node].insert(victim);
  const auto took =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - tainted_at).count();
  Say("fault: the plugin's probe reported it and the controller tainted " + victim +
      " xpu.dra.dev/unhealthy:NoSchedule in its slice (" + std::to_string(took) + " s)");
  RETURN_IF_ERROR(SettleOrder(node));
  // Every healthy free GPU of the node, asked for by one claim: the tainted one is not among them.
  const int free = topo.size() - static_cast<int>(held_[node].size()) - 1;
  const std::string templ = "gpu-" + std::to_string(free) + "-after-fault";
  RETURN_IF_ERROR(AddTemplate(templ, Exactly("nvidia.xpu.dra.dev", free, false)));
  RETURN_IF_ERROR(Place("fault", PodFromTemplate("after-fault", templ, node),
                        std::to_string(free) + " x nvidia on " + node + ", after the fault"));
  const auto& last = result_.placements.back().devices;
  if (std::find(last.begin(), last.end(), victim) != last.end()) {
    return InternalError("the claim after the fault got the tainted device " + victim);
  }
  Say("fault: a new claim for the " + std::to_string(free) + " healthy free GPUs got " +
      JoinNames(last) + ", not " + victim);
  return OkStatus();
}

StatusOr<json> Demo::MakeGang(const std::string& name, int nodes, const std::string& max_tier) {
  kc::Client& client = harness_->client();
  const json gang = {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                     {"kind", "AcceleratorGang"},
                     {"metadata", {{"name", name}, {"namespace", kNs}}},
                     {"spec",
                      {{"nodes", nodes},
                       {"devicesPerNode", 8},
                       {"capabilityClass", "huawei.xpu.dra.dev"},
                       {"maxTier", max_tier},
                       {"nodeSelector", {{kGangFabricLabel, "a2"}}}}}};
  RETURN_IF_ERROR(client.Create(kc::AcceleratorGangs(), kNs, gang).status());
  json got;
  const bool decided = e2e::WaitFor([&] {
    auto g = client.Get(kc::AcceleratorGangs(), kNs, name);
    if (!g.ok()) return false;
    got = *g;
    return !got.value("/status/phase"_json_pointer, "").empty() &&
           !got.value("/status/conditions"_json_pointer, json::array()).empty();
  });
  if (!decided) return UnavailableError("gang " + name + " got no status within 30 s");
  return got;
}

namespace {

GangView ViewOf(const json& gang) {
  GangView v;
  v.name = gang.value("/metadata/name"_json_pointer, "");
  v.phase = gang.value("/status/phase"_json_pointer, "");
  v.tier = gang.value("/status/tier"_json_pointer, "");
  v.domain = gang.value("/status/domain"_json_pointer, "");
  for (const auto& c : gang.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "Placed") v.message = c.value("message", "");
  }
  std::map<int64_t, std::string> by_rank;
  for (const auto& n : gang.value("/status/nodes"_json_pointer, json::array())) {
    by_rank[n.value("rank", int64_t{0})] = n.value("name", "");
  }
  for (const auto& [rank, node] : by_rank) v.members.push_back(node);
  for (const auto& [node, leaf] : GangNodes()) v.fabric.push_back({node, leaf, kGangSuperPod});
  return v;
}

}  // namespace

Status Demo::Gangs() {
  RETURN_IF_ERROR(AddGangFabric());
  kc::Client& client = harness_->client();
  ASSIGN_OR_RETURN(const json llm, MakeGang("llm", 2, "leaf"));
  GangView placed = ViewOf(llm);
  if (placed.phase != "Placed") {
    return FailedPreconditionError("gang llm was not placed: " + placed.message);
  }
  Say("gang: llm (2 nodes x 8 NPUs, up to a leaf) placed by the controller in " + placed.tier +
      " " + placed.domain + ", ranks " + JoinNames(placed.members, ", "));
  for (size_t m = 0; m < placed.members.size(); ++m) {
    const std::string pod_name = "llm-" + std::to_string(m);
    json pod = e2e::PodObject(kNs, pod_name, "", "");
    // The member's own claim first: the placement record reads the first template claim.
    pod["spec"]["containers"][0]["resources"]["claims"] =
        json::array({{{"name", "devs"}}, {{"name", "gang"}}});
    pod["spec"]["resourceClaims"] =
        json::array({{{"name", "devs"}, {"resourceClaimTemplateName", "llm-member"}},
                     {{"name", "gang"}, {"resourceClaimName", "llm-gang"}}});
    RETURN_IF_ERROR(Place("gang", pod, "8 x huawei, a member of gang llm"));
    const std::string& node = result_.placements.back().node;
    if (std::find(placed.members.begin(), placed.members.end(), node) == placed.members.end()) {
      std::string what = "member " + pod_name;
      return InternalError(what.append(" ran on ").append(node).append(", not a node of the gang"));
    }
  }
  // What the containers read: the rank table the plugin wrote on the rank-0 node.
  ASSIGN_OR_RETURN(const json shared, client.Get(kc::ResourceClaims(), kNs, "llm-gang"));
  const std::string table_path = harness_->NodeDir(placed.members[0]) + "/state/gangs/" +
                                 shared.value("/metadata/uid"_json_pointer, "") +
                                 "/rank_table.json";
  std::ifstream in(table_path);
  const json table = json::parse(in, nullptr, false);
  if (table.is_discarded()) return InternalError("no rank table at " + table_path);
  Say("gang: both members run on the gang's nodes, one each; their containers read " +
      std::string("/etc/xpu-dra/gang/rank_table.json (HCCL ") + table.value("version", "") + ", " +
      table.value("server_count", "") + " servers, ranks 0-15) and NODE_RANK, WORLD_SIZE=16");
  result_.gangs.push_back(std::move(placed));

  ASSIGN_OR_RETURN(const json wide, MakeGang("wide", 3, "leaf"));
  GangView pending = ViewOf(wide);
  Say("gang: wide (3 nodes x 8 NPUs, up to a leaf) stays " + pending.phase + ": " +
      pending.message.substr(0, pending.message.find(';')));
  result_.gangs.push_back(std::move(pending));
  return OkStatus();
}

// Writes BASE.dot and, with Graphviz (run without a shell: the output folder is the user's),
// BASE.svg; the SVG ready to inline.
StatusOr<std::string> RenderSvg(const std::string& base, const std::string& dot_text) {
  std::ofstream(base + ".dot") << dot_text;
  ASSIGN_OR_RETURN(auto dot, e2e::ChildProcess::Start("/usr/bin/dot",
                                                      {"-Tsvg", base + ".dot", "-o", base + ".svg"},
                                                      base + ".dot.log"));
  if (dot->Wait() != 0) return InternalError("graphviz failed on " + base + ".dot: " + dot->Log());
  std::ifstream in(base + ".svg");
  std::stringstream svg;
  svg << in.rdbuf();
  return InlineSvg(svg.str());
}

Status Demo::WriteReport() {
  for (const auto& host : AllNodes()) {
    NodeView v;
    v.node = host;
    v.model = model_of_[host];
    v.dot = topology::ToDot(topo_.at(host));
    v.owner = held_[host];
    v.unhealthy = sick_[host];
    v.devices = topo_.at(host).size();
    result_.nodes.push_back(std::move(v));
  }
  result_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (!lab_report_.empty()) {
    std::ifstream lab(lab_report_);
    if (!lab) return NotFoundError("--lab-report " + lab_report_ + ": cannot open the file");
    std::stringstream page;
    page << lab.rdbuf();
    result_.lab_report_html = page.str();
  }
  if (!containers_.empty()) {
    std::ifstream in(containers_);
    if (!in) return NotFoundError("--containers " + containers_ + ": cannot open the file");
    result_.containers = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (result_.containers.is_discarded()) {
      return InvalidArgumentError("--containers " + containers_ + ": not JSON");
    }
    std::cout << "\nreal containers:\n" << ContainersSummary(result_.containers);
  }
  std::error_code ec;
  fs::create_directories(out_dir_ + "/nodes", ec);
  if (ec) return InternalError("create " + out_dir_ + "/nodes: " + ec.message());
  const auto colours = PodColours(result_.nodes);
  std::map<std::string, std::string> svg_of_node;
  for (const auto& n : result_.nodes) {
    ASSIGN_OR_RETURN(svg_of_node[n.node],
                     RenderSvg(out_dir_ + "/nodes/" + n.node, ColouredDot(n, colours)));
  }
  fs::create_directories(out_dir_ + "/gangs", ec);
  for (const auto& g : result_.gangs) {
    ASSIGN_OR_RETURN(svg_of_node["gang/" + g.name],
                     RenderSvg(out_dir_ + "/gangs/" + g.name, GangFabricDot(g)));
  }
  std::ofstream(out_dir_ + "/demo.json") << DemoJson(result_).dump(2) << "\n";
  std::ofstream(out_dir_ + "/report.html") << ReportHtml(result_, svg_of_node);
  return OkStatus();
}

Status Demo::Run() {
  RETURN_IF_ERROR(StartFleet());
  kc::Client& client = harness_->client();
  RETURN_IF_ERROR(e2e::EnsureNamespace(client, kNs));

  std::cout << "\nworkloads through the real kube-scheduler (pod, node, allocated, solver's set "
               "on the same free devices, verdict):\n";
  RETURN_IF_ERROR(ApplyExample("training", "npu-8-attributes.yaml", "8 x huawei, one node"));
  RETURN_IF_ERROR(ApplyExample("nvlink", "gpu-4-nvlink.yaml", "4 x nvidia, one NVLink domain"));

  // A burst of small jobs fills the GPU nodes and spreads over the NPU nodes.
  RETURN_IF_ERROR(AddTemplate("gpu-1", Exactly("nvidia.xpu.dra.dev", 1, false)));
  RETURN_IF_ERROR(AddTemplate("npu-2", Exactly("huawei.xpu.dra.dev", 2, true)));
  std::vector<std::string> burst;
  for (int i = 1; i <= 20; ++i) {
    const bool gpu = i % 5 != 0 && i <= 15;  // 12 single GPUs, 8 NPU pairs
    char name[32];
    std::snprintf(name, sizeof(name), "burst-%02d", i);
    burst.emplace_back(name);
    RETURN_IF_ERROR(Place("burst", PodFromTemplate(name, gpu ? "gpu-1" : "npu-2", ""),
                          gpu ? "1 x nvidia" : "2 x huawei, one scaleUpDomain"));
  }
  Say("burst: 20 small jobs placed; every NVIDIA GPU is now in use");

  // Large memory and bf16, from whichever vendor has room: NVIDIA first.
  json first_available = {
      {"requests",
       {{{"name", "devs"},
         {"firstAvailable",
          {{{"name", "nvidia"}, {"deviceClassName", "training-large-memory.nvidia"}, {"count", 2}},
           {{"name", "huawei"}, {"deviceClassName", "training-large-memory.huawei"}, {"count", 2}},
           {{"name", "hygon"},
            {"deviceClassName", "training-large-memory.hygon"},
            {"count", 2}}}}}}}};
  RETURN_IF_ERROR(AddTemplate("large-memory", first_available));
  RETURN_IF_ERROR(Place("large-memory", PodFromTemplate("large-memory", "large-memory", ""),
                        "2 x training-large-memory: nvidia, else huawei, else hygon"));
  Say("large-memory: " + result_.placements.back().note + " on " + result_.placements.back().node +
      " (no NVIDIA GPU was free)");

  // Half the burst finishes; larger jobs take the holes.
  std::vector<std::string> done;
  for (size_t i = 0; i < burst.size(); i += 2) done.push_back(burst[i]);
  RETURN_IF_ERROR(Release(done));
  Say("release: " + std::to_string(done.size()) + " burst jobs finished (" + JoinNames(done) +
      "); the controller re-ordered the freed devices");
  RETURN_IF_ERROR(AddTemplate("npu-4", Exactly("huawei.xpu.dra.dev", 4, true)));
  RETURN_IF_ERROR(AddTemplate("gpu-2", Exactly("nvidia.xpu.dra.dev", 2, true)));
  for (int i = 1; i <= 3; ++i) {
    RETURN_IF_ERROR(Place("refill", PodFromTemplate("npu4-" + std::to_string(i), "npu-4", ""),
                          "4 x huawei, one scaleUpDomain"));
  }
  for (int i = 1; i <= 2; ++i) {
    RETURN_IF_ERROR(Place("refill", PodFromTemplate("gpu2-" + std::to_string(i), "gpu-2", ""),
                          "2 x nvidia, one scaleUpDomain"));
  }
  RETURN_IF_ERROR(ApplyExample("refill", "mixed-first-available.yaml",
                               "4 x nvidia, else huawei, else hygon, one scaleUpDomain"));
  RETURN_IF_ERROR(
      ApplyExample("refill", "capability-class.yaml", "1 x training-large-memory, any vendor"));
  RETURN_IF_ERROR(Gangs());
  RETURN_IF_ERROR(FailDevice());
  return WriteReport();
}

int Main(int argc, char** argv) {
  std::string out = "out";
  std::string lab_report;
  std::string containers;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout
          << "usage: xpu-demo [--out DIR] [--lab-report FILE] [--containers FILE]\n"
             "Runs the xpu-dra driver on a local upstream control plane (scripts/cluster) with a\n"
             "mixed fleet of fixture hosts, places workloads through the real kube-scheduler,\n"
             "compares each placement with the topology solver, places a multi-node gang on a\n"
             "small super-pod fabric, fails a device, and writes\n"
             "DIR/demo.json and DIR/report.html (default DIR: out). Stops everything it started.\n"
             "  --out DIR           where the results go (default out)\n"
             "  --lab-report FILE   the placement lab's HTML report (xpuctl replay --report),\n"
             "                      shown as the report's last section\n"
             "  --containers FILE   what pods saw in real containers (e2e/demo/containers.sh),\n"
             "                      shown as the report's section \"Real containers\"\n"
             "  --help              print this help\n";
      return 0;
    }
    if (arg == "--out" && i + 1 < argc) {
      out = argv[++i];
      continue;
    }
    if (arg == "--lab-report" && i + 1 < argc) {
      lab_report = argv[++i];
      continue;
    }
    if (arg == "--containers" && i + 1 < argc) {
      containers = argv[++i];
      continue;
    }
    std::cerr << "xpu-demo: unknown argument " << arg << " (see --help)\n";
    return 2;
  }
  Demo demo(out, lab_report, containers);
  const Status s = demo.Run();
  if (!s.ok()) {
    std::cerr << "xpu-demo: " << s.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace xpu::demo

int main(int argc, char** argv) { return xpu::demo::Main(argc, argv); }
