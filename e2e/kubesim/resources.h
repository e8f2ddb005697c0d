// The resource types kube-sim serves: what a DRA driver and this project's controllers touch.
#ifndef XPU_E2E_KUBESIM_RESOURCES_H_
#define XPU_E2E_KUBESIM_RESOURCES_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace xpu::kubesim {

struct ResourceType {
  std::string group;     // "" for the core group
  std::string resource;  // plural, e.g. "resourceslices"
  std::string kind;      // e.g. "ResourceSlice"
  bool namespaced = false;
  bool has_status = false;            // a /status subresource; status is ignored on the main one
  std::vector<std::string> versions;  // known versions, the storage version first
  // The versions served, preferred first; empty = all of `versions`. Lets kube-sim act as an
  // older cluster (1.32: resource.k8s.io v1beta1 only) while storing one form.
  std::vector<std::string> served = {};

  bool Serves(const std::string& version) const;
  const std::vector<std::string>& ServedVersions() const {
    return served.empty() ? versions : served;
  }

  // "resourceslices.resource.k8s.io", or "nodes" in the core group: the name in error messages.
  std::string QualifiedName() const;
  // "resource.k8s.io/v1", or "v1" in the core group.
  std::string ApiVersion(const std::string& version) const;
};

// Core v1 namespaces, nodes, events and pods, batch/v1 Jobs, coordination.k8s.io leases,
// resource.k8s.io (v1, v1beta2, v1beta1) and xpu.dra.dev/v1alpha1. Namespaces come first. Pods and
// Jobs are stored only: kube-sim runs no job controller, scheduler or kubelet.
std::vector<ResourceType> BuiltinResources();

// Serves only `versions` (preferred first) of resource.k8s.io. kInvalidArgument naming the
// version when one is not known.
Status ServeResourceVersions(std::vector<ResourceType>* types,
                             const std::vector<std::string>& versions);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_RESOURCES_H_
