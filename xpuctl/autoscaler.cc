// xpuctl autoscaler-template: what a new node of a node group would publish
// (controller/node_groups.h).
#include <nlohmann/json.hpp>

#include "controller/config.h"
#include "controller/node_groups.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {

StatusOr<int> RunAutoscalerTemplate(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  int minor = controller::kNewestKubeMinor;  // without the flag: the newest supported
  if (auto it = flags.find("kubernetes-version"); it != flags.end()) {
    ASSIGN_OR_RETURN(minor, controller::ParseKubeMinor(it->second, "--kubernetes-version"));
  }
  ASSIGN_OR_RETURN(controller::Config config, LoadConfigFlag(flags));
  // The mode a new node of the group would be published in, as the controller decides it.
  config = controller::WithEffectiveMode(std::move(config), minor);
  ASSIGN_OR_RETURN(const controller::NodeGroupProfile profile,
                   controller::LoadNodeGroupProfile(flags.at("node-group")));
  controller::PublishOptions options;
  options.version = controller::KubeShapes(minor);
  StatusOr<controller::DesiredPool> pool = controller::TemplatePool(profile, config, options);
  if (!pool.ok()) return pool.status().WithContext("node group " + profile.name);
  PrintDocument(controller::TemplateObjects(profile, *pool, options.driver), format, out);
  return kExitOk;
}

}  // namespace xpu::cli::internal
