// The fleet of a placement-lab replay (`xpuctl replay --fleet FILE`):
//
//   nodes:
//   - {model: atlas800-9000, count: 6}       # a reference server (controller/reference_servers.h)
//   - {inventory: my-node.json, count: 2}    # or a NodeInventory file, relative to the fleet file
//   fabric: {leafSize: 8}                    # optional; or fabric: <FabricDescription file>
//
// Nodes are named "<model>-<n>" (n counts from 0 per model, over all entries), in file order. The
// default fabric puts the nodes, in file order, into leaves of `leafSize` nodes (default 8) under
// one spine: tiers "leaf" and "spine". A FabricDescription file (docs/fabric-description.md) must
// place exactly the fleet's node names. Errors name the field: "nodes[1].count: ...".
#ifndef XPU_LAB_FLEET_H_
#define XPU_LAB_FLEET_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "base/status.h"
#include "topology/fabric.h"
#include "topology/model.h"

namespace xpu::lab {

struct FleetModel {
  std::string name;  // the reference server's name, or the inventory's metadata.name
  api::NodeInventory inventory;
  std::shared_ptr<const topology::Node> node;  // built from the inventory
  std::string vendor;                          // of its devices ("mixed" when they differ)
  int devices = 0;
};

struct FleetNode {
  std::string name;
  int model = 0;  // index into Fleet::models
};

struct Fleet {
  std::vector<FleetModel> models;  // distinct, in first-seen order
  std::vector<FleetNode> nodes;    // node i is node i of the fabric
  std::shared_ptr<const topology::Fabric> fabric;
  int devices = 0;
  std::string summary;  // "6 x atlas800-9000, 4 x hgx-h200"
};

// At most this many nodes (the replay's node indices and memo keys assume it).
inline constexpr int kMaxFleetNodes = 100000;

StatusOr<Fleet> ParseFleet(std::string_view text, const std::string& base_dir);
// Reads and parses a file; errors start with "read fleet <path>: ".
StatusOr<Fleet> LoadFleetFile(const std::string& path);

}  // namespace xpu::lab

#endif  // XPU_LAB_FLEET_H_
