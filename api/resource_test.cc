#include "api/resource.h"

#include <catch2/catch.hpp>
#include <string>

#include "api/testing/codec_checks.h"
#include "api/testing/resource_examples.h"
#include "base/testing/require_ok.h"

namespace xpu::api::resource {
namespace {

using nlohmann::json;

// The wire examples of docs/reference/dra-api.md §1.9.
constexpr const char* kPublishedSlice =
    R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
 "metadata": {"generateName": "node-1-gpu.example.com-",
   "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "<node uid>", "controller": true}]},
 "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
   "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
   "devices": [{"name": "gpu-0",
     "attributes": {"index": {"int": 0}, "model": {"string": "LATEST-GPU-MODEL"},
                    "driverVersion": {"version": "1.0.0"},
                    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}},
     "capacity": {"memory": {"value": "80Gi"}}}]}})";

constexpr const char* kAllocatedClaim =
    R"({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "pod0-gpu-x7k2p", "namespace": "default", "uid": "3f6c0a4e-0000-4000-8000-000000000001"},
 "spec": {"devices": {
   "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}],
   "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com",
      "parameters": {"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig"}}}]}},
 "status": {
   "allocation": {
     "devices": {
       "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}],
       "config": [{"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"apiVersion": "gpu.resource.example.com/v1alpha1", "kind": "GpuConfig"}}}]},
     "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
   "reservedFor": [{"resource": "pods", "name": "pod0", "uid": "<pod uid>"}]}})";

template <typename T>
std::string Error(const json& doc) {
  StatusOr<T> value = FromJson<T>(doc);
  REQUIRE_FALSE(value.ok());
  CHECK(value.status().code() == StatusCode::kInvalidArgument);
  return value.status().message();
}

// The error of reading `doc` as a T with the member at the JSON pointer set to `value`.
template <typename T>
std::string ErrorWith(json doc, const std::string& pointer, const json& value) {
  doc[json::json_pointer(pointer)] = value;
  return Error<T>(doc);
}

TEST_CASE("the published ResourceSlice example round-trips") {
  const auto slice = testing::CheckJsonRoundTrip<ResourceSlice>(json::parse(kPublishedSlice));
  CHECK(slice.spec.node_name == "node-1");
  CHECK(slice.spec.pool.resource_slice_count == 1);
  REQUIRE(slice.spec.devices.size() == 1);
  const Device& gpu = slice.spec.devices[0];
  CHECK(gpu.attributes.at("index").int_value == 0);
  CHECK(gpu.attributes.at("driverVersion").version == "1.0.0");
  CHECK(gpu.attributes.at("resource.kubernetes.io/pcieRoot").string_value == "pci0000:00");
  CHECK(gpu.capacity.at("memory").value == "80Gi");
}

TEST_CASE("the allocated ResourceClaim example round-trips") {
  const auto claim = testing::CheckJsonRoundTrip<ResourceClaim>(json::parse(kAllocatedClaim));
  REQUIRE(claim.spec.devices.requests.size() == 1);
  CHECK(claim.spec.devices.requests[0].exactly->count == 1);
  REQUIRE(claim.status.allocation.has_value());
  CHECK(claim.status.allocation->devices.results[0].device == "gpu-0");
  CHECK(claim.status.allocation->devices.config[0].opaque->parameters["kind"] == "GpuConfig");
  CHECK(claim.status.reserved_for[0].resource == "pods");
}

TEST_CASE("the filled-in examples round-trip through JSON and back to equal structs") {
  testing::CheckObjectRoundTrip(testing::ExampleResourceSlice());
  testing::CheckObjectRoundTrip(testing::ExampleDeviceClass());
  testing::CheckObjectRoundTrip(testing::ExampleResourceClaim());
  testing::CheckObjectRoundTrip(testing::ExampleResourceClaimTemplate());
}

TEST_CASE("ToJson writes the upstream member names") {
  const json slice = ToJson(testing::ExampleResourceSlice());
  const json& part = slice["spec"]["devices"][1];
  CHECK(part["consumesCounters"][0]["counterSet"] == "gpu-0-counters");
  CHECK(part["taints"][0]["timeAdded"] == "2025-01-01T00:00:00Z");
  CHECK(part["bindsToNode"] == true);
  CHECK(part["bindingFailureConditions"] == json::array({"Failed"}));
  CHECK(part["allowMultipleAllocations"] == true);
  CHECK(part["capacity"]["memory"]["requestPolicy"]["validRange"]["step"] == "10Gi");
  CHECK(slice["spec"]["sharedCounters"][0]["counters"]["sms"]["value"] == "132");

  const json claim = ToJson(testing::ExampleResourceClaim());
  const json& requests = claim["spec"]["devices"]["requests"];
  CHECK(requests[0]["exactly"]["tolerations"][0]["operator"] == "Exists");
  CHECK(requests[0]["exactly"]["tolerations"][0]["tolerationSeconds"] == 300);
  CHECK(requests[0]["exactly"]["capacity"]["requests"]["memory"] == "10Gi");
  CHECK(requests[1]["firstAvailable"][1]["count"] == 2);
  CHECK(requests[2]["exactly"]["adminAccess"] == true);
  CHECK(claim["spec"]["devices"]["constraints"][1]["distinctAttribute"] == "gpu.example.com/uuid");
  const json& status = claim["status"];
  CHECK(status["allocation"]["devices"]["results"][0]["shareID"] ==
        "9a0e7d2c-0000-4000-8000-000000000002");
  CHECK(status["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] == "10Gi");
  CHECK(status["allocation"]["allocationTimestamp"] == "2025-01-01T00:00:01Z");
  CHECK(status["devices"][0]["networkData"]["interfaceName"] == "eth1");
  CHECK(status["devices"][0]["networkData"]["hardwareAddress"] == "00:11:22:33:44:55");

  const json device_class = ToJson(testing::ExampleDeviceClass());
  CHECK(device_class["spec"]["extendedResourceName"] == "example.com/gpu");
  CHECK(device_class["spec"]["selectors"][0]["cel"]["expression"] ==
        "device.driver == 'gpu.example.com'");
}

// A slice of pool node-1 on node-1, with neither devices nor counters.
ResourceSlice EmptySlice(const std::string& name, int64_t generation, int64_t slice_count) {
  ResourceSlice slice;
  slice.metadata.name = name;
  slice.spec.driver = "gpu.example.com";
  slice.spec.pool = {"node-1", generation, slice_count, nullptr};
  slice.spec.node_name = "node-1";
  return slice;
}

TEST_CASE("an empty ResourceSlice still sends devices: []") {
  const json doc = ToJson(EmptySlice("empty", 0, 1));
  REQUIRE(doc["spec"].contains("devices"));
  CHECK(doc["spec"]["devices"] == json::array());
  CHECK_FALSE(doc["spec"].contains("sharedCounters"));
  CHECK_FALSE(doc["spec"].contains("allNodes"));
  CHECK(doc["spec"]["pool"]["generation"] == 0);
}

TEST_CASE("a slice of shared counters alone leaves devices out (1.35+ rejects devices: [])") {
  ResourceSlice slice = EmptySlice("counters", 1, 2);
  slice.spec.shared_counters.push_back(CounterSet{"members", {}, nullptr});
  slice.spec.shared_counters[0].counters["gpu-0"] = Counter{"1", nullptr};
  const json doc = ToJson(slice);
  CHECK_FALSE(doc["spec"].contains("devices"));
  REQUIRE(doc["spec"].contains("sharedCounters"));
  auto back = FromJson<ResourceSlice>(doc);
  REQUIRE_OK(back);
  CHECK(back->spec.devices.empty());
}

TEST_CASE("a claim without status is written without one") {
  ResourceClaim claim = testing::ExampleResourceClaim();
  claim.status = {};
  CHECK_FALSE(ToJson(claim).contains("status"));
}

TEST_CASE("unknown members survive a read and write, at every level") {
  json slice = json::parse(kPublishedSlice);
  slice["futureTopLevel"] = 1;
  slice["metadata"]["managedFields"] = json::array({{{"manager", "kube-apiserver"}}});
  slice["spec"]["skipNodeOperations"] = json::array({"*"});
  slice["spec"]["pool"]["futurePoolField"] = true;
  slice["spec"]["devices"][0]["nodeAllocatableResources"] = {
      {"mapping", {{"capacityKey", "memory"}}}};
  slice["spec"]["devices"][0]["attributes"]["index"]["futureFlag"] = true;
  slice["spec"]["devices"][0]["attributes"]["tags"] = {{"strings", {"a", "b"}}};
  slice["spec"]["devices"][0]["capacity"]["memory"]["futureField"] = "x";
  testing::CheckJsonRoundTrip<ResourceSlice>(slice);
  StatusOr<ResourceSlice> parsed = FromJson<ResourceSlice>(slice);
  REQUIRE_OK(parsed);
  CHECK(parsed->spec.devices[0].unknown.contains("nodeAllocatableResources"));
  CHECK(parsed->spec.unknown == json{{"skipNodeOperations", json::array({"*"})}});

  // An update keeps them: change a known field, write back.
  parsed->spec.devices[0].capacity["memory"].value = "40Gi";
  const json updated = ToJson(*parsed);
  CHECK(updated["spec"]["devices"][0]["capacity"]["memory"] ==
        json{{"value", "40Gi"}, {"futureField", "x"}});
  CHECK(updated["spec"]["devices"][0]["nodeAllocatableResources"] ==
        slice["spec"]["devices"][0]["nodeAllocatableResources"]);

  json claim = json::parse(kAllocatedClaim);
  claim["spec"]["futureSpecField"] = {{"a", 1}};
  claim["spec"]["devices"]["requests"][0]["exactly"]["futureExact"] = 2;
  claim["spec"]["devices"]["requests"][0]["skipNodeOperations"] = {"*"};
  claim["status"]["allocation"]["devices"]["results"][0]["futureResult"] = "r";
  claim["status"]["futureStatus"] = json::array();
  testing::CheckJsonRoundTrip<ResourceClaim>(claim);

  json device_class = ToJson(testing::ExampleDeviceClass());
  device_class["spec"]["selectors"][0]["cel"]["futureCel"] = 1;
  device_class["spec"]["config"][0]["opaque"]["futureOpaque"] = 1;
  testing::CheckJsonRoundTrip<DeviceClass>(device_class);

  json claim_template = ToJson(testing::ExampleResourceClaimTemplate());
  claim_template["spec"]["futureTemplateSpec"] = "t";
  claim_template["spec"]["spec"]["devices"]["futureDeviceClaim"] = "d";
  testing::CheckJsonRoundTrip<ResourceClaimTemplate>(claim_template);
}

TEST_CASE("decoding errors name the JSON path of the field") {
  const json slice = json::parse(kPublishedSlice);
  auto slice_with = [&](const std::string& pointer, const json& value) {
    return ErrorWith<ResourceSlice>(slice, pointer, value);
  };
  CHECK(slice_with("/apiVersion", "resource.k8s.io/v1beta1") ==
        "apiVersion: expected \"resource.k8s.io/v1\", got string \"resource.k8s.io/v1beta1\"");
  CHECK(slice_with("/kind", "DeviceClass") ==
        "kind: expected \"ResourceSlice\", got string \"DeviceClass\"");
  CHECK(slice_with("/spec/driver", 7) == "spec.driver: expected a string, got number 7");
  CHECK(slice_with("/spec/pool/generation", "1") ==
        "spec.pool.generation: expected an integer, got string \"1\"");
  CHECK(slice_with("/spec/devices/0/name", json::array()) ==
        "spec.devices[0].name: expected a string, got array");
  CHECK(slice_with("/spec/devices/0/attributes/model", json{{"string", "a"}, {"int", 1}}) ==
        "spec.devices[0].attributes.model: expected exactly one of int, bool, string, version");
  CHECK(slice_with("/spec/devices/0/attributes/resource.kubernetes.io~1pcieRoot", json::object()) ==
        "spec.devices[0].attributes[\"resource.kubernetes.io/pcieRoot\"]: expected exactly one of "
        "int, bool, string, version");
  CHECK(slice_with("/spec/devices/0/attributes/index/int", 1.5) ==
        "spec.devices[0].attributes.index.int: expected an integer, got number 1.5");
  CHECK(slice_with("/spec/devices/0/capacity/memory", json{{"requestPolicy", json::object()}}) ==
        "spec.devices[0].capacity.memory.value: missing required field");
  CHECK(slice_with("/spec/nodeSelector", "node-1") ==
        "spec.nodeSelector: expected an object, got string \"node-1\"");
  CHECK(slice_with("/spec/devices/0/taints", json::array({{{"key", "k"}}})) ==
        "spec.devices[0].taints[0].effect: missing required field");
  CHECK(slice_with("/spec/allNodes", "true") ==
        "spec.allNodes: expected a boolean, got string \"true\"");
  json no_spec = slice;
  no_spec.erase("spec");
  CHECK(Error<ResourceSlice>(no_spec) == "spec: missing required field");
  CHECK(Error<ResourceSlice>(json::array()) == "expected an object, got array");

  const json claim = json::parse(kAllocatedClaim);
  auto claim_with = [&](const std::string& pointer, const json& value) {
    return ErrorWith<ResourceClaim>(claim, pointer, value);
  };
  CHECK(claim_with("/spec/devices/requests/0/exactly/count", "1") ==
        "spec.devices.requests[0].exactly.count: expected an integer, got string \"1\"");
  CHECK(claim_with("/spec/devices/requests/0/exactly", json{{"count", 1}}) ==
        "spec.devices.requests[0].exactly.deviceClassName: missing required field");
  CHECK(claim_with("/spec/devices/config/0/opaque/parameters", "{}") ==
        "spec.devices.config[0].opaque.parameters: expected an object, got string \"{}\"");
  CHECK(claim_with("/status/allocation/devices/results/0/pool", nullptr) ==
        "status.allocation.devices.results[0].pool: missing required field");
  CHECK(claim_with("/status/reservedFor/0/uid", 1) ==
        "status.reservedFor[0].uid: expected a string, got number 1");
  CHECK(claim_with("/status/devices", json::array({{{"driver", "d"},
                                                    {"pool", "p"},
                                                    {"device", "x"},
                                                    {"networkData", {{"ips", "10.0.0.1"}}}}})) ==
        "status.devices[0].networkData.ips: expected an array, got string \"10.0.0.1\"");
  CHECK(claim_with("/metadata/labels", json{{"a", true}}) ==
        "metadata.labels.a: expected a string, got boolean true");

  CHECK(Error<DeviceClass>(json{{"spec", {{"selectors", {{{"cel", {{"expr", "x"}}}}}}}}}) ==
        "spec.selectors[0].cel.expression: missing required field");
  CHECK(
      Error<ResourceClaimTemplate>(json{{"spec", {{"spec", {{"devices", {{"requests", 1}}}}}}}}) ==
      "spec.spec.devices.requests: expected an array, got number 1");
}

}  // namespace
}  // namespace xpu::api::resource
