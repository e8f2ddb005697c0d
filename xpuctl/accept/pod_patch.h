// The pod patch of `xpuctl accept render|run --pod-patch`: a JSON merge patch (RFC 7386) of a
// pod spec, except that the lists a site patches are merged by key, as kubectl's strategic merge
// does, instead of being replaced whole:
//
//  - containers, initContainers: by name. A patch container whose name matches one of the spec's
//    is merged into it: its fields replace the container's (an object, such as resources or
//    securityContext, is merged as RFC 7386 says; null deletes), except the lists env (by name),
//    volumeMounts (by mountPath), volumeDevices (by devicePath) and ports (by containerPort),
//    merged by key in turn; the container's other lists are replaced whole. A patch container
//    with a new name is appended.
//  - volumes, imagePullSecrets, resourceClaims: by name; hostAliases: by ip.
//  - tolerations: the patch's are appended, leaving out those equal to one already there.
//
// In a list merged by key, a patch entry replaces the entry with the same key whole (so an env
// variable's value can become a valueFrom) and an entry with a new key is appended, in the
// patch's order; `{"<key>": K, "$patch": "delete"}` removes the entry K (nothing, if absent).
// A merged list set to null is deleted, as RFC 7386 says. Every other field of the pod spec is
// merged as RFC 7386 says.
//
// The claims the spec's containers use (resources.claims, by the name of a pod resourceClaims
// entry) cannot be patched away: a patch that removes or replaces such a claim, or removes a
// container's use of one or the container itself, is an error. Errors (invalid argument) name
// the patch's field: "containers[0].env[1]: expected a mapping with a name". Pure.
#ifndef XPU_XPUCTL_ACCEPT_POD_PATCH_H_
#define XPU_XPUCTL_ACCEPT_POD_PATCH_H_

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace xpu::accept {

// `spec` with `patch` (an object) applied by the rules above.
StatusOr<nlohmann::json> PatchPodSpec(nlohmann::json spec, const nlohmann::json& patch);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_POD_PATCH_H_
