// xpuctl accept render: a Job per vendor of a capability class on that vendor's claim
// (xpuctl/accept/jobs.h), as the objects to apply.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/name_list.h"
#include "controller/yaml_json.h"
#include "xpuctl/accept/jobs.h"
#include "xpuctl/accept/policy.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

// --pod-patch: a mapping, YAML or JSON.
StatusOr<nlohmann::json> ReadPodPatch(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadInputFile("pod patch", path));
  StatusOr<nlohmann::ordered_json> doc = controller::ParseYamlDocument(text);
  if (!doc.ok()) return doc.status().WithContext("read pod patch " + path);
  if (!doc->is_object()) {
    return InvalidArgumentError("read pod patch " + path +
                                ": expected a mapping (a JSON merge patch of the pod spec)");
  }
  return nlohmann::json::parse(doc->dump());
}

// "ResourceClaimTemplate x (1 x class.nvidia)", "AcceleratorGang x (2 nodes x 1 class.huawei)".
std::string ClaimSummary(const accept::RenderRequest& request, const accept::RenderedJob& job) {
  const std::string device_class = request.capability_class + "." + job.vendor;
  if (request.gang_nodes >= 2) {
    return job.claim + " (" + std::to_string(request.gang_nodes) + " nodes x " +
           std::to_string(request.count) + " " + device_class + ")";
  }
  return job.claim + " (" + std::to_string(request.count) + " x " + device_class + ")";
}

}  // namespace

StatusOr<AcceptRenderInput> LoadAcceptRender(const Flags& flags) {
  AcceptRenderInput in;
  ASSIGN_OR_RETURN(in.config, LoadConfigFlag(flags));
  accept::RenderRequest& r = in.request;
  r.capability_class = flags.at("class");
  if (auto it = flags.find("vendors"); it != flags.end()) {
    StatusOr<std::vector<std::string>> vendors = SplitNameList(it->second);
    if (!vendors.ok()) return vendors.status().WithContext("--vendors");
    if (vendors->empty()) return InvalidArgumentError("--vendors: no vendor given");
    r.vendors = std::move(vendors).value();
  }
  if (auto it = flags.find("stages"); it != flags.end()) {
    ASSIGN_OR_RETURN(r.stages, accept::ParseStages(it->second));
  }
  if (flags.contains("gang")) {
    ASSIGN_OR_RETURN(r.gang_nodes, PositiveIntFlag(flags, "gang"));
    if (r.gang_nodes < 2) {
      return InvalidArgumentError("--gang: expected at least 2 nodes, got " +
                                  std::to_string(r.gang_nodes));
    }
  }
  if (flags.contains("count")) {
    ASSIGN_OR_RETURN(r.count, PositiveIntFlag(flags, "count"));
  }
  if (auto it = flags.find("policy"); it != flags.end()) {
    ASSIGN_OR_RETURN(r.policy, accept::LoadPolicyFile(it->second));
  }
  if (auto it = flags.find("namespace"); it != flags.end()) r.ns = it->second;
  if (auto it = flags.find("name"); it != flags.end()) r.name_prefix = it->second;
  if (auto it = flags.find("run-id"); it != flags.end()) r.run_id = it->second;
  if (auto it = flags.find("pod-patch"); it != flags.end()) {
    ASSIGN_OR_RETURN(r.pod_patch, ReadPodPatch(it->second));
  }
  if (auto it = flags.find("kubernetes-version"); it != flags.end()) {
    ASSIGN_OR_RETURN(r.kube_minor, controller::ParseKubeMinor(it->second, "--kubernetes-version"));
  }
  return in;
}

StatusOr<int> RunAcceptRender(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"yaml", "json"}));
  ASSIGN_OR_RETURN(const AcceptRenderInput in, LoadAcceptRender(flags));
  ASSIGN_OR_RETURN(const accept::RenderedAcceptance rendered,
                   accept::RenderAcceptance(in.request, in.config));
  if (format == "json") {
    const nlohmann::json list = {
        {"apiVersion", "v1"}, {"kind", "List"}, {"items", rendered.objects}};
    PrintDocument(list, format, out);
    for (const std::string& note : rendered.notes) std::cerr << "note: " << note << "\n";
    return kExitOk;
  }
  out << "# accept " << in.request.capability_class << ": " << rendered.jobs.size()
      << (rendered.jobs.size() == 1 ? " Job" : " Jobs") << " in namespace " << in.request.ns
      << ", run " << in.request.run_id << ", stages " << JoinNames(rendered.stages, ",") << "\n";
  for (const accept::RenderedJob& job : rendered.jobs) {
    out << "#   Job " << job.name << ": " << job.vendor << ", image " << job.image << ", "
        << ClaimSummary(in.request, job) << ", " << job.pods << (job.pods == 1 ? " pod" : " pods")
        << "\n";
  }
  for (const std::string& note : rendered.notes) out << "# note: " << note << "\n";
  for (const nlohmann::json& object : rendered.objects) {
    out << "---\n";
    PrintDocument(object, format, out);
  }
  return kExitOk;
}

}  // namespace xpu::cli::internal
