#include "api/client/client.h"

#include <catch2/catch.hpp>

#include "api/client/informer.h"
#include "api/client/transport.h"
#include "base/testing/require_ok.h"

namespace xpu::api::client {
namespace {

using nlohmann::json;

TEST_CASE("PickResourceVersion prefers v1, then v1beta2, then v1beta1", "[client]") {
  auto doc = [](const std::vector<std::string>& versions) {
    json d = {{"kind", "APIGroup"}, {"name", "resource.k8s.io"}, {"versions", json::array()}};
    for (const auto& v : versions) {
      d["versions"].push_back({{"groupVersion", "resource.k8s.io/" + v}, {"version", v}});
    }
    return d;
  };
  CHECK(*PickResourceVersion(doc({"v1beta1", "v1", "v1beta2"})) == resource::ResourceVersion::kV1);
  CHECK(*PickResourceVersion(doc({"v1beta1", "v1beta2"})) == resource::ResourceVersion::kV1beta2);
  CHECK(*PickResourceVersion(doc({"v1beta1"})) == resource::ResourceVersion::kV1beta1);
  const auto none = PickResourceVersion(doc({"v1alpha3"}));
  CHECK(none.status().code() == StatusCode::kNotFound);
  CHECK(none.status().message().find("none of v1, v1beta2, v1beta1") != std::string::npos);
  CHECK(PickResourceVersion(json::object()).status().code() == StatusCode::kNotFound);
}

TEST_CASE("ApiError maps HTTP codes and Status reasons, naming verb, resource and name",
          "[client]") {
  auto status = [](int code, const std::string& reason, const std::string& message) {
    return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                {"code", code},     {"reason", reason},   {"message", message}}
        .dump();
  };
  const std::string what = "update resourceslices.resource.k8s.io n1-0";
  const Status conflict =
      ApiError(what, 409, status(409, "Conflict", "the object has been modified"));
  CHECK(conflict.code() == StatusCode::kAborted);
  CHECK(conflict.message() ==
        "update resourceslices.resource.k8s.io n1-0: 409 Conflict: the object has been modified");
  CHECK(ApiError(what, 409, status(409, "AlreadyExists", "exists")).code() ==
        StatusCode::kAlreadyExists);
  CHECK(ApiError(what, 404, status(404, "NotFound", "x")).code() == StatusCode::kNotFound);
  CHECK(ApiError(what, 410, status(410, "Expired", "x")).code() == StatusCode::kOutOfRange);
  CHECK(ApiError(what, 422, status(422, "Invalid", "x")).code() == StatusCode::kInvalidArgument);
  CHECK(ApiError(what, 401, "Unauthorized").code() == StatusCode::kUnauthenticated);
  CHECK(ApiError(what, 403, "").code() == StatusCode::kPermissionDenied);
  CHECK(ApiError(what, 429, "").code() == StatusCode::kUnavailable);
  CHECK(ApiError(what, 503, "").code() == StatusCode::kUnavailable);
  // A body that is not a Status is quoted, shortened.
  const Status text = ApiError("get nodes a", 502, std::string(500, 'x'));
  CHECK(text.message().size() < 260);
  CHECK(text.message().rfind("get nodes a: 502: xxx", 0) == 0);
}

TEST_CASE("IsSafePathSegment keeps names from changing the URL path", "[client]") {
  CHECK(IsSafePathSegment("n1-0"));
  CHECK(IsSafePathSegment("gpu.example.com"));
  for (const char* unsafe : {"", ".", "..", "a/b", "a%2fb", "a?watch=1"}) {
    CHECK_FALSE(IsSafePathSegment(unsafe));
  }
}

TEST_CASE("QueryEscape percent-encodes selector values", "[client]") {
  CHECK(QueryEscape("spec.nodeName=n1") == "spec.nodeName%3Dn1");
  CHECK(QueryEscape("app in (a,b)") == "app%20in%20%28a%2Cb%29");
  CHECK(QueryEscape("a-b_c.d~") == "a-b_c.d~");
}

TEST_CASE("ResourceRef names and apiVersions", "[client]") {
  CHECK(ResourceSlices().Name() == "resourceslices.resource.k8s.io");
  CHECK(ResourceSlices().ApiVersion() == "resource.k8s.io/v1");
  CHECK(Nodes().Name() == "nodes");
  CHECK(Nodes().ApiVersion() == "v1");
  CHECK(Leases().namespaced);
  CHECK_FALSE(NodeInventories().namespaced);
  CHECK(AcceleratorGangs().ApiVersion() == "xpu.dra.dev/v1alpha1");
}

TEST_CASE("CompareResourceVersions orders etcd revisions, not opaque strings", "[client]") {
  CHECK(CompareResourceVersions("9", "10") == -1);
  CHECK(CompareResourceVersions("10", "10") == 0);
  CHECK(CompareResourceVersions("11", "10") == 1);
  CHECK_FALSE(CompareResourceVersions("abc", "10").has_value());
  CHECK_FALSE(CompareResourceVersions("", "10").has_value());
}

TEST_CASE("KeyOf is namespace/name or name", "[client]") {
  CHECK(KeyOf(json{{"metadata", {{"name", "a"}, {"namespace", "ns"}}}}) == "ns/a");
  CHECK(KeyOf(json{{"metadata", {{"name", "n1"}}}}) == "n1");
  CHECK(KeyOf(json::object()).empty());
}

TEST_CASE("Transport refuses non-HTTP servers and authorities without a host", "[client]") {
  ClusterConfig config;
  config.server = "ftp://example";
  CHECK(Transport::Create(config).status().code() == StatusCode::kInvalidArgument);
  config.server = "https://[fd00::1:6443";
  const Status unclosed = Transport::Create(config).status();
  CHECK(unclosed.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(unclosed.message(), Catch::Contains("unclosed '['"));
  config.server = "https://:6443";
  CHECK_THAT(Transport::Create(config).status().message(), Catch::Contains("no host"));
}

TEST_CASE("Client maps a refused connection to kUnavailable after its retries", "[client]") {
  ClusterConfig config;
  config.server = "http://127.0.0.1:1";  // nothing listens on port 1
  ClientOptions options;
  options.backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(2), 2, 3,
                     std::chrono::seconds(60)};
  auto client = Client::Create(config, options);
  REQUIRE_OK(client);
  const auto got = (*client)->Get(Nodes(), "", "n1");
  CHECK(got.status().code() == StatusCode::kUnavailable);
  CHECK(got.status().message().rfind("get nodes n1: ", 0) == 0);
  CHECK(got.status().message().find("after 3 attempts") != std::string::npos);
  CHECK((*client)->stats().requests == 3);
  CHECK((*client)->stats().retries == 2);
}

TEST_CASE("Client rejects unsafe names before sending anything", "[client]") {
  ClusterConfig config;
  config.server = "http://127.0.0.1:1";
  auto client = Client::Create(config);
  REQUIRE_OK(client);
  CHECK((*client)->Get(Nodes(), "", "../secrets").status().code() == StatusCode::kInvalidArgument);
  CHECK((*client)->Get(Leases(), "", "l1").status().message().find("namespace required") !=
        std::string::npos);
  CHECK((*client)->stats().requests == 0);
}

}  // namespace
}  // namespace xpu::api::client
