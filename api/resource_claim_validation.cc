// ResourceClaim, ResourceClaimTemplate and DeviceClass validation (resource_validation.h): device
// requests, constraints and config, and the claim's status.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/field_errors.h"
#include "api/resource_validation.h"
#include "api/shared_validation.h"

namespace xpu::api {
namespace {
namespace resource_claim_validation_cc {

using checks::Errors;
using checks::Index;

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

void CheckSelectors(const std::vector<resource::DeviceSelector>& selectors, const Limits& limits,
                    const std::string& field, Errors& errs) {
  if (!errs.WithinLimit(selectors, limits.max_device_selectors, field)) return;
  for (size_t i = 0; i < selectors.size(); ++i) {
    const std::string cel = Index(field, i) + ".cel";
    if (!selectors[i].cel) {
      errs.Required(cel);
    } else if (selectors[i].cel->expression.empty()) {
      errs.Required(cel + ".expression");
    } else if (checks::Over(selectors[i].cel->expression.size(), limits.max_cel_expression_bytes)) {
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

void CheckTolerations(const std::vector<resource::DeviceToleration>& tolerations,
                      const Limits& limits, const std::string& field, Errors& errs) {
  if (!errs.WithinLimit(tolerations, limits.max_device_tolerations, field)) return;
  const auto effects = checks::TaintEffects(limits);
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
    const std::string key = checks::Key(field + ".requests", name);
    errs.Check(ValidateQualifiedName(name, key), key);
    checks::CheckQuantity(quantity, key, errs);
  }
}

// A RawExtension that must be a JSON object of at most `max` bytes.
void CheckRawObject(const nlohmann::json& value, int max, const std::string& field, Errors& errs) {
  if (value.is_null()) {
    errs.Required(field);
    return;
  }
  const size_t bytes = value.dump().size();
  if (checks::Over(bytes, max)) {
    errs.TooLong(field, bytes, max);
  } else if (!value.is_object()) {
    errs.Invalid(field, "Invalid value: \"<value omitted>\": must be a valid JSON object");
  }
}

void CheckOpaque(const std::optional<resource::OpaqueDeviceConfiguration>& opaque,
                 const Limits& limits, const std::string& field, Errors& errs) {
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
      checks::CheckBindingConditions(r.binding_conditions, r.binding_failure_conditions, limits,
                                     entry, errs);
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
    checks::CheckNodeSelector(*allocation.node_selector, field + ".nodeSelector", errs);
  }
}

// A device's networkData: interface name and hardware address lengths, at most the limit of IPs,
// each in CIDR form and unique.
void CheckNetworkData(const resource::NetworkDeviceData& n, const Limits& limits,
                      const std::string& nf, Errors& errs) {
  if (checks::Over(n.interface_name.size(), limits.max_network_interface_name_bytes)) {
    errs.TooLong(nf + ".interfaceName", n.interface_name.size(),
                 limits.max_network_interface_name_bytes);
  }
  if (checks::Over(n.hardware_address.size(), limits.max_network_hardware_address_bytes)) {
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
    if (checks::Over(d.conditions.size(), limits.max_allocated_device_conditions)) {
      errs.TooMany(entry + ".conditions", d.conditions.size(),
                   limits.max_allocated_device_conditions);
    }
    if (d.data && !d.data->is_null()) {
      CheckRawObject(*d.data, limits.max_allocated_device_data_bytes, entry + ".data", errs);
    }
    if (d.network_data) CheckNetworkData(*d.network_data, limits, entry + ".networkData", errs);
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

}  // namespace resource_claim_validation_cc
}  // namespace

FieldErrors DeviceClassErrors(const resource::DeviceClass& device_class, KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(device_class.metadata, false, limits, errs);
    const auto& spec = device_class.spec;
    resource_claim_validation_cc::CheckSelectors(spec.selectors, limits, "spec.selectors", errs);
    if (errs.WithinLimit(spec.config, limits.max_device_configs, "spec.config")) {
      for (size_t i = 0; i < spec.config.size(); ++i) {
        resource_claim_validation_cc::CheckOpaque(spec.config[i].opaque, limits,
                                                  checks::Index("spec.config", i), errs);
      }
    }
    if (spec.extended_resource_name) {
      resource_claim_validation_cc::CheckExtendedResourceName(*spec.extended_resource_name,
                                                              "spec.extendedResourceName", errs);
    }
  });
}

Status ValidateDeviceClass(const resource::DeviceClass& device_class, KubeVersion version) {
  return ToStatus(DeviceClassErrors(device_class, version));
}

FieldErrors ResourceClaimErrors(const resource::ResourceClaim& claim, KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(claim.metadata, true, limits, errs);
    resource_claim_validation_cc::CheckDeviceClaim(claim.spec.devices, limits, "spec.devices",
                                                   errs);
  });
}

Status ValidateResourceClaim(const resource::ResourceClaim& claim, KubeVersion version) {
  return ToStatus(ResourceClaimErrors(claim, version));
}

FieldErrors ResourceClaimUpdateErrors(const resource::ResourceClaim& old_claim,
                                      const resource::ResourceClaim& claim, KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(claim.metadata, true, limits, errs);
    checks::CheckMetaUpdate(claim.metadata, old_claim.metadata, errs);
    if (claim.spec != old_claim.spec) errs.Invalid("spec", "Invalid value: field is immutable");
  });
}

FieldErrors ResourceClaimStatusUpdateErrors(const resource::ResourceClaim& old_claim,
                                            const resource::ResourceClaim& claim,
                                            KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckMetaUpdate(claim.metadata, old_claim.metadata, errs);
    resource_claim_validation_cc::CheckClaimStatus(claim, &old_claim, limits, errs);
  });
}

FieldErrors ResourceClaimTemplateErrors(const resource::ResourceClaimTemplate& claim_template,
                                        KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(claim_template.metadata, true, limits, errs);
    const auto& meta = claim_template.spec.metadata;
    for (const auto& [key, value] : meta.labels) {
      const std::string path = checks::Key("spec.metadata.labels", key);
      errs.Check(ValidateLabelKey(key, path), path);
      errs.Check(ValidateLabelValue(value, path), path);
    }
    for (const auto& [key, value] : meta.annotations) {
      const std::string path = checks::Key("spec.metadata.annotations", key);
      errs.Check(ValidateAnnotationKey(key, path), path);
    }
    resource_claim_validation_cc::CheckDeviceClaim(claim_template.spec.spec.devices, limits,
                                                   "spec.spec.devices", errs);
  });
}

Status ValidateResourceClaimTemplate(const resource::ResourceClaimTemplate& claim_template,
                                     KubeVersion version) {
  return ToStatus(ResourceClaimTemplateErrors(claim_template, version));
}

FieldErrors ResourceClaimTemplateUpdateErrors(const resource::ResourceClaimTemplate& old_template,
                                              const resource::ResourceClaimTemplate& claim_template,
                                              KubeVersion version) {
  return checks::Collect(version, [&](const Limits& limits, checks::Errors& errs) {
    checks::CheckObjectMeta(claim_template.metadata, true, limits, errs);
    checks::CheckMetaUpdate(claim_template.metadata, old_template.metadata, errs);
    if (claim_template.spec != old_template.spec) {
      errs.Invalid("spec", "Invalid value: field is immutable");
    }
  });
}

}  // namespace xpu::api
