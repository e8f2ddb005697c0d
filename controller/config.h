// The controller's configuration: the publishing mode, the capability classes it turns into
// DeviceClasses, and the support matrix of driver / firmware / toolkit versions per vendor and
// family (devices outside it get the `xpu.dra.dev/unsupported` taint). The YAML reading is in
// controller/yaml_json.h, the version ranges in controller/semver.h.
//
// The file (a mounted ConfigMap, YAML or JSON) is documented in docs/controller-config.md:
//
//   apiVersion: xpu.dra.dev/v1alpha1
//   kind: ControllerConfig
//   publishing: {mode: attributes, groupSizes: [2, 4, 8], unhealthyEffect: NoSchedule}
//                                         # mode absent: by Kubernetes version (EffectiveMode)
//   vendorClasses: true
//   capabilityClasses:
//   - name: training-large-memory
//     vendors: [nvidia, huawei]           # allowed, in order of preference
//     minMemory: 64Gi
//     precisions: [bf16]
//     families: [hopper, ascend910b]      # optional filters
//     models: []
//     images: {nvidia: nvcr.io/..., huawei: ascendhub/...}
//     extendedResourceName: example.com/training-large-memory   # optional
//   supportMatrix:
//   - {vendor: nvidia, family: hopper, driver: ">=535.0.0 <600.0.0", toolkit: ">=12.2.0"}
//
// Without a file the controller runs on DefaultConfig(). Parsing reads the document with the
// project's JSON codec (api/codec/codec.h), checks every field and names the first bad one
// ("capabilityClasses[1].minMemory: ..."); unknown members are errors, so a misspelt key does not
// silently do nothing, and a member written as null (`key:` and nothing) is absent. Value types,
// thread-compatible, no exceptions.
#ifndef XPU_CONTROLLER_CONFIG_H_
#define XPU_CONTROLLER_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "api/validation.h"  // KubeVersion
#include "base/status.h"
#include "controller/semver.h"  // VersionRange, ValidateVersionRange, InRange

namespace xpu::controller {

// attributes: every device on its own, alignment through matchAttribute and device order (GA
// features only). groups: the aligned groups as devices that consume their members' counters
// (DRAPartitionableDevices).
enum class PublishMode { kAttributes, kGroups };
std::string_view PublishModeName(PublishMode mode);  // "attributes", "groups"
std::optional<PublishMode> ParsePublishMode(std::string_view name);

// One row of the support matrix. The most specific row for a device applies: one naming its
// model, else its family, else its vendor only. A vendor without rows is not judged.
struct SupportRule {
  std::string vendor;  // required
  std::string family;  // optional
  std::string model;   // optional
  std::optional<VersionRange> driver;
  std::optional<VersionRange> firmware;
  std::optional<VersionRange> toolkit;
  friend bool operator==(const SupportRule&, const SupportRule&) = default;
};

struct CapabilityClass {
  std::string name;                     // DNS subdomain; also the DeviceClass name
  std::vector<std::string> vendors;     // allowed, in order of preference; empty = any
  std::string min_memory;               // quantity; empty = no minimum
  std::vector<std::string> precisions;  // "bf16", "fp16", "fp8", "int8": all required
  std::vector<std::string> families;    // empty = any
  std::vector<std::string> models;      // empty = any
  std::vector<std::pair<std::string, std::string>> images;  // vendor -> image, in file order
  std::optional<std::string> extended_resource_name;
  friend bool operator==(const CapabilityClass&, const CapabilityClass&) = default;
};

struct Config {
  // publishing.mode; unset unless configured: the mode then follows the Kubernetes version
  // (EffectiveMode), which the config alone does not know.
  std::optional<PublishMode> mode;
  // groups mode: the group sizes published (each size's aligned groups; sizes a node cannot form
  // are skipped).
  std::vector<int> group_sizes = {2, 4, 8};
  // Effect of the xpu.dra.dev/unhealthy taint: "NoSchedule" or "NoExecute".
  std::string unhealthy_effect = "NoSchedule";
  bool vendor_classes = true;  // one DeviceClass per known vendor
  std::vector<CapabilityClass> capability_classes;
  std::vector<SupportRule> support_matrix;
  friend bool operator==(const Config&, const Config&) = default;
};

// The Kubernetes releases supported, as minor versions of 1.x: 1.34 to 1.38 (1.38 at beta:
// docs/reference/kubernetes-1.38.md).
inline constexpr int kOldestKubeMinor = 34;
inline constexpr int kNewestKubeMinor = 38;
// "1.34" to "1.38" (also "v1.36", "1.36.2") as the minor version. Errors name `flag` and list the
// supported releases: "--kubernetes-version: expected 1.34, 1.35, 1.36, 1.37 or 1.38, got
// \"1.33\"".
StatusOr<int> ParseKubeMinor(std::string_view text, std::string_view flag);
// The slice shapes and limits of a minor version: 1.34's, and 1.35's from 1.35 on (1.36 to 1.38
// add no shape the controller publishes).
api::KubeVersion KubeShapes(int kube_minor);

// The publishing mode of a config that sets none: groups from Kubernetes 1.36, where
// DRAPartitionableDevices (the counters groups mode publishes) is beta and on by default;
// attributes before, where it is alpha and off by default. Groups mode on a server found to drop
// counters still falls back to attributes, per pool (controller/slices.h).
PublishMode DefaultPublishMode(int kube_minor);
// The config's publishing.mode when it sets one, else DefaultPublishMode(kube_minor).
PublishMode EffectiveMode(const Config& config, int kube_minor);
// `config` with its mode set to EffectiveMode: what BuildPool, Render and TemplatePool are given,
// which read an unset mode as attributes.
Config WithEffectiveMode(Config config, int kube_minor);

// The vendors the discovery knows, in a fixed order: nvidia, huawei, hygon, cambricon, metax,
// biren, enflame, mthreads, amd.
const std::vector<std::string>& KnownVendors();

// Vendor classes on, the mode unset, and the example capability classes training-large-memory,
// training-standard and inference; an empty support matrix.
Config DefaultConfig();

// Reads a YAML or JSON document; errors name the field.
StatusOr<Config> ParseConfig(std::string_view text);
// Reads and parses a file; errors start with "read config <path>: ".
StatusOr<Config> LoadConfigFile(const std::string& path);
// The rules a parsed document must also meet (used by ParseConfig; DefaultConfig passes).
Status ValidateConfig(const Config& config);

// Whether a device's versions lie inside the support matrix. `reason` says which version is
// outside which range ("driverVersion 525.60.13 outside >=535.0.0 (nvidia/hopper)"). A version
// the device does not report is not judged.
struct SupportVerdict {
  bool supported = true;
  std::string reason;
};
SupportVerdict CheckSupport(const Config& config, const api::InventoryDevice& device);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_CONFIG_H_
