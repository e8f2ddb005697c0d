#include "bench/api_objects.h"

#include "api/node_inventory.h"
#include "api/resource.h"
#include "topology/testing/fixtures.h"

namespace xpu::bench {

using nlohmann::json;

nlohmann::json ExampleSlice(const std::string& node, int devices) {
  api::resource::ResourceSlice slice;
  slice.metadata.name = node + "-xpu.dra.dev-0";
  slice.spec.driver = "xpu.dra.dev";
  slice.spec.node_name = node;
  slice.spec.pool = {node, 1, 1, nullptr};
  for (int i = 0; i < devices; ++i) {
    api::resource::Device& device = slice.spec.devices.emplace_back();
    device.name = "npu-" + std::to_string(i);
    auto& a = device.attributes;
    a["vendor"].string_value = "huawei";
    a["family"].string_value = "ascend910b";
    a["model"].string_value = "Ascend910B3";
    a["index"].int_value = i;
    a["uuid"].string_value = "a1b2c3d4-0000-4000-8000-" + std::to_string(100000000000 + i);
    a["driverVersion"].version = "24.1.0";
    a["firmwareVersion"].version = "7.5.0";
    a["toolkitVersion"].version = "8.0.0";
    a["bf16"].bool_value = a["fp16"].bool_value = a["int8"].bool_value = true;
    a["numaNode"].int_value = i / 4;
    a["resource.kubernetes.io/pcieRoot"].string_value = "pci0000:" + std::to_string(i / 2);
    a["resource.kubernetes.io/pciBusID"].string_value = "0000:c1:00." + std::to_string(i);
    a["linkType"].string_value = "hccs";
    a["scaleUpDomain"].string_value = node + "-hccs-" + std::to_string(i / 4);
    device.capacity["memory"].value = "64Gi";
  }
  return api::resource::ToJson(slice);
}

nlohmann::json ExampleInventory(const std::string& node) {
  // The Atlas 800T A2 model as discovery would report it: devices with the docs/architecture.md
  // attribute vocabulary, every HCCS pair link, a RoCE NIC per NPU, versions and a condition.
  api::NodeInventory inv = api::InventoryFromNodeDescription(topology::testing::Atlas800tA2());
  inv.metadata.name = node;
  inv.status.server_model = "Huawei Atlas 800T A2";
  inv.status.boot_id = "6f1c9d4e-2b7a-4c1e-9f3d-5a8b7c6d5e4f";
  inv.status.health = "Healthy";
  for (auto& d : inv.status.devices) {
    const std::string i = std::to_string(d.index);
    d.vendor = "huawei";
    d.model = "Ascend910B3";
    d.uuid = "a1b2c3d4-0000-4000-8000-00000000000" + i;
    d.pci_address = d.pcie_path.empty() ? "" : d.pcie_path.back();
    d.driver_version = "24.1.0";
    d.firmware_version = "7.5.0";
    d.health = "Healthy";
    auto str = [](const std::string& v) {
      api::InventoryAttribute a;
      a.string_value = v;
      return a;
    };
    auto flag = [] {
      api::InventoryAttribute a;
      a.bool_value = true;
      return a;
    };
    d.attributes["family"] = str("ascend910b");
    d.attributes["linkType"] = str("hccs");
    d.attributes["scaleUpDomain"] = str(node + "-hccs");
    d.attributes["bf16"] = flag();
    d.attributes["fp16"] = flag();
    d.attributes["int8"] = flag();
    d.sources = {{"topology", "dcmi"}, {"memory", "dcmi"}, {"health", "dcmi"}};
    api::InventoryNic nic;
    nic.name = "eth" + i;
    nic.type = "roce";
    nic.pci_address = "0000:" + std::to_string(0x20 + d.index) + ":00.0";
    nic.pcie_root = d.pcie_root;
    nic.numa_node = d.numa_node;
    nic.ip_address = "192.168.1." + std::to_string(10 + d.index);
    nic.paired_device = d.name;
    inv.status.nics.push_back(nic);
  }
  inv.status.versions["driver"] = {"24.1.rc2", "24.1.0-rc2", nullptr};
  inv.status.versions["firmware"] = {"7.5.0.1.220", "7.5.0", nullptr};
  inv.status.versions["cann"] = {"8.0.RC3", "8.0.0-rc3", nullptr};
  api::Condition ready;
  ready.type = "Discovered";
  ready.status = "True";
  ready.reason = "AllProbesSucceeded";
  ready.message = "8 devices from dcmi and sysfs";
  ready.last_transition_time = "2026-11-30T10:00:00Z";
  inv.status.conditions.push_back(ready);
  return api::ToJson(inv);
}

}  // namespace xpu::bench
