#include "controller/node_groups.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "api/codec/codec.h"
#include "api/validation.h"
#include "base/text.h"
#include "controller/reference_servers.h"
#include "controller/yaml_json.h"

namespace xpu::controller {
namespace {

namespace codec = api::codec;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return NotFoundError("cannot open the file");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Attributes a template cannot know, with where a real node takes them from.
struct RuntimeAttribute {
  std::string_view name;  // as published: unqualified (the driver's) or qualified
  std::string_view source;
};
constexpr RuntimeAttribute kRuntimeAttributes[] = {
    {"uuid", "the vendor library or sysfs of the node"},
    {"resource.kubernetes.io/pciBusID", "the node's PCI enumeration"},
    {"resource.kubernetes.io/pcieRoot", "the node's PCI enumeration"},
    {"pcieSwitch", "the node's PCI enumeration"},
    {"driverVersion", "the node's accelerator driver"},
    {"firmwareVersion", "the device's firmware"},
    {"toolkitVersion", "the node's toolkit install"},
    {"gang", "the AcceleratorGang holding the node"},
};

}  // namespace

// The profile as written; `inventory` is resolved after reading.
template <typename V, codec::FieldsOf<NodeGroupProfile> S>
void VisitFields(V& v, S& p) {
  v.Required("name", p.name, "the group's name (DNS label)");
  v.Optional("model", p.model, "a reference server");
  v.Optional("inventory", p.inventory_path, "a NodeInventory file, relative to the profile");
  v.Optional("labels", p.labels, "the labels its nodes get");
  v.Optional("minSize", p.min_size, "nodes at the least");
  v.Required("maxSize", p.max_size, "nodes at the most");
}

StatusOr<NodeGroupProfile> ParseNodeGroupProfile(std::string_view text,
                                                 const std::string& base_dir) {
  ASSIGN_OR_RETURN(const nlohmann::ordered_json doc, ParseYamlDocument(text));
  ASSIGN_OR_RETURN(NodeGroupProfile p, codec::Decode<NodeGroupProfile>(nlohmann::json(doc)));
  RETURN_IF_ERROR(api::ValidateDnsLabel(p.name, "name"));
  for (const auto& [key, value] : p.labels) {
    RETURN_IF_ERROR(api::ValidateLabelKey(key, "labels"));
    RETURN_IF_ERROR(api::ValidateLabelValue(value, "labels." + key));
  }
  if (p.min_size < 0 || p.max_size < 1 || p.min_size > p.max_size) {
    return InvalidArgumentError(
        "maxSize: the sizes must satisfy 0 <= minSize <= maxSize, 1 <= "
        "maxSize; got minSize " +
        std::to_string(p.min_size) + ", maxSize " + std::to_string(p.max_size));
  }
  ASSIGN_OR_RETURN(p.inventory, ResolveServerInventory(p.model, p.inventory_path, base_dir));
  return p;
}

StatusOr<api::NodeInventory> ResolveServerInventory(std::string_view model,
                                                    std::string_view inventory_path,
                                                    const std::string& base_dir) {
  if (model.empty() == inventory_path.empty()) {
    return InvalidArgumentError("model: give exactly one of model (a server model: " +
                                ReferenceServerNames() + ") and inventory (a NodeInventory file)");
  }
  if (!model.empty()) {
    const ReferenceServer* server = FindReferenceServer(model);
    if (server == nullptr) {
      return InvalidArgumentError("model: unknown server model " + QuoteText(model) +
                                  "; known: " + ReferenceServerNames());
    }
    return server->inventory;
  }
  std::filesystem::path path(inventory_path);
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  const std::string context = "inventory: read " + path.string();
  StatusOr<std::string> file = ReadFile(path.string());
  if (!file.ok()) return file.status().WithContext(context);
  const nlohmann::json json = nlohmann::json::parse(*file, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return InvalidArgumentError(context + ": not valid JSON");
  StatusOr<api::NodeInventory> inventory = api::FromJson<api::NodeInventory>(json);
  if (!inventory.ok()) return inventory.status().WithContext(context);
  if (Status valid = api::ValidateNodeInventory(*inventory); !valid.ok()) {
    return valid.WithContext(context);
  }
  return *std::move(inventory);
}

StatusOr<NodeGroupProfile> LoadNodeGroupProfile(const std::string& path) {
  const std::string context = "read node group " + path;
  StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status().WithContext(context);
  StatusOr<NodeGroupProfile> profile =
      ParseNodeGroupProfile(*text, std::filesystem::path(path).parent_path().string());
  if (!profile.ok()) return profile.status().WithContext(context);
  return profile;
}

StatusOr<std::vector<NodeGroupProfile>> LoadNodeGroupProfiles(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
      files.push_back(entry.path().string());
    }
  }
  if (ec) return NotFoundError("read node groups " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<NodeGroupProfile> out;
  std::set<std::string> names;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(NodeGroupProfile p, LoadNodeGroupProfile(file));
    if (!names.insert(p.name).second) {
      return InvalidArgumentError("read node group " + file + ": name: " + QuoteText(p.name) +
                                  " is already another profile's");
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string TemplateNodeName(const NodeGroupProfile& profile) { return profile.name + "-template"; }

StatusOr<DesiredPool> TemplatePool(const NodeGroupProfile& profile, const Config& config,
                                   const PublishOptions& options) {
  NodeFacts node;
  node.name = TemplateNodeName(profile);
  node.labels = profile.labels;
  return BuildPool(profile.inventory, node, config, options);
}

bool IsRuntimeAttribute(std::string_view name) {
  return std::any_of(std::begin(kRuntimeAttributes), std::end(kRuntimeAttributes),
                     [&](const RuntimeAttribute& a) { return a.name == name; });
}

std::vector<TemplateBinding> TemplateBindings(const DesiredPool& pool, std::string_view driver) {
  std::vector<TemplateBinding> out;
  for (const RuntimeAttribute& a : kRuntimeAttributes) {
    TemplateBinding b;
    b.attribute = a.name.find('/') == std::string_view::npos
                      ? std::string(driver) + "/" + std::string(a.name)
                      : std::string(a.name);
    b.source = std::string(a.source);
    for (const auto& slice : pool.slices) {
      for (const auto& device : slice.devices) {
        if (device.attributes.contains(std::string(a.name))) ++b.devices;
      }
    }
    if (b.devices > 0) out.push_back(std::move(b));
  }
  return out;
}

nlohmann::json TemplateObjects(const NodeGroupProfile& profile, const DesiredPool& pool,
                               std::string_view driver) {
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json specs = nlohmann::json::array();
  const std::string node = TemplateNodeName(profile);
  int index = 0;
  for (const api::resource::ResourceSliceSpec& spec : pool.slices) {
    api::resource::ResourceSlice slice;
    slice.metadata.name = node + "-" + std::string(driver) + "-" + std::to_string(index++);
    slice.spec = spec;
    slice.spec.pool.generation = 1;
    slice.spec.pool.resource_slice_count = static_cast<int64_t>(pool.slices.size());
    nlohmann::json json = api::resource::ToJson(slice);
    specs.push_back(json["spec"]);
    items.push_back(std::move(json));
  }
  // Accelerators, not group devices: the gpu-count Cluster API reads.
  const size_t accelerators = profile.inventory.status.devices.size();
  std::map<std::string, std::string> all_labels = profile.labels;
  all_labels.emplace(kNodeGroupLabel, profile.name);
  std::string labels;
  for (const auto& [key, value] : all_labels) {
    if (!labels.empty()) labels += ",";
    labels += key;
    labels += "=";
    labels += value;
  }
  nlohmann::json annotations = {
      {"capacity.cluster-autoscaler.kubernetes.io/dra-driver", std::string(driver)},
      {"capacity.cluster-autoscaler.kubernetes.io/gpu-count", std::to_string(accelerators)},
      {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size",
       std::to_string(profile.min_size)},
      {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size",
       std::to_string(profile.max_size)}};
  annotations["capacity.cluster-autoscaler.kubernetes.io/labels"] = labels;
  items.push_back({{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                   {"kind", "MachineDeployment"},
                   {"metadata", {{"name", profile.name}, {"annotations", annotations}}}});
  nlohmann::json bindings = nlohmann::json::array();
  for (const TemplateBinding& b : TemplateBindings(pool, driver)) {
    bindings.push_back({{"attribute", b.attribute}, {"source", b.source}, {"devices", b.devices}});
  }
  nlohmann::json node_labels = nlohmann::json::object();
  for (const auto& [key, value] : all_labels) node_labels[key] = value;
  items.push_back({{"apiVersion", std::string(api::kXpuApiVersion)},
                   {"kind", "ResourceSliceTemplates"},
                   {"metadata", {{"name", profile.name}}},
                   {"spec",
                    {{"nodeGroup", profile.name},
                     {"serverModel", profile.inventory.status.server_model},
                     {"publishingMode", std::string(PublishModeName(pool.mode))},
                     {"nodeLabels", node_labels},
                     {"minSize", profile.min_size},
                     {"maxSize", profile.max_size},
                     {"devices", pool.devices},
                     {"slices", specs},
                     {"bindings", bindings}}}});
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

}  // namespace xpu::controller
