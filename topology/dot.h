// Graphviz DOT pictures of a node or a fabric, with a chosen set highlighted.
#ifndef XPU_TOPOLOGY_DOT_H_
#define XPU_TOPOLOGY_DOT_H_

#include <string>
#include <vector>

#include "topology/device_set.h"
#include "topology/fabric.h"
#include "topology/model.h"

namespace xpu::topology {

// Devices as boxes, direct links as edges labelled "<type> <GB/s>", vendor groups as clusters,
// the PCIe tree (switches, host bridges, NUMA nodes) as small grey vertices. Devices in
// `highlight` are filled and the links among them drawn bold.
std::string ToDot(const Node& node, DeviceSet highlight = {});

// Domains as nested clusters labelled with their tier, nodes inside their lowest domain; nodes
// in `highlight` filled. Meant for fabrics of up to a few hundred nodes.
std::string ToDot(const Fabric& fabric, const std::vector<int>& highlight = {});

}  // namespace xpu::topology

#endif  // XPU_TOPOLOGY_DOT_H_
