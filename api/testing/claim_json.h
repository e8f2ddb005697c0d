// A ResourceClaim as a test or measured run creates it through the API (the JSON a user's
// manifest holds), for the tests and runs that post claims to kube-sim or a fake cluster.
#ifndef XPU_API_TESTING_CLAIM_JSON_H_
#define XPU_API_TESTING_CLAIM_JSON_H_

#include <nlohmann/json.hpp>
#include <string>

namespace xpu::api::testing {

// A resource.k8s.io/v1 ResourceClaim `name` in namespace `ns` with one request `request` for
// exactly `count` devices of the DeviceClass `device_class`; no status (unallocated).
nlohmann::json ClaimJson(const std::string& name, const std::string& request,
                         const std::string& device_class, int count,
                         const std::string& ns = "default");

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_CLAIM_JSON_H_
