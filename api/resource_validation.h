// Server-side validation of a resource.k8s.io/v1 ResourceSlice with the rules and per-release
// limits of the Kubernetes API server (dra-api.md §1.2, §1.8), so that a driver (and kube-sim)
// rejects a slice the API server would reject.
//
// Checked: metadata.name (a DNS subdomain when set), driver, pool name / generation /
// resourceSliceCount, the one-of node selection, a valid nodeName, one nodeSelector term, the
// device count (the lower limit when a device has taints or consumesCounters), device names (DNS
// labels, unique in the slice), attributes + capacities per device, attribute and capacity names,
// exactly one value per attribute, string and version values, capacity quantities, taints (count,
// key, value, effect), binding (failure) conditions counts, per-device node selection,
// sharedCounters (set and counter names, unique set names, quantities, counts), consumesCounters
// (set and counter names, one entry per set, quantities, counts), and 1.35's "devices or
// sharedCounters, not both".
//
// Not yet checked: the node selector terms' contents, a per-device nodeSelector's term count,
// capacity requestPolicy (allowed only with allowMultipleAllocations; validValues / validRange
// rules), whether a consumed counterSet and its counters exist (1.34: in the slice), binding
// condition strings and bindsToNode requirements, timeAdded format, pool-wide uniqueness (device
// names, 1.35 counter-set names: they span slices), metadata fields other than name,
// immutability.
#ifndef XPU_API_RESOURCE_VALIDATION_H_
#define XPU_API_RESOURCE_VALIDATION_H_

#include "api/resource.h"
#include "api/validation.h"
#include "base/status.h"

namespace xpu::api {

// OK, or kInvalidArgument for the first problem found, prefixed with its field path:
//   spec.devices[3].attributes["bad name"]: ...
Status ValidateResourceSlice(const resource::ResourceSlice& slice, KubeVersion version);

}  // namespace xpu::api

#endif  // XPU_API_RESOURCE_VALIDATION_H_
