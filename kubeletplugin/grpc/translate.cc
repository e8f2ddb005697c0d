#include "kubeletplugin/grpc/internal/translate.h"

#include <set>
#include <type_traits>

namespace xpu::plugin::internal {
namespace {

template <typename ProtoDevice>
void DeviceToProto(const PreparedDevice& device, ProtoDevice* out) {
  for (const auto& name : device.request_names) out->add_request_names(name);
  out->set_pool_name(device.pool);
  out->set_device_name(device.device);
  for (const auto& id : device.cdi_device_ids) out->add_cdi_device_ids(id);
  if constexpr (std::is_same_v<ProtoDevice, drav1::Device>) {
    if (!device.share_id.empty()) out->set_share_id(device.share_id);
  }
}

// Calls fill(uid, result-or-null) once per distinct asked uid and reports the discrepancies.
template <typename Result, typename Fill>
std::vector<std::string> EveryClaim(const char* call, const std::vector<ClaimRef>& asked,
                                    const std::map<std::string, Result>& results, Fill fill) {
  std::vector<std::string> notes;
  std::set<std::string> asked_uids;
  for (const auto& claim : asked) {
    if (!asked_uids.insert(claim.uid).second) continue;
    auto it = results.find(claim.uid);
    if (it == results.end()) {
      notes.push_back(std::string(call) + " claim " + claim.ns + "/" + claim.name + " (" +
                      claim.uid + "): the driver returned no result for it");
      fill(claim, nullptr);
    } else {
      fill(claim, &it->second);
    }
  }
  for (const auto& [uid, result] : results) {
    if (asked_uids.count(uid) == 0) {
      notes.push_back(std::string(call) + ": dropped the driver's result for claim " + uid +
                      ", which the kubelet did not ask for");
    }
  }
  return notes;
}

std::string MissingError(const char* call, const ClaimRef& claim) {
  return std::string(call) + " claim " + claim.ns + "/" + claim.name +
         ": internal error: the driver returned no result for this claim";
}

// The two health versions share the enum's numbers on the wire.
static_assert(healthv1::UNKNOWN == static_cast<int>(healthv1alpha1::UNKNOWN) &&
              healthv1::HEALTHY == static_cast<int>(healthv1alpha1::HEALTHY) &&
              healthv1::UNHEALTHY == static_cast<int>(healthv1alpha1::UNHEALTHY));

healthv1::HealthStatus HealthToProto(HealthState state) {
  switch (state) {
    case HealthState::kHealthy:
      return healthv1::HEALTHY;
    case HealthState::kUnhealthy:
      return healthv1::UNHEALTHY;
    case HealthState::kUnknown:
      break;
  }
  return healthv1::UNKNOWN;
}

}  // namespace

template <typename Request>
std::vector<ClaimRef> ClaimsFromProto(const Request& request) {
  std::vector<ClaimRef> claims;
  claims.reserve(request.claims_size());
  for (const auto& claim : request.claims()) {
    claims.push_back(ClaimRef{.ns = claim.namespace_(), .name = claim.name(), .uid = claim.uid()});
  }
  return claims;
}

template <typename Response>
std::vector<std::string> PrepareToProto(const std::vector<ClaimRef>& asked,
                                        const std::map<std::string, PrepareResult>& results,
                                        Response* out) {
  return EveryClaim("prepare", asked, results,
                    [out](const ClaimRef& claim, const PrepareResult* result) {
                      auto& entry = (*out->mutable_claims())[claim.uid];
                      if (result == nullptr) {
                        entry.set_error(MissingError("prepare", claim));
                        return;
                      }
                      entry.set_error(result->error);
                      if (!result->error.empty()) return;  // devices are ignored on error
                      for (const auto& device : result->devices) {
                        DeviceToProto(device, entry.add_devices());
                      }
                    });
}

template <typename Response>
std::vector<std::string> UnprepareToProto(const std::vector<ClaimRef>& asked,
                                          const std::map<std::string, UnprepareResult>& results,
                                          Response* out) {
  return EveryClaim(
      "unprepare", asked, results, [out](const ClaimRef& claim, const UnprepareResult* result) {
        auto& entry = (*out->mutable_claims())[claim.uid];
        entry.set_error(result == nullptr ? MissingError("unprepare", claim) : result->error);
      });
}

// For the kubelet's messages of both wire versions.
using Prepared = std::map<std::string, PrepareResult>;
using Unprepared = std::map<std::string, UnprepareResult>;
template std::vector<ClaimRef> ClaimsFromProto(const drav1::NodePrepareResourcesRequest&);
template std::vector<ClaimRef> ClaimsFromProto(const drav1beta1::NodePrepareResourcesRequest&);
template std::vector<ClaimRef> ClaimsFromProto(const drav1::NodeUnprepareResourcesRequest&);
template std::vector<ClaimRef> ClaimsFromProto(const drav1beta1::NodeUnprepareResourcesRequest&);
template std::vector<std::string> PrepareToProto(const std::vector<ClaimRef>&, const Prepared&,
                                                 drav1::NodePrepareResourcesResponse*);
template std::vector<std::string> PrepareToProto(const std::vector<ClaimRef>&, const Prepared&,
                                                 drav1beta1::NodePrepareResourcesResponse*);
template std::vector<std::string> UnprepareToProto(const std::vector<ClaimRef>&, const Unprepared&,
                                                   drav1::NodeUnprepareResourcesResponse*);
template std::vector<std::string> UnprepareToProto(const std::vector<ClaimRef>&, const Unprepared&,
                                                   drav1beta1::NodeUnprepareResourcesResponse*);

std::string TruncateHealthMessage(const std::string& message) {
  if (message.size() <= kMaxHealthMessageBytes) return message;
  size_t cut = kMaxHealthMessageBytes - 3;
  // Back off to the start of a UTF-8 character: proto3 strings must stay valid UTF-8.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return message.substr(0, cut) + "...";
}

template <typename Response>
void HealthToProto(const std::vector<DeviceHealth>& devices, Response* out) {
  for (const auto& device : devices) {
    auto* health = out->add_devices();
    using WireStatus = std::remove_cvref_t<decltype(health->health())>;
    health->mutable_device()->set_pool_name(device.pool);
    health->mutable_device()->set_device_name(device.device);
    health->set_health(static_cast<WireStatus>(HealthToProto(device.health)));
    health->set_last_updated_time(device.last_updated_unix);
    health->set_message(TruncateHealthMessage(device.message));
  }
}

template void HealthToProto(const std::vector<DeviceHealth>&,
                            healthv1::NodeWatchResourcesResponse*);
template void HealthToProto(const std::vector<DeviceHealth>&,
                            healthv1alpha1::NodeWatchResourcesResponse*);

}  // namespace xpu::plugin::internal
