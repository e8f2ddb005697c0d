// The API server feature gates kube-sim models, and what the API server does with them: when it
// stores an object it silently drops the fields of disabled gates ("dropDisabledFields" in the
// resource strategies), on create always, on update only when the stored object does not use
// that gate's fields already. The answer carries the object as stored, which is how a client
// (the ResourceSlice controller) notices the drop.
//
// Gates and the v1 ResourceSlice fields they cover:
//   DRADeviceTaints            spec.devices[].taints
//   DRAPartitionableDevices    spec.sharedCounters, spec.perDeviceNodeSelection,
//                              spec.devices[].consumesCounters / nodeName / nodeSelector / allNodes
//   DRAConsumableCapacity      spec.devices[].allowMultipleAllocations,
//                              spec.devices[].capacity[*].requestPolicy
//   DRADeviceBindingConditions spec.devices[].bindsToNode / bindingConditions /
//                              bindingFailureConditions
//   DRAPartitionableDevicesType spec.partitionTypeAttribute (1.37 alpha: off on a real 1.37)
// kube-sim enables all of them by default; a real 1.34 or 1.35 cluster has every one of them off
// (alpha), 1.36 turns them on (beta).
#ifndef XPU_E2E_KUBESIM_FEATURE_GATES_H_
#define XPU_E2E_KUBESIM_FEATURE_GATES_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "e2e/kubesim/resources.h"

namespace xpu::kubesim {

struct FeatureGates {
  bool dra_device_taints = true;
  bool dra_partitionable_devices = true;
  bool dra_consumable_capacity = true;
  bool dra_device_binding_conditions = true;
  bool dra_partitionable_devices_type = true;

  bool operator==(const FeatureGates&) const = default;
};

// The gate names, in the order above: "DRADeviceTaints", "DRAPartitionableDevices", ...
std::vector<std::string> FeatureGateNames();

// Sets one gate; kInvalidArgument naming it when it is not one of FeatureGateNames().
Status SetFeatureGate(FeatureGates* gates, std::string_view name, bool enabled);

// Applies "Gate=bool,Gate=bool" (the --feature-gates syntax of kube-apiserver: spaces around
// names and values are ignored, bools as Go's strconv.ParseBool reads them) on top of `*gates`.
// kInvalidArgument naming the gate for an unknown gate, a missing or a non-bool value.
Status ParseFeatureGates(std::string_view spec, FeatureGates* gates);

// {"DRADeviceTaints": true, ...}: every gate.
nlohmann::json FeatureGatesJson(const FeatureGates& gates);
// Sets the gates `obj` names (a JSON object of bools) on top of `*gates`; kInvalidArgument naming
// the gate for an unknown gate or a non-bool value, and `*gates` is left as it was.
Status ApplyFeatureGatesJson(const nlohmann::json& obj, FeatureGates* gates);

// Drops from `obj` (the storage form of `type`; only ResourceSlices have gated fields here) the
// fields of the gates disabled in `gates`, unless `old` (the stored object on an update, null on
// a create) already uses some field of that gate.
void DropDisabledFields(const ResourceType& type, const FeatureGates& gates, nlohmann::json* obj,
                        const nlohmann::json* old);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_FEATURE_GATES_H_
