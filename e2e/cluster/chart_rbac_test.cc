// The chart's RBAC and admission policies (tests of chart_test; the shared fixture is in
// chart_fixture.h): SubjectAccessReviews of the controller's and the plugin's service accounts
// show least privilege, and the chart's ValidatingAdmissionPolicies keep each identity, holding a
// token bound to a Pod as the chart's Pods do, to its own objects.
#include <catch2/catch.hpp>
#include <string>

#include "api/client/client.h"
#include "base/status.h"
#include "base/testing/require_ok.h"
#include "e2e/cluster/chart_fixture.h"
#include "e2e/cluster/cluster.h"

namespace xpu::e2e::chart {
namespace {

namespace kc = api::client;
using nlohmann::json;

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

}  // namespace
}  // namespace xpu::e2e::chart
