// Field validation with the rules the Kubernetes API server applies to resource.k8s.io objects
// (see docs/reference/dra-api.md §1.2, §1.8, §5), so that a driver catches a bad name before it
// publishes a ResourceSlice.
//
// Each Validate* function is pure and returns OK or an invalid-argument Status whose message
// names the field, the value and the rule, e.g.
//   spec.devices[3].name: "GPU_0" is not a DNS label: must consist of lower-case letters, ...
// `field` is the path used as the message prefix; when empty the message starts with the value.
// Long values are shortened in messages and control characters escaped. Lengths are in bytes,
// as Kubernetes counts them.
#ifndef XPU_API_VALIDATION_H_
#define XPU_API_VALIDATION_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::api {

// One problem found by an object validator, as the API server reports it in a Status cause.
enum class FieldErrorType {
  kInvalid,       // FieldValueInvalid
  kRequired,      // FieldValueRequired
  kDuplicate,     // FieldValueDuplicate
  kNotSupported,  // FieldValueNotSupported
  kForbidden,     // FieldValueForbidden
  kTooLong,       // FieldValueTooLong
  kTooMany,       // FieldValueTooMany
};

// The Kubernetes cause reason of `type`, e.g. "FieldValueInvalid".
std::string_view FieldErrorReason(FieldErrorType type);

struct FieldError {
  FieldErrorType type = FieldErrorType::kInvalid;
  std::string field;   // e.g. "spec.devices[3].name"
  std::string detail;  // the message without the field, e.g. "Required value"
  // "<field>: <detail>", or the detail alone when there is no field.
  std::string ToString() const;
  friend bool operator==(const FieldError&, const FieldError&) = default;
};

// All problems of one object, in the order the validator checks fields.
using FieldErrors = std::vector<FieldError>;

// OK for no errors; otherwise kInvalidArgument whose message is the first error, followed by
// " (and N more)" when there are more.
Status ToStatus(const FieldErrors& errors);
// All errors in the API server's form: the one error, or "[e1, e2, ...]".
std::string JoinFieldErrors(const FieldErrors& errors);
// A FieldError from a non-OK Status of the Validate* functions below (called with `field`): the
// "<field>: " prefix becomes the field and the rest follows "Invalid value: " in the detail.
// FieldValueInvalid.
FieldError FieldErrorFromStatus(const Status& status, const std::string& field);

inline constexpr int kMaxDnsLabelLength = 63;
// The RFC 1123 label as a JSON-schema pattern (the length limit is apart: kMaxDnsLabelLength).
inline constexpr std::string_view kDnsLabelPattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
inline constexpr int kMaxDnsSubdomainLength = 253;
inline constexpr int kMaxLabelValueLength = 63;
inline constexpr int kMaxDriverNameLength = 63;      // DriverNameMaxLength
inline constexpr int kMaxPoolNameLength = 253;       // PoolNameMaxLength
inline constexpr int kMaxDeviceIdLength = 32;        // DeviceMaxIDLength
inline constexpr int kMaxDeviceDomainLength = 63;    // DeviceMaxDomainLength
inline constexpr int kMaxAttributeValueLength = 64;  // DeviceAttributeMaxValueLength

// RFC 1123 label: 1..63 of [a-z0-9-], starting and ending with [a-z0-9].
bool IsDnsLabel(std::string_view value);
// RFC 1123 subdomain: 1..253 bytes of DNS labels joined by '.'. As in Kubernetes, the labels
// inside a subdomain are not limited to 63 bytes each.
bool IsDnsSubdomain(std::string_view value);
// [A-Za-z_][A-Za-z0-9_]*, no length limit.
bool IsCIdentifier(std::string_view value);

Status ValidateDnsLabel(std::string_view value, std::string_view field);
Status ValidateDnsSubdomain(std::string_view value, std::string_view field);
Status ValidateCIdentifier(std::string_view value, std::string_view field);

// A device attribute or capacity name (QualifiedName): a C identifier of at most 32 bytes,
// implicitly in the driver's domain, or "<domain>/<C identifier>" where the domain follows the
// driver-name rules (at most 63 bytes).
Status ValidateQualifiedName(std::string_view value, std::string_view field);
// A QualifiedName that must carry its domain ("resource.kubernetes.io/pcieRoot"), as
// matchAttribute and distinctAttribute need.
Status ValidateFullyQualifiedName(std::string_view value, std::string_view field);

// A label key (Kubernetes "qualified name"), also used for taint keys: an optional DNS subdomain
// prefix of at most 253 bytes and '/', then a name of 1..63 bytes of [A-Za-z0-9-_.] starting and
// ending with [A-Za-z0-9].
Status ValidateLabelKey(std::string_view value, std::string_view field);
// A label value (also a taint value): empty, or 1..63 bytes like the name part of a label key.
Status ValidateLabelValue(std::string_view value, std::string_view field);

// A resource pool name: at most 253 bytes, one or more DNS subdomains joined by '/'.
Status ValidatePoolName(std::string_view value, std::string_view field);
// A driver name: at most 63 bytes and a DNS subdomain. Upper case is tolerated, as the API server
// does (it checks the lower-cased name, like CSI driver names); drivers should use lower case.
Status ValidateDriverName(std::string_view value, std::string_view field);
// A label key (ValidateLabelKey) as an annotation key: the API server checks the lower-cased key.
Status ValidateAnnotationKey(std::string_view value, std::string_view field);
// A generateName prefix: a DNS subdomain once a trailing '-' is masked, at most 253 bytes.
Status ValidateGenerateName(std::string_view value, std::string_view field);
// An RFC 3339 timestamp as metav1.Time accepts it: "2006-01-02T15:04:05Z" or with a numeric
// offset and optional fractional seconds.
Status ValidateTimestamp(std::string_view value, std::string_view field);
// A node name: a DNS subdomain.
Status ValidateNodeName(std::string_view value, std::string_view field);

// A string device attribute value: at most 64 bytes (may be empty).
Status ValidateAttributeString(std::string_view value, std::string_view field);
// A version device attribute value: strict semantic version 2.0.0 of at most 64 bytes:
// MAJOR.MINOR.PATCH without leading zeros (at most 18 digits each, as Kubernetes 1.38 requires),
// an optional "-" pre-release of dot-separated [0-9A-Za-z-] identifiers (numeric ones without
// leading zeros and of at most 18 digits), an optional "+" build of dot-separated [0-9A-Za-z-]
// identifiers; no "v" prefix, no empty identifiers.
Status ValidateVersionAttribute(std::string_view value, std::string_view field);
// An RFC 4122 UUID in lower-case 8-4-4-4-12 hex form (e.g. a shareID). Version and variant bits
// are not checked.
Status ValidateUuid(std::string_view value, std::string_view field);

// The Kubernetes releases whose resource.k8s.io limits differ.
enum class KubeVersion {
  k1_34,
  k1_35,  // also 1.36 for the numbers below (1.36 adds list attributes, not covered here)
};

// Per-release limits of resource.k8s.io objects (docs/reference/dra-api.md §1.8). kNoLimit marks a
// limit the release does not have (it was added or replaced in another release).
struct Limits {
  static constexpr int kNoLimit = std::numeric_limits<int>::max();

  // ResourceSlice.
  int max_devices_per_slice = 128;
  // Devices per slice when any device has taints or consumesCounters (1.35: 64).
  int max_devices_per_slice_with_taints_or_counters = 128;
  int max_attributes_and_capacities_per_device = 32;
  int max_taints_per_device = 4;  // 1.35: 16
  int max_binding_conditions_per_device = 4;
  int max_binding_failure_conditions_per_device = 4;
  int max_capacity_valid_values = 10;
  // 1.34: counters summed over all of a slice's counter sets; 1.35 replaces it with
  // max_counter_sets_per_slice and max_counters_per_counter_set.
  int max_shared_counters_per_slice = 32;
  int max_counter_sets_per_slice = kNoLimit;    // 1.35: 8
  int max_counters_per_counter_set = kNoLimit;  // 1.35: 32
  // 1.34: counters summed over a device's consumesCounters, and over all devices of a slice;
  // 1.35 replaces both with the two limits after them.
  int max_counters_per_device = 32;
  int max_device_counters_per_slice = 1024;
  int max_counter_consumptions_per_device = kNoLimit;   // 1.35: 2
  int max_counters_per_counter_consumption = kNoLimit;  // 1.35: 32
  // 1.35: a slice carries devices or sharedCounters, not both; counter-set names are unique per
  // pool and consumesCounters resolves sets pool-wide (1.34: within the slice).
  bool slice_may_mix_devices_and_counters = true;
  bool counter_sets_pool_wide = false;
  // 1.35: the taint effect "None" is allowed besides NoSchedule and NoExecute.
  bool taint_effect_none_allowed = false;

  // ResourceClaim and DeviceClass.
  int max_device_requests = 32;  // also AllocationResultsMaxSize
  int max_device_constraints = 32;
  int max_device_configs = 32;
  int max_allocation_configs = 64;
  int max_device_selectors = 32;
  int max_first_available_subrequests = 8;
  int max_device_tolerations = 16;
  int max_cel_expression_bytes = 10240;
  int64_t max_cel_cost = 1'000'000;
  int max_opaque_parameters_bytes = 10240;
  int max_reserved_for = 256;
  int max_allocated_device_conditions = 8;
  int max_allocated_device_data_bytes = 10240;
  int max_network_ips = 16;
  int max_network_interface_name_bytes = 256;
  int max_network_hardware_address_bytes = 128;

  // Object metadata: the sum of annotation key and value bytes (TotalAnnotationSizeLimitB).
  int max_annotations_bytes = 256 * 1024;
};

// "1.34" or "1.35" (also accepts "v1.35" and "1.35.0"); nullopt otherwise.
std::optional<KubeVersion> ParseKubeVersion(std::string_view text);
// "1.34", "1.35".
std::string_view KubeVersionName(KubeVersion version);

// The limits of `version`.
Limits LimitsFor(KubeVersion version);

}  // namespace xpu::api

#endif  // XPU_API_VALIDATION_H_
