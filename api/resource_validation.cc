#include "api/resource_validation.h"

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/quantity.h"

namespace xpu::api {
namespace {

using resource::Counter;
using resource::Device;
using resource::ResourceSlice;

Status Invalid(const std::string& field, const std::string& why) {
  return InvalidArgumentError(field + ": " + why);
}

Status Required(const std::string& field) { return Invalid(field, "Required value"); }

Status TooMany(const std::string& field, size_t count, int max) {
  return Invalid(field, "Too many: " + std::to_string(count) + ": must have at most " +
                            std::to_string(max) + " items");
}

// `field` + `["key"]`.
std::string Key(const std::string& field, std::string_view key) {
  return field + "[\"" + std::string(key) + "\"]";
}

std::string Index(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

Status ValidateQuantity(std::string_view value, const std::string& field) {
  if (value.empty()) return Required(field);
  auto parsed = Quantity::Parse(value);
  if (!parsed.ok()) return Invalid(field, parsed.status().message());
  return OkStatus();
}

// Counter names are DNS labels and their values quantities.
Status ValidateCounters(const std::map<std::string, Counter>& counters, const std::string& field) {
  for (const auto& [name, counter] : counters) {
    RETURN_IF_ERROR(ValidateDnsLabel(name, Key(field, name)));
    RETURN_IF_ERROR(ValidateQuantity(counter.value, Key(field, name) + ".value"));
  }
  return OkStatus();
}

Status ValidateAttribute(const resource::DeviceAttribute& attribute, const std::string& field) {
  const int set = int{attribute.int_value.has_value()} + int{attribute.bool_value.has_value()} +
                  int{attribute.string_value.has_value()} + int{attribute.version.has_value()};
  if (set != 1) return Invalid(field, "exactly one value must be specified");
  if (attribute.string_value) {
    RETURN_IF_ERROR(ValidateAttributeString(*attribute.string_value, field + ".string"));
  }
  if (attribute.version) {
    RETURN_IF_ERROR(ValidateVersionAttribute(*attribute.version, field + ".version"));
  }
  return OkStatus();
}

Status ValidateTaint(const resource::DeviceTaint& taint, const Limits& limits,
                     const std::string& field) {
  if (taint.key.empty()) return Required(field + ".key");
  RETURN_IF_ERROR(ValidateLabelKey(taint.key, field + ".key"));
  RETURN_IF_ERROR(ValidateLabelValue(taint.value, field + ".value"));
  if (taint.effect.empty()) return Required(field + ".effect");
  const bool known = taint.effect == "NoSchedule" || taint.effect == "NoExecute" ||
                     (limits.taint_effect_none_allowed && taint.effect == "None");
  if (!known) {
    return Invalid(field + ".effect",
                   "Unsupported value: \"" + taint.effect + "\": supported values: " +
                       (limits.taint_effect_none_allowed ? "\"NoExecute\", \"NoSchedule\", \"None\""
                                                         : "\"NoExecute\", \"NoSchedule\""));
  }
  return OkStatus();
}

Status ValidateDeviceNodeSelection(const Device& device, bool per_device,
                                   const std::string& field) {
  const int set = int{device.node_name.has_value()} + int{device.node_selector.has_value()} +
                  int{device.all_nodes.has_value()};
  if (!per_device) {
    if (set != 0) {
      return Invalid(field,
                     "`nodeName`, `nodeSelector` and `allNodes` may only be set when "
                     "`spec.perDeviceNodeSelection` is true");
    }
    return OkStatus();
  }
  if (set != 1) {
    return Invalid(field, "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required");
  }
  if (device.node_name) return ValidateNodeName(*device.node_name, field + ".nodeName");
  if (device.all_nodes && !*device.all_nodes) return Invalid(field + ".allNodes", "must be true");
  return OkStatus();
}

Status ValidateConsumesCounters(const Device& device, const Limits& limits,
                                const std::string& field, size_t& slice_counters) {
  const std::string consumes = field + ".consumesCounters";
  if (device.consumes_counters.size() >
      static_cast<size_t>(limits.max_counter_consumptions_per_device)) {
    return TooMany(consumes, device.consumes_counters.size(),
                   limits.max_counter_consumptions_per_device);
  }
  std::set<std::string> sets;
  size_t device_counters = 0;
  for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
    const auto& consumption = device.consumes_counters[i];
    const std::string entry = Index(consumes, i);
    if (consumption.counter_set.empty()) return Required(entry + ".counterSet");
    RETURN_IF_ERROR(ValidateDnsLabel(consumption.counter_set, entry + ".counterSet"));
    if (!sets.insert(consumption.counter_set).second) {
      return Invalid(entry + ".counterSet", "Duplicate value: \"" + consumption.counter_set + "\"");
    }
    if (consumption.counters.size() >
        static_cast<size_t>(limits.max_counters_per_counter_consumption)) {
      return TooMany(entry + ".counters", consumption.counters.size(),
                     limits.max_counters_per_counter_consumption);
    }
    RETURN_IF_ERROR(ValidateCounters(consumption.counters, entry + ".counters"));
    device_counters += consumption.counters.size();
  }
  if (device_counters > static_cast<size_t>(limits.max_counters_per_device)) {
    return Invalid(consumes, "Too many: " + std::to_string(device_counters) +
                                 ": the total number of counters must not exceed " +
                                 std::to_string(limits.max_counters_per_device));
  }
  slice_counters += device_counters;
  return OkStatus();
}

Status ValidateDevice(const Device& device, bool per_device, const Limits& limits,
                      const std::string& field, size_t& slice_counters) {
  if (device.name.empty()) return Required(field + ".name");
  RETURN_IF_ERROR(ValidateDnsLabel(device.name, field + ".name"));
  const size_t properties = device.attributes.size() + device.capacity.size();
  if (properties > static_cast<size_t>(limits.max_attributes_and_capacities_per_device)) {
    return Invalid(field, "Too many: " + std::to_string(properties) +
                              ": the total number of attributes and capacities must not exceed " +
                              std::to_string(limits.max_attributes_and_capacities_per_device));
  }
  for (const auto& [name, attribute] : device.attributes) {
    const std::string key = Key(field + ".attributes", name);
    RETURN_IF_ERROR(ValidateQualifiedName(name, key));
    RETURN_IF_ERROR(ValidateAttribute(attribute, key));
  }
  for (const auto& [name, capacity] : device.capacity) {
    const std::string key = Key(field + ".capacity", name);
    RETURN_IF_ERROR(ValidateQualifiedName(name, key));
    RETURN_IF_ERROR(ValidateQuantity(capacity.value, key + ".value"));
  }
  RETURN_IF_ERROR(ValidateConsumesCounters(device, limits, field, slice_counters));
  RETURN_IF_ERROR(ValidateDeviceNodeSelection(device, per_device, field));
  if (device.taints.size() > static_cast<size_t>(limits.max_taints_per_device)) {
    return TooMany(field + ".taints", device.taints.size(), limits.max_taints_per_device);
  }
  for (size_t i = 0; i < device.taints.size(); ++i) {
    RETURN_IF_ERROR(ValidateTaint(device.taints[i], limits, Index(field + ".taints", i)));
  }
  if (device.binding_conditions.size() >
      static_cast<size_t>(limits.max_binding_conditions_per_device)) {
    return TooMany(field + ".bindingConditions", device.binding_conditions.size(),
                   limits.max_binding_conditions_per_device);
  }
  if (device.binding_failure_conditions.size() >
      static_cast<size_t>(limits.max_binding_failure_conditions_per_device)) {
    return TooMany(field + ".bindingFailureConditions", device.binding_failure_conditions.size(),
                   limits.max_binding_failure_conditions_per_device);
  }
  return OkStatus();
}

Status ValidateSharedCounters(const std::vector<resource::CounterSet>& sets, const Limits& limits) {
  const std::string field = "spec.sharedCounters";
  if (sets.size() > static_cast<size_t>(limits.max_counter_sets_per_slice)) {
    return TooMany(field, sets.size(), limits.max_counter_sets_per_slice);
  }
  std::set<std::string> names;
  size_t total = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::string entry = Index(field, i);
    if (sets[i].name.empty()) return Required(entry + ".name");
    RETURN_IF_ERROR(ValidateDnsLabel(sets[i].name, entry + ".name"));
    if (!names.insert(sets[i].name).second) {
      return Invalid(entry + ".name", "Duplicate value: \"" + sets[i].name + "\"");
    }
    if (sets[i].counters.empty()) return Required(entry + ".counters");
    if (sets[i].counters.size() > static_cast<size_t>(limits.max_counters_per_counter_set)) {
      return TooMany(entry + ".counters", sets[i].counters.size(),
                     limits.max_counters_per_counter_set);
    }
    RETURN_IF_ERROR(ValidateCounters(sets[i].counters, entry + ".counters"));
    total += sets[i].counters.size();
  }
  if (total > static_cast<size_t>(limits.max_shared_counters_per_slice)) {
    return Invalid(field, "Too many: " + std::to_string(total) +
                              ": the total number of shared counters must not exceed " +
                              std::to_string(limits.max_shared_counters_per_slice));
  }
  return OkStatus();
}

Status ValidateNodeSelection(const resource::ResourceSliceSpec& spec) {
  const int set = int{spec.node_name.has_value()} + int{spec.node_selector.has_value()} +
                  int{spec.all_nodes.has_value()} + int{spec.per_device_node_selection.has_value()};
  if (set != 1) {
    return Invalid("spec",
                   "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                   "`perDeviceNodeSelection` is required");
  }
  if (spec.node_name) return ValidateNodeName(*spec.node_name, "spec.nodeName");
  if (spec.node_selector) {
    const auto terms = spec.node_selector->find("nodeSelectorTerms");
    if (!spec.node_selector->is_object() || terms == spec.node_selector->end() ||
        !terms->is_array() || terms->size() != 1) {
      return Invalid("spec.nodeSelector.nodeSelectorTerms",
                     "must have exactly one node selector term");
    }
  }
  if (spec.all_nodes && !*spec.all_nodes) return Invalid("spec.allNodes", "must be true");
  if (spec.per_device_node_selection && !*spec.per_device_node_selection) {
    return Invalid("spec.perDeviceNodeSelection", "must be true");
  }
  return OkStatus();
}

}  // namespace

Status ValidateResourceSlice(const ResourceSlice& slice, KubeVersion version) {
  const Limits limits = LimitsFor(version);
  if (!slice.metadata.name.empty()) {
    RETURN_IF_ERROR(ValidateDnsSubdomain(slice.metadata.name, "metadata.name"));
  } else if (slice.metadata.generate_name.empty()) {
    return Invalid("metadata.name", "Required value: name or generateName is required");
  }
  const auto& spec = slice.spec;
  if (spec.driver.empty()) return Required("spec.driver");
  RETURN_IF_ERROR(ValidateDriverName(spec.driver, "spec.driver"));
  if (spec.pool.name.empty()) return Required("spec.pool.name");
  RETURN_IF_ERROR(ValidatePoolName(spec.pool.name, "spec.pool.name"));
  if (spec.pool.generation < 0) {
    return Invalid("spec.pool.generation",
                   "Invalid value: " + std::to_string(spec.pool.generation) +
                       ": must be greater than or equal to 0");
  }
  if (spec.pool.resource_slice_count <= 0) {
    return Invalid("spec.pool.resourceSliceCount",
                   "Invalid value: " + std::to_string(spec.pool.resource_slice_count) +
                       ": must be greater than zero");
  }
  RETURN_IF_ERROR(ValidateNodeSelection(spec));
  if (!limits.slice_may_mix_devices_and_counters && !spec.devices.empty() &&
      !spec.shared_counters.empty()) {
    return Invalid("spec", "only one of `devices` and `sharedCounters` may be set");
  }

  bool advanced = false;
  for (const auto& device : spec.devices) {
    if (!device.taints.empty() || !device.consumes_counters.empty()) advanced = true;
  }
  const int max_devices = advanced ? limits.max_devices_per_slice_with_taints_or_counters
                                   : limits.max_devices_per_slice;
  if (spec.devices.size() > static_cast<size_t>(max_devices)) {
    return TooMany("spec.devices", spec.devices.size(), max_devices);
  }
  const bool per_device = spec.per_device_node_selection.value_or(false);
  std::set<std::string> names;
  size_t slice_counters = 0;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& device = spec.devices[i];
    const std::string field = Index("spec.devices", i);
    RETURN_IF_ERROR(ValidateDevice(device, per_device, limits, field, slice_counters));
    if (!names.insert(device.name).second) {
      return Invalid(field + ".name", "Duplicate value: \"" + device.name + "\"");
    }
  }
  if (slice_counters > static_cast<size_t>(limits.max_device_counters_per_slice)) {
    return Invalid("spec.devices", "Too many: " + std::to_string(slice_counters) +
                                       ": the total number of consumed counters must not exceed " +
                                       std::to_string(limits.max_device_counters_per_slice));
  }
  return ValidateSharedCounters(spec.shared_counters, limits);
}

}  // namespace xpu::api
