// Version conversion for kube-sim. It stores one copy of each object in its storage version
// (versions[0]: v1 for resource.k8s.io) and converts on the way in and out with the api/ module's
// ConvertResource (v1beta2 has the v1 layout; v1beta1 wraps ResourceSlice device fields in
// `basic` and has flat DeviceRequests).
#ifndef XPU_E2E_KUBESIM_CONVERT_H_
#define XPU_E2E_KUBESIM_CONVERT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "e2e/kubesim/resources.h"

namespace xpu::kubesim {

// `obj` as sent to `version` of `type`'s group, converted to the storage form (versions[0]).
nlohmann::json ToStorage(const ResourceType& type, const std::string& version, nlohmann::json obj);
// A stored object as `version` of `type`'s group presents it.
nlohmann::json FromStorage(const ResourceType& type, const std::string& version,
                           nlohmann::json obj);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_CONVERT_H_
