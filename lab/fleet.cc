#include "lab/fleet.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "api/fabric_description.h"
#include "api/partitions.h"
#include "base/text.h"
#include "controller/node_groups.h"
#include "controller/yaml_json.h"

namespace xpu::lab {
namespace {

using nlohmann::ordered_json;

constexpr int kDefaultLeafSize = 8;

StatusOr<int64_t> IntMember(const ordered_json& object, const std::string& key,
                            const std::string& path, int64_t min, int64_t max) {
  const auto it = object.find(key);
  if (it == object.end()) return InvalidArgumentError(path + "." + key + ": required");
  if (!it->is_number_integer()) {
    return InvalidArgumentError(path + "." + key + ": must be an integer, got " + it->dump());
  }
  const int64_t value = it->get<int64_t>();
  if (value < min || value > max) {
    return InvalidArgumentError(path + "." + key + ": must be between " + std::to_string(min) +
                                " and " + std::to_string(max) + ", got " + std::to_string(value));
  }
  return value;
}

StatusOr<std::string> StringMember(const ordered_json& object, const std::string& key,
                                   const std::string& path) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return InvalidArgumentError(path + "." + key + ": must be a string, got " + it->dump());
  }
  return it->get<std::string>();
}

StatusOr<FleetModel> BuildModel(api::NodeInventory inventory, std::string name,
                                const std::string& path) {
  StatusOr<topology::NodeSpec> spec = api::NodeDescriptionFromInventory(inventory);
  if (!spec.ok()) return spec.status().WithContext(path);
  StatusOr<topology::Node> node = topology::Node::Build(*spec);
  if (!node.ok()) return node.status().WithContext(path);
  if (node->size() == 0) return InvalidArgumentError(path + ": the server has no devices");
  FleetModel model;
  model.name = std::move(name);
  model.devices = node->size();
  model.node = std::make_shared<const topology::Node>(*std::move(node));
  for (const api::InventoryDevice& device : inventory.status.devices) {
    if (model.vendor.empty()) {
      model.vendor = device.vendor;
    } else if (model.vendor != device.vendor) {
      model.vendor = "mixed";
    }
  }
  for (api::InventoryDevice& device : inventory.status.devices) {
    if (!device.partitioning.has_value() || !device.partitioning->enabled) continue;
    device.partitioning->partitions.clear();
    const std::optional<int> id = model.node->FindDevice(device.name);
    if (!id.has_value()) continue;
    model.partitionable.push_back(
        {*id, device.name, device.partitioning->kind, api::PartitionModel(*device.partitioning)});
  }
  model.inventory = std::move(inventory);
  return model;
}

// Leaves of `leaf_size` nodes in fleet order under one spine.
topology::FabricSpec DefaultFabric(const std::vector<FleetNode>& nodes, int leaf_size) {
  topology::FabricSpec spec;
  spec.tiers = {{"leaf", 400}, {"spine", 200}};
  spec.domains.push_back({"spine-0", 1, ""});
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string leaf = "leaf-" + std::to_string(i / static_cast<size_t>(leaf_size));
    if (i % static_cast<size_t>(leaf_size) == 0) spec.domains.push_back({leaf, 0, "spine-0"});
    spec.nodes.push_back({nodes[i].name, leaf});
  }
  return spec;
}

// A FabricDescription file re-ordered to the fleet's nodes: each fleet node exactly once.
StatusOr<topology::FabricSpec> FabricFromFile(const std::string& file,
                                              const std::vector<FleetNode>& nodes) {
  ASSIGN_OR_RETURN(topology::FabricSpec spec, api::ReadFabricDescriptionFile(file, nullptr));
  std::map<std::string, std::string, std::less<>> domain_of;
  for (const topology::FabricNodeSpec& n : spec.nodes) domain_of[n.name] = n.domain;
  std::vector<topology::FabricNodeSpec> ordered;
  for (const FleetNode& n : nodes) {
    auto it = domain_of.find(n.name);
    if (it == domain_of.end()) {
      return InvalidArgumentError("fabric: " + file + " does not place the fleet's node " +
                                  QuoteText(n.name));
    }
    ordered.push_back({n.name, it->second});
    domain_of.erase(it);
  }
  if (!domain_of.empty()) {
    return InvalidArgumentError("fabric: " + file + " places a node the fleet does not have: " +
                                QuoteText(domain_of.begin()->first));
  }
  spec.nodes = std::move(ordered);
  return spec;
}

}  // namespace

double DeviceShare(const topology::PartitionableDevice& device,
                   const topology::PartitionShape& shape) {
  double share =
      device.slots > 0 ? static_cast<double>(shape.slots) / static_cast<double>(device.slots) : 0.0;
  for (const auto& [counter, units] : shape.units) {
    auto total = device.capacity.find(counter);
    if (total != device.capacity.end() && total->second > 0) {
      share = std::max(share, static_cast<double>(units) / static_cast<double>(total->second));
    }
  }
  return std::min(share, 1.0);
}

std::vector<PartitionOffer> PartitionOffers(const Fleet& fleet) {
  std::map<int, uint64_t> nodes_of;
  for (const FleetNode& n : fleet.nodes) ++nodes_of[n.model];
  std::map<std::string, PartitionOffer> offers;
  for (size_t mi = 0; mi < fleet.models.size(); ++mi) {
    for (const FleetPartitionable& p : fleet.models[mi].partitionable) {
      std::vector<std::pair<double, std::string>> shares;
      for (const topology::PartitionShape& shape : p.model.profiles) {
        const double share = DeviceShare(p.model, shape);
        if (share > 0) shares.emplace_back(share, shape.name);
      }
      std::sort(shares.begin(), shares.end());
      const size_t n = std::min<size_t>(shares.size(), 40);
      for (size_t k = 0; k < n; ++k) {
        PartitionOffer& o =
            offers.try_emplace(shares[k].second, PartitionOffer{shares[k].second, 0, 0})
                .first->second;
        o.device_share = std::max(o.device_share, shares[k].first);
        // Each device draws the same in all: 2^(n-1-k) of 2^n - 1.
        o.weight += static_cast<double>(nodes_of[static_cast<int>(mi)]) *
                    std::ldexp(1.0, static_cast<int>(n - 1 - k)) /
                    (std::ldexp(1.0, static_cast<int>(n)) - 1);
      }
    }
  }
  std::vector<PartitionOffer> out;
  for (auto& [profile, o] : offers) out.push_back(std::move(o));
  std::stable_sort(out.begin(), out.end(), [](const PartitionOffer& a, const PartitionOffer& b) {
    return a.device_share < b.device_share;
  });
  return out;
}

SyntheticOptions SyntheticForFleet(const Fleet& fleet, SyntheticOptions options) {
  options.fleet_devices = fleet.devices;
  options.nodes = static_cast<int>(fleet.nodes.size());
  options.max_devices_per_node = 0;
  for (const FleetModel& m : fleet.models) {
    options.max_devices_per_node = std::max(options.max_devices_per_node, m.devices);
  }
  options.partitions.clear();
  options.partitionable_devices = 0;
  if (options.partition_share > 0) {
    options.partitions = PartitionOffers(fleet);
    for (const FleetNode& n : fleet.nodes) {
      options.partitionable_devices +=
          static_cast<int>(fleet.models[static_cast<size_t>(n.model)].partitionable.size());
    }
  }
  return options;
}

StatusOr<Fleet> ParseFleet(std::string_view text, const std::string& base_dir) {
  ASSIGN_OR_RETURN(const ordered_json doc, controller::ParseYamlDocument(text));
  if (!doc.is_object()) return InvalidArgumentError("the fleet must be a mapping with nodes:");
  for (const auto& [key, value] : doc.items()) {
    if (key != "nodes" && key != "fabric") {
      return InvalidArgumentError(key + ": unknown field (expected nodes, fabric)");
    }
  }
  const auto nodes_it = doc.find("nodes");
  if (nodes_it == doc.end() || !nodes_it->is_array() || nodes_it->empty()) {
    return InvalidArgumentError("nodes: required, a non-empty list of {model|inventory, count}");
  }
  Fleet fleet;
  std::map<std::string, int> model_index;
  std::map<std::string, int> next_number;
  for (size_t i = 0; i < nodes_it->size(); ++i) {
    const ordered_json& entry = (*nodes_it)[i];
    const std::string path = "nodes[" + std::to_string(i) + "]";
    if (!entry.is_object()) return InvalidArgumentError(path + ": must be a mapping");
    for (const auto& [key, value] : entry.items()) {
      if (key != "model" && key != "inventory" && key != "count") {
        std::string message = path;
        message += "." + key + ": unknown field (expected model, inventory, count)";
        return InvalidArgumentError(message);
      }
    }
    ASSIGN_OR_RETURN(const std::string model_name, StringMember(entry, "model", path));
    ASSIGN_OR_RETURN(const std::string inventory_path, StringMember(entry, "inventory", path));
    ASSIGN_OR_RETURN(const int64_t count, IntMember(entry, "count", path, 1, kMaxFleetNodes));
    StatusOr<api::NodeInventory> inventory =
        controller::ResolveServerInventory(model_name, inventory_path, base_dir);
    if (!inventory.ok()) return inventory.status().WithContext(path);
    const std::string name = model_name.empty() ? inventory->metadata.name : model_name;
    auto [it, inserted] = model_index.try_emplace(name, static_cast<int>(fleet.models.size()));
    if (inserted) {
      ASSIGN_OR_RETURN(FleetModel model, BuildModel(*std::move(inventory), name, path));
      fleet.models.push_back(std::move(model));
    }
    if (static_cast<int64_t>(fleet.nodes.size()) + count > kMaxFleetNodes) {
      return InvalidArgumentError(path + ".count: the fleet would have more than " +
                                  std::to_string(kMaxFleetNodes) + " nodes");
    }
    for (int64_t n = 0; n < count; ++n) {
      fleet.nodes.push_back({name + "-" + std::to_string(next_number[name]++), it->second});
      fleet.devices += fleet.models[static_cast<size_t>(it->second)].devices;
    }
    fleet.summary += (fleet.summary.empty() ? "" : ", ") + std::to_string(count) + " x " + name;
  }

  topology::FabricSpec spec;
  const auto fabric_it = doc.find("fabric");
  if (fabric_it == doc.end() || fabric_it->is_null()) {
    spec = DefaultFabric(fleet.nodes, kDefaultLeafSize);
  } else if (fabric_it->is_string()) {
    std::filesystem::path file(fabric_it->get<std::string>());
    if (file.is_relative() && !base_dir.empty()) file = std::filesystem::path(base_dir) / file;
    ASSIGN_OR_RETURN(spec, FabricFromFile(file.string(), fleet.nodes));
  } else if (fabric_it->is_object()) {
    for (const auto& [key, value] : fabric_it->items()) {
      if (key != "leafSize") {
        return InvalidArgumentError("fabric." + key +
                                    ": unknown field (expected leafSize, or a file name)");
      }
    }
    ASSIGN_OR_RETURN(const int64_t leaf_size,
                     IntMember(*fabric_it, "leafSize", "fabric", 1, kMaxFleetNodes));
    spec = DefaultFabric(fleet.nodes, static_cast<int>(leaf_size));
  } else {
    return InvalidArgumentError(
        "fabric: must be {leafSize: N} or the name of a FabricDescription file");
  }
  StatusOr<topology::Fabric> fabric = topology::Fabric::Build(spec);
  if (!fabric.ok()) return fabric.status().WithContext("fabric");
  fleet.fabric = std::make_shared<const topology::Fabric>(*std::move(fabric));
  return fleet;
}

StatusOr<Fleet> LoadFleetFile(const std::string& path) {
  const std::string context = "read fleet " + path;
  std::ifstream file(path);
  if (!file) return NotFoundError(context + ": cannot open the file");
  std::stringstream text;
  text << file.rdbuf();
  StatusOr<Fleet> fleet =
      ParseFleet(text.str(), std::filesystem::path(path).parent_path().string());
  if (!fleet.ok()) return fleet.status().WithContext(context);
  return fleet;
}

}  // namespace xpu::lab
