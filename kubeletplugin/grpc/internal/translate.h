// The one place where the kubelet's wire messages become the driver's domain types
// (kubeletplugin/driver/service.h) and back. Pure functions, no I/O.
#ifndef XPU_KUBELETPLUGIN_GRPC_INTERNAL_TRANSLATE_H_
#define XPU_KUBELETPLUGIN_GRPC_INTERNAL_TRANSLATE_H_

#include <map>
#include <string>
#include <vector>

#include "kubeletplugin/driver/service.h"
#include "proto/dra_v1.pb.h"
#include "proto/dra_v1beta1.pb.h"
#include "proto/health_v1.pb.h"
#include "proto/health_v1alpha1.pb.h"

namespace xpu::plugin::internal {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace healthv1 = ::v1;
namespace healthv1alpha1 = ::v1alpha1;

// The most bytes of a health message the kubelet keeps; longer ones are cut to fit with "...".
inline constexpr size_t kMaxHealthMessageBytes = 1024;

// The claims of a kubelet request: a NodePrepareResourcesRequest or NodeUnprepareResourcesRequest
// of either wire version (v1, v1beta1; instantiated for those four).
template <typename Request>
std::vector<ClaimRef> ClaimsFromProto(const Request& request);

// Fill `out`, a NodePrepareResourcesResponse (Prepare...) or NodeUnprepareResourcesResponse
// (Unprepare...) of either wire version, with one entry per claim of `asked`. A claim the service
// left out of `results` gets an error entry (the kubelet rejects an answer that skips a claim);
// an answer for a claim that was not asked is dropped. Returns one line per such discrepancy, for
// the log. v1beta1 has no share_id: it is dropped there.
template <typename Response>
std::vector<std::string> PrepareToProto(const std::vector<ClaimRef>& asked,
                                        const std::map<std::string, PrepareResult>& results,
                                        Response* out);
template <typename Response>
std::vector<std::string> UnprepareToProto(const std::vector<ClaimRef>& asked,
                                          const std::map<std::string, UnprepareResult>& results,
                                          Response* out);

// The complete device list as one health message, a NodeWatchResourcesResponse of either wire
// version (v1, v1alpha1: the same fields and numbers); messages longer than
// kMaxHealthMessageBytes are cut at a UTF-8 character boundary and end in "...".
template <typename Response>
void HealthToProto(const std::vector<DeviceHealth>& devices, Response* out);

// `message` cut to at most kMaxHealthMessageBytes as above (unchanged when it fits).
std::string TruncateHealthMessage(const std::string& message);

}  // namespace xpu::plugin::internal

#endif  // XPU_KUBELETPLUGIN_GRPC_INTERNAL_TRANSLATE_H_
