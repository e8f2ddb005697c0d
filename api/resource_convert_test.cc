#include <catch2/catch.hpp>
#include <string>

#include "api/resource.h"
#include "api/testing/resource_examples.h"
#include "base/testing/require_ok.h"

namespace xpu::api::resource {
namespace {

using nlohmann::json;

json Convert(const json& doc, ResourceVersion to) {
  StatusOr<json> out = ConvertResource(doc, to);
  INFO(out.status().ToString());
  REQUIRE_OK(out);
  return *out;
}

// v1 -> `via` -> v1 gives the original.
void CheckLossless(const json& v1) {
  for (ResourceVersion via : {ResourceVersion::kV1beta2, ResourceVersion::kV1beta1}) {
    const json other = Convert(v1, via);
    CHECK(other["apiVersion"] == ApiVersionOf(via));
    CHECK(Convert(other, ResourceVersion::kV1) == v1);
  }
  CHECK(Convert(v1, ResourceVersion::kV1) == v1);
}

TEST_CASE("version names") {
  CHECK(ApiVersionOf(ResourceVersion::kV1beta1) == "resource.k8s.io/v1beta1");
  CHECK(ParseApiVersion("resource.k8s.io/v1beta2") == ResourceVersion::kV1beta2);
  CHECK_FALSE(ParseApiVersion("resource.k8s.io/v1alpha3").has_value());
}

TEST_CASE("v1beta2 has the v1 layout") {
  const json v1 = ToJson(testing::ExampleResourceSlice());
  json v1beta2 = Convert(v1, ResourceVersion::kV1beta2);
  v1beta2["apiVersion"] = "resource.k8s.io/v1";
  CHECK(v1beta2 == v1);
}

TEST_CASE("v1beta1 ResourceSlice devices keep their fields under basic") {
  const json v1 = ToJson(testing::ExampleResourceSlice());
  const json v1beta1 = Convert(v1, ResourceVersion::kV1beta1);
  const json& device = v1beta1["spec"]["devices"][0];
  CHECK(device["name"] == "gpu-0");
  CHECK(device.size() == 2);
  CHECK(device["basic"]["attributes"]["model"]["string"] == "LATEST-GPU-MODEL");
  CHECK(device["basic"]["consumesCounters"][0]["counterSet"] == "gpu-0-counters");
  CHECK(v1beta1["spec"]["nodeName"] == "node-1");
  CHECK(v1beta1["spec"]["sharedCounters"] == v1["spec"]["sharedCounters"]);
}

TEST_CASE("v1beta1 plain nodeName and allNodes zero values mean unset") {
  const json v1beta1 = json::parse(R"({"apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceSlice", "metadata": {"name": "s"},
    "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "generation": 0,
             "resourceSliceCount": 1}, "nodeName": "", "allNodes": false,
             "nodeSelector": {"nodeSelectorTerms": []},
             "devices": [{"name": "a"}, {"name": "b", "basic": {"attributes": {"x": {"int": 1}}}}]}})");
  const json v1 = Convert(v1beta1, ResourceVersion::kV1);
  CHECK_FALSE(v1["spec"].contains("nodeName"));
  CHECK_FALSE(v1["spec"].contains("allNodes"));
  CHECK(v1["spec"]["devices"] ==
        json::parse(R"([{"name": "a"}, {"name": "b", "attributes": {"x": {"int": 1}}}])"));
  CHECK(FromJson<ResourceSlice>(v1).ok());
}

TEST_CASE("v1beta1 requests are flat") {
  const json v1 = ToJson(testing::ExampleResourceClaim());
  const json v1beta1 = Convert(v1, ResourceVersion::kV1beta1);
  const json& requests = v1beta1["spec"]["devices"]["requests"];
  CHECK_FALSE(requests[0].contains("exactly"));
  CHECK(requests[0]["deviceClassName"] == "gpu.example.com");
  CHECK(requests[0]["count"] == 2);
  CHECK(requests[0]["tolerations"] ==
        v1["spec"]["devices"]["requests"][0]["exactly"]["tolerations"]);
  CHECK(requests[1]["firstAvailable"] == v1["spec"]["devices"]["requests"][1]["firstAvailable"]);
  CHECK(requests[2]["adminAccess"] == true);
  // Status has the same layout in every version.
  CHECK(v1beta1["status"] == v1["status"]);

  const json template_v1beta1 =
      Convert(ToJson(testing::ExampleResourceClaimTemplate()), ResourceVersion::kV1beta1);
  CHECK(template_v1beta1["spec"]["spec"]["devices"]["requests"][0]["allocationMode"] ==
        "ExactCount");
  CHECK(template_v1beta1["spec"]["metadata"]["labels"]["app"] == "trainer");
}

TEST_CASE("conversions through v1beta2 and v1beta1 are lossless for every kind") {
  CheckLossless(ToJson(testing::ExampleResourceSlice()));
  CheckLossless(ToJson(testing::ExampleDeviceClass()));
  CheckLossless(ToJson(testing::ExampleResourceClaim()));
  CheckLossless(ToJson(testing::ExampleResourceClaimTemplate()));
}

TEST_CASE("conversions keep unknown members where they were") {
  json slice = ToJson(testing::ExampleResourceSlice());
  slice["spec"]["devices"][0]["futureDevice"] = {{"a", 1}};
  slice["spec"]["futureSpec"] = 1;
  slice["futureTop"] = "x";
  CheckLossless(slice);
  CHECK(Convert(slice, ResourceVersion::kV1beta1)["spec"]["devices"][0]["basic"]["futureDevice"] ==
        json{{"a", 1}});

  json claim = ToJson(testing::ExampleResourceClaim());
  claim["spec"]["devices"]["requests"][0]["exactly"]["futureExact"] = 1;
  claim["spec"]["devices"]["requests"][1]["futureRequest"] = 2;  // a firstAvailable request
  claim["spec"]["devices"]["futureDeviceClaim"] = 3;
  CheckLossless(claim);

  json claim_template = ToJson(testing::ExampleResourceClaimTemplate());
  claim_template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["futureExact"] = 1;
  CheckLossless(claim_template);
}

TEST_CASE("lists convert each item") {
  json list = {{"apiVersion", "resource.k8s.io/v1"},
               {"kind", "ResourceSliceList"},
               {"metadata", {{"resourceVersion", "9"}}},
               {"items", json::array({ToJson(testing::ExampleResourceSlice())})}};
  list["items"][0].erase("apiVersion");
  const json v1beta1 = Convert(list, ResourceVersion::kV1beta1);
  CHECK(v1beta1["apiVersion"] == "resource.k8s.io/v1beta1");
  CHECK(v1beta1["items"][0]["spec"]["devices"][0].contains("basic"));
  CHECK(Convert(v1beta1, ResourceVersion::kV1) == list);
}

TEST_CASE("conversion errors") {
  auto error = [](const json& doc) {
    StatusOr<json> out = ConvertResource(doc, ResourceVersion::kV1beta1);
    REQUIRE_FALSE(out.ok());
    return out.status().message();
  };
  CHECK(error(json::array()) == "convert resource: expected an object");
  CHECK(error({{"kind", "ResourceSlice"}}) ==
        "convert resource: apiVersion and kind must be strings");
  CHECK(error({{"apiVersion", "resource.k8s.io/v1alpha3"}, {"kind", "DeviceTaintRule"}}) ==
        "convert resource: apiVersion: unknown version \"resource.k8s.io/v1alpha3\"; expected "
        "resource.k8s.io/v1, v1beta2 or v1beta1");
  CHECK(error({{"apiVersion", "resource.k8s.io/v1"}, {"kind", "Pod"}}) ==
        "convert resource: kind: unknown kind \"Pod\"");
  CHECK(error({{"apiVersion", "resource.k8s.io/v1"},
               {"kind", "ResourceSlice"},
               {"spec", {{"devices", {1}}}}}) ==
        "convert ResourceSlice: spec.devices[0]: expected an object");
  CHECK(error({{"apiVersion", "resource.k8s.io/v1"},
               {"kind", "ResourceClaim"},
               {"spec", {{"devices", {{"requests", {{{"name", "a"}, {"exactly", 1}}}}}}}}}) ==
        "convert ResourceClaim: spec.devices.requests[0].exactly: expected an object");
}

}  // namespace
}  // namespace xpu::api::resource
