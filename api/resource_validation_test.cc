#include "api/resource_validation.h"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "api/resource.h"
#include "api/validation.h"

namespace xpu::api {
namespace {

using Catch::Matchers::StartsWith;
using resource::Counter;
using resource::CounterSet;
using resource::Device;
using resource::DeviceCounterConsumption;
using resource::DeviceTaint;
using resource::ResourceSlice;

Device MakeDevice(const std::string& name) {
  Device device;
  device.name = name;
  device.attributes["index"].int_value = 0;
  device.attributes["model"].string_value = "LATEST-GPU-MODEL";
  device.attributes["driverVersion"].version = "1.2.3-rc.1+build.5";
  device.attributes["resource.kubernetes.io/pcieRoot"].string_value = "pci0000:00";
  device.capacity["memory"].value = "80Gi";
  return device;
}

// A slice valid in 1.34 and 1.35: devices only, bound to one node.
ResourceSlice ValidSlice() {
  ResourceSlice slice;
  slice.metadata.name = "node-1-gpu.example.com-x7k2p";
  slice.spec.driver = "gpu.example.com";
  slice.spec.pool = {"node-1", 3, 1, nlohmann::json::object()};
  slice.spec.node_name = "node-1";
  slice.spec.devices = {MakeDevice("gpu-0"), MakeDevice("gpu-1")};
  return slice;
}

DeviceTaint Taint(const std::string& effect = "NoSchedule") {
  return DeviceTaint{"example.com/unhealthy", "ecc", effect, std::nullopt,
                     nlohmann::json::object()};
}

CounterSet Set(const std::string& name) {
  return CounterSet{
      name, {{"memory", Counter{"80Gi", nlohmann::json::object()}}}, nlohmann::json::object()};
}

std::vector<Device> Devices(int n) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(MakeDevice("gpu-" + std::to_string(i)));
  return devices;
}

Status Check(const ResourceSlice& slice, KubeVersion version = KubeVersion::k1_35) {
  return ValidateResourceSlice(slice, version);
}

void ExpectInvalid(const Status& status, const std::string& prefix) {
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(), StartsWith(prefix));
}

TEST_CASE("ValidateResourceSlice accepts a valid slice in both versions") {
  for (KubeVersion version : {KubeVersion::k1_34, KubeVersion::k1_35}) {
    CHECK(Check(ValidSlice(), version).ok());
    ResourceSlice generated = ValidSlice();
    generated.metadata.name.clear();
    generated.metadata.generate_name = "node-1-";
    CHECK(Check(generated, version).ok());
    ResourceSlice counters = ValidSlice();
    counters.spec.devices.clear();
    counters.spec.node_name.reset();
    counters.spec.all_nodes = true;
    counters.spec.shared_counters = {Set("gpu-0-counters"), Set("gpu-1-counters")};
    CHECK(Check(counters, version).ok());
    ResourceSlice selector = ValidSlice();
    selector.spec.node_name.reset();
    selector.spec.node_selector = nlohmann::json::parse(
        R"({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
            "values": ["node-1"]}]}]})");
    CHECK(Check(selector, version).ok());
    ResourceSlice per_device = ValidSlice();
    per_device.spec.node_name.reset();
    per_device.spec.per_device_node_selection = true;
    per_device.spec.devices[0].node_name = "node-1";
    per_device.spec.devices[1].all_nodes = true;
    CHECK(Check(per_device, version).ok());
  }
}

struct Case {
  const char* rule;
  std::function<void(ResourceSlice&)> mutate;
  std::string prefix;
};

TEST_CASE("ValidateResourceSlice names the first broken rule") {
  const std::vector<Case> cases = {
      {"metadata.name subdomain", [](auto& s) { s.metadata.name = "Bad_Name"; }, "metadata.name: "},
      {"name or generateName", [](auto& s) { s.metadata.name.clear(); },
       "metadata.name: Required value"},
      {"driver required", [](auto& s) { s.spec.driver.clear(); }, "spec.driver: Required value"},
      {"driver name", [](auto& s) { s.spec.driver = "gpu_example"; }, "spec.driver: "},
      {"pool name required", [](auto& s) { s.spec.pool.name.clear(); },
       "spec.pool.name: Required value"},
      {"pool name", [](auto& s) { s.spec.pool.name = "node 1"; }, "spec.pool.name: "},
      {"pool generation", [](auto& s) { s.spec.pool.generation = -1; },
       "spec.pool.generation: Invalid value: -1"},
      {"pool slice count", [](auto& s) { s.spec.pool.resource_slice_count = 0; },
       "spec.pool.resourceSliceCount: Invalid value: 0"},
      {"no node selection", [](auto& s) { s.spec.node_name.reset(); },
       "spec: exactly one of `nodeName`"},
      {"two node selections", [](auto& s) { s.spec.all_nodes = true; },
       "spec: exactly one of `nodeName`"},
      {"node name", [](auto& s) { s.spec.node_name = "Node_1"; }, "spec.nodeName: "},
      {"node selector terms",
       [](auto& s) {
         s.spec.node_name.reset();
         s.spec.node_selector = nlohmann::json{{"nodeSelectorTerms", nlohmann::json::array()}};
       },
       "spec.nodeSelector.nodeSelectorTerms: must have exactly one node selector term"},
      {"allNodes false",
       [](auto& s) {
         s.spec.node_name.reset();
         s.spec.all_nodes = false;
       },
       "spec.allNodes: must be true"},
      {"too many devices", [](auto& s) { s.spec.devices = Devices(129); },
       "spec.devices: Too many: 129: must have at most 128 items"},
      {"device name required", [](auto& s) { s.spec.devices[1].name.clear(); },
       "spec.devices[1].name: Required value"},
      {"device name label", [](auto& s) { s.spec.devices[1].name = "GPU_1"; },
       "spec.devices[1].name: "},
      {"device name unique", [](auto& s) { s.spec.devices[1].name = "gpu-0"; },
       "spec.devices[1].name: Duplicate value: \"gpu-0\""},
      {"attributes and capacities",
       [](auto& s) {
         for (int i = 0; i < 28; ++i) s.spec.devices[0].attributes["a" + std::to_string(i)];
         for (auto& [name, a] : s.spec.devices[0].attributes) {
           if (!a.int_value && !a.string_value && !a.version) a.bool_value = true;
         }
       },
       "spec.devices[0]: Too many: 33: the total number of attributes and capacities"},
      {"attribute name", [](auto& s) { s.spec.devices[1].attributes["bad name"].int_value = 1; },
       "spec.devices[1].attributes[\"bad name\"]: "},
      {"attribute without value", [](auto& s) { s.spec.devices[0].attributes["empty"]; },
       "spec.devices[0].attributes[\"empty\"]: exactly one value must be specified"},
      {"attribute with two values",
       [](auto& s) { s.spec.devices[0].attributes["index"].bool_value = true; },
       "spec.devices[0].attributes[\"index\"]: exactly one value must be specified"},
      {"string too long",
       [](auto& s) { s.spec.devices[0].attributes["model"].string_value = std::string(65, 'x'); },
       "spec.devices[0].attributes[\"model\"].string: "},
      {"version semver",
       [](auto& s) { s.spec.devices[0].attributes["driverVersion"].version = "v1.2.3"; },
       "spec.devices[0].attributes[\"driverVersion\"].version: "},
      {"capacity name", [](auto& s) { s.spec.devices[0].capacity["a/b/c"].value = "1"; },
       "spec.devices[0].capacity[\"a/b/c\"]: "},
      {"capacity quantity", [](auto& s) { s.spec.devices[0].capacity["memory"].value = "80Gb"; },
       "spec.devices[0].capacity[\"memory\"].value: "},
      {"capacity required", [](auto& s) { s.spec.devices[0].capacity["memory"].value.clear(); },
       "spec.devices[0].capacity[\"memory\"].value: Required value"},
      {"too many taints", [](auto& s) { s.spec.devices[0].taints.assign(17, Taint()); },
       "spec.devices[0].taints: Too many: 17: must have at most 16 items"},
      {"taint key",
       [](auto& s) {
         s.spec.devices[0].taints = {Taint()};
         s.spec.devices[0].taints[0].key = "-bad";
       },
       "spec.devices[0].taints[0].key: "},
      {"taint value",
       [](auto& s) {
         s.spec.devices[0].taints = {Taint()};
         s.spec.devices[0].taints[0].value = "not valid";
       },
       "spec.devices[0].taints[0].value: "},
      {"taint effect", [](auto& s) { s.spec.devices[0].taints = {Taint("PreferNoSchedule")}; },
       "spec.devices[0].taints[0].effect: Unsupported value: \"PreferNoSchedule\""},
      {"binding conditions",
       [](auto& s) { s.spec.devices[0].binding_conditions.assign(5, "Ready"); },
       "spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items"},
      {"binding failure conditions",
       [](auto& s) { s.spec.devices[0].binding_failure_conditions.assign(5, "Failed"); },
       "spec.devices[0].bindingFailureConditions: Too many: 5: must have at most 4 items"},
      {"per-device node without perDeviceNodeSelection",
       [](auto& s) { s.spec.devices[1].node_name = "node-1"; },
       "spec.devices[1]: `nodeName`, `nodeSelector` and `allNodes` may only be set"},
      {"per-device selection missing",
       [](auto& s) {
         s.spec.node_name.reset();
         s.spec.per_device_node_selection = true;
         s.spec.devices[0].all_nodes = true;
       },
       "spec.devices[1]: exactly one of `nodeName`, `nodeSelector`, `allNodes` is required"},
      {"per-device node name",
       [](auto& s) {
         s.spec.node_name.reset();
         s.spec.per_device_node_selection = true;
         s.spec.devices[0].node_name = "Node 1";
         s.spec.devices[1].all_nodes = true;
       },
       "spec.devices[0].nodeName: "},
      {"counter set name",
       [](auto& s) {
         s.spec.devices.clear();
         s.spec.shared_counters = {Set("Bad_Set")};
       },
       "spec.sharedCounters[0].name: "},
      {"counter set unique",
       [](auto& s) {
         s.spec.devices.clear();
         s.spec.shared_counters = {Set("gpu-0"), Set("gpu-0")};
       },
       "spec.sharedCounters[1].name: Duplicate value: \"gpu-0\""},
      {"counter name",
       [](auto& s) {
         s.spec.devices.clear();
         s.spec.shared_counters = {Set("gpu-0")};
         s.spec.shared_counters[0].counters["Bad_Counter"].value = "1";
       },
       "spec.sharedCounters[0].counters[\"Bad_Counter\"]: "},
      {"counter quantity",
       [](auto& s) {
         s.spec.devices.clear();
         s.spec.shared_counters = {Set("gpu-0")};
         s.spec.shared_counters[0].counters["memory"].value = "lots";
       },
       "spec.sharedCounters[0].counters[\"memory\"].value: "},
      {"too many counter sets",
       [](auto& s) {
         s.spec.devices.clear();
         for (int i = 0; i < 9; ++i) s.spec.shared_counters.push_back(Set("s" + std::to_string(i)));
       },
       "spec.sharedCounters: Too many: 9: must have at most 8 items"},
      {"too many counter consumptions",
       [](auto& s) {
         s.spec.devices[0].consumes_counters.assign(
             3, DeviceCounterConsumption{"gpu-0-counters",
                                         {{"memory", Counter{"1Gi", nlohmann::json::object()}}},
                                         nlohmann::json::object()});
       },
       "spec.devices[0].consumesCounters: Too many: 3: must have at most 2 items"},
      {"consumed counter quantity",
       [](auto& s) {
         s.spec.devices[0].consumes_counters = {
             DeviceCounterConsumption{"gpu-0-counters",
                                      {{"memory", Counter{"1 Gi", nlohmann::json::object()}}},
                                      nlohmann::json::object()}};
       },
       "spec.devices[0].consumesCounters[0].counters[\"memory\"].value: "},
      {"consumed counter set unique",
       [](auto& s) {
         s.spec.devices[0].consumes_counters.assign(
             2, DeviceCounterConsumption{"gpu-0-counters",
                                         {{"memory", Counter{"1Gi", nlohmann::json::object()}}},
                                         nlohmann::json::object()});
       },
       "spec.devices[0].consumesCounters[1].counterSet: Duplicate value: \"gpu-0-counters\""},
      {"consumed counter name",
       [](auto& s) {
         s.spec.devices[0].consumes_counters = {
             DeviceCounterConsumption{"gpu-0-counters",
                                      {{"Mem", Counter{"1Gi", nlohmann::json::object()}}},
                                      nlohmann::json::object()}};
       },
       "spec.devices[0].consumesCounters[0].counters[\"Mem\"]: "},
  };
  for (const Case& c : cases) {
    SECTION(c.rule) {
      ResourceSlice slice = ValidSlice();
      c.mutate(slice);
      ExpectInvalid(Check(slice), c.prefix);
    }
  }
}

TEST_CASE("ValidateResourceSlice applies the 1.34 and 1.35 limits") {
  SECTION("devices with taints: 128 in 1.34, 64 in 1.35") {
    ResourceSlice slice = ValidSlice();
    slice.spec.devices = Devices(65);
    slice.spec.devices[0].taints = {Taint()};
    CHECK(Check(slice, KubeVersion::k1_34).ok());
    ExpectInvalid(Check(slice, KubeVersion::k1_35),
                  "spec.devices: Too many: 65: must have at most 64 items");
    slice.spec.devices = Devices(64);
    slice.spec.devices[0].taints = {Taint()};
    CHECK(Check(slice, KubeVersion::k1_35).ok());
    slice.spec.devices = Devices(129);
    slice.spec.devices[0].taints = {Taint()};
    ExpectInvalid(Check(slice, KubeVersion::k1_34),
                  "spec.devices: Too many: 129: must have at most 128 items");
  }
  SECTION("taints per device: 4 in 1.34, 16 in 1.35") {
    ResourceSlice slice = ValidSlice();
    slice.spec.devices[0].taints.assign(5, Taint());
    ExpectInvalid(Check(slice, KubeVersion::k1_34),
                  "spec.devices[0].taints: Too many: 5: must have at most 4 items");
    CHECK(Check(slice, KubeVersion::k1_35).ok());
  }
  SECTION("the None effect is 1.35+") {
    ResourceSlice slice = ValidSlice();
    slice.spec.devices[0].taints = {Taint("None")};
    ExpectInvalid(Check(slice, KubeVersion::k1_34),
                  "spec.devices[0].taints[0].effect: Unsupported value: \"None\"");
    CHECK(Check(slice, KubeVersion::k1_35).ok());
  }
  SECTION("devices and sharedCounters in one slice: 1.34 only") {
    ResourceSlice slice = ValidSlice();
    slice.spec.shared_counters = {Set("gpu-0-counters")};
    CHECK(Check(slice, KubeVersion::k1_34).ok());
    ExpectInvalid(Check(slice, KubeVersion::k1_35),
                  "spec: only one of `devices` and `sharedCounters` may be set");
  }
  SECTION("consumed counters: 32 per device in 1.34, 32 per entry in 1.35") {
    ResourceSlice slice = ValidSlice();
    DeviceCounterConsumption consumption{"gpu-0-counters", {}, nlohmann::json::object()};
    for (int i = 0; i < 33; ++i) consumption.counters["c" + std::to_string(i)].value = "1";
    slice.spec.devices[0].consumes_counters = {consumption};
    ExpectInvalid(Check(slice, KubeVersion::k1_34),
                  "spec.devices[0].consumesCounters: Too many: 33: the total number of counters");
    ExpectInvalid(
        Check(slice, KubeVersion::k1_35),
        "spec.devices[0].consumesCounters[0].counters: Too many: 33: must have at most 32");
  }
  SECTION("shared counters: 32 summed in 1.34, 32 per set in 1.35") {
    ResourceSlice slice = ValidSlice();
    slice.spec.devices.clear();
    slice.spec.shared_counters = {Set("a"), Set("b")};
    for (int i = 0; i < 20; ++i) {
      slice.spec.shared_counters[0].counters["c" + std::to_string(i)].value = "1";
      slice.spec.shared_counters[1].counters["c" + std::to_string(i)].value = "1";
    }
    ExpectInvalid(Check(slice, KubeVersion::k1_34),
                  "spec.sharedCounters: Too many: 42: the total number of shared counters");
    CHECK(Check(slice, KubeVersion::k1_35).ok());
  }
}

}  // namespace
}  // namespace xpu::api
