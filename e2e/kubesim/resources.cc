#include "e2e/kubesim/resources.h"

#include <algorithm>

namespace xpu::kubesim {

std::string ResourceType::QualifiedName() const {
  return group.empty() ? resource : resource + "." + group;
}

std::string ResourceType::ApiVersion(const std::string& version) const {
  return group.empty() ? version : group + "/" + version;
}

bool ResourceType::Serves(const std::string& version) const {
  const auto& v = ServedVersions();
  return std::find(v.begin(), v.end(), version) != v.end();
}

Status ServeResourceVersions(std::vector<ResourceType>* types,
                             const std::vector<std::string>& versions) {
  if (versions.empty()) {
    return InvalidArgumentError("serve resource.k8s.io: at least one version is needed");
  }
  for (ResourceType& t : *types) {
    if (t.group != "resource.k8s.io") continue;
    for (const auto& v : versions) {
      if (std::find(t.versions.begin(), t.versions.end(), v) == t.versions.end()) {
        return InvalidArgumentError("serve resource.k8s.io: unknown version \"" + v + "\"");
      }
    }
    t.served = versions;
  }
  return OkStatus();
}

std::vector<ResourceType> BuiltinResources() {
  const std::vector<std::string> core = {"v1"};
  const std::vector<std::string> resource = {"v1", "v1beta2", "v1beta1"};
  const std::vector<std::string> batch = {"v1"};
  const std::vector<std::string> xpu = {"v1alpha1"};
  return {
      {"", "namespaces", "Namespace", false, false, core},
      {"", "nodes", "Node", false, false, core},
      {"coordination.k8s.io", "leases", "Lease", true, false, core},
      {"", "events", "Event", true, false, core},
      {"", "pods", "Pod", true, true, core},
      {"batch", "jobs", "Job", true, true, batch},
      {"resource.k8s.io", "resourceslices", "ResourceSlice", false, false, resource},
      {"resource.k8s.io", "deviceclasses", "DeviceClass", false, false, resource},
      {"resource.k8s.io", "resourceclaims", "ResourceClaim", true, true, resource},
      {"resource.k8s.io", "resourceclaimtemplates", "ResourceClaimTemplate", true, false, resource},
      {"xpu.dra.dev", "nodeinventories", "NodeInventory", false, true, xpu},
      {"xpu.dra.dev", "acceleratorgangs", "AcceleratorGang", true, true, xpu},
  };
}

}  // namespace xpu::kubesim
