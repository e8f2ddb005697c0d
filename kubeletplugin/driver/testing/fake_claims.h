// Allocated ResourceClaims for driver tests, kept in in-memory objects (api/client/testing/
// fake_objects.h) as the kubelet would name them: with a UUID uid.
#ifndef XPU_KUBELETPLUGIN_DRIVER_TESTING_FAKE_CLAIMS_H_
#define XPU_KUBELETPLUGIN_DRIVER_TESTING_FAKE_CLAIMS_H_

#include <string>
#include <vector>

#include "api/client/testing/fake_objects.h"
#include "api/resource.h"

namespace xpu::plugin::testing {

// Stores claim default/<name>, allocated `devices` of driver xpu.dra.dev in `pool` for
// `request`, with uid "<uid_prefix><serial>"; returns the uid.
inline std::string PutAllocatedClaim(
    api::client::testing::FakeObjects<api::resource::ResourceClaim>& claims,
    const std::string& name, const std::string& request, const std::string& pool,
    const std::vector<std::string>& devices, const std::string& uid_prefix, int serial) {
  api::resource::ResourceClaim claim;
  claim.metadata.name = name;
  claim.metadata.namespace_name = "default";
  claim.status.allocation.emplace();
  for (const std::string& d : devices) {
    api::resource::DeviceRequestAllocationResult r;
    r.request = request;
    r.driver = "xpu.dra.dev";
    r.pool = pool;
    r.device = d;
    claim.status.allocation->devices.results.push_back(r);
  }
  claims.Put(claim);
  // FakeObjects' uids are not UUIDs; the kubelet's are: give it one.
  api::resource::ResourceClaim stored =
      *claims.Find(api::client::ObjectKey::Namespaced("default", name));
  stored.metadata.uid = uid_prefix + std::to_string(serial);
  claims.Put(stored);
  return stored.metadata.uid;
}

}  // namespace xpu::plugin::testing

#endif  // XPU_KUBELETPLUGIN_DRIVER_TESTING_FAKE_CLAIMS_H_
