#include "e2e/kubesim/api_handler.h"

#include <catch2/catch.hpp>
#include <chrono>

namespace xpu::kubesim {
namespace {

using nlohmann::json;

struct Fixture {
  explicit Fixture(HandlerOptions options = Options(), size_t history = 1000)
      : store(StoreOptions{BuiltinResources(), history, 3}), handler(&store, std::move(options)) {
    REQUIRE(Call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"ns"}})").code == 201);
  }
  static HandlerOptions Options() {
    HandlerOptions o;
    o.token = "t";
    o.bookmark_interval = std::chrono::milliseconds(0);
    return o;
  }
  HttpResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "", const std::string& content_type = "") {
    auto r = handler.Handle({method, target, "Bearer t", content_type, body, ""});
    REQUIRE(std::holds_alternative<HttpResponse>(r));
    return std::get<HttpResponse>(std::move(r));
  }
  std::unique_ptr<WatchStream> Watch(const std::string& target) {
    auto r = handler.Handle({"GET", target, "Bearer t", "", "", ""});
    REQUIRE(std::holds_alternative<std::unique_ptr<WatchStream>>(r));
    return std::get<std::unique_ptr<WatchStream>>(std::move(r));
  }
  Store store;
  ApiHandler handler;
};

json Body(const HttpResponse& r) { return json::parse(r.body); }

const char* kSlice =
    R"({"apiVersion":"resource.k8s.io/v1beta1","kind":"ResourceSlice","metadata":{"name":"b1"},
        "spec":{"driver":"xpu.dra.dev","nodeName":"n1","pool":{"name":"n1","generation":1,
        "resourceSliceCount":1},"devices":[{"name":"npu-0","basic":{"attributes":{"i":{"int":0}}}}]}})";

TEST_CASE("every request needs the bearer token") {
  Fixture f;
  for (const char* auth : {"", "Bearer wrong", "t"}) {
    auto r = f.handler.Handle({"GET", "/api/v1/nodes", auth, "", "", ""});
    const auto& resp = std::get<HttpResponse>(r);
    CHECK(resp.code == 401);
    CHECK(Body(resp)["reason"] == "Unauthorized");
    CHECK(Body(resp)["kind"] == "Status");
  }
}

TEST_CASE("discovery lists groups, versions and resources") {
  Fixture f;
  CHECK(Body(f.Call("GET", "/api"))["versions"] == json{"v1"});
  const json groups = Body(f.Call("GET", "/apis"));
  REQUIRE(groups["groups"].size() == 4);  // coordination, batch, resource, xpu
  const json resource = Body(f.Call("GET", "/apis/resource.k8s.io"));
  CHECK(resource["preferredVersion"]["version"] == "v1");
  CHECK(resource["versions"].size() == 3);
  const json list = Body(f.Call("GET", "/apis/resource.k8s.io/v1beta1"));
  bool claim_status = false;
  for (const auto& r : list["resources"]) {
    if (r["name"] == "resourceclaims/status") claim_status = true;
    if (r["name"] == "resourceslices") CHECK(r["namespaced"] == false);
  }
  CHECK(claim_status);
  CHECK(Body(f.Call("GET", "/apis/xpu.dra.dev/v1alpha1"))["resources"].size() == 4);
  CHECK(f.Call("GET", "/apis/nope.example.com/v1").code == 404);
  CHECK(f.Call("GET", "/apis/resource.k8s.io/v1alpha9/resourceslices").code == 404);
}

TEST_CASE("objects are stored once and served in the requested version") {
  Fixture f;
  auto created = f.Call("POST", "/apis/resource.k8s.io/v1beta1/resourceslices", kSlice);
  REQUIRE(created.code == 201);
  CHECK(Body(created)["spec"]["devices"][0].contains("basic"));
  const json v1 = Body(f.Call("GET", "/apis/resource.k8s.io/v1/resourceslices/b1"));
  CHECK(v1["apiVersion"] == "resource.k8s.io/v1");
  CHECK(v1["spec"]["devices"][0]["attributes"]["i"]["int"] == 0);
  CHECK_FALSE(v1["spec"]["devices"][0].contains("basic"));
  const json list = Body(f.Call("GET", "/apis/resource.k8s.io/v1beta2/resourceslices"));
  CHECK(list["kind"] == "ResourceSliceList");
  CHECK(list["apiVersion"] == "resource.k8s.io/v1beta2");
  CHECK(list["items"][0]["apiVersion"] == "resource.k8s.io/v1beta2");
}

TEST_CASE("errors are Status objects with Kubernetes reasons") {
  Fixture f;
  auto missing = f.Call("GET", "/api/v1/nodes/none");
  CHECK(missing.code == 404);
  CHECK(Body(missing)["reason"] == "NotFound");
  CHECK(Body(missing)["details"]["name"] == "none");
  CHECK(f.Call("POST", "/api/v1/nodes", "{not json").code == 400);
  CHECK(f.Call("POST", "/api/v1/nodes/n1", "{}").code == 405);
  CHECK(f.Call("POST", "/apis/resource.k8s.io/v1/namespaces/gone/resourceclaims",
               R"({"metadata":{"name":"c"}})")
            .code == 404);
  auto invalid = f.Call("POST", "/apis/resource.k8s.io/v1/resourceslices",
                        R"({"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p"}}})");
  CHECK(invalid.code == 422);
  CHECK(Body(invalid)["reason"] == "Invalid");
  CHECK(f.Call("GET", "/api/v1/nodes?labelSelector=a%20in%20b").code == 400);
}

TEST_CASE("patch, status and delete preconditions over the handler") {
  Fixture f;
  REQUIRE(f.Call("POST", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims",
                 R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[]}}})")
              .code == 201);
  auto patched = f.Call("PATCH", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status",
                        R"({"status":{"allocation":{"devices":{"results":[]}},
                            "reservedFor":[{"resource":"pods","name":"p","uid":"u"}]}})",
                        "application/merge-patch+json");
  REQUIRE(patched.code == 200);
  CHECK(Body(patched)["status"]["reservedFor"][0]["name"] == "p");
  auto labelled = f.Call("PATCH", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c",
                         R"([{"op":"add","path":"/metadata/labels","value":{"a":"b"}}])",
                         "application/json-patch+json");
  REQUIRE(labelled.code == 200);
  CHECK(Body(labelled)["status"]["reservedFor"].size() == 1);
  CHECK(f.Call("PATCH", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c", "{}",
               "application/apply-patch+yaml")
            .code == 405);

  CHECK(f.Call("DELETE", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c",
               R"({"preconditions":{"uid":"nope"}})")
            .code == 409);
  const std::string uid = Body(labelled)["metadata"]["uid"];
  CHECK(f.Call("DELETE", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c",
               R"({"preconditions":{"uid":")" + uid + R"("}})")
            .code == 200);
}

TEST_CASE("list pagination and selectors over the query string") {
  Fixture f;
  for (const char* n : {"a", "b", "c"}) {
    REQUIRE(
        f.Call("POST", "/api/v1/nodes",
               std::string(R"({"metadata":{"name":")") + n + R"(","labels":{"l":")" + n + R"("}}})")
            .code == 201);
  }
  const json page = Body(f.Call("GET", "/api/v1/nodes?limit=2"));
  CHECK(page["items"].size() == 2);
  const std::string token = page["metadata"]["continue"];
  const json rest = Body(f.Call("GET", "/api/v1/nodes?limit=2&continue=" + token));
  CHECK(rest["items"].size() == 1);
  CHECK_FALSE(rest["metadata"].contains("continue"));
  CHECK(Body(f.Call("GET", "/api/v1/nodes?labelSelector=l+in+%28a%2Cc%29"))["items"].size() == 2);
  CHECK(Body(f.Call("GET", "/api/v1/nodes?fieldSelector=metadata.name%21%3Da"))["items"].size() ==
        2);
}

TEST_CASE("watch streams initial state, changes and bookmarks, too old gets an ERROR 410") {
  Fixture f(Fixture::Options(), 3);
  REQUIRE(f.Call("POST", "/api/v1/nodes", R"({"metadata":{"name":"a"}})").code == 201);
  auto w = f.Watch("/api/v1/nodes?watch=true&allowWatchBookmarks=true&timeoutSeconds=60");
  auto lines = w->Next();
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0])["type"] == "ADDED");
  REQUIRE(f.Call("DELETE", "/api/v1/nodes/a").code == 200);
  lines = w->Next();
  REQUIRE(lines.size() == 2);
  CHECK(json::parse(lines[0])["type"] == "DELETED");
  const json bookmark = json::parse(lines[1]);
  CHECK(bookmark["type"] == "BOOKMARK");
  CHECK(bookmark["object"]["metadata"]["resourceVersion"] ==
        std::to_string(f.store.ResourceVersion()));

  auto timed_out = f.Watch("/api/v1/watch/nodes?resourceVersion=1&timeoutSeconds=0");
  while (!timed_out->done()) timed_out->Next();

  for (const char* n : {"b", "c", "d"}) {
    REQUIRE(f.Call("POST", "/api/v1/nodes", std::string(R"({"metadata":{"name":")") + n + "\"}}")
                .code == 201);
  }
  auto old = f.Watch("/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=60");
  lines = old->Next();
  REQUIRE(lines.size() == 1);
  const json error = json::parse(lines[0]);
  CHECK(error["type"] == "ERROR");
  CHECK(error["object"]["code"] == 410);
  CHECK(error["object"]["reason"] == "Expired");
  CHECK(old->done());
}

TEST_CASE("faults are deterministic for a seed and 429 carries Retry-After") {
  auto codes = [](uint64_t seed) {
    HandlerOptions o = Fixture::Options();
    o.faults.rate = 0.5;
    o.faults.codes = {409, 429, 500};
    o.seed = seed;
    Store store(StoreOptions{BuiltinResources(), 100, 1});
    ApiHandler handler(&store, o);
    std::vector<int> out;
    for (int i = 0; i < 40; ++i) {
      auto r =
          std::get<HttpResponse>(handler.Handle({"GET", "/api/v1/nodes", "Bearer t", "", "", ""}));
      out.push_back(r.code);
      if (r.code == 429) {
        REQUIRE(r.headers.size() == 1);
        CHECK(r.headers[0] == std::pair<std::string, std::string>("Retry-After", "1"));
      }
    }
    return out;
  };
  const auto first = codes(42);
  CHECK(first == codes(42));
  CHECK(std::count(first.begin(), first.end(), 200) > 0);
  CHECK(std::count(first.begin(), first.end(), 200) < 40);
}

TEST_CASE("422 answers carry the causes as the API server lists them") {
  Fixture f;
  auto r = f.Call("POST", "/apis/resource.k8s.io/v1/deviceclasses",
                  R"({"metadata":{"name":"gpu"},"spec":{"selectors":[{}],
                      "config":[{"opaque":{"driver":"Not A Driver","parameters":{}}}]}})");
  REQUIRE(r.code == 422);
  const json body = Body(r);
  CHECK(body["kind"] == "Status");
  CHECK(body["reason"] == "Invalid");
  CHECK(body["details"]["name"] == "gpu");
  CHECK(body["details"]["group"] == "resource.k8s.io");
  CHECK(body["details"]["kind"] == "DeviceClass");
  REQUIRE(body["details"]["causes"].size() == 2);
  CHECK(body["details"]["causes"][0] == json{{"reason", "FieldValueRequired"},
                                             {"message", "Required value"},
                                             {"field", "spec.selectors[0].cel"}});
  CHECK(body["details"]["causes"][1]["field"] == "spec.config[0].opaque.driver");
  CHECK(body["details"]["causes"][1]["reason"] == "FieldValueInvalid");

  // A v1beta1 claim is validated in its v1 form; an update of the spec is refused.
  const std::string claims = "/apis/resource.k8s.io/v1beta1/namespaces/ns/resourceclaims";
  REQUIRE(f.Call("POST", claims,
                 R"({"metadata":{"name":"c"},"spec":{"devices":{"requests":[
                     {"name":"r","deviceClassName":"gpu"}]}}})")
              .code == 201);
  auto immutable = f.Call("PATCH", claims + "/c",
                          R"({"spec":{"devices":{"requests":[{"name":"r","deviceClassName":"gpu",
                              "count":2}]}}})",
                          "application/merge-patch+json");
  REQUIRE(immutable.code == 422);
  CHECK(Body(immutable)["details"]["causes"][0]["field"] == "spec");
}

TEST_CASE("/version reports the configured release") {
  HandlerOptions o = Fixture::Options();
  CHECK(Body(Fixture(o).Call("GET", "/version"))["gitVersion"] == "v1.35.0");
  o.kube_version = "1.34";
  const json v = Body(Fixture(o).Call("GET", "/version"));
  CHECK(v["gitVersion"] == "v1.34.0");
  CHECK(v["minor"] == "34");
}

TEST_CASE("a verified client certificate authenticates without a token") {
  Fixture f;
  auto r =
      f.handler.Handle({"GET", "/api/v1/nodes", "", "", "", "CN=xpu-dra-test,O=system:masters"});
  CHECK(std::get<HttpResponse>(r).code == 200);
  auto none = f.handler.Handle({"GET", "/api/v1/nodes", "", "", "", ""});
  CHECK(std::get<HttpResponse>(none).code == 401);
}

TEST_CASE("list resourceVersion errors: 504 Too large, 410 for an expired continue") {
  Fixture f(Fixture::Options(), 4);
  for (const char* n : {"a", "b", "c"}) {
    REQUIRE(f.Call("POST", "/api/v1/nodes", std::string(R"({"metadata":{"name":")") + n + "\"}}")
                .code == 201);
  }
  auto large = f.Call("GET", "/api/v1/nodes?resourceVersion=999&resourceVersionMatch=NotOlderThan");
  REQUIRE(large.code == 504);
  CHECK(Body(large)["reason"] == "Timeout");
  CHECK(Body(large)["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge");
  CHECK(Body(large)["details"]["retryAfterSeconds"] == 1);
  CHECK(f.Call("GET", "/api/v1/nodes?resourceVersionMatch=Exact").code == 400);
  auto watch_large = f.handler.Handle(
      {"GET", "/api/v1/nodes?watch=1&resourceVersion=999", "Bearer t", "", "", ""});
  REQUIRE(std::holds_alternative<HttpResponse>(watch_large));
  CHECK(std::get<HttpResponse>(watch_large).code == 504);
  const json page = Body(f.Call("GET", "/api/v1/nodes?limit=1"));
  const std::string token = page["metadata"]["continue"];
  for (const char* n : {"d", "e", "g", "h", "i"}) {
    REQUIRE(f.Call("POST", "/api/v1/nodes", std::string(R"({"metadata":{"name":")") + n + "\"}}")
                .code == 201);
  }
  auto expired = f.Call("GET", "/api/v1/nodes?limit=1&continue=" + token);
  CHECK(expired.code == 410);
  CHECK(Body(expired)["reason"] == "Expired");
}

TEST_CASE("DELETE on a collection deletes what the selectors match") {
  Fixture f;
  for (const char* n : {"a", "b", "c"}) {
    REQUIRE(f.Call("POST", "/api/v1/nodes",
                   std::string(R"({"metadata":{"name":")") + n + R"(","labels":{"gone":")" +
                       (n[0] == 'b' ? "no" : "yes") + "\"}}}")
                .code == 201);
  }
  auto r = f.Call("DELETE", "/api/v1/nodes?labelSelector=gone%3Dyes");
  REQUIRE(r.code == 200);
  CHECK(Body(r)["kind"] == "NodeList");
  CHECK(Body(r)["items"].size() == 2);
  CHECK(Body(f.Call("GET", "/api/v1/nodes"))["items"].size() == 1);
}

TEST_CASE("a watch through a selector gets ADDED and DELETED as objects enter and leave it") {
  Fixture f;
  REQUIRE(
      f.Call("POST", "/api/v1/nodes", R"({"metadata":{"name":"n","labels":{"pool":"b"}}})").code ==
      201);
  auto w = f.Watch("/api/v1/nodes?watch=1&labelSelector=pool%3Da&timeoutSeconds=60");
  auto patch = [&](const char* pool) {
    REQUIRE(f.Call("PATCH", "/api/v1/nodes/n",
                   std::string(R"({"metadata":{"labels":{"pool":")") + pool + "\"}}}",
                   "application/merge-patch+json")
                .code == 200);
  };
  auto next_type = [&] {
    std::vector<std::string> lines;
    while (lines.empty() && !w->done()) lines = w->Next();
    REQUIRE(lines.size() == 1);
    return json::parse(lines[0])["type"].get<std::string>();
  };
  patch("a");
  CHECK(next_type() == "ADDED");
  patch("c");
  CHECK(next_type() == "DELETED");
}

TEST_CASE(
    "fault injection: drops, Retry-After on 503, early watch close, latency, admin endpoint") {
  SECTION("every request dropped at rate 1; watches too; health checks never") {
    HandlerOptions o = Fixture::Options();
    Fixture f(o);
    f.handler.set_faults({0, {500}, 1.0, 0, 0, 0});
    CHECK(f.Call("GET", "/api/v1/nodes").drop_connection);
    CHECK(f.Call("GET", "/api/v1/nodes?watch=1").drop_connection);
    CHECK(!f.Call("GET", "/healthz").drop_connection);
  }
  SECTION("drops are deterministic for a seed") {
    auto drops = [](uint64_t seed) {
      HandlerOptions o = Fixture::Options();
      o.seed = seed;
      Fixture f(o);
      f.handler.set_faults({0, {500}, 0.5, 0, 0, 0});
      std::vector<bool> out;
      for (int i = 0; i < 30; ++i) out.push_back(f.Call("GET", "/api/v1/nodes").drop_connection);
      return out;
    };
    const auto first = drops(7);
    CHECK(first == drops(7));
    CHECK(std::count(first.begin(), first.end(), true) > 0);
    CHECK(std::count(first.begin(), first.end(), false) > 0);
  }
  SECTION("503 carries Retry-After") {
    Fixture f;
    f.handler.set_faults({1.0, {503}, 0, 0, 0, 0});
    auto r = f.Call("GET", "/api/v1/nodes");
    CHECK(r.code == 503);
    CHECK(std::find(r.headers.begin(), r.headers.end(),
                    std::pair<std::string, std::string>("Retry-After", "1")) != r.headers.end());
  }
  SECTION("a watch ends after N events") {
    Fixture f;
    for (const char* n : {"a", "b", "c"}) {
      REQUIRE(f.Call("POST", "/api/v1/nodes", std::string(R"({"metadata":{"name":")") + n + "\"}}")
                  .code == 201);
    }
    f.handler.set_faults({0, {500}, 0, 2, 0, 0});
    auto w = f.Watch("/api/v1/nodes?watch=1&timeoutSeconds=60");
    CHECK(w->Next().size() == 2);
    CHECK(w->done());
    auto from_now = f.Watch("/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=60");
    size_t total = 0;
    while (!from_now->done()) total += from_now->Next().size();
    CHECK(total == 2);
  }
  SECTION("a watch ends after M ms") {
    Fixture f;
    f.handler.set_faults({0, {500}, 0, 0, 50, 0});
    auto w = f.Watch("/api/v1/nodes?watch=1&timeoutSeconds=60");
    const auto start = std::chrono::steady_clock::now();
    while (!w->done()) w->Next();
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
  SECTION("latency delays resource requests") {
    Fixture f;
    f.handler.set_faults({0, {500}, 0, 0, 0, 30});
    const auto start = std::chrono::steady_clock::now();
    CHECK(f.Call("GET", "/api/v1/nodes").code == 200);
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(30));
  }
  SECTION("the admin endpoint sets and shows the faults") {
    Fixture f;
    auto set = f.Call("POST", "/kube-sim/faults",
                      R"({"rate":1,"codes":[429],"dropRate":0,"watchCloseAfter":3,
                          "watchCloseAfterMs":100,"latencyMs":0,"seed":9})");
    REQUIRE(set.code == 200);
    CHECK(Body(set)["codes"] == json{429});
    CHECK(f.handler.faults().watch_close_after == 3);
    CHECK(f.Call("GET", "/api/v1/nodes").code == 429);
    CHECK(Body(f.Call("GET", "/kube-sim/faults"))["watchCloseAfterMs"] == 100);
    CHECK(f.Call("POST", "/kube-sim/faults", R"({"rate":2})").code == 400);
    CHECK(f.Call("POST", "/kube-sim/faults", R"({"codes":[418]})").code == 400);
    CHECK(f.Call("POST", "/kube-sim/faults", R"({"bogus":1})").code == 400);
    REQUIRE(f.Call("POST", "/kube-sim/faults", R"({"rate":0})").code == 200);
    CHECK(f.Call("GET", "/api/v1/nodes").code == 200);
    auto anonymous = f.handler.Handle({"POST", "/kube-sim/faults", "", "", "{}", ""});
    CHECK(std::get<HttpResponse>(anonymous).code == 401);
  }
}

// A v1 slice with one device; `device` and `spec` members are merged in.
std::string GatedSlice(const std::string& name, const json& device, const json& spec = {}) {
  json d = {{"name", "npu-0"}};
  d.merge_patch(device);
  json slice = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceSlice"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"driver", "xpu.dra.dev"},
                  {"nodeName", "n1"},
                  {"pool", {{"name", "n1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                  {"devices", json::array({d})}}}};
  if (!spec.is_null()) slice["spec"].merge_patch(spec);
  return slice.dump();
}

const json kTaints = json::array({{{"key", "k"}, {"value", "v"}, {"effect", "NoSchedule"}}});

TEST_CASE("a disabled DRADeviceTaints gate drops taints on create, the answer shows the drop") {
  HandlerOptions o = Fixture::Options();
  o.feature_gates.dra_device_taints = false;
  Fixture f(o);
  const char* path = "/apis/resource.k8s.io/v1/resourceslices";
  auto created = f.Call("POST", path, GatedSlice("s", {{"taints", kTaints}}));
  REQUIRE(created.code == 201);
  CHECK_FALSE(Body(created)["spec"]["devices"][0].contains("taints"));
  CHECK(Body(created)["spec"]["devices"][0]["name"] == "npu-0");
  CHECK_FALSE(
      Body(f.Call("GET", std::string(path) + "/s"))["spec"]["devices"][0].contains("taints"));

  SECTION("an update adding taints to an object without them drops them too") {
    json obj = Body(created);
    obj["spec"]["devices"][0]["taints"] = kTaints;
    auto updated = f.Call("PUT", std::string(path) + "/s", obj.dump());
    REQUIRE(updated.code == 200);
    CHECK_FALSE(Body(updated)["spec"]["devices"][0].contains("taints"));
    // Nothing changed once the taints are gone: the update is a no-op.
    CHECK(Body(updated)["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]);
  }
  SECTION("a v1beta1 write drops basic.taints, the v1beta1 answer has none") {
    json beta = json::parse(kSlice);
    beta["metadata"]["name"] = "b";
    beta["spec"]["devices"][0]["basic"]["taints"] = kTaints;
    auto r = f.Call("POST", "/apis/resource.k8s.io/v1beta1/resourceslices", beta.dump());
    REQUIRE(r.code == 201);
    CHECK(Body(r)["spec"]["devices"][0]["basic"]["attributes"]["i"]["int"] == 0);
    CHECK_FALSE(Body(r)["spec"]["devices"][0]["basic"].contains("taints"));
    CHECK_FALSE(
        Body(f.Call("GET", std::string(path) + "/b"))["spec"]["devices"][0].contains("taints"));
  }
  SECTION("the other gates' fields stay") {
    auto r = f.Call("POST", path,
                    GatedSlice("m", {{"allowMultipleAllocations", true},
                                     {"bindsToNode", true},
                                     {"bindingConditions", {"ready"}},
                                     {"bindingFailureConditions", {"failed"}}}));
    REQUIRE(r.code == 201);
    CHECK(Body(r)["spec"]["devices"][0]["allowMultipleAllocations"] == true);
    CHECK(Body(r)["spec"]["devices"][0]["bindingConditions"] == json{"ready"});
  }
}

TEST_CASE("an update keeps the taints of an object that already has them") {
  Fixture f;
  const std::string path = "/apis/resource.k8s.io/v1/resourceslices";
  auto created = f.Call("POST", path, GatedSlice("s", {{"taints", kTaints}}));
  REQUIRE(created.code == 201);
  REQUIRE(Body(created)["spec"]["devices"][0]["taints"].size() == 1);
  REQUIRE(f.Call("POST", "/kube-sim/feature-gates", R"({"DRADeviceTaints": false})").code == 200);

  json obj = Body(created);
  obj["spec"]["devices"][0]["taints"].push_back(
      {{"key", "k2"}, {"value", "v"}, {"effect", "NoExecute"}});
  auto updated = f.Call("PUT", path + "/s", obj.dump());
  REQUIRE(updated.code == 200);
  CHECK(Body(updated)["spec"]["devices"][0]["taints"].size() == 2);
  auto patched = f.Call("PATCH", path + "/s", R"({"metadata":{"labels":{"a":"b"}}})",
                        "application/merge-patch+json");
  REQUIRE(patched.code == 200);
  CHECK(Body(patched)["spec"]["devices"][0]["taints"].size() == 2);
  // Through v1beta1, which keeps device fields under basic, as well.
  auto beta = f.Call("GET", "/apis/resource.k8s.io/v1beta1/resourceslices/s");
  json b = Body(beta);
  REQUIRE(b["spec"]["devices"][0]["basic"]["taints"].size() == 2);
  b["metadata"]["labels"]["c"] = "d";
  auto beta_updated = f.Call("PUT", "/apis/resource.k8s.io/v1beta1/resourceslices/s", b.dump());
  REQUIRE(beta_updated.code == 200);
  CHECK(Body(beta_updated)["spec"]["devices"][0]["basic"]["taints"].size() == 2);
}

TEST_CASE("a disabled DRAPartitionableDevices gate drops sharedCounters and consumesCounters") {
  Fixture f;
  REQUIRE(f.Call("POST", "/kube-sim/feature-gates", R"({"DRAPartitionableDevices": false})").code ==
          200);
  const std::string path = "/apis/resource.k8s.io/v1/resourceslices";
  const json counters = {{"memory", {{"value", "8Gi"}}}};
  json counter_slice = json::parse(GatedSlice("c", {}));
  counter_slice["spec"]["devices"] = json::array();
  counter_slice["spec"]["sharedCounters"] =
      json::array({{{"name", "set"}, {"counters", counters}}});
  auto c = f.Call("POST", path, counter_slice.dump());
  REQUIRE(c.code == 201);
  CHECK_FALSE(Body(c)["spec"].contains("sharedCounters"));
  CHECK_FALSE(Body(f.Call("GET", path + "/c"))["spec"].contains("sharedCounters"));

  auto d =
      f.Call("POST", path,
             GatedSlice("d", {{"consumesCounters",
                               json::array({{{"counterSet", "set"},
                                             {"counters", {{"memory", {{"value", "4Gi"}}}}}}})}}));
  REQUIRE(d.code == 201);
  CHECK_FALSE(Body(d)["spec"]["devices"][0].contains("consumesCounters"));

  SECTION("an object stored with counters while the gate was on keeps them") {
    REQUIRE(
        f.Call("POST", "/kube-sim/feature-gates", R"({"DRAPartitionableDevices": true})").code ==
        200);
    json on = json::parse(GatedSlice("e", {}));
    on["spec"].erase("devices");  // from 1.35 a counter-set slice holds no devices member
    on["spec"]["sharedCounters"] = json::array({{{"name", "set"}, {"counters", counters}}});
    auto e = f.Call("POST", path, on.dump());
    REQUIRE(e.code == 201);
    REQUIRE(Body(e)["spec"].contains("sharedCounters"));
    REQUIRE(
        f.Call("POST", "/kube-sim/feature-gates", R"({"DRAPartitionableDevices": false})").code ==
        200);
    json next = Body(e);
    next["spec"]["sharedCounters"][0]["counters"]["memory"]["value"] = "16Gi";
    auto updated = f.Call("PUT", path + "/e", next.dump());
    REQUIRE(updated.code == 200);
    CHECK(Body(updated)["spec"]["sharedCounters"][0]["counters"]["memory"]["value"] == "16Gi");
  }
}

TEST_CASE("partitionTypeAttribute: validated as the API server does, dropped with its gate off") {
  Fixture f;
  const std::string path = "/apis/resource.k8s.io/v1/resourceslices";
  const json uses =
      json::array({{{"counterSet", "set"}, {"counters", {{"memory", {{"value", "4Gi"}}}}}}});
  const json typed = {{"partitionTypeAttribute", "xpu.dra.dev/partitionType"}};
  // A consuming device without the attribute, or a slice with no consuming device: invalid.
  CHECK(f.Call("POST", path, GatedSlice("a", {{"consumesCounters", uses}}, typed)).code == 422);
  CHECK(f.Call("POST", path, GatedSlice("b", {}, typed)).code == 422);
  const json with_type = {{"consumesCounters", uses},
                          {"attributes", {{"partitionType", {{"string", "1g.18gb"}}}}}};
  auto kept = f.Call("POST", path, GatedSlice("c", with_type, typed));
  REQUIRE(kept.code == 201);
  CHECK(Body(kept)["spec"]["partitionTypeAttribute"] == "xpu.dra.dev/partitionType");
  REQUIRE(
      f.Call("POST", "/kube-sim/feature-gates", R"({"DRAPartitionableDevicesType": false})").code ==
      200);
  auto dropped = f.Call("POST", path, GatedSlice("d", with_type, typed));
  REQUIRE(dropped.code == 201);
  CHECK_FALSE(Body(dropped)["spec"].contains("partitionTypeAttribute"));
}

TEST_CASE("the feature-gates admin endpoint shows and switches the gates") {
  Fixture f;
  const json all_on = {{"DRADeviceTaints", true},
                       {"DRAPartitionableDevices", true},
                       {"DRAConsumableCapacity", true},
                       {"DRADeviceBindingConditions", true},
                       {"DRAPartitionableDevicesType", true}};
  CHECK(Body(f.Call("GET", "/kube-sim/feature-gates")) == all_on);
  auto set = f.Call("POST", "/kube-sim/feature-gates",
                    R"({"DRAConsumableCapacity": false, "DRADeviceBindingConditions": false})");
  REQUIRE(set.code == 200);
  CHECK(Body(set)["DRAConsumableCapacity"] == false);
  CHECK(Body(set)["DRADeviceTaints"] == true);
  CHECK_FALSE(f.handler.feature_gates().dra_device_binding_conditions);
  CHECK(f.handler.feature_gates().dra_partitionable_devices);

  auto unknown = f.Call("POST", "/kube-sim/feature-gates", R"({"DRANope": false})");
  CHECK(unknown.code == 400);
  CHECK(Body(unknown)["message"].get<std::string>().find("DRANope") != std::string::npos);
  auto not_bool = f.Call("POST", "/kube-sim/feature-gates", R"({"DRADeviceTaints": "no"})");
  CHECK(not_bool.code == 400);
  CHECK(Body(not_bool)["message"].get<std::string>().find("DRADeviceTaints") != std::string::npos);
  CHECK(f.Call("POST", "/kube-sim/feature-gates", "[1]").code == 400);
  CHECK(f.Call("DELETE", "/kube-sim/feature-gates").code == 405);
  // A rejected request changes nothing, not even the members before the bad one.
  CHECK(f.Call("POST", "/kube-sim/feature-gates", R"({"DRADeviceTaints": false, "DRAZzz": true})")
            .code == 400);
  CHECK(f.handler.feature_gates().dra_device_taints);

  // The disabled gates now drop their fields.
  auto r = f.Call(
      "POST", "/apis/resource.k8s.io/v1/resourceslices",
      GatedSlice("s",
                 {{"allowMultipleAllocations", true},
                  {"capacity",
                   {{"memory",
                     {{"value", "8Gi"},
                      {"requestPolicy",
                       {{"default", "1Gi"}, {"validRange", {{"min", "1Gi"}, {"step", "1Gi"}}}}}}}}},
                  {"bindsToNode", true},
                  {"bindingConditions", {"ready"}},
                  {"bindingFailureConditions", {"failed"}},
                  {"taints", kTaints}}));
  REQUIRE(r.code == 201);
  const json device = Body(r)["spec"]["devices"][0];
  CHECK_FALSE(device.contains("allowMultipleAllocations"));
  CHECK(device["capacity"]["memory"] == json{{"value", "8Gi"}});
  CHECK_FALSE(device.contains("bindsToNode"));
  CHECK_FALSE(device.contains("bindingConditions"));
  CHECK_FALSE(device.contains("bindingFailureConditions"));
  CHECK(device["taints"].size() == 1);

  auto anonymous = f.handler.Handle({"GET", "/kube-sim/feature-gates", "", "", "", ""});
  CHECK(std::get<HttpResponse>(anonymous).code == 401);
}

TEST_CASE("core v1 events: create with generateName, list, watch, no status subresource") {
  Fixture f;
  bool listed = false;
  const json discovery = Body(f.Call("GET", "/api/v1"));
  for (const auto& r : discovery["resources"]) {
    if (r["name"] == "events") {
      listed = true;
      CHECK(r["namespaced"] == true);
      CHECK(r["kind"] == "Event");
    }
    CHECK(r["name"] != "events/status");
  }
  CHECK(listed);
  auto w = f.Watch("/api/v1/namespaces/ns/events?watch=1&resourceVersion=1&timeoutSeconds=60");
  const char* event = R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"generateName":"x-","namespace":"ns"},
      "involvedObject":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","name":"s",
                        "uid":"0b7e6a52-1b0a-4d7e-9d8e-1f2a3b4c5d6e"},
      "reason":"DroppedFields","message":"the API server dropped taints","type":"Warning",
      "source":{"component":"xpu-dra-controller"},"count":1,
      "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z"})";
  auto created = f.Call("POST", "/api/v1/namespaces/ns/events", event);
  REQUIRE(created.code == 201);
  const json obj = Body(created);
  CHECK(obj["kind"] == "Event");
  CHECK(obj["apiVersion"] == "v1");
  const std::string name = obj["metadata"]["name"];
  CHECK(name.rfind("x-", 0) == 0);
  CHECK(name.size() == 7);
  CHECK(obj["reason"] == "DroppedFields");
  CHECK(obj["involvedObject"]["kind"] == "ResourceSlice");

  const json list = Body(f.Call("GET", "/api/v1/namespaces/ns/events"));
  CHECK(list["kind"] == "EventList");
  REQUIRE(list["items"].size() == 1);
  CHECK(list["items"][0]["metadata"]["name"] == name);
  CHECK(Body(f.Call("GET", "/api/v1/events"))["items"].size() == 1);
  CHECK(Body(f.Call("GET",
                    "/api/v1/namespaces/ns/events?fieldSelector=metadata.name%3D" + name))["items"]
            .size() == 1);

  std::vector<std::string> lines;
  while (lines.empty() && !w->done()) lines = w->Next();
  REQUIRE(lines.size() == 1);
  const json added = json::parse(lines[0]);
  CHECK(added["type"] == "ADDED");
  CHECK(added["object"]["metadata"]["name"] == name);

  json next = obj;
  next["count"] = 2;
  auto updated = f.Call("PUT", "/api/v1/namespaces/ns/events/" + name, next.dump());
  REQUIRE(updated.code == 200);
  CHECK(Body(updated)["count"] == 2);
  CHECK(f.Call("GET", "/api/v1/namespaces/ns/events/" + name + "/status").code == 404);
  CHECK(f.Call("POST", "/api/v1/events", event).code == 405);
  json elsewhere = json::parse(event);
  elsewhere["metadata"].erase("namespace");
  CHECK(f.Call("POST", "/api/v1/namespaces/gone/events", elsewhere.dump()).code == 404);
  CHECK(f.Call("POST", "/api/v1/namespaces/gone/events", event).code == 400);
  CHECK(f.Call("DELETE", "/api/v1/namespaces/ns/events/" + name).code == 200);
}

}  // namespace
}  // namespace xpu::kubesim
