#include "api/testing/resource_examples.h"

#include <nlohmann/json.hpp>

namespace xpu::api::testing {

using nlohmann::json;
using namespace resource;  // NOLINT(google-build-using-namespace): a table of test values

namespace {

DeviceSelector Cel(std::string expression) {
  DeviceSelector selector;
  selector.cel = CelDeviceSelector{std::move(expression)};
  return selector;
}

OpaqueDeviceConfiguration GpuConfig() {
  OpaqueDeviceConfiguration opaque;
  opaque.driver = "gpu.example.com";
  opaque.parameters = {{"apiVersion", "gpu.resource.example.com/v1alpha1"}, {"kind", "GpuConfig"}};
  return opaque;
}

json NodeSelectorFor(const std::string& node) {
  return {{"nodeSelectorTerms",
           json::array({{{"matchFields", json::array({{{"key", "metadata.name"},
                                                       {"operator", "In"},
                                                       {"values", json::array({node})}}})}}})}};
}

ResourceClaimSpec ClaimSpec() {
  ResourceClaimSpec spec;
  DeviceRequest gpu;
  gpu.name = "gpu";
  gpu.exactly.emplace();
  gpu.exactly->device_class_name = "gpu.example.com";
  gpu.exactly->selectors = {
      Cel("device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'")};
  gpu.exactly->allocation_mode = "ExactCount";
  gpu.exactly->count = 2;
  DeviceToleration toleration;
  toleration.key = "example.com/unhealthy";
  toleration.operator_name = "Exists";
  toleration.effect = "NoExecute";
  toleration.toleration_seconds = 300;
  gpu.exactly->tolerations = {toleration};
  gpu.exactly->capacity = CapacityRequirements{{{"memory", "10Gi"}}, nullptr};

  DeviceRequest any;
  any.name = "any-gpu";
  DeviceSubRequest big;
  big.name = "big";
  big.device_class_name = "gpu.example.com";
  big.selectors = {
      Cel("device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0")};
  DeviceSubRequest small;
  small.name = "small";
  small.device_class_name = "gpu.example.com";
  small.allocation_mode = "ExactCount";
  small.count = 2;
  any.first_available = {big, small};

  DeviceRequest admin;
  admin.name = "monitor";
  admin.exactly.emplace();
  admin.exactly->device_class_name = "gpu.example.com";
  admin.exactly->allocation_mode = "All";
  admin.exactly->admin_access = true;

  spec.devices.requests = {gpu, any, admin};
  DeviceConstraint same_root;
  same_root.requests = {"gpu", "any-gpu"};
  same_root.match_attribute = "resource.kubernetes.io/pcieRoot";
  DeviceConstraint distinct;
  distinct.requests = {"gpu"};
  distinct.distinct_attribute = "gpu.example.com/uuid";
  spec.devices.constraints = {same_root, distinct};
  DeviceClaimConfiguration config;
  config.requests = {"gpu"};
  config.opaque = GpuConfig();
  spec.devices.config = {config};
  return spec;
}

}  // namespace

ResourceSlice ExampleResourceSlice() {
  ResourceSlice slice;
  slice.metadata.name = "node-1-gpu.example.com-x7k2p";
  slice.metadata.generate_name = "node-1-gpu.example.com-";
  slice.metadata.labels = {{"app.kubernetes.io/name", "xpu-dra"}};
  slice.metadata.owner_references = {OwnerReference{.api_version = "v1",
                                                    .kind = "Node",
                                                    .name = "node-1",
                                                    .uid = "6c6f0a3e-0000-4000-8000-00000000000a",
                                                    .controller = true,
                                                    .block_owner_deletion = std::nullopt}};

  ResourceSliceSpec& spec = slice.spec;
  spec.driver = "gpu.example.com";
  spec.pool = {"node-1", 3, 1, nullptr};
  spec.node_name = "node-1";
  spec.shared_counters = {
      CounterSet{"gpu-0-counters",
                 {{"memory", Counter{"80Gi", nullptr}}, {"sms", Counter{"132", nullptr}}},
                 nullptr}};

  Device gpu;
  gpu.name = "gpu-0";
  gpu.attributes["index"].int_value = 0;
  gpu.attributes["model"].string_value = "LATEST-GPU-MODEL";
  gpu.attributes["driverVersion"].version = "1.0.0";
  gpu.attributes["partitionable"].bool_value = true;
  gpu.attributes["resource.kubernetes.io/pcieRoot"].string_value = "pci0000:00";
  gpu.capacity["memory"].value = "80Gi";
  gpu.consumes_counters = {DeviceCounterConsumption{
      "gpu-0-counters",
      {{"memory", Counter{"80Gi", nullptr}}, {"sms", Counter{"132", nullptr}}},
      nullptr}};

  Device part;
  part.name = "gpu-0-part-0";
  part.attributes["index"].int_value = 0;
  part.attributes["partition"].int_value = 0;
  part.capacity["memory"].value = "40Gi";
  part.capacity["memory"].request_policy = json{
      {"default", "10Gi"}, {"validRange", {{"min", "10Gi"}, {"max", "40Gi"}, {"step", "10Gi"}}}};
  part.consumes_counters = {DeviceCounterConsumption{
      "gpu-0-counters",
      {{"memory", Counter{"40Gi", nullptr}}, {"sms", Counter{"66", nullptr}}},
      nullptr}};
  part.taints = {
      DeviceTaint{"example.com/unhealthy", "ecc", "NoSchedule", "2025-01-01T00:00:00Z", nullptr}};
  part.binds_to_node = true;
  part.binding_conditions = {"Ready"};
  part.binding_failure_conditions = {"Failed"};
  part.allow_multiple_allocations = true;
  spec.devices = {gpu, part};
  return slice;
}

DeviceClass ExampleDeviceClass() {
  DeviceClass device_class;
  device_class.metadata.name = "gpu.example.com";
  device_class.spec.selectors = {Cel("device.driver == 'gpu.example.com'")};
  device_class.spec.config = {DeviceClassConfiguration{GpuConfig(), nullptr}};
  device_class.spec.extended_resource_name = "example.com/gpu";
  return device_class;
}

ResourceClaim ExampleResourceClaim() {
  ResourceClaim claim;
  claim.metadata.name = "pod0-gpu-x7k2p";
  claim.metadata.namespace_name = "default";
  claim.metadata.uid = "3f6c0a4e-0000-4000-8000-000000000001";
  claim.metadata.resource_version = "4711";
  claim.metadata.creation_timestamp = "2025-01-01T00:00:00Z";
  claim.metadata.finalizers = {"resource.kubernetes.io/delete-protection"};
  claim.spec = ClaimSpec();

  AllocationResult allocation;
  const DeviceRequestAllocationResult result{
      .request = "gpu",
      .driver = "gpu.example.com",
      .pool = "node-1",
      .device = "gpu-0-part-0",
      .admin_access = false,
      .tolerations = claim.spec.devices.requests[0].exactly->tolerations,
      .binding_conditions = {"Ready"},
      .binding_failure_conditions = {"Failed"},
      .share_id = "9a0e7d2c-0000-4000-8000-000000000002",
      .consumed_capacity = {{"memory", "10Gi"}}};
  allocation.devices.results = {result};
  DeviceAllocationConfiguration config;
  config.source = "FromClaim";
  config.requests = {"gpu"};
  config.opaque = GpuConfig();
  allocation.devices.config = {config};
  allocation.node_selector = NodeSelectorFor("node-1");
  allocation.allocation_timestamp = "2025-01-01T00:00:01Z";
  claim.status.allocation = allocation;
  claim.status.reserved_for = {ResourceClaimConsumerReference{
      "", "pods", "pod0", "0b8f7c1d-0000-4000-8000-000000000003", nullptr}};

  AllocatedDeviceStatus device;
  device.driver = "gpu.example.com";
  device.pool = "node-1";
  device.device = "gpu-0-part-0";
  device.share_id = result.share_id;
  device.conditions = {json{{"type", "Ready"},
                            {"status", "True"},
                            {"reason", "Prepared"},
                            {"message", ""},
                            {"lastTransitionTime", "2025-01-01T00:00:02Z"}}};
  device.data = json{{"health", "ok"}};
  device.network_data = NetworkDeviceData{"eth1", {"192.0.2.5/24"}, "00:11:22:33:44:55", nullptr};
  claim.status.devices = {device};
  return claim;
}

ResourceClaimTemplate ExampleResourceClaimTemplate() {
  ResourceClaimTemplate claim_template;
  claim_template.metadata.name = "two-gpus";
  claim_template.metadata.namespace_name = "default";
  claim_template.spec.metadata.labels = {{"app", "trainer"}};
  claim_template.spec.metadata.annotations = {{"example.com/note", "from template"}};
  claim_template.spec.spec = ClaimSpec();
  return claim_template;
}

}  // namespace xpu::api::testing
