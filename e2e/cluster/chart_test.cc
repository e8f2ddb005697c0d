// The Helm chart deploy/helm/xpu-dra against the real Kubernetes control plane (scripts/cluster)
// and the pinned helm (scripts/build-upstream): lint, the renderings of each documented mode,
// their admission by the API server, and the driver run as the chart's service accounts — the
// controller and two plugins with tokens bound to Pods on their nodes, not as admin — publishing,
// preparing the examples of deploy/examples/, and kept to their own objects by RBAC and the
// chart's admission policies. One control plane for the whole process (ctest: upstream-chart).
//
// XPU_UPSTREAM_VERSION picks the release, as for upstream_test.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/client/client.h"
#include "api/client/kubeconfig.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "controller/config.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"

namespace xpu::e2e {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

constexpr const char* kNs = "xpu-dra";  // the chart's namespace in these tests
constexpr const char* kControllerSa = "xpu-dra-controller";
constexpr const char* kPluginSa = "xpu-dra-plugin";

std::string Chart() { return SourceDir() + "/deploy/helm/xpu-dra"; }

// ---- The control plane and the tools ----------------------------------------------------------

// groups mode needs DRAPartitionableDevices, alpha (off) before 1.36: turned on there, as a
// cluster that uses groups mode must.
Cluster& Upstream() {
  static std::unique_ptr<Cluster> cluster;
  if (cluster == nullptr) {
    ClusterOptions options;
    options.kind = ClusterKind::kUpstream;
    const int minor = RequestedMinor();
    if (minor != 0 && minor < 36) {
      options.feature_gates = "DRADeviceTaints=true,DRAPartitionableDevices=true";
      options.runtime_config = "resource.k8s.io/v1alpha3=true";
    }
    auto started = Cluster::Start(options);
    if (!started.ok()) FAIL(started.status().ToString());
    cluster = std::move(*started);
  }
  return *cluster;
}

std::string WorkDir(const std::string& name) {
  std::string dir = Upstream().dir() + "/chart-" + name;
  fs::create_directories(dir);
  return dir;
}

struct Ran {
  int code = -1;
  std::string output;  // stdout and stderr
};

Ran Run(const std::string& binary, const std::vector<std::string>& args) {
  static int runs = 0;
  const std::string log = WorkDir("runs") + "/" + std::to_string(++runs) + ".log";
  auto child = ChildProcess::Start(binary, args, log);
  REQUIRE_OK(child);
  Ran r;
  r.code = (*child)->Wait();
  r.output = (*child)->Log();
  return r;
}

std::string Helm() { return Upstream().bin_dir() + "/helm"; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `helm template xpu-dra <chart> --namespace xpu-dra` with `--set` values; the path of the
// rendering (helm's stdout only).
std::string Render(const std::string& name, const std::vector<std::string>& sets) {
  std::string out = WorkDir("render") + "/" + name + ".yaml";
  std::vector<std::string> args = {"-c",          "out=$1; shift; exec \"$@\" >\"$out\"",
                                   "sh",          out,
                                   Helm(),        "template",
                                   "xpu-dra",     Chart(),
                                   "--namespace", kNs};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const Ran r = Run("/bin/sh", args);
  INFO(r.output);
  REQUIRE(r.code == 0);
  return out;
}

// ---- YAML documents as JSON -------------------------------------------------------------------

// YAML 1.2 core schema for plain scalars (quoted ones are strings), enough for manifests.
json ToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(ToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.Scalar()] = ToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") return s;
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null" || s == "~") return nullptr;
      int64_t i = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return i;
      return s;
    }
    default:
      return nullptr;
  }
}

std::vector<json> Documents(const std::string& path) {
  std::vector<json> docs;
  try {
    for (const auto& doc : YAML::LoadAll(ReadFile(path))) {
      if (doc.IsMap()) docs.push_back(ToJson(doc));
    }
  } catch (const YAML::Exception& e) {
    FAIL(path << ": " << e.what());
  }
  return docs;
}

const json& Find(const std::vector<json>& docs, const std::string& kind, const std::string& name) {
  for (const auto& d : docs) {
    if (d.value("kind", "") == kind && d.value("/metadata/name"_json_pointer, "") == name) {
      return d;
    }
  }
  FAIL("no " << kind << " " << name << " in the rendering");
  static const json none;
  return none;
}

std::vector<std::string> Strings(const json& array) {
  std::vector<std::string> out;
  for (const auto& s : array) out.push_back(s.get<std::string>());
  return out;
}

bool Has(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// The controller config of a rendering (its ConfigMap), parsed as the controller parses it.
controller::Config RenderedConfig(const std::vector<json>& docs) {
  const json& cm = Find(docs, "ConfigMap", "xpu-dra-controller-config");
  const std::string text = cm.value("/data/config.yaml"_json_pointer, "");
  auto config = controller::ParseConfig(text);
  INFO(text);
  REQUIRE_OK(config);
  return *config;
}

// Every `--flag` of a container's args is one the binary's --help lists.
void CheckFlagsReal(const json& container, const std::string& binary) {
  const Ran help = Run(binary, {"--help"});
  REQUIRE(help.code == 0);
  for (const auto& arg : Strings(container.at("args"))) {
    const std::string flag = arg.substr(0, arg.find('='));
    INFO(binary << ": " << flag);
    CHECK(help.output.find("  " + flag + " ") != std::string::npos);
  }
}

// ---- The chart in the cluster, and identities -------------------------------------------------

void EnsureChartApplied() {
  static bool applied = false;
  if (applied) return;
  auto client = Upstream().NewClient();
  REQUIRE_OK(client);
  REQUIRE_OK(EnsureNamespace(**client, kNs));
  REQUIRE_OK(Upstream().Kubectl({"apply", "--server-side", "-f", Render("defaults", {})}));
  REQUIRE_OK(
      Upstream().Kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                          "crd/nodeinventories.xpu.dra.dev", "crd/acceleratorgangs.xpu.dra.dev"}));
  applied = true;
}

// A service-account identity as a Pod of the chart holds it: a placeholder Pod with the chart's
// serviceAccountName (on `node` when given: spec.nodeName, as a scheduled DaemonSet Pod), and a
// token from the TokenRequest API bound to that Pod, in a kubeconfig of its own.
struct Identity {
  std::string user;  // system:serviceaccount:<ns>:<sa>
  std::string kubeconfig;
  std::unique_ptr<kc::Client> client;
};

Identity MakeIdentity(const std::string& pod_name, const std::string& sa, const std::string& node) {
  auto admin = Upstream().NewClient();
  REQUIRE_OK(admin);
  json spec = {{"serviceAccountName", sa},
               {"containers", {{{"name", "placeholder"}, {"image", "registry.invalid/none"}}}},
               {"terminationGracePeriodSeconds", 0}};
  if (node.empty()) {
    // Never scheduled: the token is bound to a Pod on no node.
    spec["nodeSelector"] = {{"xpu.dra.dev/chart-test", "no-such-node"}};
  } else {
    spec["nodeName"] = node;
  }
  auto pod = (*admin)->Create(Pods(), kNs,
                              {{"apiVersion", "v1"},
                               {"kind", "Pod"},
                               {"metadata", {{"name", pod_name}, {"namespace", kNs}}},
                               {"spec", spec}});
  REQUIRE_OK(pod);
  const json request = {{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec",
                         {{"expirationSeconds", 3600},
                          {"boundObjectRef",
                           {{"apiVersion", "v1"},
                            {"kind", "Pod"},
                            {"name", pod_name},
                            {"uid", pod->value("/metadata/uid"_json_pointer, "")}}}}}};
  auto token = (*admin)->PostPath(
      std::string("/api/v1/namespaces/") + kNs + "/serviceaccounts/" + sa + "/token", request);
  REQUIRE_OK(token);
  auto admin_config = kc::LoadKubeconfig(Upstream().kubeconfig());
  REQUIRE_OK(admin_config);
  const std::string dir = WorkDir("identity-" + pod_name);
  std::ofstream(dir + "/ca.crt") << admin_config->ca_pem;
  std::ofstream(dir + "/token") << token->value("/status/token"_json_pointer, "");
  fs::permissions(dir + "/token", fs::perms::owner_read | fs::perms::owner_write);
  Identity id;
  id.user = std::string("system:serviceaccount:") + kNs + ":" + sa;
  id.kubeconfig = dir + "/kubeconfig";
  std::ofstream(id.kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n"
                               << "  cluster:\n    server: " << admin_config->server
                               << "\n    certificate-authority: ca.crt\nusers:\n- name: " << sa
                               << "\n  user:\n    tokenFile: token\ncontexts:\n- name: local\n"
                               << "  context: {cluster: local, user: " << sa
                               << "}\ncurrent-context: local\n";
  auto config = kc::LoadKubeconfig(id.kubeconfig);
  REQUIRE_OK(config);
  kc::ClientOptions options;
  options.qps = 0;
  auto client = kc::Client::Create(*config, options);
  REQUIRE_OK(client);
  id.client = std::move(*client);
  // Who the API server says this is: the service account, with the Pod's node when bound to one.
  auto review = id.client->PostPath(
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}});
  REQUIRE_OK(review);
  CHECK(review->value("/status/userInfo/username"_json_pointer, "") == id.user);
  if (!node.empty()) {
    const json nodes =
        review->value("/status/userInfo/extra/authentication.kubernetes.io~1node-name"_json_pointer,
                      json::array());
    CHECK(nodes == json::array({node}));
  }
  return id;
}

// SubjectAccessReview of a service account (with the groups its token carries).
bool Allowed(const std::string& user, const std::string& verb, const std::string& group,
             const std::string& resource, const std::string& ns = "",
             const std::string& name = "") {
  auto admin = Upstream().NewClient();
  REQUIRE_OK(admin);
  json attributes = {{"verb", verb}, {"group", group}, {"resource", resource}};
  const auto slash = resource.find('/');
  if (slash != std::string::npos) {
    attributes["resource"] = resource.substr(0, slash);
    attributes["subresource"] = resource.substr(slash + 1);
  }
  if (!ns.empty()) attributes["namespace"] = ns;
  if (!name.empty()) attributes["name"] = name;
  const json review = {{"apiVersion", "authorization.k8s.io/v1"},
                       {"kind", "SubjectAccessReview"},
                       {"spec",
                        {{"user", user},
                         {"groups",
                          {"system:serviceaccounts", std::string("system:serviceaccounts:") + kNs,
                           "system:authenticated"}},
                         {"resourceAttributes", attributes}}}};
  auto got = (*admin)->PostPath("/apis/authorization.k8s.io/v1/subjectaccessreviews", review);
  REQUIRE_OK(got);
  return got->value("/status/allowed"_json_pointer, false);
}

json Lease(const std::string& name, const std::string& holder) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", kNs}}},
          {"spec", {{"holderIdentity", holder}, {"leaseDurationSeconds", 15}}}};
}

json Inventory(const std::string& node) {
  return {{"apiVersion", "xpu.dra.dev/v1alpha1"},
          {"kind", "NodeInventory"},
          {"metadata", {{"name", node}}}};
}

// A write the chart's admission policy denied: 422 Invalid naming the policy and its message.
void CheckDenied(const Status& s, const std::string& policy, const std::string& message) {
  INFO(s.ToString());
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("ValidatingAdmissionPolicy '" + policy + "'") != std::string::npos);
  CHECK(s.message().find(message) != std::string::npos);
}

// ---- Lint and renderings ------------------------------------------------------------------------

TEST_CASE("chart: helm lint passes and the schema rejects an unknown mode", "[chart]") {
  for (const std::string mode : {"", "attributes", "groups"}) {
    std::vector<std::string> args = {"lint", Chart()};
    if (!mode.empty()) args.insert(args.end(), {"--set", "publishing.mode=" + mode});
    const Ran lint = Run(Helm(), args);
    INFO(mode << "\n" << lint.output);
    CHECK(lint.code == 0);
    CHECK(lint.output.find("1 chart(s) linted, 0 chart(s) failed") != std::string::npos);
  }
  // values.schema.json: a mode the controller does not know, a misspelt key.
  for (const auto& [set, named] : std::vector<std::pair<std::string, std::string>>{
           {"publishing.mode=partitions", "publishing"}, {"controller.replicaz=3", "replicaz"}}) {
    const Ran lint = Run(Helm(), {"lint", Chart(), "--set", set});
    INFO(set << "\n" << lint.output);
    CHECK(lint.code != 0);
    CHECK(lint.output.find("values don't meet the specifications of the schema") !=
          std::string::npos);
    CHECK(lint.output.find(named) != std::string::npos);
  }
}

TEST_CASE("chart: the renderings of each mode hold what the binaries and the cluster need",
          "[chart]") {
  const std::string defaults = Render("defaults", {});
  const std::string attributes = Render("attributes", {"publishing.mode=attributes"});
  const std::string groups = Render("groups", {"publishing.mode=groups"});
  // The defaults leave the mode to the controller (by the server's release), as its own
  // built-in config does; a mode set in the values is written.
  CHECK(ReadFile(defaults) != ReadFile(attributes));
  CHECK(RenderedConfig(Documents(defaults)) == controller::DefaultConfig());
  controller::Config want_attributes = controller::DefaultConfig();
  want_attributes.mode = controller::PublishMode::kAttributes;
  CHECK(RenderedConfig(Documents(attributes)) == want_attributes);
  controller::Config want_groups = controller::DefaultConfig();
  want_groups.mode = controller::PublishMode::kGroups;
  CHECK(RenderedConfig(Documents(groups)) == want_groups);

  const auto docs = Documents(defaults);
  std::set<std::string> kinds;
  for (const auto& d : docs) kinds.insert(d.value("kind", ""));
  for (const char* kind :
       {"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
        "RoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ConfigMap",
        "DaemonSet", "Deployment", "PodDisruptionBudget", "Service"}) {
    INFO(kind);
    CHECK(kinds.count(kind) == 1);
  }
  CHECK(kinds.count("PodMonitor") == 0);  // off by default
  CHECK(kinds.count("Namespace") == 0);   // helm --create-namespace makes it
  // The CRDs are deploy/crds' (plus helm's keep annotation).
  for (const char* crd : {"nodeinventories.xpu.dra.dev", "acceleratorgangs.xpu.dra.dev"}) {
    const auto mine = Documents(SourceDir() + "/deploy/crds/xpu.dra.dev_" +
                                std::string(crd).substr(0, std::string(crd).find('.')) + ".yaml");
    REQUIRE(mine.size() == 1);
    json rendered = Find(docs, "CustomResourceDefinition", crd);
    CHECK(rendered.value("/metadata/annotations/helm.sh~1resource-policy"_json_pointer, "") ==
          "keep");
    rendered["metadata"]["annotations"].erase("helm.sh/resource-policy");
    CHECK(rendered == mine[0]);
  }
  // RBAC: no wildcard anywhere, one ServiceAccount per component.
  for (const auto& d : docs) {
    if (d.value("kind", "") != "ClusterRole" && d.value("kind", "") != "Role") continue;
    for (const auto& rule : d.at("rules")) {
      for (const char* field : {"verbs", "resources", "apiGroups"}) {
        INFO(d.at("metadata").dump() << " " << field);
        CHECK(!Has(Strings(rule.value(field, json::array())), "*"));
      }
    }
  }
  const json& ds = Find(docs, "DaemonSet", "xpu-dra-plugin");
  const json& deploy = Find(docs, "Deployment", "xpu-dra-controller");
  CHECK(ds.value("/spec/template/spec/serviceAccountName"_json_pointer, "") == kPluginSa);
  CHECK(deploy.value("/spec/template/spec/serviceAccountName"_json_pointer, "") == kControllerSa);

  // The plugin DaemonSet: rolling update beside the old pod with per-pod socket names.
  CHECK(ds.value("/spec/updateStrategy/type"_json_pointer, "") == "RollingUpdate");
  CHECK(ds.value("/spec/updateStrategy/rollingUpdate/maxSurge"_json_pointer, 0) == 1);
  CHECK(ds.value("/spec/updateStrategy/rollingUpdate/maxUnavailable"_json_pointer, 1) == 0);
  CHECK(ds.value("/spec/template/spec/priorityClassName"_json_pointer, "") ==
        "system-node-critical");
  const json& plugin = ds.at("/spec/template/spec/containers/0"_json_pointer);
  const auto plugin_args = Strings(plugin.at("args"));
  CHECK(Has(plugin_args, "--rolling-update-uid=$(POD_UID)"));
  CHECK(Has(plugin_args, "--node-name=$(NODE_NAME)"));
  CHECK(Has(plugin_args, "--plugin-dir=/var/lib/kubelet/plugins/xpu.dra.dev"));
  CHECK(Has(plugin_args, "--plugin-registry-dir=/var/lib/kubelet/plugins_registry"));
  CHECK(Has(plugin_args, "--cdi-dir=/var/run/cdi"));
  CheckFlagsReal(plugin, XPU_PLUGIN_BINARY);
  std::map<std::string, std::string> host_of;  // volume -> host path
  for (const auto& v : ds.at("/spec/template/spec/volumes"_json_pointer)) {
    host_of[v.value("name", "")] = v.value("/hostPath/path"_json_pointer, "");
  }
  std::map<std::string, bool> read_only;  // host path -> mounted read-only
  for (const auto& m : plugin.at("volumeMounts")) {
    const std::string host = host_of[m.value("name", "")];
    read_only[host] = m.value("readOnly", false);
    // The DRA socket's folder is mounted at the host's path: GetInfo reports it to the kubelet.
    if (host == "/var/lib/kubelet/plugins/xpu.dra.dev") CHECK(m.value("mountPath", "") == host);
  }
  for (const char* path :
       {"/var/lib/kubelet/plugins/xpu.dra.dev", "/var/lib/kubelet/plugins_registry", "/var/run/cdi",
        "/var/lib/xpu-dra"}) {
    INFO(path);
    CHECK(read_only.count(path) == 1);
    CHECK(!read_only[path]);
  }
  for (const char* path : {"/sys", "/dev", "/proc", "/etc"}) {
    INFO(path);
    CHECK(read_only.count(path) == 1);
    CHECK(read_only[path]);
  }
  CHECK(read_only.count("/etc/vdev") == 0);  // vHCU conf files: only when asked
  CHECK(Has(plugin_args, "--partition-fallback=whole"));
  {
    const std::vector<json> vhcu_docs =
        Documents(Render("vhcu", {"plugin.vhcuConfDir=/etc/vdev", "plugin.partitionFallback=layout",
                                  "plugin.partitionLayout=20cu.16gb*4"}));
    const json& vds = Find(vhcu_docs, "DaemonSet", "xpu-dra-plugin");
    const json& vplugin = vds.at("/spec/template/spec/containers/0"_json_pointer);
    CHECK(Has(Strings(vplugin.at("args")), "--partition-fallback=layout"));
    CHECK(Has(Strings(vplugin.at("args")), "--partition-layout=20cu.16gb*4"));
    CheckFlagsReal(vplugin, XPU_PLUGIN_BINARY);
    bool mounted_rw = false;
    for (const auto& m : vplugin.at("volumeMounts")) {
      if (m.value("name", "") == "vhcu-conf") {
        mounted_rw = m.value("mountPath", "") == "/etc/vdev" && !m.value("readOnly", false);
      }
    }
    CHECK(mounted_rw);
    bool volume = false;
    for (const auto& v : vds.at("/spec/template/spec/volumes"_json_pointer)) {
      if (v.value("name", "") == "vhcu-conf") {
        volume = v.value("/hostPath/path"_json_pointer, "") == "/etc/vdev";
      }
    }
    CHECK(volume);
  }
  // Driver files: on by default; off for all or per vendor; the hook installed by an init
  // container into the host folder the specs name.
  CHECK(Has(plugin_args, "--cdi-driver-files=auto"));
  CHECK(Has(plugin_args, "--cdi-hook-path=/opt/xpu-dra/bin/xpu-cdi-hook"));
  for (const char* path : {"/lib", "/run", "/usr", "/opt"}) {
    INFO(path);
    CHECK(read_only.count(path) == 1);
    CHECK(read_only[path]);
  }
  {
    const json& init = ds.at("/spec/template/spec/initContainers/0"_json_pointer);
    CHECK(init.value("name", "") == "install-cdi-hook");
    CHECK(Strings(init.at("command")).back().find("/host-hook/xpu-cdi-hook") != std::string::npos);
    bool hook_dir = false;
    for (const auto& v : ds.at("/spec/template/spec/volumes"_json_pointer)) {
      hook_dir = hook_dir || (v.value("name", "") == "cdi-hook" &&
                              v.value("/hostPath/path"_json_pointer, "") == "/opt/xpu-dra/bin");
    }
    CHECK(hook_dir);
    for (const auto& [set, flag] :
         {std::pair{"plugin.cdi.driverFiles=off", "--cdi-driver-files=off"},
          std::pair{"plugin.cdi.driverFiles.nvidia=off", "--cdi-driver-files=nvidia=off"}}) {
      INFO(set);
      const std::vector<json> off_docs = Documents(Render("files", {set}));
      const json& off = Find(off_docs, "DaemonSet", "xpu-dra-plugin");
      const json& off_plugin = off.at("/spec/template/spec/containers/0"_json_pointer);
      CHECK(Has(Strings(off_plugin.at("args")), flag));
      CheckFlagsReal(off_plugin, XPU_PLUGIN_BINARY);
    }
  }
  std::set<std::string> tolerated;
  for (const auto& t : ds.at("/spec/template/spec/tolerations"_json_pointer)) {
    tolerated.insert(t.value("key", ""));
  }
  CHECK(tolerated.count("nvidia.com/gpu") == 1);
  CHECK(tolerated.count("huawei.com/Ascend910") == 1);

  // The controller Deployment: two replicas electing a leader, non-root, read-only, probed.
  CHECK(deploy.value("/spec/replicas"_json_pointer, 0) == 2);
  const json& ctl = deploy.at("/spec/template/spec/containers/0"_json_pointer);
  const auto ctl_args = Strings(ctl.at("args"));
  CHECK(Has(ctl_args, "--leader-elect=true"));
  CHECK(Has(ctl_args, "--config=/etc/xpu-dra/config.yaml"));
  CHECK(Has(ctl_args, "--metrics-addr=:9401"));
  CheckFlagsReal(ctl, XPU_CONTROLLER_BINARY);
  CHECK(deploy.value("/spec/template/spec/securityContext/runAsNonRoot"_json_pointer, false));
  CHECK(ctl.value("/securityContext/readOnlyRootFilesystem"_json_pointer, false));
  CHECK(ctl.value("/securityContext/allowPrivilegeEscalation"_json_pointer, true) == false);
  CHECK(ctl.value("/livenessProbe/httpGet/path"_json_pointer, "") == "/healthz");
  CHECK(ctl.value("/readinessProbe/httpGet/path"_json_pointer, "") == "/readyz");
  CHECK(ctl.value("/ports/0/containerPort"_json_pointer, 0) == 9401);
  CHECK(ctl.value("/volumeMounts/0/mountPath"_json_pointer, "") == "/etc/xpu-dra");
  const json& pdb = Find(docs, "PodDisruptionBudget", "xpu-dra-controller");
  CHECK(pdb.value("/spec/minAvailable"_json_pointer, 0) == 1);

  // Optional parts: the PodMonitor and the Namespace.
  const auto extra =
      Documents(Render("extras", {"metrics.podMonitor.enabled=true", "namespace.create=true"}));
  CHECK(Find(extra, "PodMonitor", "xpu-dra")
            .value("/spec/podMetricsEndpoints/0/port"_json_pointer, "") == "metrics");
  CHECK(Find(extra, "Namespace", kNs)
            .value("/metadata/labels/pod-security.kubernetes.io~1enforce"_json_pointer, "") ==
        "privileged");
}

// The independent checker (scripts/find-checker: $XPU_CHECKERS, or shared/tools beside the
// checkout) over the renderings of both modes and every example; skipped where it is absent.
TEST_CASE("chart: the renderings and the examples pass the independent schema checker", "[chart]") {
  const Ran found = Run(SourceDir() + "/scripts/find-checker", {SourceDir(), "k8s-validate"});
  if (found.code == 77) XPU_SKIP("k8s-validate not available: " + found.output);
  INFO(found.output);
  REQUIRE(found.code == 0);
  std::string checker = found.output;
  checker.erase(checker.find_last_not_of(" \n") + 1);
  std::vector<std::string> files = {checker, Render("defaults", {}),
                                    Render("groups", {"publishing.mode=groups"})};
  for (const auto& f : fs::directory_iterator(SourceDir() + "/deploy/examples")) {
    files.push_back(f.path().string());
  }
  const Ran v = Run("/usr/bin/python3", files);
  INFO(v.output);
  CHECK(v.code == 0);
}

TEST_CASE("chart: every rendering and every example is admitted by the API server", "[chart]") {
  // Each mode applied server-side (the last, the defaults, stays for the tests below).
  std::vector<std::string> renders = {Render("groups", {"publishing.mode=groups"}),
                                      Render("attributes", {"publishing.mode=attributes"}),
                                      Render("defaults", {})};
  auto admin = Upstream().NewClient();
  REQUIRE_OK(admin);
  REQUIRE_OK(EnsureNamespace(**admin, kNs));
  for (const auto& render : renders) {
    INFO(render);
    REQUIRE_OK(Upstream().Kubectl({"apply", "--server-side", "-f", render}));
    // Everything is there, as rendered: one line per object from the server.
    auto got = Upstream().Kubectl({"get", "-f", render, "-o", "name"});
    REQUIRE_OK(got);
    const size_t objects = Documents(render).size();
    CHECK(static_cast<size_t>(std::count(got->begin(), got->end(), '\n')) == objects);
  }
  // The groups-mode ConfigMap differs from the default one only in the mode.
  auto cm = (*admin)->Get(kc::ResourceRef{"", "v1", "configmaps", true}, kNs,
                          "xpu-dra-controller-config");
  REQUIRE_OK(cm);
  auto config = controller::ParseConfig(cm->value("/data/config.yaml"_json_pointer, ""));
  REQUIRE_OK(config);
  CHECK(*config == controller::DefaultConfig());

  // deploy/examples: one ResourceClaimTemplate and one Job each, no namespace, admitted.
  const std::map<std::string, std::string> templates = {
      {"npu-8-attributes.yaml", "npu-8-attributes"},
      {"npu-8-groups.yaml", "npu-8-groups"},
      {"gpu-4-nvlink.yaml", "gpu-4-nvlink"},
      {"mixed-first-available.yaml", "accel-first-available"},
      {"capability-class.yaml", "training-large-memory"}};
  REQUIRE_OK(EnsureNamespace(**admin, "chart-admission"));
  for (const auto& [file, name] : templates) {
    const std::string path = SourceDir() + "/deploy/examples/" + file;
    const auto docs = Documents(path);
    INFO(file);
    REQUIRE(docs.size() == 2);
    for (const auto& d : docs) CHECK(!d.contains("/metadata/namespace"_json_pointer));
    CHECK(Find(docs, "ResourceClaimTemplate", name).value("apiVersion", "") ==
          "resource.k8s.io/v1");
    const json& job = Find(docs, "Job", name);
    CHECK(job.value("apiVersion", "") == "batch/v1");
    CHECK(job.value("/spec/template/spec/resourceClaims/0/resourceClaimTemplateName"_json_pointer,
                    "") == name);
    auto created = Upstream().Kubectl({"create", "-n", "chart-admission", "-f", path});
    REQUIRE_OK(created);
    CHECK(created->find("resourceclaimtemplate.resource.k8s.io/" + name + " created") !=
          std::string::npos);
    CHECK(created->find("job.batch/" + name + " created") != std::string::npos);
  }
  // Nothing serves these claims here: the Jobs go again, with their pods and claims, before a
  // later test publishes devices they could take.
  REQUIRE_OK(Upstream().Kubectl({"delete", "namespace", "chart-admission", "--wait=true",
                                 "--timeout=120s", "--ignore-not-found"}));
}

// ---- RBAC and admission -----------------------------------------------------------------------

TEST_CASE("chart: SubjectAccessReviews show least privilege for both identities", "[chart]") {
  EnsureChartApplied();
  const std::string ctl = std::string("system:serviceaccount:") + kNs + ":" + kControllerSa;
  const std::string plugin = std::string("system:serviceaccount:") + kNs + ":" + kPluginSa;
  for (const auto& user : {ctl, plugin}) {
    INFO(user);
    // No Secrets, anywhere; no Pods written.
    for (const char* verb : {"get", "list", "watch"}) {
      CHECK_FALSE(Allowed(user, verb, "", "secrets", kNs));
      CHECK_FALSE(Allowed(user, verb, "", "secrets"));
    }
    for (const char* verb : {"create", "update", "patch", "delete"}) {
      CHECK_FALSE(Allowed(user, verb, "", "pods", kNs));
      CHECK_FALSE(Allowed(user, verb, "", "pods", "default"));
    }
    CHECK_FALSE(Allowed(user, "create", "", "pods/eviction", kNs));
    CHECK_FALSE(Allowed(user, "update", "", "nodes"));
    CHECK_FALSE(Allowed(user, "delete", "", "nodes"));
    CHECK_FALSE(Allowed(user, "update", "resource.k8s.io", "resourceclaims", "default"));
    CHECK_FALSE(Allowed(user, "deletecollection", "resource.k8s.io", "resourceslices"));
    CHECK_FALSE(Allowed(user, "patch", "resource.k8s.io", "resourceslices"));
    CHECK_FALSE(Allowed(user, "delete", "xpu.dra.dev", "nodeinventories"));
    CHECK_FALSE(Allowed(user, "create", "xpu.dra.dev", "acceleratorgangs", "default"));
  }
  // The controller: what its code calls, and no more.
  for (const char* verb : {"list", "watch", "create", "update", "delete"}) {
    CHECK(Allowed(ctl, verb, "resource.k8s.io", "resourceslices"));
  }
  CHECK_FALSE(Allowed(ctl, "get", "resource.k8s.io", "resourceslices"));
  CHECK(Allowed(ctl, "create", "resource.k8s.io", "deviceclasses"));
  CHECK(Allowed(ctl, "watch", "resource.k8s.io", "resourceclaims"));
  // The gangs' shared claims and per-pod templates: made and deleted, never changed.
  CHECK(Allowed(ctl, "create", "resource.k8s.io", "resourceclaims", "default"));
  CHECK(Allowed(ctl, "delete", "resource.k8s.io", "resourceclaimtemplates", "default"));
  CHECK_FALSE(Allowed(ctl, "update", "resource.k8s.io", "resourceclaims", "default"));
  CHECK_FALSE(Allowed(ctl, "update", "resource.k8s.io", "resourceclaims/status", "default"));
  CHECK_FALSE(Allowed(ctl, "update", "resource.k8s.io", "resourceclaimtemplates", "default"));
  CHECK(Allowed(ctl, "watch", "xpu.dra.dev", "acceleratorgangs"));
  CHECK(Allowed(ctl, "update", "xpu.dra.dev", "acceleratorgangs/status", "default"));
  CHECK_FALSE(Allowed(ctl, "update", "xpu.dra.dev", "acceleratorgangs", "default"));
  CHECK(Allowed(ctl, "watch", "xpu.dra.dev", "nodeinventories"));
  CHECK_FALSE(Allowed(ctl, "update", "xpu.dra.dev", "nodeinventories"));
  CHECK_FALSE(Allowed(ctl, "update", "xpu.dra.dev", "nodeinventories/status"));
  CHECK(Allowed(ctl, "update", "coordination.k8s.io", "leases", kNs, "xpu-dra-controller"));
  CHECK_FALSE(
      Allowed(ctl, "update", "coordination.k8s.io", "leases", kNs, "xpu-dra-plugin-node-a"));
  CHECK_FALSE(Allowed(ctl, "create", "coordination.k8s.io", "leases", "kube-node-lease"));
  CHECK(Allowed(ctl, "create", "", "events", kNs));
  CHECK(Allowed(ctl, "create", "", "events", "default"));
  CHECK_FALSE(Allowed(ctl, "create", "", "events", "kube-system"));
  // The plugin: its claims at prepare, its Node, its inventory and Lease, Events beside the
  // Lease; no ResourceSlice at all (the controller is the only writer). It lists claims (a huge
  // prepare batch reads its namespace in one paged LIST, docs/kubelet-plugin.md) but never
  // watches them, and lists nothing else.
  CHECK(Allowed(plugin, "get", "resource.k8s.io", "resourceclaims", "default"));
  CHECK(Allowed(plugin, "get", "xpu.dra.dev", "acceleratorgangs", "default"));
  CHECK_FALSE(Allowed(plugin, "list", "xpu.dra.dev", "acceleratorgangs", "default"));
  CHECK(Allowed(plugin, "list", "resource.k8s.io", "resourceclaims"));
  CHECK_FALSE(Allowed(plugin, "watch", "resource.k8s.io", "resourceclaims"));
  // Energy per claim: the claims' status (status.devices[].data), and from 1.36 the driver's
  // node-scoped status verbs; never the claim itself.
  CHECK(Allowed(plugin, "update", "resource.k8s.io", "resourceclaims/status", "default"));
  CHECK(Allowed(plugin, "associated-node:update", "resource.k8s.io", "resourceclaims/driver",
                "default", "xpu.dra.dev"));
  CHECK_FALSE(Allowed(plugin, "arbitrary-node:update", "resource.k8s.io", "resourceclaims/driver",
                      "default", "xpu.dra.dev"));
  CHECK(Allowed(plugin, "get", "", "nodes"));
  CHECK_FALSE(Allowed(plugin, "list", "", "nodes"));
  for (const char* verb : {"get", "create", "update"}) {
    CHECK(Allowed(plugin, verb, "xpu.dra.dev", "nodeinventories"));
    CHECK(Allowed(plugin, verb, "coordination.k8s.io", "leases", kNs));
  }
  CHECK(Allowed(plugin, "update", "xpu.dra.dev", "nodeinventories/status"));
  CHECK_FALSE(Allowed(plugin, "list", "xpu.dra.dev", "nodeinventories"));
  CHECK_FALSE(Allowed(plugin, "update", "coordination.k8s.io", "leases", "kube-node-lease"));
  for (const char* verb : {"get", "list", "create", "update", "delete"}) {
    CHECK_FALSE(Allowed(plugin, verb, "resource.k8s.io", "resourceslices"));
    CHECK_FALSE(Allowed(plugin, verb, "resource.k8s.io", "deviceclasses"));
  }
  // Events: only beside its Lease (an inventory the API server refused), nowhere else.
  CHECK(Allowed(plugin, "create", "", "events", kNs));
  CHECK_FALSE(Allowed(plugin, "create", "", "events", "default"));
  CHECK_FALSE(Allowed(plugin, "update", "", "events", kNs));
  CHECK_FALSE(Allowed(plugin, "list", "", "events", kNs));
}

TEST_CASE("chart: the admission policies keep each identity to its own objects", "[chart]") {
  EnsureChartApplied();
  Identity a = MakeIdentity("vap-plugin-a", kPluginSa, "vap-node-a");
  Identity b = MakeIdentity("vap-plugin-b", kPluginSa, "vap-node-b");
  auto admin = Upstream().NewClient();
  REQUIRE_OK(admin);
  const std::string plugin_policy = "xpu-dra-plugin-own-node";
  // Its own inventory and Lease: admitted (create, update, status).
  auto own = a.client->Create(kc::NodeInventories(), "", Inventory("vap-node-a"));
  REQUIRE_OK(own);
  REQUIRE_OK(a.client->Update(kc::NodeInventories(), "", *own));
  (*own)["status"] = {{"serverModel", "test"}};
  CHECK(a.client->UpdateStatus(kc::NodeInventories(), "", *own).ok());
  auto lease = a.client->Create(kc::Leases(), kNs, Lease("xpu-dra-plugin-vap-node-a", "a"));
  REQUIRE_OK(lease);
  CHECK(a.client->Update(kc::Leases(), kNs, *lease).ok());
  // Node B's: denied, though RBAC allows the verbs.
  CheckDenied(a.client->Create(kc::NodeInventories(), "", Inventory("vap-node-b")).status(),
              plugin_policy, "may write only its own nodeinventories vap-node-a, not vap-node-b");
  CheckDenied(a.client->Create(kc::Leases(), kNs, Lease("xpu-dra-plugin-vap-node-b", "a")).status(),
              plugin_policy, "not xpu-dra-plugin-vap-node-b");
  // B's existing objects (made by B), read by A (allowed) and written (denied).
  auto theirs = b.client->Create(kc::NodeInventories(), "", Inventory("vap-node-b"));
  REQUIRE_OK(theirs);
  auto their_lease = b.client->Create(kc::Leases(), kNs, Lease("xpu-dra-plugin-vap-node-b", "b"));
  REQUIRE_OK(their_lease);
  auto read = a.client->Get(kc::NodeInventories(), "", "vap-node-b");
  REQUIRE_OK(read);
  CheckDenied(a.client->Update(kc::NodeInventories(), "", *read).status(), plugin_policy,
              "not vap-node-b");
  (*read)["status"] = {{"serverModel", "hijacked"}};
  CheckDenied(a.client->UpdateStatus(kc::NodeInventories(), "", *read).status(), plugin_policy,
              "not vap-node-b");
  auto read_lease = a.client->Get(kc::Leases(), kNs, "xpu-dra-plugin-vap-node-b");
  REQUIRE_OK(read_lease);
  (*read_lease)["spec"]["holderIdentity"] = "a";
  CheckDenied(a.client->Update(kc::Leases(), kNs, *read_lease).status(), plugin_policy,
              "not xpu-dra-plugin-vap-node-b");
  // Deleting is not in its RBAC at all.
  CHECK(a.client->Delete(kc::NodeInventories(), "", "vap-node-b").code() ==
        StatusCode::kPermissionDenied);
  // A token of the plugin's account bound to no Pod on a node: nothing at all.
  Identity unbound = MakeIdentity("vap-plugin-unscheduled", kPluginSa, "");
  CheckDenied(unbound.client->Create(kc::Leases(), kNs, Lease("xpu-dra-plugin-x", "x")).status(),
              plugin_policy, "not bound to a Pod on a node");

  // The controller: ResourceSlices of its own driver only, DeviceClasses it manages only.
  Identity ctl = MakeIdentity("vap-controller", kControllerSa, "");
  const std::string ctl_policy = "xpu-dra-controller-own-objects";
  auto slice = [](const std::string& name, const std::string& driver) {
    return json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceSlice"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"driver", driver},
                  {"nodeName", "vap-node-a"},
                  {"pool", {{"name", "vap-node-a"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                  {"devices", json::array()}}}};
  };
  CheckDenied(
      ctl.client->Create(kc::ResourceSlices(), "", slice("vap-other", "gpu.example.com")).status(),
      ctl_policy, "writes only ResourceSlices of driver xpu.dra.dev");
  auto ours = ctl.client->Create(kc::ResourceSlices(), "", slice("vap-ours", "xpu.dra.dev"));
  REQUIRE_OK(ours);
  REQUIRE_OK(ctl.client->Delete(kc::ResourceSlices(), "", "vap-ours"));
  // Another driver's slice, made by its owner: the controller may not delete it.
  REQUIRE_OK((*admin)->Create(kc::ResourceSlices(), "", slice("vap-theirs", "gpu.example.com")));
  CheckDenied(ctl.client->Delete(kc::ResourceSlices(), "", "vap-theirs"), ctl_policy,
              "writes only ResourceSlices of driver xpu.dra.dev");
  REQUIRE_OK((*admin)->Delete(kc::ResourceSlices(), "", "vap-theirs"));
  auto device_class = [](const std::string& name, bool managed) {
    json c = {
        {"apiVersion", "resource.k8s.io/v1"},
        {"kind", "DeviceClass"},
        {"metadata", {{"name", name}}},
        {"spec", {{"selectors", {{{"cel", {{"expression", "device.driver == 'xpu.dra.dev'"}}}}}}}}};
    if (managed) c["metadata"]["labels"] = {{"app.kubernetes.io/managed-by", "xpu-dra-controller"}};
    return c;
  };
  CheckDenied(
      ctl.client->Create(kc::DeviceClasses(), "", device_class("vap-unlabelled", false)).status(),
      ctl_policy, "writes only DeviceClasses labelled");
  REQUIRE_OK((*admin)->Create(kc::DeviceClasses(), "", device_class("vap-admins", false)));
  CheckDenied(ctl.client->Delete(kc::DeviceClasses(), "", "vap-admins"), ctl_policy,
              "writes only DeviceClasses labelled");
  REQUIRE_OK((*admin)->Delete(kc::DeviceClasses(), "", "vap-admins"));
  REQUIRE_OK(ctl.client->Create(kc::DeviceClasses(), "", device_class("vap-managed", true)));
  REQUIRE_OK(ctl.client->Delete(kc::DeviceClasses(), "", "vap-managed"));

  for (const char* node : {"vap-node-a", "vap-node-b"}) {
    CHECK((*admin)->Delete(kc::NodeInventories(), "", node).ok());
    CHECK((*admin)->Delete(kc::Leases(), kNs, std::string("xpu-dra-plugin-") + node).ok());
  }
}

// ---- The driver as the chart runs it ------------------------------------------------------------

// The allocated devices ("pool/device") and the request names of the claim the Job's pod got,
// once the pod runs (the node agent has had our plugin prepare it).
struct JobRun {
  std::string node;
  std::vector<std::string> devices;
  std::set<std::string> requests;
};

JobRun RunExample(DriverHarness& harness, const std::string& ns, const std::string& file,
                  const std::string& job) {
  const std::string path = SourceDir() + "/deploy/examples/" + file;
  REQUIRE_OK(Upstream().Kubectl({"create", "-n", ns, "-f", path}));
  kc::Client& client = harness.client();
  json pod;
  const bool running = WaitFor(
      [&] {
        kc::ListOptions options;
        options.label_selector = "batch.kubernetes.io/job-name=" + job;
        auto pods = client.List(Pods(), ns, options);
        if (!pods.ok() || pods->items.size() != 1) return false;
        pod = pods->items[0];
        return pod.value("/status/phase"_json_pointer, "") == "Running";
      },
      std::chrono::seconds(120));
  INFO(file << ": " << pod.dump(1));
  REQUIRE(running);
  JobRun run;
  run.node = pod.value("/spec/nodeName"_json_pointer, "");
  const std::string claim =
      pod.value("/status/resourceClaimStatuses/0/resourceClaimName"_json_pointer, "");
  auto got = client.Get(kc::ResourceClaims(), ns, claim);
  REQUIRE_OK(got);
  run.devices = AllocatedDevices(*got);
  for (const auto& r :
       got->value("/status/allocation/devices/results"_json_pointer, json::array())) {
    run.requests.insert(r.value("request", ""));
  }
  // Gone again, with the pod (unprepared by the agent) and its claim, before the next example.
  REQUIRE_OK(Upstream().Kubectl({"delete", "-n", ns, "-f", path, "--wait=true"}));
  CHECK(WaitFor(
      [&] {
        auto left = client.List(kc::ResourceClaims(), ns);
        auto pods = client.List(Pods(), ns);
        return left.ok() && left->items.empty() && pods.ok() && pods->items.empty();
      },
      std::chrono::seconds(90)));
  return run;
}

// The /metrics page of one of our binaries (its port is in its log: "metrics on ... (port N)").
std::string MetricsPage(const ChildProcess& process) {
  const std::string log = process.Log();
  const auto at = log.find("(port ");
  REQUIRE(at != std::string::npos);
  return HttpGet(std::atoi(log.c_str() + at + 6), "/metrics");
}

// The series of `metric` (an api_requests_total{verb,code}) that count refused requests: 401,
// 403 (RBAC) or 422 (admission policies).
std::vector<std::string> Refused(const std::string& page, const std::string& metric) {
  std::vector<std::string> out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(metric + "{", 0) != 0) continue;
    for (const char* code : {"code=\"401\"", "code=\"403\"", "code=\"422\""}) {
      if (line.find(code) != std::string::npos) out.push_back(line);
    }
  }
  return out;
}

// The value of one series; -1 when absent.
double Series(const std::string& page, const std::string& series) {
  const auto at = page.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(page.c_str() + at + series.size() + 2);
}

bool Mentions(const std::string& log, const std::vector<std::string>& words) {
  std::string lower = log;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(words.begin(), words.end(),
                     [&](const std::string& w) { return lower.find(w) != std::string::npos; });
}

TEST_CASE("chart: the controller and two plugins run as the chart's service accounts", "[chart]") {
  EnsureChartApplied();
  auto made = DriverHarness::Create(Upstream(), WorkDir("driver"));
  REQUIRE_OK(made);
  DriverHarness& harness = **made;
  kc::Client& admin = harness.client();
  const std::map<std::string, std::string> hosts = {{"chart-a2", "atlas800t-a2"},
                                                    {"chart-h200", "hgx-h200"}};
  // The identities the chart's Pods would hold: the plugins' bound to Pods on their nodes.
  Identity ctl = MakeIdentity("xpu-dra-controller-test", kControllerSa, "");
  std::map<std::string, Identity> plugins;
  for (const auto& [node, host] : hosts) {
    plugins[node] = MakeIdentity("xpu-dra-plugin-" + node, kPluginSa, node);
    harness.SetPluginKubeconfig(node, plugins[node].kubeconfig);
  }
  harness.SetControllerKubeconfig(ctl.kubeconfig);
  // The controller on the chart's ConfigMap (defaults: attributes mode).
  const auto docs = Documents(Render("defaults", {}));
  const std::string attributes_config = Find(docs, "ConfigMap", "xpu-dra-controller-config")
                                            .value("/data/config.yaml"_json_pointer, "");
  REQUIRE_OK(harness.StartController(attributes_config));
  for (const auto& [node, host] : hosts) REQUIRE_OK(harness.AddNode(node, host));
  for (const auto& [node, host] : hosts) {
    const Status published = harness.WaitPublished(node, 8);
    INFO(harness.controller()->Log() << "\n" << harness.plugin(node)->Log());
    REQUIRE_OK(published);
  }
  // What they wrote under their own names: each node's inventory (owned by its Node) and
  // Lease, the leader Lease, the config's 34 DeviceClasses.
  for (const auto& [node, host] : hosts) {
    auto inventory = admin.Get(kc::NodeInventories(), "", node);
    REQUIRE_OK(inventory);
    CHECK(inventory->value("/metadata/ownerReferences/0/name"_json_pointer, "") == node);
    auto lease = admin.Get(kc::Leases(), kNs, "xpu-dra-plugin-" + node);
    REQUIRE_OK(lease);
    CHECK(lease->value("/spec/holderIdentity"_json_pointer, "") == node);
  }
  auto leader = admin.Get(kc::Leases(), kNs, "xpu-dra-controller");
  REQUIRE_OK(leader);
  CHECK(!leader->value("/spec/holderIdentity"_json_pointer, "").empty());
  kc::ListOptions managed;
  managed.label_selector = "app.kubernetes.io/managed-by=xpu-dra-controller";
  CHECK(WaitFor([&] {
    auto classes = admin.List(kc::DeviceClasses(), "", managed);
    return classes.ok() &&
           classes->items.size() == 38;  // vendors, capability classes, gang, partitions
  }));

  // The examples, through a node agent per node (the kubelet's part): allocated by the
  // scheduler over the controller's slices, prepared by the plugins (which read the claims as
  // their service account).
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (const auto& [node, host] : hosts) {
    auto agent = StartNodeAgent(harness, node);
    REQUIRE_OK(agent);
    agents.push_back(std::move(*agent));
  }
  const std::string ns = "chart-examples";
  REQUIRE_OK(EnsureNamespace(admin, ns));
  auto pools = [](const JobRun& run) {
    std::set<std::string> out;
    for (const auto& d : run.devices) out.insert(d.substr(0, d.find('/')));
    return out;
  };
  JobRun npus = RunExample(harness, ns, "npu-8-attributes.yaml", "npu-8-attributes");
  CHECK(npus.node == "chart-a2");
  CHECK(npus.devices.size() == 8);
  CHECK(pools(npus) == std::set<std::string>{"chart-a2"});
  JobRun gpus = RunExample(harness, ns, "gpu-4-nvlink.yaml", "gpu-4-nvlink");
  CHECK(gpus.node == "chart-h200");
  CHECK(gpus.devices.size() == 4);
  CHECK(pools(gpus) == std::set<std::string>{"chart-h200"});
  JobRun first = RunExample(harness, ns, "mixed-first-available.yaml", "accel-first-available");
  CHECK(first.devices.size() == 4);
  CHECK(first.requests == std::set<std::string>{"accel/nvidia"});
  JobRun capability = RunExample(harness, ns, "capability-class.yaml", "training-large-memory");
  CHECK(capability.devices.size() == 1);
  CHECK((capability.node == "chart-a2" || capability.node == "chart-h200"));

  // The first controller's API answers: its writes went through (201 Created), none refused.
  const std::string controller_page = MetricsPage(*harness.controller());
  INFO(controller_page);
  CHECK(Series(controller_page,
               "xpu_dra_controller_api_requests_total{verb=\"create\",code=\"201\"}") > 0);
  CHECK(Refused(controller_page, "xpu_dra_controller_api_requests_total").empty());

  // groups mode: the controller restarted on the groups rendering's config publishes the
  // aligned groups; the group example gets one group device of eight.
  const auto groups_docs = Documents(Render("groups", {"publishing.mode=groups"}));
  REQUIRE_OK(harness.StartController(Find(groups_docs, "ConfigMap", "xpu-dra-controller-config")
                                         .value("/data/config.yaml"_json_pointer, "")));
  const bool grouped = WaitFor(
      [&] {
        auto devices = harness.PublishedDevices("chart-a2");
        return devices.ok() && std::any_of(devices->begin(), devices->end(), [](const json& d) {
                 return d.value("/attributes/groupSize/int"_json_pointer, 0) == 8;
               });
      },
      std::chrono::seconds(90));
  INFO(harness.controller()->Log());
  REQUIRE(grouped);
  JobRun group = RunExample(harness, ns, "npu-8-groups.yaml", "npu-8-groups");
  CHECK(group.node == "chart-a2");
  CHECK(group.devices.size() == 1);
  CHECK(pools(group) == std::set<std::string>{"chart-a2"});

  // Nothing was refused along the way: RBAC and the policies let through all the code does.
  // The plugins prepared the claims (reading them as their service account).
  for (const auto& [node, host] : hosts) {
    const std::string page = MetricsPage(*harness.plugin(node));
    INFO(node << "\n" << page);
    CHECK(Refused(page, "xpu_dra_plugin_api_requests_total").empty());
    CHECK(Series(page, "xpu_dra_plugin_prepare_claims_total{result=\"ok\"}") >= 2);
    CHECK(Series(page, "xpu_dra_plugin_prepare_claims_total{result=\"error\"}") <= 0);
  }
  const std::string groups_page = MetricsPage(*harness.controller());
  INFO(groups_page);
  CHECK(Refused(groups_page, "xpu_dra_controller_api_requests_total").empty());
  for (auto& agent : agents) CHECK(agent->Stop() == 0);
  const std::vector<std::string> refusals = {"forbidden", "denied request", " 403 "};
  INFO(harness.controller()->Log());
  CHECK_FALSE(Mentions(harness.controller()->Log(), refusals));
  for (const auto& [node, host] : hosts) {
    INFO(node << ": " << harness.plugin(node)->Log());
    CHECK_FALSE(Mentions(harness.plugin(node)->Log(), refusals));
  }
  // The first controller's log, from before the restart.
  const std::string first_log = ReadFile(WorkDir("driver") + "/controller-1.log");
  INFO(first_log);
  CHECK_FALSE(Mentions(first_log, refusals));
  REQUIRE_OK(Upstream().Kubectl({"delete", "namespace", ns, "--wait=false"}));
}

}  // namespace
}  // namespace xpu::e2e
