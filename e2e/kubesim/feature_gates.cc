#include "e2e/kubesim/feature_gates.h"

#include <optional>

#include "base/text.h"

namespace xpu::kubesim {
namespace {

using nlohmann::json;

struct Gate {
  const char* name;
  bool FeatureGates::*member;
};

constexpr Gate kGates[] = {
    {"DRADeviceTaints", &FeatureGates::dra_device_taints},
    {"DRAPartitionableDevices", &FeatureGates::dra_partitionable_devices},
    {"DRAConsumableCapacity", &FeatureGates::dra_consumable_capacity},
    {"DRADeviceBindingConditions", &FeatureGates::dra_device_binding_conditions},
    {"DRAPartitionableDevicesType", &FeatureGates::dra_partitionable_devices_type},
};

// Go's strconv.ParseBool.
std::optional<bool> ParseBool(std::string_view s) {
  for (std::string_view t : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (s == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (s == f) return false;
  }
  return std::nullopt;
}

// A pointer field that is set (present and not null).
bool IsSet(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

// A list (or map) field with members: Go's len(x) > 0.
bool HasItems(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && (it->is_array() || it->is_object()) && !it->empty();
}

// The devices of a ResourceSlice (empty for anything else), read-only or to change.
const json& Devices(const json& slice) {
  static const json kNone = json::array();
  const auto spec = slice.find("spec");
  if (spec == slice.end() || !spec->is_object()) return kNone;
  const auto devices = spec->find("devices");
  return devices != spec->end() && devices->is_array() ? *devices : kNone;
}

template <typename F>
void ForEachDevice(json* slice, F f) {
  const auto spec = slice->find("spec");
  if (spec == slice->end() || !spec->is_object()) return;
  const auto devices = spec->find("devices");
  if (devices == spec->end() || !devices->is_array()) return;
  for (json& device : *devices) {
    if (device.is_object()) f(device);
  }
}

const json& Spec(const json& slice) {
  static const json kNone = json::object();
  const auto spec = slice.find("spec");
  return spec != slice.end() && spec->is_object() ? *spec : kNone;
}

// One gate's fields: whether a slice uses any, and how to drop them all.
struct GatedFields {
  bool FeatureGates::*gate;
  bool (*in_use)(const json& slice);
  void (*drop)(json* slice);
};

bool TaintsInUse(const json& slice) {
  for (const json& d : Devices(slice)) {
    if (d.is_object() && HasItems(d, "taints")) return true;
  }
  return false;
}

void DropTaints(json* slice) {
  ForEachDevice(slice, [](json& d) { d.erase("taints"); });
}

bool PartitionableInUse(const json& slice) {
  const json& spec = Spec(slice);
  if (HasItems(spec, "sharedCounters") || IsSet(spec, "perDeviceNodeSelection")) return true;
  for (const json& d : Devices(slice)) {
    if (!d.is_object()) continue;
    if (HasItems(d, "consumesCounters") || IsSet(d, "nodeName") || IsSet(d, "nodeSelector") ||
        IsSet(d, "allNodes")) {
      return true;
    }
  }
  return false;
}

void DropPartitionable(json* slice) {
  if (auto spec = slice->find("spec"); spec != slice->end() && spec->is_object()) {
    spec->erase("sharedCounters");
    spec->erase("perDeviceNodeSelection");
  }
  ForEachDevice(slice, [](json& d) {
    for (const char* key : {"consumesCounters", "nodeName", "nodeSelector", "allNodes"}) {
      d.erase(key);
    }
  });
}

bool ConsumableCapacityInUse(const json& slice) {
  for (const json& d : Devices(slice)) {
    if (!d.is_object()) continue;
    if (IsSet(d, "allowMultipleAllocations")) return true;
    if (const auto capacity = d.find("capacity"); capacity != d.end() && capacity->is_object()) {
      for (const json& c : *capacity) {
        if (c.is_object() && IsSet(c, "requestPolicy")) return true;
      }
    }
  }
  return false;
}

void DropConsumableCapacity(json* slice) {
  ForEachDevice(slice, [](json& d) {
    d.erase("allowMultipleAllocations");
    if (auto capacity = d.find("capacity"); capacity != d.end() && capacity->is_object()) {
      for (json& c : *capacity) {
        if (c.is_object()) c.erase("requestPolicy");
      }
    }
  });
}

bool BindingConditionsInUse(const json& slice) {
  for (const json& d : Devices(slice)) {
    if (!d.is_object()) continue;
    if (IsSet(d, "bindsToNode") || HasItems(d, "bindingConditions") ||
        HasItems(d, "bindingFailureConditions")) {
      return true;
    }
  }
  return false;
}

void DropBindingConditions(json* slice) {
  ForEachDevice(slice, [](json& d) {
    for (const char* key : {"bindsToNode", "bindingConditions", "bindingFailureConditions"}) {
      d.erase(key);
    }
  });
}

bool PartitionTypeInUse(const json& slice) { return IsSet(Spec(slice), "partitionTypeAttribute"); }

void DropPartitionType(json* slice) {
  if (auto spec = slice->find("spec"); spec != slice->end() && spec->is_object()) {
    spec->erase("partitionTypeAttribute");
  }
}

constexpr GatedFields kSliceFields[] = {
    {&FeatureGates::dra_device_taints, TaintsInUse, DropTaints},
    {&FeatureGates::dra_partitionable_devices, PartitionableInUse, DropPartitionable},
    {&FeatureGates::dra_consumable_capacity, ConsumableCapacityInUse, DropConsumableCapacity},
    {&FeatureGates::dra_device_binding_conditions, BindingConditionsInUse, DropBindingConditions},
    {&FeatureGates::dra_partitionable_devices_type, PartitionTypeInUse, DropPartitionType},
};

}  // namespace

std::vector<std::string> FeatureGateNames() {
  std::vector<std::string> names;
  for (const Gate& g : kGates) names.emplace_back(g.name);
  return names;
}

Status SetFeatureGate(FeatureGates* gates, std::string_view name, bool enabled) {
  for (const Gate& g : kGates) {
    if (name == g.name) {
      gates->*g.member = enabled;
      return OkStatus();
    }
  }
  return InvalidArgumentError("unknown feature gate \"" + std::string(name) + "\"");
}

Status ParseFeatureGates(std::string_view spec, FeatureGates* gates) {
  FeatureGates next = *gates;
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view item = Trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string name(Trim(item.substr(0, eq)));
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("feature gate \"" + name + "\": missing bool value");
    }
    const std::string_view value = Trim(item.substr(eq + 1));
    const std::optional<bool> enabled = ParseBool(value);
    if (!enabled) {
      return InvalidArgumentError("feature gate \"" + name + "\": invalid value \"" +
                                  std::string(value) + "\", want true or false");
    }
    RETURN_IF_ERROR(SetFeatureGate(&next, name, *enabled));
  }
  *gates = next;
  return OkStatus();
}

json FeatureGatesJson(const FeatureGates& gates) {
  json out = json::object();
  for (const Gate& g : kGates) out[g.name] = gates.*g.member;
  return out;
}

Status ApplyFeatureGatesJson(const json& obj, FeatureGates* gates) {
  if (!obj.is_object()) return InvalidArgumentError("feature gates: want a JSON object of bools");
  FeatureGates next = *gates;
  for (const auto& [name, value] : obj.items()) {
    if (!value.is_boolean()) {
      return InvalidArgumentError("feature gate \"" + name + "\": value must be true or false");
    }
    RETURN_IF_ERROR(SetFeatureGate(&next, name, value.get<bool>()));
  }
  *gates = next;
  return OkStatus();
}

void DropDisabledFields(const ResourceType& type, const FeatureGates& gates, json* obj,
                        const json* old) {
  if (type.group != "resource.k8s.io" || type.resource != "resourceslices") return;
  if (obj == nullptr || !obj->is_object()) return;
  for (const GatedFields& f : kSliceFields) {
    if (gates.*f.gate) continue;
    if (old != nullptr && old->is_object() && f.in_use(*old)) continue;
    f.drop(obj);
  }
}

}  // namespace xpu::kubesim
