// kube-sim's discovery documents: what GET /api, /api/v1, /apis, /apis/<group> and
// /apis/<group>/<version> answer for the resource types it serves (APIVersions, APIResourceList,
// APIGroupList, APIGroup), as the API server shapes them. Pure; api_handler.cc serves them.
#ifndef XPU_E2E_KUBESIM_DISCOVERY_H_
#define XPU_E2E_KUBESIM_DISCOVERY_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/kubesim/resources.h"

namespace xpu::kubesim {

// The discovery document of the path `segs` (its decoded segments, e.g. {"apis",
// "resource.k8s.io"}) for `types`; null when the path is not a discovery path, or names a group or
// version none of `types` serves.
nlohmann::json DiscoveryDocument(const std::vector<ResourceType>& types,
                                 const std::vector<std::string>& segs);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_DISCOVERY_H_
