#include "bench/api_objects.h"

namespace xpu::bench {

using nlohmann::json;

nlohmann::json ExampleSlice(const std::string& node, int devices) {
  json list = json::array();
  for (int i = 0; i < devices; ++i) {
    const std::string ring = node + "-hccs-" + std::to_string(i / 4);
    list.push_back(
        {{"name", "npu-" + std::to_string(i)},
         {"attributes",
          {{"vendor", {{"string", "huawei"}}},
           {"family", {{"string", "ascend910b"}}},
           {"model", {{"string", "Ascend910B3"}}},
           {"index", {{"int", i}}},
           {"uuid", {{"string", "a1b2c3d4-0000-4000-8000-" + std::to_string(100000000000 + i)}}},
           {"driverVersion", {{"version", "24.1.0"}}},
           {"firmwareVersion", {{"version", "7.5.0"}}},
           {"toolkitVersion", {{"version", "8.0.0"}}},
           {"bf16", {{"bool", true}}},
           {"fp16", {{"bool", true}}},
           {"int8", {{"bool", true}}},
           {"numaNode", {{"int", i / 4}}},
           {"resource.kubernetes.io/pcieRoot", {{"string", "pci0000:" + std::to_string(i / 2)}}},
           {"resource.kubernetes.io/pciBusID", {{"string", "0000:c1:00." + std::to_string(i)}}},
           {"linkType", {{"string", "hccs"}}},
           {"scaleUpDomain", {{"string", ring}}}}},
         {"capacity", {{"memory", {{"value", "64Gi"}}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-xpu.dra.dev-0"}}},
          {"spec",
           {{"driver", "xpu.dra.dev"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", list}}}};
}

nlohmann::json ExampleInventory(const std::string& node) {
  json devices = json::array();
  json links = json::array();
  json nics = json::array();
  for (int i = 0; i < 8; ++i) {
    devices.push_back({{"name", "npu-" + std::to_string(i)},
                       {"vendor", "huawei"},
                       {"model", "Ascend910B3"},
                       {"index", i},
                       {"uuid", "a1b2c3d4-0000-4000-8000-" + std::to_string(100000000000 + i)},
                       {"pciAddress", "0000:c" + std::to_string(i) + ":00.0"},
                       {"pcieRoot", "pci0000:" + std::to_string(i / 2)},
                       {"numaNode", i / 4},
                       {"memory", "64Gi"},
                       {"health", "Healthy"}});
    nics.push_back({{"name", "eth" + std::to_string(i)},
                    {"pciAddress", "0000:d" + std::to_string(i) + ":00.0"},
                    {"ipAddress", "192.168.1." + std::to_string(10 + i)},
                    {"pairedDevice", "npu-" + std::to_string(i)}});
    for (int j = i + 1; j < 8; ++j) {
      links.push_back({{"a", "npu-" + std::to_string(i)},
                       {"b", "npu-" + std::to_string(j)},
                       {"type", "hccs"},
                       {"bandwidthGBps", 56}});
    }
  }
  return {{"apiVersion", "xpu.dra.dev/v1alpha1"},
          {"kind", "NodeInventory"},
          {"metadata", {{"name", node}}},
          {"status",
           {{"serverModel", "atlas800t-a2"},
            {"ruleSet", "any"},
            {"bootID", "6f1c9d4e-2b7a-4c1e-9f3d-" + node},
            {"devices", devices},
            {"links", links},
            {"nics", nics},
            {"versions", {{"driver", {{"raw", "24.1.rc2"}, {"semver", "24.1.0-rc2"}}}}}}}};
}

}  // namespace xpu::bench
