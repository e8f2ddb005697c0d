// xpuctl slices: the ResourceSlices the controller publishes for one node's inventory.
#include "controller/slices.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "api/node_inventory.h"
#include "api/validation.h"
#include "base/name_list.h"
#include "controller/config.h"
#include "controller/slice_goldens.h"
#include "xpuctl/cli.h"
#include "xpuctl/internal/commands.h"

namespace xpu::cli::internal {
namespace {

// "k=v,k2=v2" as Node labels.
StatusOr<std::map<std::string, std::string>> ParseLabels(std::string_view text) {
  std::map<std::string, std::string> labels;
  for (size_t start = 0; start < text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError("--label: expected key=value, got \"" + std::string(item) + "\"");
    }
    const std::string key(item.substr(0, eq));
    const std::string value(item.substr(eq + 1));
    RETURN_IF_ERROR(api::ValidateLabelKey(key, "--label"));
    RETURN_IF_ERROR(api::ValidateLabelValue(value, "--label " + key));
    labels[key] = value;
  }
  return labels;
}

}  // namespace

StatusOr<api::NodeInventory> ReadInventoryFile(const std::string& path) {
  const std::string context = "read inventory " + path;
  std::ifstream file(path);
  if (!file) return NotFoundError(context + ": cannot open the file");
  const nlohmann::json doc = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgumentError(context + ": not valid JSON");
  const nlohmann::json kind = doc.is_object() ? doc.value("kind", nlohmann::json()) : nullptr;
  if (kind != api::kNodeInventoryKind) {
    return InvalidArgumentError(context + ": kind is " + kind.dump() +
                                ", expected \"NodeInventory\"");
  }
  StatusOr<api::NodeInventory> inventory = api::FromJson<api::NodeInventory>(doc);
  if (!inventory.ok()) return inventory.status().WithContext(context);
  if (Status valid = api::ValidateNodeInventory(*inventory); !valid.ok()) {
    return valid.WithContext(context);
  }
  return inventory;
}

StatusOr<controller::Config> LoadConfigFlag(const Flags& flags) {
  auto it = flags.find("config");
  if (it == flags.end()) return controller::DefaultConfig();
  return controller::LoadConfigFile(it->second);
}

StatusOr<int> RunSlices(const Flags& flags, std::ostream& out) {
  ASSIGN_OR_RETURN(const std::string format, ChoiceFlag(flags, "output", {"json", "yaml"}));
  // Without the flag: the newest release supported, as --help says.
  int minor = controller::kNewestKubeMinor;
  if (auto it = flags.find("kubernetes-version"); it != flags.end()) {
    ASSIGN_OR_RETURN(minor, controller::ParseKubeMinor(it->second, "--kubernetes-version"));
  }
  ASSIGN_OR_RETURN(controller::Config config, LoadConfigFlag(flags));
  if (flags.contains("mode")) {
    ASSIGN_OR_RETURN(const std::string mode, ChoiceFlag(flags, "mode", {"attributes", "groups"}));
    config.mode = *controller::ParsePublishMode(mode);
  }
  // --mode, else the config's, else the default for the version: as the controller decides.
  config = controller::WithEffectiveMode(std::move(config), minor);
  ASSIGN_OR_RETURN(const api::NodeInventory inventory, ReadInventoryFile(flags.at("inventory")));
  controller::NodeFacts node;
  node.name = inventory.metadata.name;
  if (auto it = flags.find("node-name"); it != flags.end()) node.name = it->second;
  RETURN_IF_ERROR(api::ValidateNodeName(node.name, "node name"));
  node.uid = std::string(controller::kGoldenNodeUid);
  if (auto it = flags.find("label"); it != flags.end()) {
    ASSIGN_OR_RETURN(node.labels, ParseLabels(it->second));
  }
  controller::PublishOptions options;
  options.version = controller::KubeShapes(minor);
  ASSIGN_OR_RETURN(controller::DesiredPool pool,
                   controller::BuildPool(inventory, node, config, options));
  if (auto it = flags.find("allocated"); it != flags.end()) {
    // Names of the pool: the inventory's devices, and in groups mode the group devices too.
    std::set<std::string> known;
    for (const auto& slice : pool.slices) {
      for (const auto& d : slice.devices) known.insert(d.name);
    }
    StatusOr<std::vector<std::string>> names = SplitNameList(it->second);
    if (!names.ok()) return names.status().WithContext("--allocated");
    std::set<std::string> allocated;
    for (const std::string& name : *names) {
      if (!known.contains(name)) {
        return InvalidArgumentError("--allocated: \"" + name +
                                    "\" is not a device of the pool of " + node.name);
      }
      allocated.insert(name);
    }
    ASSIGN_OR_RETURN(pool, controller::BuildPool(inventory, node, config, options, allocated));
  }
  PrintDocument(controller::SliceList(controller::SliceObjects(pool, node, options.driver, 1)),
                format, out);
  return kExitOk;
}

}  // namespace xpu::cli::internal
