// The Boost.Graph type behind a Node: one vertex per device, one edge per link (direct links
// and derived PCIe relations). Private to the topology library and its tests.
#ifndef XPU_TOPOLOGY_INTERNAL_GRAPH_H_
#define XPU_TOPOLOGY_INTERNAL_GRAPH_H_

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>

namespace xpu::topology {
enum class LinkType;
}  // namespace xpu::topology

namespace xpu::topology::internal {

struct VertexProps {
  int device = 0;
};
struct EdgeProps {
  LinkType type{};
  int64_t bandwidth_mbps = 0;
};

using DeviceGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexProps, EdgeProps>;

}  // namespace xpu::topology::internal

#endif  // XPU_TOPOLOGY_INTERNAL_GRAPH_H_
