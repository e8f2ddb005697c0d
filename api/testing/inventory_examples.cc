#include "api/testing/inventory_examples.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xpu::api::testing {
namespace {

// A status condition that holds.
Condition TrueCondition(std::string type, int64_t observed_generation, std::string time,
                        std::string reason, std::string message) {
  return {.type = std::move(type),
          .status = "True",
          .observed_generation = observed_generation,
          .last_transition_time = std::move(time),
          .reason = std::move(reason),
          .message = std::move(message)};
}

InventoryDevice Die(int index) {
  const std::string i = std::to_string(index);
  InventoryDevice d;
  d.name = "npu-" + i;
  d.vendor = "huawei";
  d.model = "Ascend910C";
  d.kind = "npu";
  d.index = index;
  d.uuid = "a3c0ffee-0000-4000-8000-00000000000" + i;
  d.pci_address = "0000:1" + i + ":00.0";
  d.pcie_root = "pci0000:10";
  d.pcie_path = {"pci0000:10", "0000:10:01.0", d.pci_address};
  d.numa_node = 0;
  d.memory = "64Gi";
  d.driver_version = "24.1.rc2";
  d.firmware_version = "7.5.0.1.220";
  d.health = "Healthy";
  d.attributes["vendor"].string_value = "huawei";
  d.attributes["index"].int_value = index;
  d.attributes["bf16"].bool_value = true;
  d.attributes["driverVersion"].version = "24.1.0-rc2";
  d.attributes["resource.kubernetes.io/pcieRoot"].string_value = "pci0000:10";
  d.attributes["module"].string_value = "hiam-0";
  d.sources["topology"] = "dcmi";
  d.sources["memory"] = "dcmi";
  d.sources["pcieRoot"] = "sysfs";
  return d;
}

}  // namespace

NodeInventory ExampleNodeInventory() {
  NodeInventory inv;
  inv.metadata.name = "node-a3-1";
  inv.metadata.uid = "4f1c0e62-8a55-4c55-9a3c-0d7e8c2b1a90";
  inv.metadata.resource_version = "17";
  inv.metadata.generation = 2;
  inv.metadata.owner_references.push_back({"v1", "Node", "node-a3-1",
                                           "9b2d7a10-3c44-4e0b-8f6a-1c2d3e4f5a6b", true,
                                           std::nullopt, nullptr});

  NodeInventoryStatus& s = inv.status;
  s.server_model = "Huawei Atlas 800T A3";
  s.boot_id = "0f6b0b2e-5d0c-4d2a-9c1e-7a8b9c0d1e2f";
  s.rule_set = "ascend-a3";
  s.devices = {Die(0), Die(1)};
  s.links.push_back({"npu-0", "npu-1", "sio", 224, "up", "server-model", nullptr});
  s.links.push_back({"npu-0", "npu-1", "hccs-switch", 56, "down", "dcmi", nullptr});
  s.groups.push_back({"hiam-0", "hiam-module", {"npu-0", "npu-1"}, "server-model", nullptr});
  s.groups.push_back({"numa-0", "numa", {"npu-0", "npu-1"}, "sysfs", nullptr});
  for (int i = 0; i < 2; ++i) {
    InventoryNic nic;
    nic.name = "eth" + std::to_string(i);
    nic.type = "roce";
    nic.pci_address = "0000:2" + std::to_string(i) + ":00.0";
    nic.pcie_root = "pci0000:20";
    nic.numa_node = 0;
    nic.ip_address = "192.168.1." + std::to_string(10 + i);
    nic.paired_device = "npu-" + std::to_string(i);
    s.nics.push_back(std::move(nic));
  }
  s.versions["driver"] = {"24.1.rc2", "24.1.0-rc2", nullptr};
  s.versions["cann"] = {"8.0.RC3", "8.0.0-rc3", nullptr};
  s.pcie_bandwidths =
      InventoryPcieBandwidths{.pcie_switch = 32, .host_bridge = 24, .numa = 16, .cross_numa = 10.5};
  s.fabric = InventoryFabric{.clique_id = "clique-3",
                             .cluster_uuid = "7d9e1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
                             .super_pod_id = "superpod-0",
                             .rack_id = "rack-12",
                             .leaf = "leaf-3",
                             .spine = "spine-1"};
  s.health = "Healthy";
  s.conditions = {TrueCondition("Ready", 2, "2026-11-30T22:00:00Z", "Probed", "all devices found")};
  s.observed_generation = 2;
  return inv;
}

AcceleratorGang ExampleAcceleratorGang() {
  AcceleratorGang gang;
  gang.metadata.name = "train-llm";
  gang.metadata.namespace_name = "team-a";
  gang.metadata.generation = 1;
  gang.spec.nodes = 2;
  gang.spec.devices_per_node = 2;
  gang.spec.capability_class = "training-large-memory";
  gang.spec.max_tier = "spine";
  gang.spec.preferred_tier = "leaf";
  gang.spec.on_node_failure = "replace";
  gang.spec.node_selector["xpu.dra.dev/pool"] = "a3";

  AcceleratorGangStatus& s = gang.status;
  s.phase = "Placed";
  s.nodes.push_back(
      {.name = "node-a3-1", .rank = 0, .devices = {"npu-0", "npu-1"}, .address = "10.0.3.1"});
  s.nodes.push_back(
      {.name = "node-a3-2", .rank = 1, .devices = {"npu-2", "npu-3"}, .address = "10.0.3.2"});
  s.tier = "leaf";
  s.domain = "leaf-3";
  int rank = 0;
  for (const GangNode& node : s.nodes) {
    int local = 0;
    for (const std::string& device : node.devices) {
      s.rank_table.push_back({.rank = rank,
                              .node = node.name,
                              .device = device,
                              .ip_address = "192.168.1." + std::to_string(10 + rank),
                              .local_rank = local++,
                              .super_pod_id = "sp-0"});
      ++rank;
    }
  }
  s.resource_claim_name = "train-llm-gang";
  s.conditions = {
      TrueCondition("Placed", 1, "2026-11-30T22:05:00Z", "FitInLeaf", "2 nodes in leaf-3")};
  s.observed_generation = 1;
  return gang;
}

InventoryPartitioning H200MigPartitioning() {
  InventoryPartitioning p;
  p.kind = "mig";
  p.enabled = true;
  p.slots = 8;
  p.capacity = {{"compute", 7}};
  struct Row {
    const char* name;
    const char* memory;
    int64_t compute;
    int64_t slots;
    std::vector<int64_t> placements;
  };
  const Row rows[] = {{"1g.18gb", "16384Mi", 1, 1, {0, 1, 2, 3, 4, 5, 6}},
                      {"1g.35gb", "33280Mi", 1, 2, {0, 2, 4, 6}},
                      {"2g.35gb", "33280Mi", 2, 2, {0, 2, 4}},
                      {"3g.71gb", "71424Mi", 3, 4, {0, 4}},
                      {"4g.71gb", "71424Mi", 4, 4, {0}},
                      {"7g.141gb", "143360Mi", 7, 8, {0}}};
  for (const Row& row : rows) {
    PartitionProfile profile;
    profile.name = row.name;
    profile.memory = row.memory;
    profile.counters = {{"compute", row.compute}};
    profile.slots = row.slots;
    profile.placements = row.placements;
    p.profiles.push_back(std::move(profile));
  }
  return p;
}

}  // namespace xpu::api::testing
