#include "e2e/kubesim/api_handler.h"

#include <catch2/catch.hpp>

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
  REQUIRE(groups["groups"].size() == 3);
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

TEST_CASE("watch streams initial state, changes and bookmarks; too old gets an ERROR 410") {
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
    o.fault_rate = 0.5;
    o.fault_codes = {409, 429, 500};
    o.seed = seed;
    Store store(StoreOptions{BuiltinResources(), 100, 1});
    ApiHandler handler(&store, o);
    std::vector<int> out;
    for (int i = 0; i < 40; ++i) {
      auto r = std::get<HttpResponse>(handler.Handle({"GET", "/api/v1/nodes", "Bearer t", "", "", ""}));
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

}  // namespace
}  // namespace xpu::kubesim
