#include "xpuctl/accept/jobs.h"

#include <algorithm>
#include <utility>

#include "api/validation.h"
#include "base/name_list.h"
#include "base/text.h"
#include "controller/gangs.h"
#include "controller/render.h"
#include "xpuctl/accept/pod_patch.h"

namespace xpu::accept {
namespace {
namespace jobs_cc {

using nlohmann::json;

// The class' index in the config, for the messages that name capabilityClasses[i].
struct ClassRef {
  const controller::CapabilityClass* cls = nullptr;
  size_t index = 0;
};

StatusOr<ClassRef> FindClass(const controller::Config& config, const std::string& name) {
  std::vector<std::string> known;
  for (size_t i = 0; i < config.capability_classes.size(); ++i) {
    if (config.capability_classes[i].name == name) {
      return ClassRef{&config.capability_classes[i], i};
    }
    known.push_back(config.capability_classes[i].name);
  }
  return InvalidArgumentError("--class: unknown capability class " + QuoteText(name) +
                              "; the config has " +
                              (known.empty() ? "none" : JoinNames(known, ", ")));
}

// --vendors checked against the class; absent: the class' vendors, or for a class open to any
// vendor, those it has images for.
StatusOr<std::vector<std::string>> VendorsFor(const RenderRequest& request, const ClassRef& ref) {
  const controller::CapabilityClass& c = *ref.cls;
  const std::vector<std::string>& allowed =
      c.vendors.empty() ? controller::KnownVendors() : c.vendors;
  if (!request.vendors.empty()) {
    for (const std::string& vendor : request.vendors) {
      if (std::find(allowed.begin(), allowed.end(), vendor) == allowed.end()) {
        return InvalidArgumentError("--vendors: " + QuoteText(vendor) +
                                    " is not allowed by class " + c.name +
                                    " (allowed: " + JoinNames(allowed, ", ") + ")");
      }
    }
    return request.vendors;
  }
  if (!c.vendors.empty()) return c.vendors;
  std::vector<std::string> with_images;
  for (const auto& [vendor, image] : c.images) with_images.push_back(vendor);
  if (with_images.empty()) {
    return InvalidArgumentError("capabilityClasses[" + std::to_string(ref.index) +
                                "].images: class " + c.name +
                                " allows any vendor and has no image; name the vendors with "
                                "--vendors and give each an image");
  }
  return with_images;
}

StatusOr<std::string> ImageFor(const ClassRef& ref, const std::string& vendor) {
  for (const auto& [v, image] : ref.cls->images) {
    if (v == vendor) return image;
  }
  return InvalidArgumentError("capabilityClasses[" + std::to_string(ref.index) + "].images." +
                              vendor + ": class " + ref.cls->name + " has no image for vendor " +
                              vendor +
                              "; the workload runs in the class' image for each vendor "
                              "(add one, or leave the vendor out with --vendors)");
}

Status CheckRequest(const RenderRequest& request) {
  if (request.gang_nodes == 1 || request.gang_nodes < 0) {
    return InvalidArgumentError("--gang: expected at least 2 nodes, got " +
                                std::to_string(request.gang_nodes));
  }
  if (request.count < 1) {
    return InvalidArgumentError("--count: expected a positive integer, got " +
                                std::to_string(request.count));
  }
  RETURN_IF_ERROR(api::ValidateDnsLabel(request.ns, "--namespace"));
  RETURN_IF_ERROR(api::ValidateLabelValue(request.run_id, "--run-id"));
  if (!request.pod_patch.is_null() && !request.pod_patch.is_object()) {
    return InvalidArgumentError("--pod-patch: expected a mapping (a patch of the pod spec), got " +
                                Abbreviate(request.pod_patch.dump(), 60));
  }
  return OkStatus();
}

std::string DefaultPrefix(const std::string& capability_class) {
  std::string prefix = "accept-" + capability_class;
  std::replace(prefix.begin(), prefix.end(), '.', '-');
  return prefix;
}

json Labels(const RenderRequest& request, const std::string& vendor) {
  json labels = {{std::string(kManagedByLabel), std::string(kManagedBy)},
                 {std::string(kRunLabel), request.run_id}};
  if (!vendor.empty()) labels[std::string(kVendorLabel)] = vendor;
  return labels;
}

// The collectives' rendezvous port of the first Job, the next one's one up: pods on the host's
// network (gangs, and test clusters whose pods all use hostNetwork) never share one.
constexpr int kMasterPort = 29500;

// The workload container: the vendor's image, the stages and the env of the contract.
json Container(const RenderRequest& request, const std::vector<std::string>& stages,
               const std::string& vendor, const std::string& image, int port, const json& claims) {
  const std::string list = JoinNames(stages, ",");
  const auto field = [](const char* path) { return json{{"fieldRef", {{"fieldPath", path}}}}; };
  json env = json::array({
      {{"name", "XPU_ACCEPT_STAGES"}, {"value", list}},
      {{"name", "XPU_ACCEPT_POLICY"}, {"value", request.policy.doc.dump()}},
      {{"name", "XPU_ACCEPT_VENDOR"}, {"value", vendor}},
      {{"name", "XPU_ACCEPT_IMAGE"}, {"value", image}},
      {{"name", "XPU_ACCEPT_CLASS"}, {"value", request.capability_class}},
      {{"name", "XPU_ACCEPT_NODE"}, {"valueFrom", field("spec.nodeName")}},
      {{"name", "XPU_ACCEPT_POD"}, {"valueFrom", field("metadata.name")}},
      {{"name", "XPU_ACCEPT_MASTER_PORT"}, {"value", std::to_string(port)}},
  });
  json uses = json::array();
  for (const json& claim : claims) uses.push_back({{"name", claim.at("name")}});
  return {{"name", std::string(kWorkloadContainer)},
          {"image", image},
          {"command", {"python3", "-m", "xpu_acceptance"}},
          {"args", {"--stages", list}},
          {"env", std::move(env)},
          {"resources", {{"claims", std::move(uses)}}},
          {"terminationMessagePolicy", "FallbackToLogsOnError"}};
}

// The Job of one vendor: one pod on the claim template `name`, or with a gang, gang_nodes
// Indexed pods on the gang's shared claim and member template; the pod patch applied last.
StatusOr<json> Job(const RenderRequest& request, const std::vector<std::string>& stages,
                   const std::string& vendor, const std::string& name, const std::string& image,
                   int port) {
  const bool gang = request.gang_nodes >= 2;
  json claims =
      gang
          ? json::array({{{"name", "gang"}, {"resourceClaimName", controller::GangClaimName(name)}},
                         {{"name", "devices"},
                          {"resourceClaimTemplateName", controller::GangTemplateName(name)}}})
          : json::array({{{"name", "accelerators"}, {"resourceClaimTemplateName", name}}});
  json pod = {{"restartPolicy", "Never"},
              {"containers", {Container(request, stages, vendor, image, port, claims)}},
              {"resourceClaims", std::move(claims)}};
  json spec = {{"backoffLimit", 0}};
  if (gang) {
    // MASTER_ADDR (from the gang's CDI spec) is the rank-0 node's address: the pods listen on
    // the node's network, one per node.
    pod["hostNetwork"] = true;
    pod["dnsPolicy"] = "ClusterFirstWithHostNet";
    pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
        json::array({{{"labelSelector", {{"matchLabels", Labels(request, vendor)}}},
                      {"topologyKey", "kubernetes.io/hostname"}}});
    spec["completionMode"] = "Indexed";
    spec["completions"] = request.gang_nodes;
    spec["parallelism"] = request.gang_nodes;
  }
  if (!request.pod_patch.is_null()) {
    StatusOr<json> patched = PatchPodSpec(std::move(pod), request.pod_patch);
    if (!patched.ok()) {
      return InvalidArgumentError("--pod-patch: " + std::string(patched.status().message()));
    }
    pod = std::move(patched).value();
  }
  spec["template"] = {{"metadata", {{"labels", Labels(request, vendor)}}},
                      {"spec", std::move(pod)}};
  return json{{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", name}, {"namespace", request.ns}, {"labels", Labels(request, vendor)}}},
              {"spec", std::move(spec)}};
}

// controller::Render for one vendor: the claim template (or gang) alone, relabelled as ours.
StatusOr<json> RenderClaim(const RenderRequest& request, const controller::Config& config,
                           const std::string& vendor, const std::string& name,
                           std::vector<std::string>& notes) {
  controller::CapabilityRequest claim;
  claim.name = name;
  claim.ns = request.ns;
  claim.capability_class = request.capability_class;
  if (request.gang_nodes >= 2) {
    claim.topology = "multi-node";
    claim.count = int64_t{request.gang_nodes} * request.count;
    claim.devices_per_node = request.count;
  } else {
    claim.topology = "single-node";
    claim.count = request.count;
  }
  controller::RenderOptions options;
  options.config = controller::WithEffectiveMode(config, request.kube_minor);
  options.vendors = {vendor};
  StatusOr<controller::Rendered> rendered = controller::Render(claim, options);
  if (!rendered.ok()) {
    // The request's fields are flags here: accelerator.count is --count (per node with --gang).
    std::string message(rendered.status().message());
    for (std::string_view field : {"accelerator.count: ", "accelerator.devicesPerNode: "}) {
      if (message.starts_with(field)) message = "--count: " + message.substr(field.size());
    }
    return Status(rendered.status().code(), "vendor " + vendor + ": " + message);
  }
  for (const std::string& note : rendered->notes) {
    notes.emplace_back(vendor).append(": ").append(note);
  }
  json object = rendered->objects.at(0);  // the claim template or the gang; flavors, classes after
  object["metadata"]["labels"] = Labels(request, "");
  return object;
}

std::string ClaimText(const json& object) {
  return object.at("kind").get<std::string>() + " " +
         object.at("metadata").at("name").get<std::string>();
}

}  // namespace jobs_cc
}  // namespace

StatusOr<RenderedAcceptance> RenderAcceptance(const RenderRequest& request,
                                              const controller::Config& config) {
  using jobs_cc::json;
  RETURN_IF_ERROR(jobs_cc::CheckRequest(request));
  ASSIGN_OR_RETURN(const jobs_cc::ClassRef ref,
                   jobs_cc::FindClass(config, request.capability_class));
  ASSIGN_OR_RETURN(const std::vector<std::string> vendors, jobs_cc::VendorsFor(request, ref));
  RenderedAcceptance out;
  out.stages = request.stages;
  if (out.stages.empty()) out.stages.assign(StageNames().begin(), StageNames().end());
  const std::string prefix = request.name_prefix.empty()
                                 ? jobs_cc::DefaultPrefix(request.capability_class)
                                 : request.name_prefix;
  std::vector<json> jobs;
  std::vector<std::string> left_out;
  for (const std::string& vendor : vendors) {
    ASSIGN_OR_RETURN(const std::string image, jobs_cc::ImageFor(ref, vendor));
    std::string name = prefix + "-";
    name += vendor;
    // A Job's name is its pods' label value and, Indexed, the start of their host names.
    if (!api::IsDnsLabel(name)) {
      return InvalidArgumentError("--name: the Job name " + QuoteText(name) +
                                  " is not a DNS label of at most 63 characters (lower-case "
                                  "letters, digits and '-'); give a shorter --name");
    }
    StatusOr<json> claim = jobs_cc::RenderClaim(request, config, vendor, name, out.notes);
    if (!claim.ok()) {
      // A vendor named on the command line must render; one of the class' own may be left out.
      if (!request.vendors.empty()) return claim.status();
      out.notes.push_back("left out " + std::string(claim.status().message()));
      left_out.emplace_back(claim.status().message());
      continue;
    }
    ASSIGN_OR_RETURN(json job_object,
                     jobs_cc::Job(request, out.stages, vendor, name, image,
                                  jobs_cc::kMasterPort + static_cast<int>(out.jobs.size())));
    RenderedJob job{vendor,
                    name,
                    image,
                    jobs_cc::ClaimText(*claim),
                    std::max(1, request.gang_nodes),
                    std::move(job_object)};
    out.objects.push_back(std::move(claim).value());
    jobs.push_back(job.job);
    out.jobs.push_back(std::move(job));
  }
  if (out.jobs.empty()) {
    return InvalidArgumentError("no vendor of class " + request.capability_class +
                                " can be rendered: " + JoinNames(left_out, "; "));
  }
  out.objects.insert(out.objects.end(), jobs.begin(), jobs.end());
  out.notes.push_back(
      "not written: the Kueue ResourceFlavors and legacy-name DeviceClasses `xpuctl render` adds; "
      "the claims ask for the DeviceClasses " +
      request.capability_class + ".<vendor>, which the controller keeps from the same config");
  return out;
}

}  // namespace xpu::accept
