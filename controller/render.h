// Capability requests: a workload asks for a capability, not a vendor resource name,
//
//   name: llm-train
//   namespace: default
//   accelerator: {class: training-large-memory, count: 8, topology: single-node, precision: bf16}
//   images: {nvidia: ..., huawei: ...}      # optional: over the class' images
//
// and Render turns it into the objects to apply (`xpuctl render`; the same function can serve a
// mutating admission webhook):
//  - single-node: a ResourceClaimTemplate `<name>` with one request `accelerators` whose
//    `firstAvailable` lists prioritized alternatives: the class' vendors in its order of
//    preference, and within a vendor its topology tiers, tightest first. Every subrequest uses
//    the per-vendor DeviceClass `<class>.<vendor>`. Which sets keep a vendor's rules is decided
//    on the reference servers (controller/reference_servers.h, controller/render_judge.h): each
//    model the class admits gets the loosest constraint (none, then a `matchAttribute` on
//    scaleUpDomain, then on module) under which every set the scheduler could pick on all of
//    that model's servers keeps the rule set (topology::RuleAllows), and the vendor gets one
//    subrequest per constraint (by model, `model in [...]`, when there is more than one, so that
//    a model no server was judged for is never admitted under a constraint not checked for it).
//    Each of those is preceded by its topology tiers (controller/render_tiers.h): one PCIe
//    switch (`pcieSwitch`), then one root complex (`resource.kubernetes.io/pcieRoot`) or NUMA
//    node (`numaNode`), where such a set has a better bottleneck bandwidth on some server than
//    the looser alternative's worst set, and keeps the rules too. In groups mode a group device
//    of the count comes first, then the same alternatives over single devices (groupSize 1).
//    At most 8 subrequests (the API's limit): the later vendors' tiers go first, then whole
//    vendors from the end, each with a note. A model that no constraint (nor, in groups mode, a
//    group device) keeps valid is left out, with a note that says why; a vendor with no model
//    left is left out with a note that names the mode it needs, never rendered into a claim that
//    can land on an invalid set.
//  - multi-node: an AcceleratorGang over the class (devicesPerNode: the request's, else the
//    largest count a preferred vendor's server holds that divides the total).
//  - both: a Kueue ResourceFlavor per vendor (node labels of node-feature-discovery's PCI vendor
//    label, `feature.node.kubernetes.io/pci-<vendor id>.present`), and DeviceClasses with
//    `extendedResourceName` for each vendor's legacy device-plugin name (nvidia.com/gpu,
//    huawei.com/Ascend910, ...), so that pods that still ask for those are served by DRA in the
//    same mixed-fleet install. No RuntimeClass: the plugin's CDI specs carry each vendor's
//    user-space driver (docs/kubelet-plugin.md, "Driver files"); for a vendor whose driver files
//    are off (RenderOptions::driver_files_off) a note names the RuntimeClass its pods need.
// Images per vendor go into annotations `xpu.dra.dev/image.<vendor>` (a pod has one image, so
// the image must follow the vendor the scheduler chose; `--vendor` renders for one vendor).
// Errors name the field: an unknown class, a count no allowed vendor's rules allow on any
// reference server, a precision no allowed vendor has, a vendor left without an image while
// others have one. Pure apart from reading the built-in reference servers.
#ifndef XPU_CONTROLLER_RENDER_H_
#define XPU_CONTROLLER_RENDER_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "controller/config.h"
#include "controller/reference_servers.h"

namespace xpu::controller {

struct CapabilityRequest {
  std::string name;                           // the workload's name: names the objects
  std::string ns = "default";                 // "namespace"
  std::string capability_class;               // accelerator.class
  int64_t count = 0;                          // accelerator.count: devices in all
  std::string topology;                       // accelerator.topology: "single-node" or "multi-node"
  std::string precision;                      // accelerator.precision: optional
  int64_t devices_per_node = 0;               // accelerator.devicesPerNode: multi-node, optional
  std::string max_tier;                       // accelerator.maxTier: multi-node, optional
  std::map<std::string, std::string> images;  // vendor -> image, over the class' images
};

// Reads a request (YAML or JSON); errors name the field ("accelerator.count: ...").
StatusOr<CapabilityRequest> ParseCapabilityRequest(std::string_view text);

struct RenderOptions {
  Config config = DefaultConfig();
  std::string driver = "xpu.dra.dev";
  std::vector<std::string> vendors = {};  // only these (--vendor); empty: the class' own
  // The servers the rules are judged on; empty: ReferenceServers().
  std::vector<ReferenceServer> servers = {};
  // Vendors whose CDI specs carry no driver files (the plugin's --cdi-driver-files): their pods
  // need the vendor's runtime (controller/runtime_class.h).
  std::set<std::string> driver_files_off = {};
};

// One `firstAvailable` subrequest, for the summary and the tests.
struct SubrequestRender {
  std::string name;        // a DNS label starting with the vendor: "huawei", "nvidia-switch", ...
  std::string vendor;      // the DeviceClass is "<class>.<vendor>"
  int64_t count = 0;       // devices asked for (1 for a group device)
  int64_t group_size = 0;  // > 0: one group device of this size (groups mode)
  bool singles = false;    // groups mode: single devices only (groupSize 1)
  // The matchAttribute constraints, in the order written: the rule-keeping one
  // ("scaleUpDomain", "module"), then the tier's ("pcieSwitch", "resource.kubernetes.io/pcieRoot",
  // "numaNode"); bare names are in the driver's domain.
  std::string constraint;  // rule-keeping; empty: none needed
  std::string tier;        // topology tier; empty: any set the constraint allows
  // Selected by `model in [models]` when not empty; else every model the class admits but the
  // vendor's excluded_models.
  std::vector<std::string> models;
  std::vector<std::string> servers;  // reference servers on which such a set exists
  // A topology tier (the group device included): every model it admits has a looser
  // subrequest of the vendor too, so it is dropped first when there are more than 8.
  bool optional = false;
};

// How one vendor's part was rendered.
struct VendorRender {
  std::string vendor;
  std::string device_class;  // "<class>.<vendor>"
  int64_t count = 0;         // devices per node (per set)
  // Models the class admits that no subrequest of the vendor admits (the notes say why).
  std::vector<std::string> excluded_models;
  std::vector<std::string> servers;           // reference servers that can host the set
  std::vector<SubrequestRender> subrequests;  // in order of preference
  std::string image;                          // empty when no image is configured at all
  std::string runtime_class;                  // set when the vendor's driver files are off
};

struct Rendered {
  std::vector<nlohmann::json> objects;  // in apply order
  std::vector<VendorRender> vendors;    // in order of preference
  std::vector<std::string> notes;       // vendors and models left out and why, other caveats
};

StatusOr<Rendered> Render(const CapabilityRequest& request, const RenderOptions& options);

// The legacy device-plugin resource names of a vendor's models: {name, model prefix} ("" = any).
struct LegacyResource {
  std::string_view vendor;
  std::string_view resource;      // "huawei.com/Ascend910"
  std::string_view model_prefix;  // devices whose model starts with this ("" = all)
};
const std::vector<LegacyResource>& LegacyResources();

// The PCI vendor id of a known vendor, as node-feature-discovery writes it ("10de"); empty for
// an unknown vendor.
std::string_view PciVendorId(std::string_view vendor);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_RENDER_H_
