// The shared fixture of the chart tests (chart_fixture.h): the control plane, helm and its
// renderings, the renderings' documents as JSON, and service-account identities as the chart's
// Pods hold them.
#include "e2e/cluster/chart_fixture.h"

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "api/client/kubeconfig.h"
#include "base/testing/require_ok.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/harness.h"

namespace xpu::e2e::chart {
namespace {

// As in the test files: the same aliases in the same (anonymous) namespace of a unity batch.
namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

namespace chart_fixture_cc {

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

}  // namespace chart_fixture_cc
}  // namespace

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

std::vector<json> Documents(const std::string& path) {
  std::vector<json> docs;
  try {
    for (const auto& doc : YAML::LoadAll(ReadFile(path))) {
      if (doc.IsMap()) docs.push_back(chart_fixture_cc::ToJson(doc));
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

// ---- The chart in the cluster, and identities -------------------------------------------------

void EnsureChartApplied() {
  static bool applied = false;
  if (applied) return;
  auto client = Upstream().NewClient();
  REQUIRE_OK(client);
  REQUIRE_OK(EnsureNamespace(**client, kNs));
  REQUIRE_OK(Upstream().Kubectl({"apply", "--server-side", "-f", Render("defaults", {})}));
  REQUIRE_OK(
      Upstream().WaitEstablished({"nodeinventories.xpu.dra.dev", "acceleratorgangs.xpu.dra.dev"}));
  applied = true;
}

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

}  // namespace xpu::e2e::chart
