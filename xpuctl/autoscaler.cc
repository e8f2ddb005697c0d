// xpuctl autoscaler-template: what a new node of a node group would publish
// (controller/node_groups.h).
#include <nlohmann/json.hpp>

#include "api/validation.h"
#include "controller/node_groups.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunAutoscalerTemplate(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  ASSIGN_OR_RETURN(const std::string version_name,
                   ChoiceFlag(flags, "kubernetes-version", {"1.35", "1.34"}));
  ASSIGN_OR_RETURN(const controller::Config config, LoadConfigFlag(flags));
  ASSIGN_OR_RETURN(const controller::NodeGroupProfile profile,
                   controller::LoadNodeGroupProfile(flags.at("node-group")));
  controller::PublishOptions options;
  options.version = *api::ParseKubeVersion(version_name);
  StatusOr<controller::DesiredPool> pool = controller::TemplatePool(profile, config, options);
  if (!pool.ok()) return pool.status().WithContext("node group " + profile.name);
  PrintDocument(controller::TemplateObjects(profile, *pool, options.driver), format, out);
  return kExitOk;
}

}  // namespace xpu::cli::internal
