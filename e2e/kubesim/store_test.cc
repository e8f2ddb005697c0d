#include "e2e/kubesim/store.h"

#include <catch2/catch.hpp>
#include <regex>
#include <thread>

#include "base/testing/require_ok.h"
#include "e2e/kubesim/convert.h"
#include "e2e/kubesim/validate.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;
using std::chrono::steady_clock;

struct StoreFixture {
  explicit StoreFixture(size_t history = 1000)
      : store(StoreOptions{BuiltinResources(), history, 7}) {
    REQUIRE_OK(store.Create(Type("", "namespaces"), "", {{"metadata", {{"name", "ns"}}}}));
  }
  size_t Type(const char* group, const char* resource) {
    auto t = store.FindType(group, resource);
    REQUIRE(t);
    return *t;
  }
  Store store;
};

json Named(const std::string& name, json labels = json::object()) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}, {"spec", {{"x", 1}}}};
}

json Slice(const std::string& name, int devices) {
  json d = json::array();
  for (int i = 0; i < devices; ++i) d.push_back({{"name", "d" + std::to_string(i)}});
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"driver", "xpu.dra.dev"},
            {"nodeName", "n1"},
            {"pool", {{"name", "n1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", d}}}};
}

const auto kSoon = [] { return steady_clock::now(); };

TEST_CASE("create sets server fields and refuses duplicates") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  auto n = f.store.Create(nodes, "", Named("n1"));
  REQUIRE_OK(n);
  const auto& meta = (*n)["metadata"];
  CHECK(std::regex_match(
      meta["uid"].get<std::string>(),
      std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  CHECK(std::regex_match(meta["creationTimestamp"].get<std::string>(),
                         std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
  CHECK(meta["generation"] == 1);
  CHECK(meta["resourceVersion"] == "2");  // the namespace took 1: one global counter
  CHECK(f.store.Create(nodes, "", Named("n1")).status().code() == StatusCode::kAlreadyExists);

  auto generated = f.store.Create(nodes, "", {{"metadata", {{"generateName", "node-"}}}});
  REQUIRE_OK(generated);
  CHECK(std::regex_match((*generated)["metadata"]["name"].get<std::string>(),
                         std::regex("node-[a-z0-9]{5}")));
  CHECK(f.store.Create(nodes, "", {{"metadata", json::object()}}).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("a create that carries a resourceVersion is refused, as by the real server") {
  StoreFixture f;
  json node = Named("n1");
  node["metadata"]["resourceVersion"] = "5";
  const Status s = f.store.Create(f.Type("", "nodes"), "", node).status();
  CHECK(s.code() == StatusCode::kInternal);
  CHECK(s.message() == "resourceVersion should not be set on objects to be created");
}

TEST_CASE("admin access to devices needs the namespace label") {
  StoreFixture f;
  const size_t namespaces = f.Type("", "namespaces");
  REQUIRE_OK(f.store.Create(
      namespaces, "",
      {{"metadata",
        {{"name", "admin"}, {"labels", {{"resource.kubernetes.io/admin-access", "true"}}}}}}));
  const json request = {{"name", "r"},
                        {"exactly", {{"deviceClassName", "c"}, {"adminAccess", true}}}};
  const json claim = {{"metadata", {{"name", "c1"}}},
                      {"spec", {{"devices", {{"requests", {request}}}}}}};
  const size_t claims = f.Type("resource.k8s.io", "resourceclaims");
  api::FieldErrors causes;
  const Status refused = f.store.Create(claims, "ns", claim, &causes).status();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.message(),
             Catch::Contains("spec.devices.requests[0].adminAccess: Forbidden: admin access to "
                             "devices requires the `resource.kubernetes.io/admin-access: true` "
                             "label on the containing namespace"));
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].type == api::FieldErrorType::kForbidden);
  CHECK(f.store.Create(claims, "admin", claim).ok());
  // Claim templates too, with the path the real server names.
  const json templ = {{"metadata", {{"name", "t1"}}}, {"spec", {{"spec", claim.at("spec")}}}};
  const size_t templates = f.Type("resource.k8s.io", "resourceclaimtemplates");
  CHECK(f.store.Create(templates, "ns", templ).status().code() == StatusCode::kInvalidArgument);
  CHECK(f.store.Create(templates, "admin", templ).ok());
}

TEST_CASE("namespaced objects need their namespace") {
  StoreFixture f;
  const size_t leases = f.Type("coordination.k8s.io", "leases");
  CHECK(f.store.Create(leases, "missing", Named("l")).status().code() == StatusCode::kNotFound);
  auto l = f.store.Create(leases, "ns", Named("l"));
  REQUIRE_OK(l);
  CHECK((*l)["metadata"]["namespace"] == "ns");
  CHECK(f.store.Get(leases, "ns", "l").ok());
  CHECK(f.store.Get(leases, "other", "l").status().code() == StatusCode::kNotFound);
}

TEST_CASE("update checks the resourceVersion and bumps generation on spec changes") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  auto n = f.store.Create(nodes, "", Named("n1"));
  REQUIRE_OK(n);
  json changed = *n;
  changed["spec"]["x"] = 2;
  auto u = f.store.Update(nodes, "", "n1", changed, false);
  REQUIRE_OK(u);
  CHECK((*u)["metadata"]["generation"] == 2);
  CHECK(f.store.Update(nodes, "", "n1", changed, false).status().code() == StatusCode::kAborted);

  json labels_only = *u;
  labels_only["metadata"]["labels"] = {{"a", "b"}};
  auto l = f.store.Update(nodes, "", "n1", labels_only, false);
  REQUIRE_OK(l);
  CHECK((*l)["metadata"]["generation"] == 2);

  // No resourceVersion: last write wins. An unchanged object keeps its resourceVersion.
  json blind = *l;
  blind["metadata"].erase("resourceVersion");
  auto same = f.store.Update(nodes, "", "n1", blind, false);
  REQUIRE_OK(same);
  CHECK((*same)["metadata"]["resourceVersion"] == (*l)["metadata"]["resourceVersion"]);
  CHECK(f.store.Update(nodes, "", "n2", Named("n2"), false).status().code() ==
        StatusCode::kNotFound);
  CHECK(f.store.Update(nodes, "", "n1", Named("other"), false).status().code() ==
        StatusCode::kFailedPrecondition);
}

TEST_CASE("the status subresource and the main resource each keep the other's part") {
  StoreFixture f;
  // A type with a status subresource and a mutable spec (a ResourceClaim's spec is immutable).
  const size_t gangs = f.Type("xpu.dra.dev", "acceleratorgangs");
  json gang = Named("g");
  gang["spec"] = {{"nodes", 1}, {"devicesPerNode", 8}, {"capabilityClass", "training"}};
  gang["status"] = {{"phase", "Placed"}};
  auto c = f.store.Create(gangs, "ns", gang);
  REQUIRE_OK(c);
  CHECK_FALSE(c->contains("status"));

  json with_status = *c;
  with_status["status"] = {{"phase", "Pending"}};
  with_status["spec"]["nodes"] = 99;
  auto s = f.store.Update(gangs, "ns", "g", with_status, true);
  REQUIRE_OK(s);
  CHECK((*s)["spec"]["nodes"] == 1);
  CHECK((*s)["status"]["phase"] == "Pending");
  CHECK((*s)["metadata"]["generation"] == 1);

  json main = *s;
  main.erase("status");
  main["spec"]["nodes"] = 5;
  auto m = f.store.Update(gangs, "ns", "g", main, false);
  REQUIRE_OK(m);
  CHECK((*m)["status"]["phase"] == "Pending");
  CHECK((*m)["metadata"]["generation"] == 2);
}

TEST_CASE("custom resources are pruned to their CRD schema and validated against it") {
  StoreFixture f;
  const size_t inventories = f.Type("xpu.dra.dev", "nodeinventories");
  const size_t gangs = f.Type("xpu.dra.dev", "acceleratorgangs");
  // Unknown members go, as the API server prunes them; declared ones stay.
  json inv = Named("n1");
  inv["spec"] = {{"undeclared", true}};
  inv["extra"] = 1;
  auto made = f.store.Create(inventories, "", inv);
  REQUIRE_OK(made);
  CHECK_FALSE(made->contains("extra"));
  CHECK((*made)["spec"] == json::object());
  json status = *made;
  status["status"] = {{"bootID", "b1"}, {"future", 1}};
  auto st = f.store.Update(inventories, "", "n1", status, true);
  REQUIRE_OK(st);
  CHECK((*st)["status"]["bootID"] == "b1");
  CHECK_FALSE((*st)["status"].contains("future"));
  // A declared field of the wrong type or value is 422 with the path.
  status = *st;
  status["status"]["bootID"] = 7;
  api::FieldErrors causes;
  auto bad = f.store.Update(inventories, "", "n1", status, true, &causes);
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == "status.bootID");
  json gang = Named("g");
  gang["spec"] = {{"nodes", 0}, {"devicesPerNode", 4}, {"capabilityClass", "c"}};  // nodes >= 1
  CHECK(f.store.Create(gangs, "ns", gang).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("delete honours preconditions and finalizers") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  auto n = f.store.Create(nodes, "", Named("n1"));
  REQUIRE_OK(n);
  CHECK(f.store.Delete(nodes, "", "n1", {std::string("wrong"), std::nullopt}).status().code() ==
        StatusCode::kAborted);
  CHECK(f.store.Delete(nodes, "", "n1", {std::nullopt, std::string("1")}).status().code() ==
        StatusCode::kAborted);
  const std::string uid = (*n)["metadata"]["uid"];
  const std::string rv = (*n)["metadata"]["resourceVersion"];
  REQUIRE_OK(f.store.Delete(nodes, "", "n1", {uid, rv}));
  CHECK(f.store.Get(nodes, "", "n1").status().code() == StatusCode::kNotFound);
  CHECK(f.store.Delete(nodes, "", "n1", {}).status().code() == StatusCode::kNotFound);

  json held = Named("n2");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  REQUIRE_OK(f.store.Create(nodes, "", held));
  auto marked = f.store.Delete(nodes, "", "n2", {});
  REQUIRE_OK(marked);
  CHECK((*marked)["metadata"].contains("deletionTimestamp"));
  json release = *marked;
  release["metadata"]["finalizers"] = json::array();
  REQUIRE_OK(f.store.Update(nodes, "", "n2", release, false));
  CHECK(f.store.Get(nodes, "", "n2").status().code() == StatusCode::kNotFound);
}

TEST_CASE("deleting a node garbage-collects what it owns, a namespace takes its contents") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  const size_t slices = f.Type("resource.k8s.io", "resourceslices");
  const size_t leases = f.Type("coordination.k8s.io", "leases");
  auto n = f.store.Create(nodes, "", Named("n1"));
  REQUIRE_OK(n);
  json owned = Slice("owned", 1);
  owned["metadata"]["ownerReferences"] = {
      {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n1"}, {"uid", (*n)["metadata"]["uid"]}}};
  REQUIRE_OK(f.store.Create(slices, "", owned));
  REQUIRE_OK(f.store.Create(slices, "", Slice("free", 1)));
  REQUIRE_OK(f.store.Create(leases, "ns", Named("l")));
  REQUIRE_OK(f.store.Delete(nodes, "", "n1", {}));
  CHECK(f.store.Get(slices, "", "owned").status().code() == StatusCode::kNotFound);
  CHECK(f.store.Get(slices, "", "free").ok());
  REQUIRE_OK(f.store.Delete(f.Type("", "namespaces"), "", "ns", {}));
  CHECK(f.store.Get(leases, "ns", "l").status().code() == StatusCode::kNotFound);
}

TEST_CASE("list filters by namespace and selectors and pages with continue") {
  StoreFixture f;
  const size_t leases = f.Type("coordination.k8s.io", "leases");
  REQUIRE_OK(f.store.Create(f.Type("", "namespaces"), "", Named("other")));
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    REQUIRE_OK(
        f.store.Create(leases, "ns", Named(name, {{"even", name[0] % 2 == 0 ? "yes" : "no"}})));
  }
  REQUIRE_OK(f.store.Create(leases, "other", Named("z")));
  auto all = f.store.List(leases, "", {});
  REQUIRE_OK(all);
  CHECK(all->items.size() == 6);
  CHECK(all->resource_version == f.store.ResourceVersion());
  ListOptions even;
  even.labels = *Selector::ParseLabels("even=yes");
  CHECK(f.store.List(leases, "ns", even)->items.size() == 2);

  ListOptions page;
  page.limit = 2;
  std::vector<std::string> seen;
  for (int i = 0; i < 10; ++i) {
    auto r = f.store.List(leases, "ns", page);
    REQUIRE_OK(r);
    for (const auto& item : r->items) seen.push_back(item["metadata"]["name"]);
    if (r->continue_token.empty()) break;
    page.continue_token = r->continue_token;
  }
  CHECK(seen == std::vector<std::string>{"a", "b", "c", "d", "e"});
  page.continue_token = "zz";
  CHECK(f.store.List(leases, "ns", page).status().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("watch events come from the history in resourceVersion order, 410 past it") {
  StoreFixture f(4);
  const size_t nodes = f.Type("", "nodes");
  const int64_t start = f.store.ResourceVersion();
  auto n = f.store.Create(nodes, "", Named("n1"));
  REQUIRE_OK(n);
  json changed = *n;
  changed["spec"]["x"] = 3;
  REQUIRE_OK(f.store.Update(nodes, "", "n1", changed, false));
  REQUIRE_OK(f.store.Delete(nodes, "", "n1", {}));
  WatchFilter filter{nodes, "", {}, {}};
  auto batch = f.store.WaitForEvents(filter, start, kSoon());
  REQUIRE_OK(batch);
  REQUIRE(batch->events.size() == 3);
  CHECK(batch->events[0].type == "ADDED");
  CHECK(batch->events[1].type == "MODIFIED");
  CHECK(batch->events[2].type == "DELETED");
  CHECK(batch->scanned_through == f.store.ResourceVersion());

  // Events of other types and of non-matching objects are skipped but scanned.
  WatchFilter leases{f.Type("coordination.k8s.io", "leases"), "", {}, {}};
  auto none = f.store.WaitForEvents(leases, start, kSoon());
  REQUIRE_OK(none);
  CHECK(none->events.empty());

  for (const char* name : {"a", "b", "c"}) REQUIRE_OK(f.store.Create(nodes, "", Named(name)));
  CHECK(f.store.WaitForEvents(filter, start, kSoon()).status().code() == StatusCode::kOutOfRange);
  CHECK(f.store.WaitForEvents(filter, f.store.ResourceVersion() - 4, kSoon()).ok());
}

TEST_CASE("a waiting watch wakes on a write from another thread and on shutdown") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  const int64_t start = f.store.ResourceVersion();
  WatchFilter filter{nodes, "", {}, {}};
  std::thread writer([&] { REQUIRE_OK(f.store.Create(nodes, "", Named("n1"))); });
  auto batch = f.store.WaitForEvents(filter, start, steady_clock::now() + std::chrono::minutes(1));
  writer.join();
  REQUIRE_OK(batch);
  REQUIRE(batch->events.size() == 1);

  std::thread stopper([&] { f.store.Shutdown(); });
  auto stopped = f.store.WaitForEvents(filter, f.store.ResourceVersion(),
                                       steady_clock::now() + std::chrono::minutes(1));
  stopper.join();
  CHECK(stopped.status().code() == StatusCode::kCancelled);
}

TEST_CASE("ResourceSlices are validated on create and update") {
  StoreFixture f;
  const size_t slices = f.Type("resource.k8s.io", "resourceslices");
  CHECK(f.store.Create(slices, "", Slice("ok", 128)).ok());
  auto too_many = f.store.Create(slices, "", Slice("big", 129));
  CHECK(too_many.status().code() == StatusCode::kInvalidArgument);
  CHECK(too_many.status().message().find("spec.devices") != std::string::npos);

  json tainted = Slice("tainted", 65);
  tainted["spec"]["devices"][0]["taints"] = json::array({{{"key", "k"}, {"effect", "NoSchedule"}}});
  CHECK(f.store.Create(slices, "", tainted).status().code() == StatusCode::kInvalidArgument);

  json dup = Slice("dup", 2);
  dup["spec"]["devices"][1]["name"] = "d0";
  CHECK(f.store.Create(slices, "", dup).status().message().find("spec.devices[1].name") !=
        std::string::npos);
  json bad_name = Slice("bad", 1);
  bad_name["spec"]["devices"][0]["name"] = "Not_A_Label";
  CHECK(f.store.Create(slices, "", bad_name).status().code() == StatusCode::kInvalidArgument);
  json two_selections = Slice("two", 1);
  two_selections["spec"]["allNodes"] = true;
  CHECK(f.store.Create(slices, "", two_selections).status().code() == StatusCode::kInvalidArgument);
  json no_driver = Slice("nodriver", 1);
  no_driver["spec"].erase("driver");
  CHECK(f.store.Create(slices, "", no_driver).status().message().find("spec.driver") !=
        std::string::npos);

  auto stored = f.store.Get(slices, "", "ok");
  REQUIRE_OK(stored);
  json grown = *stored;
  grown["spec"]["devices"].push_back({{"name", "extra"}});
  CHECK(f.store.Update(slices, "", "ok", grown, false).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("v1beta1 ResourceSlices and claims convert to and from the v1 storage form") {
  const auto types = BuiltinResources();
  const ResourceType* slices = nullptr;
  const ResourceType* claims = nullptr;
  for (const auto& t : types) {
    if (t.resource == "resourceslices") slices = &t;
    if (t.resource == "resourceclaims") claims = &t;
  }
  REQUIRE(slices != nullptr);
  REQUIRE(claims != nullptr);
  const json beta = {
      {"apiVersion", "resource.k8s.io/v1beta1"},
      {"kind", "ResourceSlice"},
      {"spec",
       {{"devices", {{{"name", "d0"}, {"basic", {{"attributes", {{"i", {{"int", 0}}}}}}}}}}}}};
  const json v1 = ToStorage(*slices, "v1beta1", beta);
  CHECK(v1["apiVersion"] == "resource.k8s.io/v1");
  CHECK(v1["spec"]["devices"][0] == json{{"name", "d0"}, {"attributes", {{"i", {{"int", 0}}}}}});
  CHECK(FromStorage(*slices, "v1beta1", v1) == beta);
  CHECK(FromStorage(*slices, "v1beta2", v1)["apiVersion"] == "resource.k8s.io/v1beta2");

  const json flat = {
      {"apiVersion", "resource.k8s.io/v1beta1"},
      {"kind", "ResourceClaim"},
      {"spec",
       {{"devices", {{"requests", {{{"name", "r"}, {"deviceClassName", "xpu"}, {"count", 2}}}}}}}}};
  const json nested = ToStorage(*claims, "v1beta1", flat);
  CHECK(nested["spec"]["devices"]["requests"][0] ==
        json{{"name", "r"}, {"exactly", {{"deviceClassName", "xpu"}, {"count", 2}}}});
  CHECK(FromStorage(*claims, "v1beta1", nested) == flat);
}

TEST_CASE("a watch with a selector sees ADDED and DELETED when an update changes the match") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  const int64_t start = f.store.ResourceVersion();
  auto n = f.store.Create(nodes, "", Named("n1", {{"pool", "b"}}));
  REQUIRE_OK(n);
  json in = *n;
  in["metadata"]["labels"]["pool"] = "a";
  auto joined = f.store.Update(nodes, "", "n1", in, false);
  REQUIRE_OK(joined);
  json still = *joined;
  still["spec"]["x"] = 2;
  auto modified = f.store.Update(nodes, "", "n1", still, false);
  REQUIRE_OK(modified);
  json out = *modified;
  out["metadata"]["labels"]["pool"] = "c";
  auto left = f.store.Update(nodes, "", "n1", out, false);
  REQUIRE_OK(left);

  WatchFilter pool_a{nodes, "", *Selector::ParseLabels("pool=a"), {}};
  auto batch = f.store.WaitForEvents(pool_a, start, kSoon());
  REQUIRE_OK(batch);
  REQUIRE(batch->events.size() == 3);
  CHECK(batch->events[0].type == "ADDED");
  CHECK(batch->events[0].object["metadata"]["labels"]["pool"] == "a");
  CHECK(batch->events[1].type == "MODIFIED");
  CHECK(batch->events[2].type == "DELETED");
  // The last state that matched, at the resourceVersion of the update that ended the match.
  CHECK(batch->events[2].object["metadata"]["labels"]["pool"] == "a");
  CHECK(batch->events[2].object["metadata"]["resourceVersion"] ==
        (*left)["metadata"]["resourceVersion"]);

  // Without a selector the same updates are plain MODIFIED events.
  WatchFilter all{nodes, "", {}, {}};
  auto plain = f.store.WaitForEvents(all, start, kSoon());
  REQUIRE_OK(plain);
  REQUIRE(plain->events.size() == 4);
  CHECK(plain->events[3].type == "MODIFIED");
}

TEST_CASE("list resourceVersion, resourceVersionMatch and expired continue tokens") {
  StoreFixture f(6);
  const size_t nodes = f.Type("", "nodes");
  REQUIRE_OK(f.store.Create(nodes, "", Named("a")));
  const int64_t one = f.store.ResourceVersion();
  REQUIRE_OK(f.store.Create(nodes, "", Named("b")));
  auto a = f.store.Get(nodes, "", "a");
  REQUIRE_OK(a);
  json changed = *a;
  changed["spec"]["x"] = 7;
  REQUIRE_OK(f.store.Update(nodes, "", "a", changed, false));
  REQUIRE_OK(f.store.Delete(nodes, "", "b", {}));
  const int64_t now = f.store.ResourceVersion();

  ListOptions options;
  options.resource_version = std::to_string(now + 5);
  auto too_large = f.store.List(nodes, "", options);
  CHECK(too_large.status().code() == StatusCode::kDeadlineExceeded);
  CHECK_THAT(too_large.status().message(), Catch::StartsWith("Too large resource version: "));
  options.resource_version_match = "NotOlderThan";
  CHECK(f.store.List(nodes, "", options).status().code() == StatusCode::kDeadlineExceeded);
  options.resource_version = std::to_string(one);
  auto not_older = f.store.List(nodes, "", options);
  REQUIRE_OK(not_older);
  CHECK(not_older->resource_version == now);
  CHECK(not_older->items.size() == 1);

  options.resource_version_match = "Exact";
  auto exact = f.store.List(nodes, "", options);
  REQUIRE_OK(exact);
  CHECK(exact->resource_version == one);
  REQUIRE(exact->items.size() == 1);
  CHECK(exact->items[0]["spec"]["x"] == 1);  // as it was before the update
  options.resource_version = std::to_string(one + 1);
  auto both = f.store.List(nodes, "", options);
  REQUIRE_OK(both);
  CHECK(both->items.size() == 2);  // b before its delete

  ListOptions bad;
  bad.resource_version_match = "Exact";
  CHECK(f.store.List(nodes, "", bad).status().code() == StatusCode::kFailedPrecondition);
  bad.resource_version = "0";
  CHECK(f.store.List(nodes, "", bad).status().code() == StatusCode::kFailedPrecondition);
  bad.resource_version = "x";
  bad.resource_version_match.clear();
  CHECK(f.store.List(nodes, "", bad).status().code() == StatusCode::kFailedPrecondition);

  // A continue token lists the snapshot of its first page ...
  for (const char* name : {"c", "d"}) REQUIRE_OK(f.store.Create(nodes, "", Named(name)));
  ListOptions page;
  page.limit = 1;
  auto first = f.store.List(nodes, "", page);
  REQUIRE_OK(first);
  REQUIRE(!first->continue_token.empty());
  REQUIRE_OK(f.store.Create(nodes, "", Named("e")));
  page.continue_token = first->continue_token;
  page.limit = 10;
  auto rest = f.store.List(nodes, "", page);
  REQUIRE_OK(rest);
  CHECK(rest->items.size() == 2);  // c and d, not e
  CHECK(rest->resource_version == first->resource_version);
  // ... until the history no longer reaches back to it: 410.
  for (const char* name : {"f", "g", "h", "i", "j", "k"}) {
    REQUIRE_OK(f.store.Create(nodes, "", Named(name)));
  }
  CHECK(f.store.List(nodes, "", page).status().code() == StatusCode::kOutOfRange);
  options.resource_version = std::to_string(one);
  options.resource_version_match = "Exact";
  CHECK(f.store.List(nodes, "", options).status().code() == StatusCode::kOutOfRange);
}

TEST_CASE("the pages of a list show its first page's version through updates and deletions") {
  StoreFixture f;
  const size_t nodes = f.Type("", "nodes");
  for (const char* name : {"a", "b", "c", "d"}) REQUIRE_OK(f.store.Create(nodes, "", Named(name)));
  ListOptions page;
  page.limit = 1;
  auto first = f.store.List(nodes, "", page);
  REQUIRE_OK(first);
  json b = Named("b");
  b["spec"]["x"] = 2;
  REQUIRE_OK(f.store.Update(nodes, "", "b", b, false));
  b["spec"]["x"] = 3;
  REQUIRE_OK(f.store.Update(nodes, "", "b", b, false));  // two changes since: undone to the first
  REQUIRE_OK(f.store.Delete(nodes, "", "c", {}));
  REQUIRE_OK(f.store.Create(nodes, "", Named("bb")));  // new since: not listed
  page.continue_token = first->continue_token;
  page.limit = 2;
  auto second = f.store.List(nodes, "", page);
  REQUIRE_OK(second);
  REQUIRE(second->items.size() == 2);
  CHECK(second->items[0]["metadata"]["name"] == "b");
  CHECK(second->items[0]["spec"]["x"] == 1);
  CHECK(second->items[1]["metadata"]["name"] == "c");  // deleted since, still in this snapshot
  page.continue_token = second->continue_token;
  auto rest = f.store.List(nodes, "", page);
  REQUIRE_OK(rest);
  REQUIRE(rest->items.size() == 1);
  CHECK(rest->items[0]["metadata"]["name"] == "d");
  CHECK(rest->continue_token.empty());
}

TEST_CASE("DeleteCollection deletes what the selectors match") {
  StoreFixture f;
  const size_t leases = f.Type("coordination.k8s.io", "leases");
  for (const char* name : {"a", "b", "c"}) {
    REQUIRE_OK(
        f.store.Create(leases, "ns", Named(name, {{"drop", name[0] == 'b' ? "no" : "yes"}})));
  }
  ListOptions drop;
  drop.labels = *Selector::ParseLabels("drop=yes");
  auto deleted = f.store.DeleteCollection(leases, "ns", drop);
  REQUIRE_OK(deleted);
  CHECK(deleted->size() == 2);
  auto left = f.store.List(leases, "ns", {});
  REQUIRE(left->items.size() == 1);
  CHECK(left->items[0]["metadata"]["name"] == "b");
  CHECK(f.store.DeleteCollection(leases, "ns", drop)->empty());
}

TEST_CASE("claims, classes, templates and slice updates are validated with all causes") {
  StoreFixture f;
  const size_t classes = f.Type("resource.k8s.io", "deviceclasses");
  const size_t claims = f.Type("resource.k8s.io", "resourceclaims");
  const size_t templates = f.Type("resource.k8s.io", "resourceclaimtemplates");
  const size_t slices = f.Type("resource.k8s.io", "resourceslices");

  api::FieldErrors causes;
  json bad_class = {{"metadata", {{"name", "gpu"}}},
                    {"spec", {{"selectors", {json::object()}}, {"config", {json::object()}}}}};
  auto c = f.store.Create(classes, "", bad_class, &causes);
  CHECK(c.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(c.status().message(),
             Catch::StartsWith("DeviceClass.resource.k8s.io \"gpu\" is invalid: [spec.selectors"));
  REQUIRE(causes.size() == 2);
  CHECK(causes[0].field == "spec.selectors[0].cel");
  CHECK(causes[1].field == "spec.config[0].opaque");

  const json request = {{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu"}}}};
  json claim = {{"metadata", {{"name", "c"}}}, {"spec", {{"devices", {{"requests", {request}}}}}}};
  auto stored = f.store.Create(claims, "ns", claim);
  REQUIRE_OK(stored);
  json changed = *stored;
  changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2;
  causes.clear();
  CHECK(f.store.Update(claims, "ns", "c", changed, false, &causes).status().code() ==
        StatusCode::kInvalidArgument);
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == "spec");
  json two = claim;
  two["metadata"]["name"] = "c2";
  two["spec"]["devices"]["requests"].push_back(request);
  causes.clear();
  CHECK(!f.store.Create(claims, "ns", two, &causes).ok());
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].type == api::FieldErrorType::kDuplicate);

  json t = {{"metadata", {{"name", "t"}}},
            {"spec", {{"spec", {{"devices", {{"requests", {{{"name", "Bad"}}}}}}}}}}};
  causes.clear();
  CHECK(!f.store.Create(templates, "ns", t, &causes).ok());
  CHECK(causes.size() == 2);  // the name and the missing exactly / firstAvailable

  auto slice = f.store.Create(slices, "", Slice("s", 1));
  REQUIRE_OK(slice);
  json moved = *slice;
  moved["spec"]["nodeName"] = "n2";
  causes.clear();
  CHECK(!f.store.Update(slices, "", "s", moved, false, &causes).ok());
  REQUIRE(causes.size() == 1);
  CHECK(causes[0].field == "spec.nodeName");
  CHECK(causes[0].detail == "Invalid value: field is immutable");
}

TEST_CASE("the store applies the limits of its Kubernetes release") {
  json tainted = Slice("t", 1);
  tainted["spec"]["devices"][0]["taints"] = json::array();
  for (int i = 0; i < 5; ++i) {
    tainted["spec"]["devices"][0]["taints"].push_back(
        {{"key", "k" + std::to_string(i)}, {"effect", "NoSchedule"}});
  }
  Store v134(StoreOptions{BuiltinResources(), 100, 1, api::KubeVersion::k1_34});
  Store v135(StoreOptions{BuiltinResources(), 100, 1, api::KubeVersion::k1_35});
  const size_t slices = *v134.FindType("resource.k8s.io", "resourceslices");
  CHECK(v134.Create(slices, "", tainted).status().code() == StatusCode::kInvalidArgument);
  CHECK(v135.Create(slices, "", tainted).ok());
}

TEST_CASE("writes drop the fields of disabled feature gates unless the stored object uses them") {
  StoreFixture f;
  const size_t slices = f.Type("resource.k8s.io", "resourceslices");
  FeatureGates off;
  off.dra_device_taints = false;
  off.dra_partitionable_devices = false;
  off.dra_consumable_capacity = false;
  off.dra_device_binding_conditions = false;
  const json taints = json::array({{{"key", "k"}, {"effect", "NoSchedule"}}});

  json gated = Slice("s", 1);
  json& device = gated["spec"]["devices"][0];
  device["taints"] = taints;
  device["allowMultipleAllocations"] = true;
  device["capacity"] = {{"mem", {{"value", "8Gi"}, {"requestPolicy", {{"default", "8Gi"}}}}}};
  device["bindsToNode"] = true;
  device["bindingConditions"] = {"ready"};
  device["bindingFailureConditions"] = {"failed"};

  SECTION("create with every gate off stores none of them") {
    auto created = f.store.Create(slices, "", gated, nullptr, off);
    REQUIRE_OK(created);
    CHECK((*created)["spec"]["devices"][0] ==
          json{{"name", "d0"}, {"capacity", {{"mem", {{"value", "8Gi"}}}}}});
    CHECK((*f.store.Get(slices, "", "s"))["spec"]["devices"][0] ==
          (*created)["spec"]["devices"][0]);
  }
  SECTION("the default (all on) keeps everything") {
    auto created = f.store.Create(slices, "", gated);
    REQUIRE_OK(created);
    CHECK((*created)["spec"]["devices"][0] == device);
  }
  SECTION("update: each gate's fields stay only where the stored object uses that gate") {
    json plain = Slice("s", 1);
    plain["spec"]["devices"][0]["taints"] = taints;
    auto created = f.store.Create(slices, "", plain);
    REQUIRE_OK(created);
    json next = gated;
    next["metadata"]["resourceVersion"] = (*created)["metadata"]["resourceVersion"];
    auto updated = f.store.Update(slices, "", "s", next, false, nullptr, off);
    REQUIRE_OK(updated);
    const json& d = (*updated)["spec"]["devices"][0];
    CHECK(d["taints"] == taints);
    CHECK_FALSE(d.contains("allowMultipleAllocations"));
    CHECK_FALSE(d["capacity"]["mem"].contains("requestPolicy"));
    CHECK_FALSE(d.contains("bindsToNode"));
    CHECK_FALSE(d.contains("bindingConditions"));
    CHECK(d["capacity"]["mem"] == json{{"value", "8Gi"}});
  }
  SECTION("per-device node selection is dropped with DRAPartitionableDevices") {
    json per_device = Slice("p", 1);
    per_device["spec"].erase("nodeName");
    per_device["spec"]["perDeviceNodeSelection"] = true;
    per_device["spec"]["devices"][0]["nodeName"] = "n1";
    json copy = per_device;
    DropDisabledFields(f.store.types()[slices], off, &copy, nullptr);
    CHECK_FALSE(copy["spec"].contains("perDeviceNodeSelection"));
    CHECK_FALSE(copy["spec"]["devices"][0].contains("nodeName"));
    // Without a node selection the slice is then invalid, as on a real API server.
    api::FieldErrors causes;
    auto rejected = f.store.Create(slices, "", per_device, &causes, off);
    CHECK(rejected.status().code() == StatusCode::kInvalidArgument);
    CHECK(f.store.Create(slices, "", per_device).ok());
    // Other types are left alone.
    json claim = {{"spec", {{"devices", {{"taints", taints}}}}}};
    DropDisabledFields(f.store.types()[f.Type("resource.k8s.io", "resourceclaims")], off, &claim,
                       nullptr);
    CHECK(claim["spec"]["devices"].contains("taints"));
  }
}

}  // namespace
}  // namespace xpu::kubesim
