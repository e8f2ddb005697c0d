#include "e2e/cluster/harness.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "api/node_inventory.h"
#include "base/name_list.h"

namespace xpu::e2e {

namespace fs = std::filesystem;
namespace kc = api::client;

int RequestedMinor() {
  const char* v = std::getenv("XPU_UPSTREAM_VERSION");  // NOLINT(concurrency-mt-unsafe)
  if (v == nullptr || std::string(v).find('.') == std::string::npos) return 0;
  return std::atoi(std::strchr(v, '.') + 1);
}

std::string GatesLockedOn(const std::string& gates, const std::string& feature) {
  if (RequestedMinor() < 38) return "";
  const char* v = std::getenv("XPU_UPSTREAM_VERSION");  // NOLINT(concurrency-mt-unsafe)
  return gates + " locked on from 1.38, so a server without " + feature +
         " cannot be started; not checked on " + (v != nullptr ? v : "");
}

kc::ResourceRef Pods() { return kc::ResourceRef{"", "v1", "pods", true}; }

StatusOr<std::unique_ptr<DriverHarness>> DriverHarness::Create(const Cluster& cluster,
                                                               const std::string& work_dir) {
  std::unique_ptr<DriverHarness> h(new DriverHarness(cluster, work_dir));
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) return InternalError("create " + work_dir + ": " + ec.message());
  ASSIGN_OR_RETURN(h->client_, cluster.NewClient());
  RETURN_IF_ERROR(EnsureNamespace(*h->client_, kNamespace));
  if (cluster.kind() == ClusterKind::kUpstream) {  // kube-sim serves our kinds built in
    RETURN_IF_ERROR(
        cluster.Kubectl({"apply", "--server-side", "-f", SourceDir() + "/deploy/crds/"}).status());
    RETURN_IF_ERROR(
        cluster.WaitEstablished({"nodeinventories.xpu.dra.dev", "acceleratorgangs.xpu.dra.dev"}));
  }
  return h;
}

DriverHarness::~DriverHarness() {
  StopController();
  for (auto& [node, plugin] : plugins_) plugin->Stop();
  // The Nodes go too, so later tests on the same cluster cannot be placed on them; their slices
  // and inventories follow through the garbage collector.
  for (const auto& node : nodes_) (void)client_->Delete(api::client::Nodes(), "", node);
}

Status DriverHarness::StartController(const std::string& config_yaml,
                                      const std::vector<std::string>& extra_flags) {
  StopController();
  const std::string& kubeconfig =
      controller_kubeconfig_.empty() ? cluster_.kubeconfig() : controller_kubeconfig_;
  std::vector<std::string> args = {"--kubeconfig",   kubeconfig,    "--namespace",      kNamespace,
                                   "--metrics-addr", "127.0.0.1:0", "--claim-debounce", "200ms"};
  if (!config_yaml.empty()) {
    const std::string path = work_dir_ + "/controller-config.yaml";
    std::ofstream(path) << config_yaml;
    args.insert(args.end(), {"--config", path});
  }
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  const std::string log = work_dir_ + "/controller-" + std::to_string(++controller_runs_) + ".log";
  ASSIGN_OR_RETURN(controller_, ChildProcess::Start(XPU_CONTROLLER_BINARY, args, log));
  return OkStatus();
}

void DriverHarness::StopController() {
  if (controller_ != nullptr) controller_->Stop();
  controller_.reset();
}

StatusOr<std::map<std::string, std::string>> FixtureNodeLabels(const std::string& host) {
  const std::string path = SourceDir() + "/e2e/fixtures/node-labels.json";
  std::ifstream in(path);
  if (!in) return NotFoundError("read " + path + ": cannot open");
  const auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("hosts") || !doc.at("hosts").is_object()) {
    return DataLossError(path + ": .hosts: expected an object of host name -> labels");
  }
  std::map<std::string, std::string> labels;
  const auto it = doc.at("hosts").find(host);
  if (it == doc.at("hosts").end()) return labels;
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      std::string where = path;
      where.append(": .hosts.").append(host).append(".").append(k).append(": not a string");
      return DataLossError(where);
    }
    labels[k] = v.get<std::string>();
  }
  return labels;
}

Status DriverHarness::AddNode(const std::string& node, const std::string& host,
                              const std::map<std::string, std::string>& labels,
                              const std::vector<std::string>& extra_flags) {
  const bool is_path = !host.empty() && host.front() == '/';
  const std::string root = is_path ? host : SourceDir() + "/e2e/fixtures/hosts/" + host;
  ASSIGN_OR_RETURN(auto node_labels, FixtureNodeLabels(fs::path(root).filename().string()));
  for (const auto& [k, v] : labels) node_labels[k] = v;
  RETURN_IF_ERROR(cluster_.RegisterNode(NodeSpec{node, node_labels}));
  nodes_.push_back(node);
  const std::string dir = NodeDir(node);
  for (const char* sub : {"registry", "plugins", "cdi", "state"}) {
    std::error_code ec;
    fs::create_directories(dir + "/" + sub, ec);
    if (ec) return InternalError("create " + dir + "/" + sub + ": " + ec.message());
  }
  const auto own = plugin_kubeconfigs_.find(node);
  const std::string& kubeconfig =
      own == plugin_kubeconfigs_.end() || own->second.empty() ? cluster_.kubeconfig() : own->second;
  std::vector<std::string> args = {"--kubeconfig",
                                   kubeconfig,
                                   "--node-name",
                                   node,
                                   "--namespace",
                                   kNamespace,
                                   "--host-root",
                                   root,
                                   "--plugin-registry-dir",
                                   dir + "/registry",
                                   "--plugin-dir",
                                   dir + "/plugins",
                                   "--cdi-dir",
                                   dir + "/cdi",
                                   "--state-dir",
                                   dir + "/state",
                                   "--metrics-addr",
                                   "127.0.0.1:0"};
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  ASSIGN_OR_RETURN(auto plugin, ChildProcess::Start(XPU_PLUGIN_BINARY, args, dir + "/plugin.log"));
  plugins_[node] = std::move(plugin);
  return OkStatus();
}

Status DriverHarness::StopPlugin(const std::string& node) {
  auto it = plugins_.find(node);
  if (it == plugins_.end()) return NotFoundError("no plugin for node " + node);
  it->second->Stop();
  plugins_.erase(it);
  return OkStatus();
}

ChildProcess* DriverHarness::plugin(const std::string& node) {
  auto it = plugins_.find(node);
  return it == plugins_.end() ? nullptr : it->second.get();
}

StatusOr<std::vector<nlohmann::json>> DriverHarness::PublishedDevices(const std::string& node) {
  kc::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  ASSIGN_OR_RETURN(auto page, client_->ListAll(kc::ResourceSlices(), "", options));
  std::vector<nlohmann::json> devices;
  for (const auto& slice : page.items) {
    const auto& spec = slice.value("spec", nlohmann::json::object());
    if (spec.value("driver", "") != kDriver) continue;
    for (const auto& d : spec.value("devices", nlohmann::json::array())) devices.push_back(d);
  }
  return devices;
}

StatusOr<nlohmann::json> DriverHarness::PublishedDevice(const std::string& node,
                                                        const std::string& device) {
  ASSIGN_OR_RETURN(auto devices, PublishedDevices(node));
  for (auto& d : devices) {
    if (d.value("name", "") == device) return std::move(d);
  }
  return NotFoundError("device " + device + " of node " + node + " is not published");
}

Status DriverHarness::WaitDeviceTaint(const std::string& node, const std::string& device,
                                      const std::string& key, const std::string& effect,
                                      std::chrono::milliseconds timeout) {
  const bool tainted = WaitFor(
      [&] {
        auto d = PublishedDevice(node, device);
        if (!d.ok()) return false;
        for (const auto& t : d->value("taints", nlohmann::json::array())) {
          if (t.value("key", "") == key && (effect.empty() || t.value("effect", "") == effect)) {
            return true;
          }
        }
        return false;
      },
      timeout);
  if (tainted) return OkStatus();
  return UnavailableError("device " + device + " of node " + node + " has no taint " + key +
                          (effect.empty() ? "" : ":" + effect) + " after " +
                          std::to_string(timeout.count()) + " ms");
}

Status DriverHarness::WaitPublished(const std::string& node, size_t count,
                                    std::chrono::milliseconds timeout) {
  size_t seen = 0;
  Status last = OkStatus();
  const bool done = WaitFor(
      [&] {
        auto devices = PublishedDevices(node);
        if (!devices.ok()) {
          last = devices.status();
          return false;
        }
        seen = devices->size();
        return seen >= count;
      },
      timeout);
  if (done) return OkStatus();
  return Status(StatusCode::kDeadlineExceeded,
                "node " + node + ": " + std::to_string(seen) + " of " + std::to_string(count) +
                    " devices published (last error: " + last.ToString() + "; plugin log " +
                    NodeDir(node) + "/plugin.log)");
}

nlohmann::json ClaimObject(const std::string& ns, const std::string& name,
                           const std::string& device_class, int count,
                           const nlohmann::json& constraints) {
  nlohmann::json exactly = {{"deviceClassName", device_class}};
  if (count > 0) {
    exactly["count"] = count;
  } else {
    exactly["allocationMode"] = "All";
  }
  nlohmann::json devices = {{"requests", {{{"name", "devs"}, {"exactly", exactly}}}}};
  if (!constraints.empty()) devices["constraints"] = constraints;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"devices", devices}}}};
}

nlohmann::json PodObject(const std::string& ns, const std::string& name, const std::string& claim,
                         const std::string& node) {
  nlohmann::json spec = {{"containers",
                          {{{"name", "c"},
                            {"image", "registry.invalid/none"},
                            {"resources", {{"claims", {{{"name", "devs"}}}}}}}}},
                         {"resourceClaims", {{{"name", "devs"}, {"resourceClaimName", claim}}}},
                         {"terminationGracePeriodSeconds", 0}};
  if (!node.empty()) spec["nodeSelector"] = {{"kubernetes.io/hostname", node}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

Status EnsureNamespace(kc::Client& client, const std::string& ns) {
  auto created =
      client.Create(kc::Namespaces(), "",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  if (created.ok() || created.status().code() == StatusCode::kAlreadyExists) return OkStatus();
  return created.status();
}

std::vector<std::string> AllocatedDevices(const nlohmann::json& claim) {
  std::vector<std::string> out;
  const auto results =
      claim.value("/status/allocation/devices/results"_json_pointer, nlohmann::json::array());
  for (const auto& r : results) {
    out.push_back(r.value("pool", "") + "/" + r.value("device", ""));
  }
  return out;
}

Status DeletePodsNow(const Cluster& cluster, const std::string& ns,
                     const std::vector<std::string>& names) {
  if (names.empty()) return OkStatus();
  std::vector<std::string> args = {
      "delete",     "pod", "-n", ns, "--grace-period=0", "--force", "--ignore-not-found",
      "--wait=true"};
  args.insert(args.end(), names.begin(), names.end());
  return cluster.Kubectl(args).status();
}

Status ReleaseClaims(const Cluster& cluster, kc::Client& client, const std::string& ns,
                     const std::vector<std::string>& names) {
  RETURN_IF_ERROR(DeletePodsNow(cluster, ns, names));
  for (const auto& n : names) {
    Status s = client.Delete(kc::ResourceClaims(), ns, n);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  for (const auto& n : names) {
    const bool gone = WaitFor([&] {
      return client.Get(kc::ResourceClaims(), ns, n).status().code() == StatusCode::kNotFound;
    });
    if (!gone) {
      std::string claim = "claim ";
      claim.append(ns).append("/").append(n).append(" still exists after 60 s");
      return UnavailableError(claim);
    }
  }
  return OkStatus();
}

Status DriverHarness::WaitPublishedOrder(const std::string& node, bool groups,
                                         const std::set<std::string>& held,
                                         std::chrono::milliseconds timeout) {
  // The order the controller computes, from `xpuctl slices`: the controller's own slice builder
  // behind the operator CLI, run as a binary like the rest of the driver.
  ASSIGN_OR_RETURN(auto object, client_->Get(api::client::NodeInventories(), "", node));
  const std::string inventory = NodeDir(node) + "/inventory-for-order.json";
  std::ofstream(inventory) << object.dump();
  const std::string allocated = JoinNames(std::vector<std::string>(held.begin(), held.end()));
  std::vector<std::string> args = {"slices",
                                   "--inventory",
                                   inventory,
                                   "--node-name",
                                   node,
                                   "--mode",
                                   groups ? "groups" : "attributes"};
  if (!allocated.empty()) args.insert(args.end(), {"--allocated", allocated});
  ASSIGN_OR_RETURN(auto xpuctl,
                   ChildProcess::Start(XPU_XPUCTL_BINARY, args, NodeDir(node) + "/order.json"));
  if (xpuctl->Wait() != 0) return InternalError("xpuctl slices for " + node + ": " + xpuctl->Log());
  const auto list = nlohmann::json::parse(xpuctl->Log(), nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded() || !list.contains("items")) {
    return InternalError("xpuctl slices for " + node + ": not a List");
  }
  std::vector<std::string> want;
  for (const auto& slice : list.at("items")) {
    for (const auto& d : slice.value("/spec/devices"_json_pointer, nlohmann::json::array())) {
      want.push_back(d.value("name", ""));
    }
  }
  std::vector<std::string> got;
  const bool ordered = WaitFor(
      [&] {
        auto devices = PublishedDevices(node);
        if (!devices.ok()) return false;
        got.clear();
        for (const auto& d : *devices) got.push_back(d.value("name", ""));
        return got == want;
      },
      timeout);
  if (ordered) return OkStatus();
  return UnavailableError("node " + node + ": published order " + JoinNames(got) +
                          " is not the expected " + JoinNames(want));
}

StatusOr<topology::Node> NodeTopology(api::client::Client& client, const std::string& node) {
  ASSIGN_OR_RETURN(auto object, client.Get(api::client::NodeInventories(), "", node));
  ASSIGN_OR_RETURN(auto inventory, api::FromJson<api::NodeInventory>(object));
  ASSIGN_OR_RETURN(auto spec, api::NodeDescriptionFromInventory(inventory));
  return topology::Node::Build(spec);
}

StatusOr<std::unique_ptr<ChildProcess>> StartNodeAgent(DriverHarness& harness,
                                                       const std::string& node) {
  const std::string dir = harness.NodeDir(node);
  return ChildProcess::Start(
      XPU_NODE_AGENT_BINARY,
      {"--kubeconfig", harness.cluster().kubeconfig(), "--node-name", node, "--plugin-registry-dir",
       dir + "/registry", "--state-dir", dir + "/agent", "--heartbeat", "2s"},
      dir + "/agent.log");
}

}  // namespace xpu::e2e
