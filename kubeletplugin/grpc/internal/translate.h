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
#include "proto/health_v1alpha1.pb.h"

namespace xpu::plugin::internal {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace healthv1alpha1 = ::v1alpha1;

// The most bytes of a health message the kubelet keeps; longer ones are cut to fit with "...".
inline constexpr size_t kMaxHealthMessageBytes = 1024;

std::vector<ClaimRef> ClaimsFromProto(const drav1::NodePrepareResourcesRequest& request);
std::vector<ClaimRef> ClaimsFromProto(const drav1beta1::NodePrepareResourcesRequest& request);
std::vector<ClaimRef> ClaimsFromProto(const drav1::NodeUnprepareResourcesRequest& request);
std::vector<ClaimRef> ClaimsFromProto(const drav1beta1::NodeUnprepareResourcesRequest& request);

// Fill `out` with one entry per claim of `asked`. A claim the service left out of `results` gets
// an error entry (the kubelet rejects an answer that skips a claim); an answer for a claim that
// was not asked is dropped. Returns one line per such discrepancy, for the log. v1beta1 has no
// share_id: it is dropped there.
std::vector<std::string> PrepareToProto(const std::vector<ClaimRef>& asked,
                                        const std::map<std::string, PrepareResult>& results,
                                        drav1::NodePrepareResourcesResponse* out);
std::vector<std::string> PrepareToProto(const std::vector<ClaimRef>& asked,
                                        const std::map<std::string, PrepareResult>& results,
                                        drav1beta1::NodePrepareResourcesResponse* out);
std::vector<std::string> UnprepareToProto(const std::vector<ClaimRef>& asked,
                                          const std::map<std::string, UnprepareResult>& results,
                                          drav1::NodeUnprepareResourcesResponse* out);
std::vector<std::string> UnprepareToProto(const std::vector<ClaimRef>& asked,
                                          const std::map<std::string, UnprepareResult>& results,
                                          drav1beta1::NodeUnprepareResourcesResponse* out);

// The complete device list as one health message; messages longer than kMaxHealthMessageBytes
// are cut at a UTF-8 character boundary and end in "...".
void HealthToProto(const std::vector<DeviceHealth>& devices,
                   healthv1alpha1::NodeWatchResourcesResponse* out);

// `message` cut to at most kMaxHealthMessageBytes as above (unchanged when it fits).
std::string TruncateHealthMessage(const std::string& message);

}  // namespace xpu::plugin::internal

#endif  // XPU_KUBELETPLUGIN_GRPC_INTERNAL_TRANSLATE_H_
