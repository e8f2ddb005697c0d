#include "api/shared_validation.h"

#include <exception>
#include <set>
#include <string>

namespace xpu::api::checks {

using nlohmann::json;

namespace {
namespace shared_validation_cc {

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

}  // namespace shared_validation_cc
}  // namespace

void CheckObjectMeta(const ObjectMeta& meta, bool namespaced, const Limits& limits, Errors& errs,
                     const std::string& field, bool name_is_label) {
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

void CheckMetaUpdate(const ObjectMeta& meta, const ObjectMeta& old, Errors& errs) {
  constexpr const char* kImmutable = "Invalid value: field is immutable";
  if (meta.name != old.name) errs.Invalid("metadata.name", kImmutable);
  if (meta.namespace_name != old.namespace_name) errs.Invalid("metadata.namespace", kImmutable);
  if (!meta.uid.empty() && !old.uid.empty() && meta.uid != old.uid) {
    errs.Invalid("metadata.uid", kImmutable);
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
      shared_validation_cc::CheckNodeSelectorRequirement(
          expressions[j], Index(term + ".matchExpressions", j), errs);
    }
    const json fields = terms[i].value("matchFields", json::array());
    for (size_t j = 0; fields.is_array() && j < fields.size(); ++j) {
      shared_validation_cc::CheckNodeFieldRequirement(fields[j], Index(term + ".matchFields", j),
                                                      errs);
    }
  }
}

std::vector<std::string> TaintEffects(const Limits& limits) {
  if (limits.taint_effect_none_allowed) return {"NoExecute", "NoSchedule", "None"};
  return {"NoExecute", "NoSchedule"};
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

}  // namespace xpu::api::checks
