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
//
// Devices whose inventory has partitioning enabled (MIG mode on, vNPU or vHCU usable) can also
// serve partition jobs (lab/trace.h); the partitions an inventory says exist are left out: every
// replay starts from devices with nothing given out.
#ifndef XPU_LAB_FLEET_H_
#define XPU_LAB_FLEET_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/node_inventory.h"
#include "base/status.h"
#include "lab/trace.h"
#include "topology/fabric.h"
#include "topology/model.h"
#include "topology/partitions.h"

namespace xpu::lab {

// A device of a model that can be partitioned.
struct FleetPartitionable {
  int device = 0;    // the node's device id
  std::string name;  // the inventory's device name
  std::string kind;  // "mig", "vnpu", "vhcu"
  topology::PartitionableDevice model;
};

struct FleetModel {
  std::string name;  // the reference server's name, or the inventory's metadata.name
  api::NodeInventory inventory;
  std::shared_ptr<const topology::Node> node;  // built from the inventory
  std::string vendor;                          // of its devices ("mixed" when they differ)
  int devices = 0;
  std::vector<FleetPartitionable> partitionable;  // in inventory order
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

// The share of `device` one partition of `shape` takes: the largest of its slots over the
// device's and its units over each capacity counter, at most 1.
double DeviceShare(const topology::PartitionableDevice& device,
                   const topology::PartitionShape& shape);

// The partition profiles the fleet's partitionable devices offer, an inference-style mix: each
// device of the fleet draws as often (weight 1 per device, so a model weighs its partitionable
// devices times its nodes), and on a device the smaller profiles more often (the k-th smallest of
// n profiles takes 2^(n-1-k) / (2^n - 1) of it: about half ask for the smallest). A profile's
// share is DeviceShare's. Sorted by share, then name; a profile offered by several devices sums
// their weights and keeps the largest share.
std::vector<PartitionOffer> PartitionOffers(const Fleet& fleet);

// `options` sized to `fleet`: its devices, nodes and largest node, and where partition_share > 0
// its PartitionOffers and partitionable devices (over all nodes).
SyntheticOptions SyntheticForFleet(const Fleet& fleet, SyntheticOptions options);

StatusOr<Fleet> ParseFleet(std::string_view text, const std::string& base_dir);
// Reads and parses a file; errors start with "read fleet <path>: ".
StatusOr<Fleet> LoadFleetFile(const std::string& path);

}  // namespace xpu::lab

#endif  // XPU_LAB_FLEET_H_
