// Node-group profiles, for the cluster autoscaler: what a node of a group that does not exist yet
// (scale from zero) would publish. A profile names a server model (a reference server,
// controller/reference_servers.h) or a NodeInventory file, the labels its nodes get, and the
// group's size limits:
//
//   name: ascend-a2            # DNS label
//   model: atlas800t-a2        # or inventory: nodes/a2.json (relative to the profile)
//   labels: {topology.xpu.dra.dev/superpod: sp-1}
//   minSize: 0
//   maxSize: 16
//
// TemplatePool builds the pool through the controller's own BuildPool, so the template is what a
// real node of the group publishes, apart from the values only the node knows (its name, device
// uuids and PCI addresses, versions): TemplateBindings lists those. TemplateObjects gives the
// shapes the autoscalers read: the ResourceSlices, the Cluster API MachineDeployment annotations
// (capacity.cluster-autoscaler.kubernetes.io/dra-driver and gpu-count, the size limits, the
// labels) and a Karpenter-style ResourceSliceTemplates document with the bindings. Pure apart
// from reading the inventory file.
#ifndef XPU_CONTROLLER_NODE_GROUPS_H_
#define XPU_CONTROLLER_NODE_GROUPS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "base/status.h"
#include "controller/config.h"
#include "controller/slices.h"

namespace xpu::controller {

struct NodeGroupProfile {
  std::string name;
  std::string model;           // a reference server's name, or empty
  std::string inventory_path;  // as written, or empty
  std::map<std::string, std::string> labels;
  int64_t min_size = 0;
  int64_t max_size = 0;
  api::NodeInventory inventory;  // resolved: the model's or the file's
};

// A server's inventory from exactly one of `model` (a reference server) and `inventory_path` (a
// NodeInventory file, relative to `base_dir`). Errors name the field: "model: unknown server
// model ...", "inventory: read <path>: ...".
StatusOr<api::NodeInventory> ResolveServerInventory(std::string_view model,
                                                    std::string_view inventory_path,
                                                    const std::string& base_dir);

// Reads a profile (YAML or JSON); `base_dir` resolves a relative inventory path. Errors name the
// field ("model: unknown server model ...").
StatusOr<NodeGroupProfile> ParseNodeGroupProfile(std::string_view text,
                                                 const std::string& base_dir);
// Reads a profile file.
StatusOr<NodeGroupProfile> LoadNodeGroupProfile(const std::string& path);

// Every profile in `dir` (*.yaml, *.yml, *.json), by file name; names must be unique.
StatusOr<std::vector<NodeGroupProfile>> LoadNodeGroupProfiles(const std::string& dir);

// The node name a template node carries: "<group>-template".
std::string TemplateNodeName(const NodeGroupProfile& profile);

// The pool a new node of the group would publish.
StatusOr<DesiredPool> TemplatePool(const NodeGroupProfile& profile, const Config& config,
                                   const PublishOptions& options);

// A value only a real node knows.
struct TemplateBinding {
  std::string attribute;  // "<driver>/uuid", "resource.kubernetes.io/pciBusID", ...
  std::string source;     // where the node takes it from
  int devices = 0;        // devices of the template carrying it
};
std::vector<TemplateBinding> TemplateBindings(const DesiredPool& pool, std::string_view driver);
// Whether a published attribute name (unqualified, or resource.kubernetes.io/...) is one of them.
bool IsRuntimeAttribute(std::string_view name);

// The label that says which node group a Node belongs to; the templates carry it.
inline constexpr std::string_view kNodeGroupLabel = "xpu.dra.dev/node-group";

// The objects of `xpuctl autoscaler-template`, as a v1 List.
nlohmann::json TemplateObjects(const NodeGroupProfile& profile, const DesiredPool& pool,
                               std::string_view driver);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_NODE_GROUPS_H_
