// ResourceSlice validation (resource_validation.h): the slice's spec, its devices and counters.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/field_errors.h"
#include "api/quantity.h"
#include "api/resource_validation.h"
#include "api/shared_validation.h"

namespace xpu::api {
namespace {
namespace resource_slice_validation_cc {

using checks::CheckBindingConditions;
using checks::CheckNodeSelector;
using checks::CheckQuantity;
using checks::Errors;
using checks::Index;
using checks::Key;
using checks::Over;
using checks::TaintEffects;
using nlohmann::json;
using resource::Counter;
using resource::Device;

// A quantity inside raw JSON (a requestPolicy member): a string.
std::optional<Quantity> JsonQuantity(const json& value, const std::string& field, Errors& errs) {
  if (!value.is_string()) {
    errs.Invalid(field, "Invalid value: must be a quantity string");
    return std::nullopt;
  }
  return CheckQuantity(value.get<std::string>(), field, errs);
}

// Counter names are DNS labels and their values quantities.
void CheckCounters(const std::map<std::string, Counter>& counters, const std::string& field,
                   Errors& errs) {
  for (const auto& [name, counter] : counters) {
    errs.Check(ValidateDnsLabel(name, Key(field, name)), Key(field, name));
    CheckQuantity(counter.value, Key(field, name) + ".value", errs);
  }
}

void CheckAttribute(const resource::DeviceAttribute& attribute, const std::string& field,
                    Errors& errs) {
  const int set = int{attribute.int_value.has_value()} + int{attribute.bool_value.has_value()} +
                  int{attribute.string_value.has_value()} + int{attribute.version.has_value()};
  if (set != 1) errs.Invalid(field, "exactly one value must be specified");
  if (attribute.string_value) {
    errs.Check(ValidateAttributeString(*attribute.string_value, field + ".string"),
               field + ".string");
  }
  if (attribute.version) {
    errs.Check(ValidateVersionAttribute(*attribute.version, field + ".version"),
               field + ".version");
  }
}

void CheckTaint(const resource::DeviceTaint& taint, const Limits& limits, const std::string& field,
                Errors& errs) {
  errs.RequiredValid(taint.key, ValidateLabelKey, field + ".key");
  errs.Check(ValidateLabelValue(taint.value, field + ".value"), field + ".value");
  const auto effects = TaintEffects(limits);
  if (taint.effect.empty()) {
    errs.Required(field + ".effect");
  } else if (std::find(effects.begin(), effects.end(), taint.effect) == effects.end()) {
    errs.NotSupported(field + ".effect", taint.effect, effects);
  }
  if (taint.time_added) {
    errs.Check(ValidateTimestamp(*taint.time_added, field + ".timeAdded"), field + ".timeAdded");
  }
}

void CheckDeviceNodeSelection(const Device& device, bool per_device, const std::string& field,
                              Errors& errs) {
  if (!per_device) {
    if (device.node_name || device.node_selector || device.all_nodes) {
      errs.Invalid(field,
                   "`nodeName`, `nodeSelector` and `allNodes` may only be set when "
                   "`spec.perDeviceNodeSelection` is true");
    }
    return;
  }
  int set = 0;
  if (device.node_name) {
    if (device.node_name->empty()) {
      errs.Invalid(field + ".nodeName", "Invalid value: \"\": must not be empty");
    } else {
      ++set;
      errs.Check(ValidateNodeName(*device.node_name, field + ".nodeName"), field + ".nodeName");
    }
  }
  if (device.node_selector) {
    ++set;
    CheckNodeSelector(*device.node_selector, field + ".nodeSelector", errs);
  }
  if (device.all_nodes) {
    if (*device.all_nodes) {
      ++set;
    } else {
      errs.Invalid(field + ".allNodes", "must be true");
    }
  }
  if (set != 1) {
    errs.Add(set == 0 ? FieldErrorType::kRequired : FieldErrorType::kInvalid, field,
             "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required");
  }
}

// validValues: at most the limit, quantities sorted and unique, none larger than the capacity
// `value`, the default `def` among them.
void CheckValidValues(const json& values, const std::optional<Quantity>& def,
                      const std::optional<Quantity>& value, const Limits& limits,
                      const std::string& vf, Errors& errs) {
  if (!errs.WithinLimit(values, limits.max_capacity_valid_values, vf)) return;
  std::vector<std::optional<Quantity>> parsed;
  for (size_t i = 0; i < values.size(); ++i) {
    parsed.push_back(JsonQuantity(values[i], Index(vf, i), errs));
  }
  bool found_default = false;
  std::set<int64_t> seen;
  for (size_t i = 0; i < parsed.size(); ++i) {
    if (!parsed[i]) continue;
    if (i + 1 < parsed.size() && parsed[i + 1] && parsed[i]->Cmp(*parsed[i + 1]) > 0) {
      errs.Invalid(Index(vf, i + 1), "Invalid value: \"" + parsed[i + 1]->String() +
                                         "\": values must be sorted in ascending order");
    }
    if (value && parsed[i]->Cmp(*value) > 0) {
      errs.Invalid(Index(vf, i),
                   "Invalid value: \"" + parsed[i]->String() +
                       "\": option is larger than capacity value: " + value->String());
    }
    if (!seen.insert(parsed[i]->Value()).second) {
      errs.Duplicate(Index(vf, i), parsed[i]->String());
    }
    if (def && parsed[i]->Cmp(*def) == 0) found_default = true;
  }
  if (def && !found_default) {
    errs.Invalid(vf, "Invalid value: \"" + def->String() +
                         "\": default value is not valid according to the requestPolicy");
  }
}

// `n` as a Quantity's canonical string when it fits in int64, else its decimal digits.
std::string Int128Quantity(__int128 n) {
  if (n >= std::numeric_limits<int64_t>::min() && n <= std::numeric_limits<int64_t>::max()) {
    return Quantity::FromInt64(static_cast<int64_t>(n)).String();
  }
  const bool negative = n < 0;
  std::string digits;
  do {
    const auto d = static_cast<int>(n % 10);
    digits.insert(digits.begin(), static_cast<char>('0' + (negative ? -d : d)));
    n /= 10;
  } while (n != 0);
  return negative ? "-" + digits : digits;
}

// validRange {min, max, step} against the default `def` and the capacity `value`.
void CheckValidRange(const json& range, const std::optional<Quantity>& def,
                     const std::optional<Quantity>& value, const std::string& rf, Errors& errs) {
  if (!range.is_object() || !range.contains("min") || range["min"].is_null()) {
    errs.Required(rf + ".min", "required when validRange is defined");
    return;
  }
  const auto min = JsonQuantity(range["min"], rf + ".min", errs);
  if (!min) return;
  if (value && min->Cmp(*value) > 0) {
    errs.Invalid(rf + ".min", "Invalid value: \"" + min->String() +
                                  "\": min is larger than capacity value: " + value->String());
  }
  if (def && def->Cmp(*min) < 0) {
    errs.Invalid(rf + ".min", "Invalid value: \"" + def->String() +
                                  "\": default is less than min: " + min->String());
  }
  std::optional<Quantity> max;
  if (range.contains("max") && !range["max"].is_null()) {
    max = JsonQuantity(range["max"], rf + ".max", errs);
  }
  if (max) {
    if (min->Cmp(*max) > 0) {
      errs.Invalid(rf + ".max", "Invalid value: \"" + min->String() +
                                    "\": min is larger than max: " + max->String());
    }
    if (value && max->Cmp(*value) > 0) {
      errs.Invalid(rf + ".max", "Invalid value: \"" + max->String() +
                                    "\": max is larger than capacity value: " + value->String());
    }
    if (def && def->Cmp(*max) > 0) {
      errs.Invalid(rf + ".max", "Invalid value: \"" + def->String() +
                                    "\": default is more than max: " + max->String());
    }
  }
  if (range.contains("step") && !range["step"].is_null()) {
    const auto step = JsonQuantity(range["step"], rf + ".step", errs);
    if (!step) return;
    if (step->Value() <= 0) {
      errs.Invalid(rf + ".step", "Invalid value: \"" + step->String() + "\": must be positive");
      return;
    }
    // In 128 bits: min + step, and a value less min, can pass int64's range (fuzzing found it);
    // the API server's Quantity arithmetic does not overflow either.
    const __int128 one_step = static_cast<__int128>(min->Value()) + step->Value();
    if (value && one_step > value->Value()) {
      errs.Invalid(rf + ".step", "Invalid value: \"" + step->String() + "\": one step " +
                                     Int128Quantity(one_step) +
                                     " is larger than capacity value: " + value->String());
    }
    auto multiple = [&](const Quantity& q) {
      if ((static_cast<__int128>(q.Value()) - min->Value()) % step->Value() != 0) {
        errs.Invalid(rf + ".step", "Invalid value: \"" + q.String() +
                                       "\": value is not a multiple of a given step (" +
                                       step->String() + ") from (" + min->String() + ")");
      }
    };
    if (def) multiple(*def);
    if (max) multiple(*max);
  }
}

// CapacityRequestPolicy {default, validValues, validRange {min, max, step}} against the capacity
// `value`.
void CheckRequestPolicy(const json& policy, const std::optional<Quantity>& value,
                        const Limits& limits, const std::string& field, Errors& errs) {
  if (!policy.is_object()) {
    errs.Invalid(field, "Invalid value: must be an object");
    return;
  }
  const bool has_values = policy.contains("validValues") && policy["validValues"].is_array() &&
                          !policy["validValues"].empty();
  const bool has_range = policy.contains("validRange") && !policy["validRange"].is_null();
  if (has_values && has_range) {
    errs.Forbidden(field,
                   "exactly one policy can be specified, cannot specify \"validValues\" and "
                   "\"validRange\" at the same time");
    return;
  }
  std::optional<Quantity> def;
  if (policy.contains("default") && !policy["default"].is_null()) {
    def = JsonQuantity(policy["default"], field + ".default", errs);
  } else if (has_values || has_range) {
    errs.Required(field + ".default", has_values ? "required when validValues is defined"
                                                 : "required when validRange is defined");
    return;
  }
  if (has_values) {
    CheckValidValues(policy["validValues"], def, value, limits, field + ".validValues", errs);
    return;
  }
  if (!has_range) return;
  CheckValidRange(policy["validRange"], def, value, field + ".validRange", errs);
}

void CheckConsumesCounters(const Device& device, const Limits& limits, const std::string& field,
                           size_t& slice_counters, Errors& errs) {
  const std::string consumes = field + ".consumesCounters";
  if (!errs.WithinLimit(device.consumes_counters, limits.max_counter_consumptions_per_device,
                        consumes)) {
    return;
  }
  std::set<std::string> sets;
  size_t device_counters = 0;
  for (size_t i = 0; i < device.consumes_counters.size(); ++i) {
    const auto& consumption = device.consumes_counters[i];
    const std::string entry = Index(consumes, i);
    if (consumption.counter_set.empty()) {
      errs.Required(entry + ".counterSet");
    } else {
      errs.Check(ValidateDnsLabel(consumption.counter_set, entry + ".counterSet"),
                 entry + ".counterSet");
      if (!sets.insert(consumption.counter_set).second) {
        errs.Duplicate(entry + ".counterSet", consumption.counter_set);
      }
    }
    if (consumption.counters.empty()) {
      errs.Required(entry + ".counters");
    } else if (errs.WithinLimit(consumption.counters, limits.max_counters_per_counter_consumption,
                                entry + ".counters")) {
      CheckCounters(consumption.counters, entry + ".counters", errs);
    }
    device_counters += consumption.counters.size();
  }
  if (Over(device_counters, limits.max_counters_per_device)) {
    errs.Invalid(consumes, "Too many: " + std::to_string(device_counters) +
                               ": the total number of counters must not exceed " +
                               std::to_string(limits.max_counters_per_device));
  }
  slice_counters += device_counters;
}

void CheckDevice(const Device& device, const Device* old_device, bool per_device,
                 const Limits& limits, const std::string& field, size_t& slice_counters,
                 Errors& errs) {
  errs.RequiredValid(device.name, ValidateDnsLabel, field + ".name");
  const size_t properties = device.attributes.size() + device.capacity.size();
  if (Over(properties, limits.max_attributes_and_capacities_per_device)) {
    errs.Invalid(field, "Too many: " + std::to_string(properties) +
                            ": the total number of attributes and capacities must not exceed " +
                            std::to_string(limits.max_attributes_and_capacities_per_device));
  }
  for (const auto& [name, attribute] : device.attributes) {
    const std::string key = Key(field + ".attributes", name);
    errs.Check(ValidateQualifiedName(name, key), key);
    CheckAttribute(attribute, key, errs);
  }
  const bool multiple = device.allow_multiple_allocations.value_or(false);
  for (const auto& [name, capacity] : device.capacity) {
    const std::string key = Key(field + ".capacity", name);
    errs.Check(ValidateQualifiedName(name, key), key);
    const auto value = CheckQuantity(capacity.value, key + ".value", errs);
    if (!capacity.request_policy || capacity.request_policy->is_null()) continue;
    if (!multiple) {
      errs.Forbidden(key + ".requestPolicy", "allowMultipleAllocations must be true");
    } else {
      CheckRequestPolicy(*capacity.request_policy, value, limits, key + ".requestPolicy", errs);
    }
  }
  CheckConsumesCounters(device, limits, field, slice_counters, errs);
  CheckDeviceNodeSelection(device, per_device, field, errs);
  // As upstream, taints are checked only when new or changed (a stored slice keeps its taints
  // valid under the rules of the release that stored them).
  if (old_device == nullptr || old_device->taints != device.taints) {
    if (errs.WithinLimit(device.taints, limits.max_taints_per_device, field + ".taints")) {
      for (size_t i = 0; i < device.taints.size(); ++i) {
        CheckTaint(device.taints[i], limits, Index(field + ".taints", i), errs);
      }
    }
  }
  CheckBindingConditions(device.binding_conditions, device.binding_failure_conditions, limits,
                         field, errs);
}

// partitionTypeAttribute (1.37 alpha), as the API server checks it: only on a slice with devices
// that consume counters, each of which carries the named attribute (fully qualified, or bare in
// the driver's domain) as a string.
void CheckPartitionTypeAttribute(const resource::ResourceSliceSpec& spec, Errors& errs) {
  const std::string& name = *spec.partition_type_attribute;
  const std::string field = "spec.partitionTypeAttribute";
  if (std::none_of(spec.devices.begin(), spec.devices.end(),
                   [](const Device& d) { return !d.consumes_counters.empty(); })) {
    errs.Invalid(field, "Invalid value: \"" + name +
                            "\": may only be set on a slice which declares devices that consume "
                            "counters");
    return;
  }
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) {
    errs.Invalid(field, "Invalid value: \"" + name + "\": must be a fully qualified name");
    return;
  }
  const std::string bare =
      name.compare(0, slash, spec.driver) == 0 ? name.substr(slash + 1) : std::string();
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& d = spec.devices[i];
    if (d.consumes_counters.empty()) continue;
    auto it = d.attributes.find(name);
    if (it == d.attributes.end() && !bare.empty()) it = d.attributes.find(bare);
    const std::string at = Index("spec.devices", i) + ".attributes[" + name + "]";
    if (it == d.attributes.end()) {
      errs.Required(at,
                    "device consumes counters and `partitionTypeAttribute` names this "
                    "attribute, so it must be set");
    } else if (!it->second.string_value) {
      errs.Invalid(at,
                   "Invalid value: must be a string value because `partitionTypeAttribute` "
                   "names this attribute");
    }
  }
}

void CheckSharedCounters(const std::vector<resource::CounterSet>& sets, const Limits& limits,
                         Errors& errs) {
  const std::string field = "spec.sharedCounters";
  if (!errs.WithinLimit(sets, limits.max_counter_sets_per_slice, field)) return;
  std::set<std::string> names;
  size_t total = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    const std::string entry = Index(field, i);
    if (sets[i].name.empty()) {
      errs.Required(entry + ".name");
    } else {
      errs.Check(ValidateDnsLabel(sets[i].name, entry + ".name"), entry + ".name");
      if (!names.insert(sets[i].name).second) errs.Duplicate(entry + ".name", sets[i].name);
    }
    if (sets[i].counters.empty()) {
      errs.Required(entry + ".counters");
    } else if (errs.WithinLimit(sets[i].counters, limits.max_counters_per_counter_set,
                                entry + ".counters")) {
      CheckCounters(sets[i].counters, entry + ".counters", errs);
    }
    total += sets[i].counters.size();
  }
  if (Over(total, limits.max_shared_counters_per_slice)) {
    errs.Invalid(field, "Too many: " + std::to_string(total) +
                            ": the total number of shared counters must not exceed " +
                            std::to_string(limits.max_shared_counters_per_slice));
  }
}

// 1.34: consumesCounters names a counter set of the same slice, and counters of that set.
void CheckCounterReferences(const resource::ResourceSliceSpec& spec, Errors& errs) {
  std::map<std::string, const resource::CounterSet*> sets;
  for (const auto& set : spec.shared_counters) sets.emplace(set.name, &set);
  for (size_t d = 0; d < spec.devices.size(); ++d) {
    const auto& consumes = spec.devices[d].consumes_counters;
    for (size_t i = 0; i < consumes.size(); ++i) {
      const std::string entry = Index(Index("spec.devices", d) + ".consumesCounters", i);
      auto it = sets.find(consumes[i].counter_set);
      if (it == sets.end()) {
        errs.Invalid(entry + ".counterSet",
                     "Invalid value: \"" + consumes[i].counter_set +
                         "\": must reference a counterSet defined in the ResourceSlice "
                         "sharedCounters");
        continue;
      }
      for (const auto& [name, counter] : consumes[i].counters) {
        if (it->second->counters.count(name) == 0) {
          errs.Invalid(Key(entry + ".counters", name),
                       "Invalid value: \"" + name +
                           "\": must reference a counter defined in the ResourceSlice "
                           "sharedCounters");
        }
      }
    }
  }
}

void CheckNodeSelection(const resource::ResourceSliceSpec& spec, Errors& errs) {
  int set = 0;
  if (spec.node_name) {
    if (spec.node_name->empty()) {
      errs.Invalid("spec.nodeName",
                   "Invalid value: \"\": must be either unset or set to a non-empty string");
    } else {
      ++set;
    }
  }
  set += int{spec.node_selector.has_value()};
  if (spec.all_nodes) set += *spec.all_nodes ? 1 : 0;
  if (spec.per_device_node_selection) set += *spec.per_device_node_selection ? 1 : 0;
  if (spec.node_name && !spec.node_name->empty()) {
    errs.Check(ValidateNodeName(*spec.node_name, "spec.nodeName"), "spec.nodeName");
  }
  if (spec.node_selector) {
    const auto& sel = *spec.node_selector;
    const auto terms = sel.is_object() ? sel.find("nodeSelectorTerms") : sel.end();
    if (!sel.is_object() || terms == sel.end() || !terms->is_array() || terms->size() != 1) {
      errs.Invalid("spec.nodeSelector.nodeSelectorTerms",
                   "must have exactly one node selector term");
    }
    if (sel.is_object() && terms != sel.end() && terms->is_array() && !terms->empty()) {
      CheckNodeSelector(sel, "spec.nodeSelector", errs);
    }
  }
  if (spec.all_nodes && !*spec.all_nodes) errs.Invalid("spec.allNodes", "must be true");
  if (spec.per_device_node_selection && !*spec.per_device_node_selection) {
    errs.Invalid("spec.perDeviceNodeSelection", "must be true");
  }
  if (set != 1) {
    errs.Add(set == 0 ? FieldErrorType::kRequired : FieldErrorType::kInvalid, "spec",
             "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
             "`perDeviceNodeSelection` is required");
  }
}

void CheckSliceSpec(const resource::ResourceSliceSpec& spec,
                    const resource::ResourceSliceSpec* old_spec, const Limits& limits,
                    Errors& errs) {
  errs.RequiredValid(spec.driver, ValidateDriverName, "spec.driver");
  errs.RequiredValid(spec.pool.name, ValidatePoolName, "spec.pool.name");
  if (spec.pool.generation < 0) {
    errs.Invalid("spec.pool.generation", "Invalid value: " + std::to_string(spec.pool.generation) +
                                             ": must be greater than or equal to 0");
  }
  if (spec.pool.resource_slice_count <= 0) {
    errs.Invalid("spec.pool.resourceSliceCount",
                 "Invalid value: " + std::to_string(spec.pool.resource_slice_count) +
                     ": must be greater than zero");
  }
  if (old_spec != nullptr) {
    constexpr const char* kImmutable = "Invalid value: field is immutable";
    if (spec.pool.name != old_spec->pool.name) errs.Invalid("spec.pool.name", kImmutable);
    if (spec.driver != old_spec->driver) errs.Invalid("spec.driver", kImmutable);
    if (spec.node_name != old_spec->node_name) errs.Invalid("spec.nodeName", kImmutable);
  }
  CheckNodeSelection(spec, errs);
  if (!limits.slice_may_mix_devices_and_counters && !spec.devices.empty() &&
      !spec.shared_counters.empty()) {
    errs.Invalid("spec", "only one of `devices` and `sharedCounters` may be set");
  }

  bool advanced = false;
  for (const auto& device : spec.devices) {
    if (!device.taints.empty() || !device.consumes_counters.empty()) advanced = true;
  }
  const int max_devices = advanced ? limits.max_devices_per_slice_with_taints_or_counters
                                   : limits.max_devices_per_slice;
  if (errs.WithinLimit(spec.devices, max_devices, "spec.devices")) {
    const bool per_device = spec.per_device_node_selection.value_or(false);
    std::set<std::string> names;
    size_t slice_counters = 0;
    for (size_t i = 0; i < spec.devices.size(); ++i) {
      const Device& device = spec.devices[i];
      const std::string field = Index("spec.devices", i);
      const Device* old_device = nullptr;
      if (old_spec != nullptr) {
        for (const auto& candidate : old_spec->devices) {
          if (candidate.name == device.name) old_device = &candidate;
        }
      }
      CheckDevice(device, old_device, per_device, limits, field, slice_counters, errs);
      if (!device.name.empty() && !names.insert(device.name).second) {
        errs.Duplicate(field + ".name", device.name);
      }
    }
    if (Over(slice_counters, limits.max_device_counters_per_slice)) {
      errs.Invalid("spec.devices", "Too many: " + std::to_string(slice_counters) +
                                       ": the total number of consumed counters must not exceed " +
                                       std::to_string(limits.max_device_counters_per_slice));
    }
  }
  CheckSharedCounters(spec.shared_counters, limits, errs);
  if (!limits.counter_sets_pool_wide) CheckCounterReferences(spec, errs);
  if (spec.partition_type_attribute) CheckPartitionTypeAttribute(spec, errs);
}

}  // namespace resource_slice_validation_cc
}  // namespace

FieldErrors ResourceSliceErrors(const resource::ResourceSlice& slice, KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(slice.metadata, false, limits, errs);
    resource_slice_validation_cc::CheckSliceSpec(slice.spec, nullptr, limits, errs);
  });
}

FieldErrors ResourceSliceUpdateErrors(const resource::ResourceSlice& old_slice,
                                      const resource::ResourceSlice& slice, KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(slice.metadata, false, limits, errs);
    checks::CheckMetaUpdate(slice.metadata, old_slice.metadata, errs);
    resource_slice_validation_cc::CheckSliceSpec(slice.spec, &old_slice.spec, limits, errs);
  });
}

Status ValidateResourceSlice(const resource::ResourceSlice& slice, KubeVersion version) {
  return ToStatus(ResourceSliceErrors(slice, version));
}

Status ValidateResourceSliceUpdate(const resource::ResourceSlice& old_slice,
                                   const resource::ResourceSlice& slice, KubeVersion version) {
  return ToStatus(ResourceSliceUpdateErrors(old_slice, slice, version));
}

}  // namespace xpu::api
