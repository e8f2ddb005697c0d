// What `xpuctl accept render` writes: for each vendor of a capability class, the claim that
// `xpuctl render` (controller::Render) gives for that vendor alone, and a Job that runs the
// acceptance workload (deploy/acceptance/, `python3 -m xpu_acceptance`) on it in the class'
// image for the vendor.
//
//  - single-node: per vendor a ResourceClaimTemplate `<prefix>-<vendor>` (count devices of
//    DeviceClass `<class>.<vendor>`) and a Job `<prefix>-<vendor>` of one pod on it;
//  - gang (gang_nodes >= 2): per vendor an AcceleratorGang `<prefix>-<vendor>` of gang_nodes x
//    count devices (deviceClassName `<class>.<vendor>`) and one Indexed Job with parallelism =
//    completions = gang_nodes whose pods share the gang's claim `<gang>-gang` and each take a
//    claim from its member template `<gang>-member`, both made by the controller
//    (docs/gangs.md). The pods use hostNetwork (MASTER_ADDR, from the gang, is the rank-0 node's
//    address) and one pod per node (pod anti-affinity on the Job's pods).
//
// Every object carries the labels app.kubernetes.io/managed-by=xpuctl-accept and
// xpu.dra.dev/accept-run=<run id>; Jobs and their pods also xpu.dra.dev/accept-vendor=<vendor>.
// A Job: batch/v1, backoffLimit 0, restartPolicy Never, one container `workload` with command
// `python3 -m xpu_acceptance`, args `--stages <list>`, env XPU_ACCEPT_STAGES, XPU_ACCEPT_POLICY
// (the effective policy, compact JSON), XPU_ACCEPT_VENDOR, XPU_ACCEPT_IMAGE, XPU_ACCEPT_CLASS,
// XPU_ACCEPT_NODE (spec.nodeName), XPU_ACCEPT_POD (metadata.name), XPU_ACCEPT_MASTER_PORT (29500
// for the first Job, one more for each next, so that Jobs on the host network never share a
// port), terminationMessagePolicy
// FallbackToLogsOnError, resources.claims on the pod's claims. The pod patch is applied last to
// each pod template's spec by PatchPodSpec (pod_patch.h): RFC 7386, but containers merged by
// name (env, volumeMounts, ... by key within), volumes, imagePullSecrets and resourceClaims by
// name, tolerations appended; a patch that takes away the workload's claim is an error naming
// --pod-patch. Site volumes and mounts, env, tolerations, image pull secrets, hostNetwork, ...
//
// Render's Kueue ResourceFlavors and legacy-name DeviceClasses are left out (a note says so):
// the Jobs ask for `<class>.<vendor>`, which the controller keeps from the same config. Errors
// (invalid argument) name the field: an unknown class, a vendor the class does not allow, a
// vendor without an image (capabilityClasses[i].images.<vendor>), a name too long. Pure.
#ifndef XPU_XPUCTL_ACCEPT_JOBS_H_
#define XPU_XPUCTL_ACCEPT_JOBS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "controller/config.h"
#include "xpuctl/accept/policy.h"

namespace xpu::accept {

// The labels of what accept render writes (run's clean-up selects on them).
inline constexpr std::string_view kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedBy = "xpuctl-accept";
inline constexpr std::string_view kRunLabel = "xpu.dra.dev/accept-run";
inline constexpr std::string_view kVendorLabel = "xpu.dra.dev/accept-vendor";
// The container running the workload.
inline constexpr std::string_view kWorkloadContainer = "workload";

struct RenderRequest {
  std::string capability_class;      // --class
  std::vector<std::string> vendors;  // --vendors; empty: the class' vendors
  std::vector<std::string> stages;   // empty: every stage (StageNames())
  int gang_nodes = 0;                // --gang: 0 single-node, else >= 2 nodes
  int count = 1;                     // --count: devices per pod (per node)
  std::string ns = "default";        // --namespace
  std::string name_prefix;           // --name; empty: "accept-<class>" (dots made dashes)
  std::string run_id = "render";     // --run-id: the xpu.dra.dev/accept-run label
  Policy policy = DefaultPolicy();
  nlohmann::json pod_patch;                       // null: none; else an object (pod_patch.h)
  int kube_minor = controller::kNewestKubeMinor;  // decides the mode when the config has none
};

struct RenderedJob {
  std::string vendor;
  std::string name;   // the Job's name, also its claim template's or gang's name
  std::string image;  // the workload image
  std::string claim;  // "ResourceClaimTemplate NAME" or "AcceleratorGang NAME"
  int pods = 1;       // parallelism
  nlohmann::json job;
};

struct RenderedAcceptance {
  std::vector<nlohmann::json> objects;  // in apply order: claims and gangs, then the Jobs
  std::vector<RenderedJob> jobs;        // one per vendor, in the class' order of preference
  std::vector<std::string> stages;      // the stages the Jobs run
  std::vector<std::string> notes;       // what Render said, and what was left out
};

StatusOr<RenderedAcceptance> RenderAcceptance(const RenderRequest& request,
                                              const controller::Config& config);

}  // namespace xpu::accept

#endif  // XPU_XPUCTL_ACCEPT_JOBS_H_
