// The plugin's gRPC edge (kubeletplugin/grpc/internal/translate.h): the kubelet's
// NodePrepareResources / NodeUnprepareResources requests, as the wire bytes the kubelet sends,
// into claim references, and the driver's answers back. The first input byte picks the message
// (0 v1 prepare, 1 v1beta1 prepare, 2 v1 unprepare, 3 v1beta1 unprepare); the rest is the
// serialised request. The harness answers like a driver: some claims fail, some get devices, one
// is left out and one unasked claim is added.
//
// Invariants: the answer has exactly one entry per distinct asked uid, a claim without a result
// has an error, and the answer and a health message made from the claims serialise and parse
// back (so no string was cut inside a UTF-8 character).
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "kubeletplugin/grpc/internal/translate.h"

namespace {

namespace internal = ::xpu::plugin::internal;
using ::xpu::plugin::ClaimRef;

std::set<std::string> DistinctUids(const std::vector<ClaimRef>& claims) {
  std::set<std::string> uids;
  for (const ClaimRef& claim : claims) uids.insert(claim.uid);
  return uids;
}

// What a driver might answer: claim i fails when i % 3 == 1, is left out when it is the last of
// several, and gets a device named after it otherwise.
template <typename Result>
std::map<std::string, Result> Answers(const std::vector<ClaimRef>& claims) {
  std::map<std::string, Result> results;
  for (size_t i = 0; i < claims.size(); ++i) {
    if (claims.size() > 2 && i + 1 == claims.size()) break;
    Result& result = results[claims[i].uid];
    if (i % 3 == 1) {
      result.error = "prepare " + claims[i].name + ": failed";
    } else if constexpr (std::is_same_v<Result, xpu::plugin::PrepareResult>) {
      result.devices.push_back({{claims[i].name},
                                claims[i].ns,
                                claims[i].name,
                                {"k8s.xpu.dra.dev/device=" + claims[i].uid},
                                claims[i].ns});
    }
  }
  results["not-asked"];
  return results;
}

template <typename Message>
void CheckReparses(const Message& message) {
  std::string wire;
  FUZZ_CHECK(message.SerializeToString(&wire));
  Message again;
  FUZZ_CHECK(again.ParseFromString(wire), message.DebugString());
}

template <typename Request, typename Response, typename Result>
void Exercise(std::string_view wire) {
  Request request;
  if (!request.ParseFromArray(wire.data(), static_cast<int>(wire.size()))) return;
  const std::vector<ClaimRef> claims = internal::ClaimsFromProto(request);
  FUZZ_CHECK(claims.size() == static_cast<size_t>(request.claims_size()));
  const std::map<std::string, Result> results = Answers<Result>(claims);
  Response response;
  if constexpr (std::is_same_v<Result, xpu::plugin::PrepareResult>) {
    (void)internal::PrepareToProto(claims, results, &response);
  } else {
    (void)internal::UnprepareToProto(claims, results, &response);
  }
  const std::set<std::string> uids = DistinctUids(claims);
  FUZZ_CHECK(static_cast<size_t>(response.claims_size()) == uids.size(), response.DebugString());
  for (const std::string& uid : uids) {
    auto it = response.claims().find(uid);
    FUZZ_CHECK(it != response.claims().end(), uid);
    if (!results.contains(uid)) FUZZ_CHECK(!it->second.error().empty(), uid);
  }
  CheckReparses(response);

  std::vector<xpu::plugin::DeviceHealth> health;
  for (const ClaimRef& claim : claims) {
    health.push_back({claim.ns, claim.name, xpu::plugin::HealthState::kUnhealthy, 1, claim.uid});
    const std::string cut = internal::TruncateHealthMessage(claim.uid);
    FUZZ_CHECK(cut.size() <= internal::kMaxHealthMessageBytes, claim.uid);
    if (claim.uid.size() <= internal::kMaxHealthMessageBytes) FUZZ_CHECK(cut == claim.uid);
  }
  internal::healthv1alpha1::NodeWatchResourcesResponse health_message;
  internal::HealthToProto(health, &health_message);
  CheckReparses(health_message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view wire = xpu::fuzz::AsText(data + 1, size - 1);
  using xpu::plugin::PrepareResult;
  using xpu::plugin::UnprepareResult;
  switch (data[0] % 4) {
    case 0:
      Exercise<internal::drav1::NodePrepareResourcesRequest,
               internal::drav1::NodePrepareResourcesResponse, PrepareResult>(wire);
      break;
    case 1:
      Exercise<internal::drav1beta1::NodePrepareResourcesRequest,
               internal::drav1beta1::NodePrepareResourcesResponse, PrepareResult>(wire);
      break;
    case 2:
      Exercise<internal::drav1::NodeUnprepareResourcesRequest,
               internal::drav1::NodeUnprepareResourcesResponse, UnprepareResult>(wire);
      break;
    default:
      Exercise<internal::drav1beta1::NodeUnprepareResourcesRequest,
               internal::drav1beta1::NodeUnprepareResourcesResponse, UnprepareResult>(wire);
      break;
  }
  return 0;
}
