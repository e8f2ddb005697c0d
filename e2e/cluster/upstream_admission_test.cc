// The upstream tier, admission: the pinned control plane serves resource.k8s.io/v1 and admits our
// CRDs, the controller's slices for every fixture host, the example claims, templates and classes
// and the controller's DeviceClasses (CEL compiled); kube-sim admits the same slices. The shared
// fixture and what runs these is in upstream_fixture.h.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "api/partitions.h"
#include "api/testing/resource_examples.h"
#include "base/name_list.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "controller/config.h"
#include "controller/device_classes.h"
#include "controller/render.h"
#include "controller/slices.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "e2e/cluster/upstream_fixture.h"
#include "topology/model.h"
#include "topology/solver.h"

namespace xpu::e2e::upstream {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

// ---- Admission -------------------------------------------------------------------------------

// The first place where `sent` is not in `got` (every key and array element of `sent` must be
// there with the same value; keys the server added, its defaults, are ignored); "" when none.
std::string Missing(const json& sent, const json& got, const std::string& path = "") {
  if (sent.is_object()) {
    if (!got.is_object()) return path + " (not an object)";
    for (const auto& [k, v] : sent.items()) {
      std::string at = path;
      at.append("/").append(k);
      if (!got.contains(k)) return at + " dropped";
      if (auto m = Missing(v, got.at(k), at); !m.empty()) return m;
    }
    return "";
  }
  if (sent.is_array()) {
    if (!got.is_array() || got.size() != sent.size()) return path + " (array length)";
    for (size_t i = 0; i < sent.size(); ++i) {
      if (auto m = Missing(sent[i], got[i], path + "/" + std::to_string(i)); !m.empty()) return m;
    }
    return "";
  }
  return sent == got ? "" : path + ": sent " + sent.dump() + ", got " + got.dump();
}

// Checks that the server kept everything sent (see Missing), naming the first difference.
void CheckKept(const json& sent, const json& got) {
  const std::string missing = Missing(sent, got);
  INFO(missing);
  CHECK(missing.empty());
}

TEST_CASE("upstream: the pinned control plane serves resource.k8s.io/v1", "[admission]") {
  Cluster& cluster = Upstream();
  auto client = cluster.NewClient();
  REQUIRE_OK(client);
  auto version = (*client)->GetPath("/version");
  REQUIRE_OK(version);
  CHECK(version->value("gitVersion", "") == cluster.version());
  CHECK(cluster.minor() >= 34);
  auto served = (*client)->ResourceApiVersion();
  REQUIRE_OK(served);
  CHECK(*served == api::resource::ResourceVersion::kV1);
  // The components that make it a control plane, each answering as itself.
  auto kubectl = cluster.Kubectl({"get", "--raw", "/readyz?verbose"});
  REQUIRE_OK(kubectl);
  CHECK(kubectl->find("readyz check passed") != std::string::npos);
}

TEST_CASE("upstream: our CRDs are admitted, and a fixture NodeInventory validates against them",
          "[admission]") {
  Cluster& cluster = Upstream();
  auto applied = cluster.Kubectl({"apply", "--server-side", "-f", SourceDir() + "/deploy/crds/"});
  REQUIRE_OK(applied);
  REQUIRE_OK(
      cluster.WaitEstablished({"nodeinventories.xpu.dra.dev", "acceleratorgangs.xpu.dra.dev"}));
  auto client = cluster.NewClient();
  REQUIRE_OK(client);
  // Every committed inventory golden is admitted by the CRD's schema, status included.
  int admitted = 0;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/e2e/fixtures/hosts-expected")) {
    if (entry.path().extension() != ".json") continue;
    json inventory = ReadJson(entry.path());
    const std::string name = "adm-" + entry.path().stem().string();
    inventory["metadata"] = {{"name", name}};
    json status = inventory["status"];
    auto created = (*client)->Create(kc::NodeInventories(), "", inventory);
    INFO(entry.path().filename().string());
    REQUIRE_OK(created);
    (*created)["status"] = status;
    auto updated = (*client)->UpdateStatus(kc::NodeInventories(), "", *created);
    REQUIRE_OK(updated);
    CheckKept(status, updated->value("status", json::object()));
    CHECK((*client)->Delete(kc::NodeInventories(), "", name).ok());
    ++admitted;
  }
  CHECK(admitted >= 12);
}

// Creates every slice of every golden (both modes) and checks that nothing was dropped; deletes
// them again. Run on both kinds of cluster.
void CheckGoldenSlicesAdmitted(kc::Client& client, const std::string& where) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/e2e/fixtures/slices-expected")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const json list = ReadJson(entry.path());
    std::vector<std::string> created_names;
    for (json slice : list.at("items")) {
      // Not owned by a real Node here; the garbage collector would remove it mid-check.
      slice["metadata"].erase("ownerReferences");
      const json spec = slice["spec"];
      auto created = client.Create(kc::ResourceSlices(), "", slice);
      INFO(where << ": " << entry.path().filename().string());
      REQUIRE_OK(created);
      CheckKept(spec, created->value("spec", json::object()));
      created_names.push_back(created->at("metadata").value("name", ""));
    }
    for (const auto& name : created_names) {
      CHECK(client.Delete(kc::ResourceSlices(), "", name).ok());
    }
  }
  CHECK(files >= 30);
}

TEST_CASE("upstream: the controller's slices for every fixture host, both modes, are admitted",
          "[admission]") {
  // The goldens are the 1.35 shapes (a counter set in a slice of its own); 1.34 gets its own
  // shape from the controller, which the allocation tests publish.
  if (Upstream().minor() < 35) {
    XPU_SKIP("the 1.35 golden shapes are not checked on " + Upstream().version());
  }
  auto client = Upstream().NewClient();
  REQUIRE_OK(client);
  CheckGoldenSlicesAdmitted(**client, "upstream " + Upstream().version());
}

TEST_CASE("kube-sim admits the same slices", "[kubesim]") {
  auto sim = Cluster::Start({});
  REQUIRE_OK(sim);
  auto client = (*sim)->NewClient();
  REQUIRE_OK(client);
  CheckGoldenSlicesAdmitted(**client, "kube-sim");
}

TEST_CASE("upstream: example claims, templates and classes are admitted", "[admission]") {
  auto client = Upstream().NewClient();
  REQUIRE_OK(client);
  // The example claim asks for admin access, which the API server allows only in a namespace
  // labelled for it.
  REQUIRE_OK((*client)->Create(
      kc::Namespaces(), "",
      {{"apiVersion", "v1"},
       {"kind", "Namespace"},
       {"metadata",
        {{"name", "examples"}, {"labels", {{"resource.kubernetes.io/admin-access", "true"}}}}}}));
  json klass = ToJson(api::testing::ExampleDeviceClass());
  json claim = ToJson(api::testing::ExampleResourceClaim());
  json templ = ToJson(api::testing::ExampleResourceClaimTemplate());
  claim["metadata"]["namespace"] = "examples";
  templ["metadata"]["namespace"] = "examples";
  // Server-set fields do not go into a create (the API server refuses a resourceVersion).
  for (json* o : {&klass, &claim, &templ}) {
    o->erase("status");
    for (const char* f : {"resourceVersion", "uid", "creationTimestamp", "generation"}) {
      (*o)["metadata"].erase(f);
    }
  }
  auto k = (*client)->Create(kc::DeviceClasses(), "", klass);
  REQUIRE_OK(k);
  CheckKept(klass["spec"], k->value("spec", json::object()));
  auto c = (*client)->Create(kc::ResourceClaims(), "examples", claim);
  REQUIRE_OK(c);
  CheckKept(claim["spec"], c->value("spec", json::object()));
  auto t = (*client)->Create(kc::ResourceClaimTemplates(), "examples", templ);
  REQUIRE_OK(t);
  CheckKept(templ["spec"], t->value("spec", json::object()));
}

TEST_CASE("upstream tests: kBuiltInConfigAttributes is the built-in config in attributes mode",
          "[admission]") {
  StatusOr<controller::Config> parsed = controller::ParseConfig(kBuiltInConfigAttributes);
  REQUIRE_OK(parsed);
  controller::Config want = controller::DefaultConfig();
  want.mode = controller::PublishMode::kAttributes;
  CHECK(*parsed == want);
}

TEST_CASE("upstream: the controller's DeviceClasses are admitted, their CEL compiled",
          "[admission]") {
  // What the controller's built-in defaults ask for, each to be found on the real server with
  // the selectors as written (a CEL expression the server cannot compile is rejected).
  const auto desired = controller::DesiredDeviceClasses(controller::DefaultConfig(), "xpu.dra.dev");
  REQUIRE(desired.size() >= 12);
  auto harness = DriverHarness::Create(Upstream(), WorkDir("classes"));
  REQUIRE_OK(harness);
  REQUIRE_OK((*harness)->StartController(kBuiltInConfigAttributes));
  kc::Client& client = (*harness)->client();
  for (const auto& klass : desired) {
    const json want = ToJson(klass);
    const std::string name = want.at("metadata").value("name", "");
    StatusOr<json> got = NotFoundError(name);
    WaitFor([&] {
      got = client.Get(kc::DeviceClasses(), "", name);
      return got.ok();
    });
    INFO(name << "\n" << (*harness)->controller()->Log());
    REQUIRE_OK(got);
    CheckKept(want.at("spec"), got->value("spec", json::object()));
  }
  CHECK((*harness)->controller()->Log().find("deviceclass") == std::string::npos);
}

}  // namespace
}  // namespace xpu::e2e::upstream
