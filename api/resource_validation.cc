#include "api/resource_validation.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/quantity.h"

namespace xpu::api {
namespace {

using nlohmann::json;
using resource::Counter;
using resource::Device;
using resource::ResourceSlice;

// Collects the problems of one object in check order.
class Errors {
 public:
  void Add(FieldErrorType type, const std::string& field, std::string detail) {
    list_.push_back(FieldError{type, field, std::move(detail)});
  }
  void Invalid(const std::string& field, std::string detail) {
    Add(FieldErrorType::kInvalid, field, std::move(detail));
  }
  void Required(const std::string& field, const std::string& detail = "") {
    Add(FieldErrorType::kRequired, field,
        detail.empty() ? "Required value" : "Required value: " + detail);
  }
  void Forbidden(const std::string& field, const std::string& detail) {
    Add(FieldErrorType::kForbidden, field, "Forbidden: " + detail);
  }
  void TooMany(const std::string& field, size_t count, int max) {
    Add(FieldErrorType::kTooMany, field,
        "Too many: " + std::to_string(count) + ": must have at most " + std::to_string(max) +
            " items");
  }
  void TooLong(const std::string& field, size_t bytes, int max) {
    Add(FieldErrorType::kTooLong, field,
        "Too long: may not be more than " + std::to_string(max) + " bytes, got " +
            std::to_string(bytes));
  }
  void Duplicate(const std::string& field, const std::string& value) {
    Add(FieldErrorType::kDuplicate, field, "Duplicate value: \"" + value + "\"");
  }
  void NotSupported(const std::string& field, const std::string& value,
                    const std::vector<std::string>& supported) {
    std::string detail = "Unsupported value: \"" + value + "\": supported values: ";
    for (size_t i = 0; i < supported.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += "\"" + supported[i] + "\"";
    }
    Add(FieldErrorType::kNotSupported, field, std::move(detail));
  }
  // Records Too many when `items` has more than `max`; whether the items are to be checked.
  template <typename Items>
  bool WithinLimit(const Items& items, int max, const std::string& field) {
    if (items.size() <= static_cast<size_t>(max)) return true;
    TooMany(field, items.size(), max);
    return false;
  }
  // Records a missing `value` as required, else what `validate(value, field)` finds.
  void RequiredValid(const std::string& value,
                     Status (*validate)(std::string_view value, std::string_view field),
                     const std::string& field) {
    if (value.empty()) {
      Required(field);
    } else {
      Check(validate(value, field), field);
    }
  }
  // Records a non-OK Status of a validation.h check made with `field`; returns status.ok().
  bool Check(const Status& status, const std::string& field) {
    if (status.ok()) return true;
    list_.push_back(FieldErrorFromStatus(status, field));
    // Keep the historical message form "<field>: <value> is not ...".
    list_.back().detail = status.message().substr(
        status.message().rfind(field + ": ", 0) == 0 ? field.size() + 2 : 0);
    return false;
  }
  bool empty() const { return list_.empty(); }
  FieldErrors Take() { return std::move(list_); }

 private:
  FieldErrors list_;
};

// `field` + `["key"]`.
std::string Key(const std::string& field, std::string_view key) {
  return field + "[\"" + std::string(key) + "\"]";
}

std::string Index(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

bool Over(size_t count, int max) { return count > static_cast<size_t>(max); }

std::optional<Quantity> CheckQuantity(std::string_view value, const std::string& field,
                                      Errors& errs) {
  if (value.empty()) {
    errs.Required(field);
    return std::nullopt;
  }
  auto parsed = Quantity::Parse(value);
  if (!parsed.ok()) {
    errs.Invalid(field, parsed.status().message());
    return std::nullopt;
  }
  return *parsed;
}

// A quantity inside raw JSON (a requestPolicy member): a string.
std::optional<Quantity> JsonQuantity(const json& value, const std::string& field, Errors& errs) {
  if (!value.is_string()) {
    errs.Invalid(field, "Invalid value: must be a quantity string");
    return std::nullopt;
  }
  return CheckQuantity(value.get<std::string>(), field, errs);
}

void CheckObjectMeta(const ObjectMeta& meta, bool namespaced, const Limits& limits, Errors& errs,
                     const std::string& field = "metadata", bool name_is_label = false) {
  if (!meta.name.empty()) {
    errs.Check(name_is_label ? ValidateDnsLabel(meta.name, field + ".name")
                             : ValidateDnsSubdomain(meta.name, field + ".name"),
               field + ".name");
  } else if (meta.generate_name.empty()) {
    errs.Required(field + ".name", "name or generateName is required");
  }
  if (!meta.generate_name.empty()) {
    errs.Check(ValidateGenerateName(meta.generate_name, field + ".generateName"),
               field + ".generateName");
  }
  if (namespaced) {
    errs.RequiredValid(meta.namespace_name, ValidateDnsLabel, field + ".namespace");
  } else if (!meta.namespace_name.empty()) {
    errs.Forbidden(field + ".namespace", "not allowed on this type");
  }
  for (const auto& [key, value] : meta.labels) {
    const std::string path = Key(field + ".labels", key);
    errs.Check(ValidateLabelKey(key, path), path);
    errs.Check(ValidateLabelValue(value, path), path);
  }
  size_t annotation_bytes = 0;
  for (const auto& [key, value] : meta.annotations) {
    const std::string path = Key(field + ".annotations", key);
    errs.Check(ValidateAnnotationKey(key, path), path);
    annotation_bytes += key.size() + value.size();
  }
  if (Over(annotation_bytes, limits.max_annotations_bytes)) {
    errs.TooLong(field + ".annotations", annotation_bytes, limits.max_annotations_bytes);
  }
  for (size_t i = 0; i < meta.finalizers.size(); ++i) {
    const std::string path = Index(field + ".finalizers", i);
    errs.Check(ValidateLabelKey(meta.finalizers[i], path), path);
  }
}

// core/v1 NodeSelectorRequirement for a label (matchExpressions).
void CheckNodeSelectorRequirement(const json& req, const std::string& field, Errors& errs) {
  if (!req.is_object()) {
    errs.Invalid(field, "Invalid value: must be an object");
    return;
  }
  const std::string key = req.value("key", std::string());
  errs.RequiredValid(key, ValidateLabelKey, field + ".key");
  const json values = req.value("values", json::array());
  const size_t count = values.is_array() ? values.size() : 0;
  const std::string op = req.value("operator", std::string());
  if (op == "In" || op == "NotIn") {
    if (count == 0) {
      errs.Required(field + ".values", "must be specified when `operator` is 'In' or 'NotIn'");
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (count > 0) {
      errs.Forbidden(field + ".values",
                     "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    }
  } else if (op == "Gt" || op == "Lt") {
    if (count != 1) {
      errs.Required(field + ".values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'");
    }
  } else {
    errs.Invalid(field + ".operator",
                 "Invalid value: \"" + op + "\": not a valid selector operator");
  }
  if (values.is_array()) {
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string path = Index(field + ".values", i);
      if (!values[i].is_string()) {
        errs.Invalid(path, "Invalid value: must be a string");
      } else {
        errs.Check(ValidateLabelValue(values[i].get<std::string>(), path), path);
      }
    }
    if ((op == "Gt" || op == "Lt") && count == 1 && values[0].is_string()) {
      const std::string v = values[0].get<std::string>();
      size_t used = 0;
      bool integer = !v.empty();
      try {
        (void)std::stoll(v, &used);
        integer = used == v.size();
      } catch (const std::exception&) {
        integer = false;
      }
      if (!integer) {
        errs.Invalid(Index(field + ".values", 0),
                     "Invalid value: \"" + v + "\": must be an integer");
      }
    }
  }
}

// core/v1 NodeSelectorRequirement for a field (matchFields): only metadata.name, In/NotIn, one
// value.
void CheckNodeFieldRequirement(const json& req, const std::string& field, Errors& errs) {
  if (!req.is_object()) {
    errs.Invalid(field, "Invalid value: must be an object");
    return;
  }
  const std::string key = req.value("key", std::string());
  const std::string op = req.value("operator", std::string());
  const json values = req.value("values", json::array());
  if (op == "In" || op == "NotIn") {
    if (!values.is_array() || values.size() != 1) {
      errs.Required(field + ".values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector");
    }
  } else {
    errs.Invalid(field + ".operator",
                 "Invalid value: \"" + op + "\": not a valid selector operator");
  }
  if (key != "metadata.name") {
    errs.Invalid(field + ".key", "Invalid value: \"" + key + "\": not a valid field selector key");
  }
}

// core/v1 NodeSelector: at least one term; each term's expressions and fields.
void CheckNodeSelector(const json& selector, const std::string& field, Errors& errs) {
  const std::string terms_field = field + ".nodeSelectorTerms";
  if (!selector.is_object()) {
    errs.Invalid(field, "Invalid value: must be an object");
    return;
  }
  const json terms = selector.value("nodeSelectorTerms", json::array());
  if (!terms.is_array() || terms.empty()) {
    errs.Required(terms_field, "must have at least one node selector term");
    return;
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string term = Index(terms_field, i);
    if (!terms[i].is_object()) {
      errs.Invalid(term, "Invalid value: must be an object");
      continue;
    }
    const json expressions = terms[i].value("matchExpressions", json::array());
    for (size_t j = 0; expressions.is_array() && j < expressions.size(); ++j) {
      CheckNodeSelectorRequirement(expressions[j], Index(term + ".matchExpressions", j), errs);
    }
    const json fields = terms[i].value("matchFields", json::array());
    for (size_t j = 0; fields.is_array() && j < fields.size(); ++j) {
      CheckNodeFieldRequirement(fields[j], Index(term + ".matchFields", j), errs);
    }
  }
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

std::vector<std::string> TaintEffects(const Limits& limits) {
  if (limits.taint_effect_none_allowed) return {"NoExecute", "NoSchedule", "None"};
  return {"NoExecute", "NoSchedule"};
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

// Condition types (label keys), unique, not in both lists, and the two lists used together.
void CheckBindingConditions(const std::vector<std::string>& conditions,
                            const std::vector<std::string>& failure_conditions,
                            const Limits& limits, const std::string& field, Errors& errs) {
  const std::string cond_field = field + ".bindingConditions";
  const std::string fail_field = field + ".bindingFailureConditions";
  if (errs.WithinLimit(conditions, limits.max_binding_conditions_per_device, cond_field)) {
    for (size_t i = 0; i < conditions.size(); ++i) {
      errs.Check(ValidateLabelKey(conditions[i], Index(cond_field, i)), Index(cond_field, i));
    }
  }
  if (errs.WithinLimit(failure_conditions, limits.max_binding_failure_conditions_per_device,
                       fail_field)) {
    for (size_t i = 0; i < failure_conditions.size(); ++i) {
      errs.Check(ValidateLabelKey(failure_conditions[i], Index(fail_field, i)),
                 Index(fail_field, i));
    }
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < conditions.size(); ++i) {
    if (!seen.insert(conditions[i]).second) errs.Duplicate(Index(cond_field, i), conditions[i]);
  }
  std::set<std::string> seen_failures;
  for (size_t i = 0; i < failure_conditions.size(); ++i) {
    if (!seen_failures.insert(failure_conditions[i]).second) {
      errs.Duplicate(Index(fail_field, i), failure_conditions[i]);
    }
    if (seen.count(failure_conditions[i]) != 0) {
      errs.Invalid(Index(fail_field, i), "Invalid value: \"" + failure_conditions[i] +
                                             "\": bindingFailureConditions must not overlap "
                                             "with bindingConditions");
    }
  }
  if (conditions.empty() && !failure_conditions.empty()) {
    errs.Invalid(cond_field,
                 "Invalid value: []: bindingConditions are required to use "
                 "bindingFailureConditions");
  }
  if (failure_conditions.empty() && !conditions.empty()) {
    errs.Invalid(fail_field,
                 "Invalid value: []: bindingFailureConditions are required to use "
                 "bindingConditions");
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
    const json& values = policy["validValues"];
    const std::string vf = field + ".validValues";
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
    return;
  }
  if (!has_range) return;
  const json& range = policy["validRange"];
  const std::string rf = field + ".validRange";
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
    if (value && min->Value() + step->Value() > value->Value()) {
      errs.Invalid(rf + ".step", "Invalid value: \"" + step->String() + "\": one step " +
                                     Quantity::FromInt64(min->Value() + step->Value()).String() +
                                     " is larger than capacity value: " + value->String());
    }
    auto multiple = [&](const Quantity& q) {
      if ((q.Value() - min->Value()) % step->Value() != 0) {
        errs.Invalid(rf + ".step", "Invalid value: \"" + q.String() +
                                       "\": value is not a multiple of a given step (" +
                                       step->String() + ") from (" + min->String() + ")");
      }
    };
    if (def) multiple(*def);
    if (max) multiple(*max);
  }
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

void CheckMetaUpdate(const ObjectMeta& meta, const ObjectMeta& old, Errors& errs) {
  constexpr const char* kImmutable = "Invalid value: field is immutable";
  if (meta.name != old.name) errs.Invalid("metadata.name", kImmutable);
  if (meta.namespace_name != old.namespace_name) errs.Invalid("metadata.namespace", kImmutable);
  if (!meta.uid.empty() && !old.uid.empty() && meta.uid != old.uid) {
    errs.Invalid("metadata.uid", kImmutable);
  }
}

}  // namespace

FieldErrors ResourceSliceErrors(const ResourceSlice& slice, KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(slice.metadata, false, limits, errs);
  CheckSliceSpec(slice.spec, nullptr, limits, errs);
  return errs.Take();
}

Status ValidateResourceSlice(const ResourceSlice& slice, KubeVersion version) {
  return ToStatus(ResourceSliceErrors(slice, version));
}

FieldErrors ResourceSliceUpdateErrors(const ResourceSlice& old_slice, const ResourceSlice& slice,
                                      KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(slice.metadata, false, limits, errs);
  CheckMetaUpdate(slice.metadata, old_slice.metadata, errs);
  CheckSliceSpec(slice.spec, &old_slice.spec, limits, errs);
  return errs.Take();
}

Status ValidateResourceSliceUpdate(const ResourceSlice& old_slice, const ResourceSlice& slice,
                                   KubeVersion version) {
  return ToStatus(ResourceSliceUpdateErrors(old_slice, slice, version));
}

namespace {

using resource::DeviceSelector;
using resource::DeviceToleration;
using resource::OpaqueDeviceConfiguration;

// Request names of a claim: request -> its subrequest names (empty without firstAvailable).
using RequestNames = std::map<std::string, std::set<std::string>>;

RequestNames GatherRequestNames(const resource::DeviceClaim& claim) {
  RequestNames names;
  for (const auto& request : claim.requests) {
    auto& subs = names[request.name];
    for (const auto& sub : request.first_available) subs.insert(sub.name);
  }
  return names;
}

bool HasRequest(const RequestNames& names, const std::string& ref) {
  const size_t slash = ref.find('/');
  if (slash == std::string::npos) return names.count(ref) != 0;
  if (ref.find('/', slash + 1) != std::string::npos) return false;
  auto it = names.find(ref.substr(0, slash));
  return it != names.end() && it->second.count(ref.substr(slash + 1)) != 0;
}

void CheckRequestName(const std::string& name, const std::string& field, Errors& errs) {
  errs.RequiredValid(name, ValidateDnsLabel, field);
}

constexpr const char* kRequestRefRule =
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'";

void CheckRequestRef(const std::string& ref, const RequestNames& names, const std::string& field,
                     Errors& errs) {
  if (std::count(ref.begin(), ref.end(), '/') > 1) {
    errs.Invalid(field, "Invalid value: \"" + ref + "\": " + kRequestRefRule);
    return;
  }
  const size_t slash = ref.find('/');
  CheckRequestName(ref.substr(0, slash), field, errs);
  if (slash != std::string::npos) CheckRequestName(ref.substr(slash + 1), field, errs);
  if (!HasRequest(names, ref)) {
    errs.Invalid(field, "Invalid value: \"" + ref + "\": " + kRequestRefRule);
  }
}

void CheckRequestRefs(const std::vector<std::string>& refs, const RequestNames& names,
                      const Limits& limits, const std::string& field, Errors& errs) {
  if (!errs.WithinLimit(refs, limits.max_device_requests, field)) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < refs.size(); ++i) {
    CheckRequestRef(refs[i], names, Index(field, i), errs);
    if (!seen.insert(refs[i]).second) errs.Duplicate(Index(field, i), refs[i]);
  }
}

void CheckSelectors(const std::vector<DeviceSelector>& selectors, const Limits& limits,
                    const std::string& field, Errors& errs) {
  if (!errs.WithinLimit(selectors, limits.max_device_selectors, field)) return;
  for (size_t i = 0; i < selectors.size(); ++i) {
    const std::string cel = Index(field, i) + ".cel";
    if (!selectors[i].cel) {
      errs.Required(cel);
    } else if (selectors[i].cel->expression.empty()) {
      errs.Required(cel + ".expression");
    } else if (Over(selectors[i].cel->expression.size(), limits.max_cel_expression_bytes)) {
      errs.TooLong(cel + ".expression", selectors[i].cel->expression.size(),
                   limits.max_cel_expression_bytes);
    }
  }
}

void CheckClassName(const std::string& name, const std::string& field, Errors& errs) {
  errs.RequiredValid(name, ValidateDnsSubdomain, field);
}

void CheckAllocationMode(const std::string& mode, int64_t count, const std::string& field,
                         Errors& errs) {
  // The API server defaults an empty mode to ExactCount and a zero count to 1 before validating.
  if (mode == "All") {
    if (count != 0) {
      errs.Invalid(field + ".count", "Invalid value: " + std::to_string(count) +
                                         ": must not be specified when allocationMode is 'All'");
    }
  } else if (mode.empty() || mode == "ExactCount") {
    if (count < 0) {
      errs.Invalid(field + ".count",
                   "Invalid value: " + std::to_string(count) + ": must be greater than zero");
    }
  } else {
    errs.NotSupported(field + ".allocationMode", mode, {"All", "ExactCount"});
  }
}

void CheckTolerations(const std::vector<DeviceToleration>& tolerations, const Limits& limits,
                      const std::string& field, Errors& errs) {
  if (!errs.WithinLimit(tolerations, limits.max_device_tolerations, field)) return;
  const auto effects = TaintEffects(limits);
  for (size_t i = 0; i < tolerations.size(); ++i) {
    const auto& t = tolerations[i];
    const std::string entry = Index(field, i);
    if (!t.key.empty()) errs.Check(ValidateLabelKey(t.key, entry + ".key"), entry + ".key");
    if (t.operator_name == "Exists") {
      if (!t.value.empty()) {
        errs.Invalid(entry + ".value",
                     "Invalid value: \"" + t.value + "\": must be empty for operator `Exists`");
      }
    } else if (t.operator_name.empty() || t.operator_name == "Equal") {
      errs.Check(ValidateLabelValue(t.value, entry + ".value"), entry + ".value");
    } else {
      errs.NotSupported(entry + ".operator", t.operator_name, {"Equal", "Exists"});
    }
    if (!t.effect.empty() && std::find(effects.begin(), effects.end(), t.effect) == effects.end()) {
      errs.NotSupported(entry + ".effect", t.effect, effects);
    }
  }
}

void CheckCapacityRequests(const std::optional<resource::CapacityRequirements>& capacity,
                           const std::string& field, Errors& errs) {
  if (!capacity) return;
  for (const auto& [name, quantity] : capacity->requests) {
    const std::string key = Key(field + ".requests", name);
    errs.Check(ValidateQualifiedName(name, key), key);
    CheckQuantity(quantity, key, errs);
  }
}

// A RawExtension that must be a JSON object of at most `max` bytes.
void CheckRawObject(const json& value, int max, const std::string& field, Errors& errs) {
  if (value.is_null()) {
    errs.Required(field);
    return;
  }
  const size_t bytes = value.dump().size();
  if (Over(bytes, max)) {
    errs.TooLong(field, bytes, max);
  } else if (!value.is_object()) {
    errs.Invalid(field, "Invalid value: \"<value omitted>\": must be a valid JSON object");
  }
}

void CheckOpaque(const std::optional<OpaqueDeviceConfiguration>& opaque, const Limits& limits,
                 const std::string& field, Errors& errs) {
  if (!opaque) {
    errs.Required(field + ".opaque");
    return;
  }
  errs.RequiredValid(opaque->driver, ValidateDriverName, field + ".opaque.driver");
  CheckRawObject(opaque->parameters, limits.max_opaque_parameters_bytes,
                 field + ".opaque.parameters", errs);
}

// What an exact request and a subrequest (ExactDeviceRequest, DeviceSubRequest) have in common.
template <typename Request>
void CheckRequestBody(const Request& request, const Limits& limits, const std::string& field,
                      Errors& errs) {
  CheckClassName(request.device_class_name, field + ".deviceClassName", errs);
  CheckSelectors(request.selectors, limits, field + ".selectors", errs);
  CheckAllocationMode(request.allocation_mode, request.count, field, errs);
  CheckTolerations(request.tolerations, limits, field + ".tolerations", errs);
  CheckCapacityRequests(request.capacity, field + ".capacity", errs);
}

// Requests or subrequests, at most `max`: each named, `check`ed and then unique by name.
template <typename Request, typename Check>
void CheckRequestList(const std::vector<Request>& requests, int max, const std::string& field,
                      Errors& errs, Check check) {
  if (!errs.WithinLimit(requests, max, field)) return;
  std::set<std::string> seen;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& request = requests[i];
    const std::string entry = Index(field, i);
    CheckRequestName(request.name, entry + ".name", errs);
    check(request, entry);
    if (!request.name.empty() && !seen.insert(request.name).second) {
      errs.Duplicate(entry, request.name);
    }
  }
}

void CheckDeviceClaim(const resource::DeviceClaim& claim, const Limits& limits,
                      const std::string& field, Errors& errs) {
  const RequestNames names = GatherRequestNames(claim);
  CheckRequestList(
      claim.requests, limits.max_device_requests, field + ".requests", errs,
      [&](const resource::DeviceRequest& request, const std::string& entry) {
        const bool has_exactly = request.exactly.has_value();
        const bool has_first = !request.first_available.empty();
        if (!has_exactly && !has_first) {
          errs.Required(entry, "exactly one of `exactly` or `firstAvailable` is required");
        } else if (has_exactly && has_first) {
          errs.Invalid(entry,
                       "Invalid value: null: exactly one of `exactly` or `firstAvailable` is "
                       "required, but multiple fields are set");
        } else if (has_exactly) {
          CheckRequestBody(*request.exactly, limits, entry + ".exactly", errs);
        } else {
          CheckRequestList(request.first_available, limits.max_first_available_subrequests,
                           entry + ".firstAvailable", errs,
                           [&](const resource::DeviceSubRequest& sub, const std::string& sf) {
                             CheckRequestBody(sub, limits, sf, errs);
                           });
        }
      });
  const std::string constraints = field + ".constraints";
  if (errs.WithinLimit(claim.constraints, limits.max_device_constraints, constraints)) {
    for (size_t i = 0; i < claim.constraints.size(); ++i) {
      const auto& c = claim.constraints[i];
      const std::string entry = Index(constraints, i);
      CheckRequestRefs(c.requests, names, limits, entry + ".requests", errs);
      if (c.match_attribute && c.distinct_attribute) {
        errs.Invalid(entry,
                     "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, "
                     "but multiple fields are set");
      } else if (c.match_attribute) {
        errs.Check(ValidateFullyQualifiedName(*c.match_attribute, entry + ".matchAttribute"),
                   entry + ".matchAttribute");
      } else if (c.distinct_attribute) {
        errs.Check(ValidateFullyQualifiedName(*c.distinct_attribute, entry + ".distinctAttribute"),
                   entry + ".distinctAttribute");
      } else {
        errs.Required(entry,
                      "exactly one of \"matchAttribute\" or \"distinctAttribute\" is "
                      "required");
      }
    }
  }
  const std::string config = field + ".config";
  if (errs.WithinLimit(claim.config, limits.max_device_configs, config)) {
    for (size_t i = 0; i < claim.config.size(); ++i) {
      const std::string entry = Index(config, i);
      CheckRequestRefs(claim.config[i].requests, names, limits, entry + ".requests", errs);
      CheckOpaque(claim.config[i].opaque, limits, entry, errs);
    }
  }
}

// DeviceClass extendedResourceName: a label key with a domain, outside kubernetes.io, that is a
// valid name once prefixed with "requests.".
void CheckExtendedResourceName(const std::string& name, const std::string& field, Errors& errs) {
  const size_t slash = name.find('/');
  const std::string domain = slash == std::string::npos ? "" : name.substr(0, slash);
  const bool native = slash == std::string::npos || domain == "kubernetes.io" ||
                      (domain.size() > 14 && domain.ends_with(".kubernetes.io"));
  if (native || name.starts_with("requests.") ||
      !ValidateLabelKey("requests." + name, field).ok()) {
    errs.Invalid(field, "Invalid value: \"" + name + "\": must be a valid extended resource name");
  }
}

void CheckAllocationResult(const resource::AllocationResult& allocation, const RequestNames& names,
                           const Limits& limits, const std::string& field, Errors& errs) {
  const std::string results = field + ".devices.results";
  const auto& devices = allocation.devices;
  if (errs.WithinLimit(devices.results, limits.max_device_requests, results)) {
    for (size_t i = 0; i < devices.results.size(); ++i) {
      const auto& r = devices.results[i];
      const std::string entry = Index(results, i);
      CheckRequestRef(r.request, names, entry + ".request", errs);
      errs.RequiredValid(r.driver, ValidateDriverName, entry + ".driver");
      errs.RequiredValid(r.pool, ValidatePoolName, entry + ".pool");
      errs.RequiredValid(r.device, ValidateDnsLabel, entry + ".device");
      CheckBindingConditions(r.binding_conditions, r.binding_failure_conditions, limits, entry,
                             errs);
      if (r.share_id) errs.Check(ValidateUuid(*r.share_id, entry + ".shareID"), entry + ".shareID");
    }
  }
  const std::string config = field + ".devices.config";
  if (errs.WithinLimit(devices.config, limits.max_allocation_configs, config)) {
    for (size_t i = 0; i < devices.config.size(); ++i) {
      const auto& c = devices.config[i];
      const std::string entry = Index(config, i);
      if (c.source.empty()) {
        errs.Required(entry + ".source");
      } else if (c.source != "FromClaim" && c.source != "FromClass") {
        errs.NotSupported(entry + ".source", c.source, {"FromClaim", "FromClass"});
      }
      CheckRequestRefs(c.requests, names, limits, entry + ".requests", errs);
      CheckOpaque(c.opaque, limits, entry, errs);
    }
  }
  if (allocation.node_selector && !allocation.node_selector->is_null()) {
    CheckNodeSelector(*allocation.node_selector, field + ".nodeSelector", errs);
  }
}

void CheckClaimStatus(const resource::ResourceClaim& claim, const resource::ResourceClaim* old,
                      const Limits& limits, Errors& errs) {
  const auto& status = claim.status;
  const RequestNames names = GatherRequestNames(claim.spec.devices);
  const std::string reserved = "status.reservedFor";
  if (errs.WithinLimit(status.reserved_for, limits.max_reserved_for, reserved)) {
    std::set<std::string> uids;
    for (size_t i = 0; i < status.reserved_for.size(); ++i) {
      const auto& ref = status.reserved_for[i];
      const std::string entry = Index(reserved, i);
      if (ref.resource.empty()) errs.Required(entry + ".resource");
      if (ref.name.empty()) errs.Required(entry + ".name");
      if (ref.uid.empty()) errs.Required(entry + ".uid");
      if (!ref.uid.empty() && !uids.insert(ref.uid).second) errs.Duplicate(entry, ref.uid);
    }
  }
  std::set<std::string> allocated;
  if (status.allocation) {
    for (const auto& r : status.allocation->devices.results) {
      allocated.insert(r.driver + "/" + r.pool + "/" + r.device + "/" + r.share_id.value_or(""));
    }
  }
  std::set<std::string> device_ids;
  for (size_t i = 0; i < status.devices.size(); ++i) {
    const auto& d = status.devices[i];
    const std::string entry = Index("status.devices", i);
    errs.RequiredValid(d.driver, ValidateDriverName, entry + ".driver");
    errs.RequiredValid(d.pool, ValidatePoolName, entry + ".pool");
    errs.RequiredValid(d.device, ValidateDnsLabel, entry + ".device");
    if (d.share_id) errs.Check(ValidateUuid(*d.share_id, entry + ".shareID"), entry + ".shareID");
    const std::string id = d.driver + "/" + d.pool + "/" + d.device + "/" + d.share_id.value_or("");
    if (allocated.count(id) == 0) {
      errs.Invalid(entry,
                   "Invalid value: \"" + id + "\": must be an allocated device in the claim");
    }
    if (!device_ids.insert(id).second) errs.Duplicate(entry, id);
    if (Over(d.conditions.size(), limits.max_allocated_device_conditions)) {
      errs.TooMany(entry + ".conditions", d.conditions.size(),
                   limits.max_allocated_device_conditions);
    }
    if (d.data && !d.data->is_null()) {
      CheckRawObject(*d.data, limits.max_allocated_device_data_bytes, entry + ".data", errs);
    }
    if (d.network_data) {
      const auto& n = *d.network_data;
      const std::string nf = entry + ".networkData";
      if (Over(n.interface_name.size(), limits.max_network_interface_name_bytes)) {
        errs.TooLong(nf + ".interfaceName", n.interface_name.size(),
                     limits.max_network_interface_name_bytes);
      }
      if (Over(n.hardware_address.size(), limits.max_network_hardware_address_bytes)) {
        errs.TooLong(nf + ".hardwareAddress", n.hardware_address.size(),
                     limits.max_network_hardware_address_bytes);
      }
      if (errs.WithinLimit(n.ips, limits.max_network_ips, nf + ".ips")) {
        std::set<std::string> ips;
        for (size_t j = 0; j < n.ips.size(); ++j) {
          if (n.ips[j].find('/') == std::string::npos) {
            errs.Invalid(Index(nf + ".ips", j),
                         "Invalid value: \"" + n.ips[j] +
                             "\": must be an IP address in CIDR form, (e.g. 10.9.8.7/24)");
          }
          if (!ips.insert(n.ips[j]).second) errs.Duplicate(Index(nf + ".ips", j), n.ips[j]);
        }
      }
    }
  }
  if (!status.reserved_for.empty()) {
    if (!status.allocation) {
      errs.Forbidden(reserved, "may not be specified when `allocated` is not set");
    } else if (old != nullptr && claim.metadata.deletion_timestamp) {
      for (const auto& ref : status.reserved_for) {
        if (std::find(old->status.reserved_for.begin(), old->status.reserved_for.end(), ref) ==
            old->status.reserved_for.end()) {
          errs.Forbidden(reserved,
                         "new entries may not be added while `deallocationRequested` or "
                         "`deletionTimestamp` are set");
          break;
        }
      }
    }
  }
  if (old != nullptr && old->status.allocation && status.allocation) {
    if (*old->status.allocation != *status.allocation) {
      errs.Invalid("status.allocation", "Invalid value: field is immutable");
    }
  } else if (status.allocation) {
    CheckAllocationResult(*status.allocation, names, limits, "status.allocation", errs);
  }
}

}  // namespace

FieldErrors DeviceClassErrors(const resource::DeviceClass& device_class, KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(device_class.metadata, false, limits, errs);
  const auto& spec = device_class.spec;
  CheckSelectors(spec.selectors, limits, "spec.selectors", errs);
  if (errs.WithinLimit(spec.config, limits.max_device_configs, "spec.config")) {
    for (size_t i = 0; i < spec.config.size(); ++i) {
      CheckOpaque(spec.config[i].opaque, limits, Index("spec.config", i), errs);
    }
  }
  if (spec.extended_resource_name) {
    CheckExtendedResourceName(*spec.extended_resource_name, "spec.extendedResourceName", errs);
  }
  return errs.Take();
}

Status ValidateDeviceClass(const resource::DeviceClass& device_class, KubeVersion version) {
  return ToStatus(DeviceClassErrors(device_class, version));
}

FieldErrors ResourceClaimErrors(const resource::ResourceClaim& claim, KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(claim.metadata, true, limits, errs);
  CheckDeviceClaim(claim.spec.devices, limits, "spec.devices", errs);
  return errs.Take();
}

Status ValidateResourceClaim(const resource::ResourceClaim& claim, KubeVersion version) {
  return ToStatus(ResourceClaimErrors(claim, version));
}

FieldErrors ResourceClaimUpdateErrors(const resource::ResourceClaim& old_claim,
                                      const resource::ResourceClaim& claim, KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(claim.metadata, true, limits, errs);
  CheckMetaUpdate(claim.metadata, old_claim.metadata, errs);
  if (claim.spec != old_claim.spec) errs.Invalid("spec", "Invalid value: field is immutable");
  return errs.Take();
}

FieldErrors ResourceClaimStatusUpdateErrors(const resource::ResourceClaim& old_claim,
                                            const resource::ResourceClaim& claim,
                                            KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckMetaUpdate(claim.metadata, old_claim.metadata, errs);
  CheckClaimStatus(claim, &old_claim, limits, errs);
  return errs.Take();
}

FieldErrors ResourceClaimTemplateErrors(const resource::ResourceClaimTemplate& claim_template,
                                        KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(claim_template.metadata, true, limits, errs);
  const auto& meta = claim_template.spec.metadata;
  for (const auto& [key, value] : meta.labels) {
    const std::string path = Key("spec.metadata.labels", key);
    errs.Check(ValidateLabelKey(key, path), path);
    errs.Check(ValidateLabelValue(value, path), path);
  }
  for (const auto& [key, value] : meta.annotations) {
    const std::string path = Key("spec.metadata.annotations", key);
    errs.Check(ValidateAnnotationKey(key, path), path);
  }
  CheckDeviceClaim(claim_template.spec.spec.devices, limits, "spec.spec.devices", errs);
  return errs.Take();
}

Status ValidateResourceClaimTemplate(const resource::ResourceClaimTemplate& claim_template,
                                     KubeVersion version) {
  return ToStatus(ResourceClaimTemplateErrors(claim_template, version));
}

FieldErrors ResourceClaimTemplateUpdateErrors(const resource::ResourceClaimTemplate& old_template,
                                              const resource::ResourceClaimTemplate& claim_template,
                                              KubeVersion version) {
  const Limits limits = LimitsFor(version);
  Errors errs;
  CheckObjectMeta(claim_template.metadata, true, limits, errs);
  CheckMetaUpdate(claim_template.metadata, old_template.metadata, errs);
  if (claim_template.spec != old_template.spec) {
    errs.Invalid("spec", "Invalid value: field is immutable");
  }
  return errs.Take();
}

}  // namespace xpu::api
