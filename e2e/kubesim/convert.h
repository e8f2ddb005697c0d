// Version conversion for resource.k8s.io. kube-sim stores one copy of each object in v1 form;
// v1beta2 has the same layout as v1, v1beta1 wraps ResourceSlice device fields in `basic` and has
// flat DeviceRequests (v1 puts them under `exactly`). A deliberately small stand-in: the api/
// module's resource conversion replaces these two functions.
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
