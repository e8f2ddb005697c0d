// Server-side validation of resource.k8s.io/v1 objects with the rules and per-release limits of
// the Kubernetes API server (docs/reference/dra-api.md §1.2, §1.4-§1.6, §1.8), so that a driver
// (and kube-sim) rejects an object the API server would reject.
//
// Each `...Errors` function returns every problem found, in field order, as the API server lists
// them in a Status' causes; the `Validate...` wrappers return OK or kInvalidArgument whose message
// is the first problem with its field path, plus " (and N more)":
//   spec.devices[3].attributes["bad name"]: ...
// Pure functions; the objects are read as sent (the server's defaulting is applied where it
// matters: an empty allocationMode is ExactCount, a zero count is 1, an empty toleration operator
// is Equal).
//
// ResourceSlice: metadata (name or generateName, labels, annotations, finalizers), driver, pool
// name / generation / resourceSliceCount, the one-of node selection, nodeName, the nodeSelector
// (exactly one term; matchExpressions keys, operators and values; matchFields only metadata.name
// with In/NotIn and one value), the device count (the lower limit when a device has taints or
// consumesCounters), device names (DNS labels, unique in the slice), attributes + capacities per
// device, attribute and capacity names, exactly one value per attribute, string and version
// values, capacity quantities, requestPolicy (only with allowMultipleAllocations; validValues
// sorted, unique, at most 10, within the capacity and holding the default; validRange min / max /
// step against the default and the capacity), taints (count, key, value, effect, timeAdded as RFC
// 3339), binding conditions (count, label keys, unique, not overlapping, both lists or neither),
// per-device node selection, sharedCounters, consumesCounters (names, one entry per set,
// quantities, counts; 1.34: the set and its counters exist in the same slice), and 1.35's
// "devices or sharedCounters, not both". Update: name, driver, pool name and nodeName are
// immutable; unchanged taints of a device are not re-validated.
//
// DeviceClass: metadata, selectors (count, CEL expression present and at most 10 KiB; the CEL
// itself is not compiled), config (count, opaque driver, parameters a JSON object of at most
// 10 KiB), extendedResourceName.
//
// ResourceClaim / ResourceClaimTemplate: metadata (namespace required), requests (count, DNS-label
// names, unique, exactly one of exactly / firstAvailable, deviceClassName, selectors,
// allocationMode and count, tolerations, capacity requests, at most 8 unique subrequests),
// constraints (count, request references, exactly one of matchAttribute / distinctAttribute, fully
// qualified), config (count, request references, opaque). Update: the spec is immutable. Status
// update: reservedFor (count, fields, unique uids, only when allocated, none added while being
// deleted), allocation (immutable once set; results, config and nodeSelector on first set),
// devices (fields, an allocated device, conditions, data, networkData).
//
// Implemented in resource_slice_validation.cc and resource_claim_validation.cc, on the collector of
// field_errors.h and the shared checks of shared_validation.h.
//
// Not checked: pool-wide rules that span slices (device names, 1.35 counter-set names and
// consumesCounters references), CEL compilation and cost, adminAccess' namespace label, ownerRef
// contents.
#ifndef XPU_API_RESOURCE_VALIDATION_H_
#define XPU_API_RESOURCE_VALIDATION_H_

#include "api/resource.h"
#include "api/validation.h"
#include "base/status.h"

namespace xpu::api {

FieldErrors ResourceSliceErrors(const resource::ResourceSlice& slice, KubeVersion version);
Status ValidateResourceSlice(const resource::ResourceSlice& slice, KubeVersion version);
// An update of `old_slice` to `slice`.
FieldErrors ResourceSliceUpdateErrors(const resource::ResourceSlice& old_slice,
                                      const resource::ResourceSlice& slice, KubeVersion version);
Status ValidateResourceSliceUpdate(const resource::ResourceSlice& old_slice,
                                   const resource::ResourceSlice& slice, KubeVersion version);

FieldErrors DeviceClassErrors(const resource::DeviceClass& device_class, KubeVersion version);
Status ValidateDeviceClass(const resource::DeviceClass& device_class, KubeVersion version);

FieldErrors ResourceClaimErrors(const resource::ResourceClaim& claim, KubeVersion version);
Status ValidateResourceClaim(const resource::ResourceClaim& claim, KubeVersion version);
// An update of the main resource (spec immutable) and of the status subresource.
FieldErrors ResourceClaimUpdateErrors(const resource::ResourceClaim& old_claim,
                                      const resource::ResourceClaim& claim, KubeVersion version);
FieldErrors ResourceClaimStatusUpdateErrors(const resource::ResourceClaim& old_claim,
                                            const resource::ResourceClaim& claim,
                                            KubeVersion version);

FieldErrors ResourceClaimTemplateErrors(const resource::ResourceClaimTemplate& claim_template,
                                        KubeVersion version);
Status ValidateResourceClaimTemplate(const resource::ResourceClaimTemplate& claim_template,
                                     KubeVersion version);
FieldErrors ResourceClaimTemplateUpdateErrors(const resource::ResourceClaimTemplate& old_template,
                                              const resource::ResourceClaimTemplate& claim_template,
                                              KubeVersion version);

}  // namespace xpu::api

#endif  // XPU_API_RESOURCE_VALIDATION_H_
