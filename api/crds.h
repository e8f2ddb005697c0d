// The CustomResourceDefinitions of the project's own kinds, generated from the C++ types: the
// openAPIV3Schema of each is the schema its codec's field list yields (NodeInventorySchema,
// AcceleratorGangSchema), so the committed manifests in deploy/crds/ cannot drift from the code
// without the drift test failing (`gen-crds deploy/crds` rewrites them).
#ifndef XPU_API_CRDS_H_
#define XPU_API_CRDS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xpu::api {

struct CrdManifest {
  std::string file_name;  // "xpu.dra.dev_nodeinventories.yaml"
  nlohmann::json crd;     // apiextensions.k8s.io/v1 CustomResourceDefinition
};

// nodeinventories.xpu.dra.dev: cluster-scoped, short name ninv.
nlohmann::json NodeInventoryCrd();
// acceleratorgangs.xpu.dra.dev: namespaced, short name agang.
nlohmann::json AcceleratorGangCrd();
// Both, in that order.
std::vector<CrdManifest> Crds();

// Block-style YAML of a JSON value, keys in the JSON object's (sorted) order; strings are plain
// where YAML 1.1 and 1.2 read them back as the same string, double-quoted with JSON escapes
// otherwise. Deterministic; ends with a newline.
std::string ToYaml(const nlohmann::json& value);

}  // namespace xpu::api

#endif  // XPU_API_CRDS_H_
