#include "topology/dot.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace xpu::topology {
namespace {

constexpr const char* kHighlightFill = "#ffd54f";
constexpr const char* kHighlightEdge = "#d32f2f";

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";  // DOT's line break inside a label
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Gbps(int64_t mbps) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g GB/s", static_cast<double>(mbps) / 1000.0);
  return buf;
}

std::string Memory(int64_t bytes) {
  constexpr int64_t kGi = int64_t{1} << 30;
  if (bytes <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g GiB", static_cast<double>(bytes) / static_cast<double>(kGi));
  return buf;
}

}  // namespace

std::string ToDot(const Node& node, DeviceSet highlight) {
  std::ostringstream out;
  out << "graph " << Quote(node.name()) << " {\n";
  out << "  graph [label="
      << Quote(node.name() + (node.model().empty() ? "" : "\n" + node.model()) +
               "\nrule set: " + std::string(RuleSetKindName(node.rule_set())))
      << ", labelloc=t, fontname=Helvetica, compound=true];\n";
  out << "  node [fontname=Helvetica, fontsize=10];\n  edge [fontname=Helvetica, fontsize=8];\n";

  // Vendor groups as clusters; DOT clusters cannot overlap, so a group overlapping an earlier
  // cluster is listed in the legend only.
  DeviceSet clustered;
  std::vector<std::string> legend;
  int cluster = 0;
  for (const Group& g : node.groups()) {
    if (g.derived) continue;
    if (g.mask.Intersects(clustered)) {
      legend.push_back(g.name + " (" + std::string(GroupKindName(g.kind)) + ")");
      continue;
    }
    clustered = clustered | g.mask;
    out << "  subgraph cluster_" << cluster++
        << " {\n    label=" << Quote(g.name + " (" + std::string(GroupKindName(g.kind)) + ")")
        << "; style=rounded; color=\"#607d8b\";\n";
    for (int m : g.members) out << "    " << Quote(node.device(m).name) << ";\n";
    out << "  }\n";
  }
  if (!legend.empty()) {
    std::string text = "also:";
    for (const std::string& l : legend) text.append("\n").append(l);
    out << "  legend [shape=note, label=" << Quote(text) << "];\n";
  }

  for (int id = 0; id < node.size(); ++id) {
    const DeviceSpec& d = node.device(id);
    std::string label = d.name;
    // append() rather than `"\n" + x`: GCC 12 warns falsely on the latter at -O3 (bug 105329).
    if (d.memory_bytes > 0) label.append("\n").append(Memory(d.memory_bytes));
    if (d.numa_node >= 0) label.append("\nNUMA ").append(std::to_string(d.numa_node));
    out << "  " << Quote(d.name)
        << " [shape=box, style=" << (highlight.Contains(id) ? "\"rounded,filled,bold\"" : "rounded")
        << (highlight.Contains(id) ? std::string(", fillcolor=\"") + kHighlightFill + "\"" : "")
        << ", label=" << Quote(label) << "];\n";
  }

  // Direct links, labelled by type and bandwidth. A full mesh of one type and bandwidth over 4 or
  // more devices (an NVSwitch board, the A3 HCCS switch) is drawn as a hub with spokes.
  std::map<std::pair<LinkType, int64_t>, std::vector<Link>> by_kind;
  for (const Link& l : node.Links()) {
    if (!IsDerivedPcie(l.type)) by_kind[{l.type, l.bandwidth_mbps}].push_back(l);
  }
  auto edge_style = [&](bool hot) {
    return hot ? std::string("color=\"") + kHighlightEdge + "\", penwidth=2.5"
               : std::string("color=\"#1565c0\"");
  };
  int hub = 0;
  for (const auto& [kind, links] : by_kind) {
    const std::string label = std::string(LinkTypeName(kind.first)) + "\n" + Gbps(kind.second);
    DeviceSet members;
    for (const Link& l : links) members = members | DeviceSet::Of({l.a, l.b});
    const int64_t n = members.size();
    if (n >= 4 && static_cast<int64_t>(links.size()) == n * (n - 1) / 2) {
      const std::string id = "hub " + std::to_string(hub++);
      out << "  " << Quote(id)
          << " [shape=diamond, style=filled, fillcolor=\"#bbdefb\", label=" << Quote(label)
          << "];\n";
      for (int m : members.Ids()) {
        out << "  " << Quote(node.device(m).name) << " -- " << Quote(id) << " ["
            << edge_style(highlight.Contains(m)) << "];\n";
      }
      continue;
    }
    for (const Link& l : links) {
      out << "  " << Quote(node.device(l.a).name) << " -- " << Quote(node.device(l.b).name)
          << " [label=" << Quote(label) << ", "
          << edge_style(highlight.Contains(l.a) && highlight.Contains(l.b)) << "];\n";
    }
  }

  // The PCIe tree: NUMA node -- root complex -- switch (root port) -- device.
  std::set<std::string> drawn;
  auto vertex = [&](const std::string& id, const std::string& label, const char* shape) {
    if (drawn.insert(id).second) {
      out << "  " << Quote(id) << " [shape=" << shape
          << ", style=filled, fillcolor=\"#eceff1\", color=\"#90a4ae\", label=" << Quote(label)
          << "];\n";
    }
  };
  std::set<std::pair<std::string, std::string>> tree_edges;
  auto tree_edge = [&](const std::string& a, const std::string& b) {
    if (tree_edges.insert({a, b}).second) {
      out << "  " << Quote(a) << " -- " << Quote(b) << " [color=\"#b0bec5\"];\n";
    }
  };
  for (int id = 0; id < node.size(); ++id) {
    const DeviceSpec& d = node.device(id);
    std::string parent;
    if (!d.pcie_path.empty()) {
      const std::string root = "root " + d.pcie_path[0];
      vertex(root, d.pcie_path[0], "ellipse");
      parent = root;
      if (d.numa_node >= 0) {
        const std::string numa = "NUMA " + std::to_string(d.numa_node);
        vertex(numa, numa, "octagon");
        tree_edge(numa, root);
      }
      if (d.pcie_path.size() >= 3) {
        const std::string sw = "switch " + d.pcie_path[1];
        vertex(sw, "PCIe " + d.pcie_path[1], "ellipse");
        tree_edge(root, sw);
        parent = sw;
      }
    } else if (d.numa_node >= 0) {
      parent = "NUMA " + std::to_string(d.numa_node);
      vertex(parent, parent, "octagon");
    }
    if (!parent.empty()) tree_edge(parent, d.name);
  }
  out << "}\n";
  return out.str();
}

std::string ToDot(const Fabric& fabric, const std::vector<int>& highlight) {
  std::ostringstream out;
  const std::set<int> hot(highlight.begin(), highlight.end());
  std::vector<std::vector<int>> children(static_cast<size_t>(fabric.domain_count()));
  std::vector<std::vector<int>> members(static_cast<size_t>(fabric.domain_count()));
  std::vector<int> loose;
  for (int d = 0; d < fabric.domain_count(); ++d) {
    if (fabric.domain_parent(d) >= 0) {
      children[static_cast<size_t>(fabric.domain_parent(d))].push_back(d);
    }
  }
  for (int n = 0; n < fabric.node_count(); ++n) {
    if (fabric.node_leaf(n) >= 0) {
      members[static_cast<size_t>(fabric.node_leaf(n))].push_back(n);
    } else {
      loose.push_back(n);
    }
  }
  auto emit_node = [&](int n, const std::string& indent) {
    out << indent << Quote(fabric.node_name(n)) << " [shape=box, style="
        << (hot.count(n) != 0 ? std::string("\"filled,bold\", fillcolor=\"") + kHighlightFill + "\""
                              : "solid")
        << "];\n";
  };
  std::function<void(int, const std::string&)> emit_domain = [&](int d, const std::string& indent) {
    const TierSpec& tier = fabric.tier(fabric.domain_tier(d));
    std::string label = tier.name + ": " + fabric.domain_name(d);
    if (tier.bandwidth_gbps > 0) {
      label += " (" + Gbps(static_cast<int64_t>(tier.bandwidth_gbps * 1000)) + ")";
    }
    out << indent << "subgraph " << Quote("cluster_" + fabric.domain_name(d)) << " {\n"
        << indent << "  label=" << Quote(label) << "; style=rounded;\n";
    for (int c : children[static_cast<size_t>(d)]) emit_domain(c, indent + "  ");
    for (int n : members[static_cast<size_t>(d)]) emit_node(n, indent + "  ");
    out << indent << "}\n";
  };
  out << "graph fabric {\n  graph [fontname=Helvetica, labelloc=t];\n  node [fontname=Helvetica, "
         "fontsize=10];\n";
  for (int d = 0; d < fabric.domain_count(); ++d) {
    if (fabric.domain_parent(d) < 0) emit_domain(d, "  ");
  }
  for (int n : loose) emit_node(n, "  ");
  out << "}\n";
  return out.str();
}

}  // namespace xpu::topology
