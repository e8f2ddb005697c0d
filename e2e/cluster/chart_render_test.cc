// The chart's renderings (tests of chart_test; the shared fixture is in chart_fixture.h): helm
// lint and the values schema, the renderings of each documented mode against what the binaries
// and the cluster need, the independent schema checker over them and the examples of
// deploy/examples/, and their admission by the API server.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/client/client.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "controller/config.h"
#include "e2e/cluster/chart_fixture.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"

namespace xpu::e2e::chart {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

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

}  // namespace
}  // namespace xpu::e2e::chart
