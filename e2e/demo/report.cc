#include "e2e/demo/report.h"

#include <array>
#include <cstdio>
#include <sstream>

#include "base/name_list.h"
#include "base/text.h"
#include "e2e/demo/container_view.h"

namespace xpu::demo {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.0f%%", share * 100);
  return buf;
}

// Colour-blind-safe qualitative colours, light enough for black labels.
constexpr std::array<const char*, 12> kPalette = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                                  "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                                  "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};

}  // namespace

double Agreement(const std::vector<Placement>& placements) {
  if (placements.empty()) return 1;
  int good = 0;
  for (const auto& p : placements) good += p.as_good ? 1 : 0;
  return static_cast<double>(good) / static_cast<double>(placements.size());
}

nlohmann::json DemoJson(const DemoResult& result) {
  nlohmann::json placements = nlohmann::json::array();
  for (const auto& p : result.placements) {
    placements.push_back({{"step", p.step},
                          {"pod", p.pod},
                          {"request", p.request},
                          {"node", p.node},
                          {"model", p.model},
                          {"devices", p.devices},
                          {"solver", p.solver},
                          {"freeBefore", p.free_before},
                          {"rulesHold", p.rules_hold},
                          {"asGoodAsSolver", p.as_good},
                          {"note", p.note}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : result.nodes) {
    nodes.push_back({{"node", n.node},
                     {"model", n.model},
                     {"devices", n.devices},
                     {"held", n.owner},
                     {"unhealthy", n.unhealthy}});
  }
  nlohmann::json gangs = nlohmann::json::array();
  for (const auto& g : result.gangs) {
    gangs.push_back({{"name", g.name},
                     {"phase", g.phase},
                     {"tier", g.tier},
                     {"domain", g.domain},
                     {"message", g.message},
                     {"members", g.members}});
  }
  nlohmann::json out = {{"kubernetesVersion", result.kubernetes_version},
                        {"placements", placements},
                        {"agreement", Agreement(result.placements)},
                        {"nodes", nodes},
                        {"gangs", gangs},
                        {"story", result.story},
                        {"seconds", result.seconds}};
  if (!result.containers.is_null()) out["containers"] = result.containers;
  return out;
}

std::string SummaryLine(const Placement& p) {
  char buf[512];
  const bool same = p.devices == p.solver;
  std::snprintf(buf, sizeof(buf), "  %-28s %-19s %-26s solver %-26s %s%s%s", p.pod.c_str(),
                p.node.c_str(), JoinNames(p.devices).c_str(),
                same ? "(same)" : JoinNames(p.solver).c_str(),
                p.rules_hold ? "rules ok" : "RULES BROKEN", p.as_good ? "" : ", worse than solver",
                p.note.empty() ? "" : ("; " + p.note).c_str());
  return buf;
}

std::string GangFabricDot(const GangView& gang) {
  std::map<std::string, std::map<std::string, std::vector<std::string>>> tree;  // pod -> leaf
  for (const auto& n : gang.fabric) tree[n.superpod][n.leaf].push_back(n.name);
  std::map<std::string, size_t> rank;
  for (size_t r = 0; r < gang.members.size(); ++r) rank[gang.members[r]] = r;
  std::ostringstream d;
  d << "digraph " << Quote("gang " + gang.name) << " {\n  rankdir=TB;\n"
    << "  node [shape=box, fontname=Helvetica, fontsize=11];\n"
    << "  label="
    << Quote("gang " + gang.name + ": " + gang.phase +
             (gang.domain.empty() ? "" : " in " + gang.tier + " " + gang.domain))
    << ";\n";
  int cluster = 0;
  for (const auto& [pod, leaves] : tree) {
    d << "  subgraph cluster_" << cluster++ << " {\n    label=" << Quote("superpod " + pod)
      << "; style=rounded; color=\"#607d8b\";\n";
    for (const auto& [leaf, nodes] : leaves) {
      d << "    subgraph cluster_" << cluster++ << " {\n      label=" << Quote("leaf " + leaf)
        << "; style=dashed; color=\"#90a4ae\";\n";
      for (const auto& n : nodes) {
        auto r = rank.find(n);
        d << "      " << Quote(n);
        if (r != rank.end()) {
          // Node names are DNS labels: nothing to escape; backslash-n is a DOT line break.
          d << " [label=\"" << n << "\\nrank " << r->second << "\""
            << ", style=filled, fillcolor=\"#80b1d3\", penwidth=2]";
        }
        d << ";\n";
      }
      d << "    }\n";
    }
    d << "  }\n";
  }
  // The ring of ranks, in order.
  for (size_t r = 0; r + 1 < gang.members.size(); ++r) {
    d << "  " << Quote(gang.members[r]) << " -> " << Quote(gang.members[r + 1])
      << " [color=\"#1f78b4\", constraint=false];\n";
  }
  d << "}\n";
  return d.str();
}

std::map<std::string, std::string> PodColours(const std::vector<NodeView>& nodes) {
  std::set<std::string> pods;
  for (const auto& n : nodes) {
    for (const auto& [device, pod] : n.owner) pods.insert(pod);
  }
  std::map<std::string, std::string> colours;
  size_t i = 0;
  for (const auto& pod : pods) colours[pod] = kPalette.at(i++ % kPalette.size());
  return colours;
}

std::string ColouredDot(const NodeView& node, const std::map<std::string, std::string>& colours) {
  const auto end = node.dot.rfind('}');
  if (end == std::string::npos) return node.dot;
  std::ostringstream extra;
  for (const auto& [device, pod] : node.owner) {
    const auto c = colours.find(pod);
    extra << "  " << Quote(device)
          << " [style=filled, fillcolor=" << Quote(c == colours.end() ? "#d9d9d9" : c->second)
          << ", tooltip=" << Quote(pod) << "];\n";
  }
  for (const auto& device : node.unhealthy) {
    extra << "  " << Quote(device)
          << " [color=\"#d32f2f\", penwidth=3, fontcolor=\"#d32f2f\", tooltip=\"unhealthy\"];\n";
  }
  return node.dot.substr(0, end) + extra.str() + node.dot.substr(end);
}

std::string InlineSvg(const std::string& svg) {
  const auto start = svg.find("<svg");
  return start == std::string::npos ? "" : svg.substr(start);
}

std::string ReportHtml(const DemoResult& result,
                       const std::map<std::string, std::string>& svg_of_node) {
  const auto colours = PodColours(result.nodes);
  int rules = 0;
  for (const auto& p : result.placements) rules += p.rules_hold ? 1 : 0;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<title>xpu-dra demo report</title>\n<style>\n"
       "body{font-family:Helvetica,Arial,sans-serif;margin:2em;max-width:1400px}\n"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
       "font-size:13px;text-align:left;vertical-align:top}\n"
       "th{background:#eceff1}.bad{color:#c62828;font-weight:bold}.ok{color:#2e7d32}\n"
       ".swatch{display:inline-block;width:12px;height:12px;border:1px solid #555;margin-right:4px}"
       "\n.node{margin:2em 0;border-top:2px solid #90a4ae}svg{max-width:100%;height:auto}\n"
       "</style></head><body>\n";
  h << "<h1>xpu-dra on a local Kubernetes control plane</h1>\n<p>Kubernetes "
    << HtmlEscape(result.kubernetes_version)
    << " (etcd, kube-apiserver, kube-scheduler and kube-controller-manager built from pinned "
       "sources), the xpu-dra controller, and one xpu-dra plugin with a node agent per node of "
       "a mixed fleet of fixture hosts. Every placement below was made by the real kube-scheduler "
       "from the ResourceSlices the controller published; beside it is what xpu-dra's topology "
       "solver picks on the same free devices.</p>\n";
  h << "<p><b>" << result.placements.size() << "</b> placements; vendor rules kept in <b>" << rules
    << "</b>; as good as the solver in <b>" << Percent(Agreement(result.placements))
    << "</b>. The demo took " << static_cast<int>(result.seconds) << " s.</p>\n";

  h << "<h2>What happened</h2>\n<ol>\n";
  for (const auto& line : result.story) h << "<li>" << HtmlEscape(line) << "</li>\n";
  h << "</ol>\n";

  h << "<h2>Placements</h2>\n<table>\n<tr><th>#</th><th>step</th><th>pod</th><th>request</th>"
       "<th>node (model)</th><th>free before</th><th>allocated by kube-scheduler</th>"
       "<th>solver's set</th><th>vendor rules</th><th>as good as solver</th><th>note</th></tr>\n";
  int i = 0;
  for (const auto& p : result.placements) {
    const auto c = colours.find(p.pod);
    h << "<tr><td>" << ++i << "</td><td>" << HtmlEscape(p.step) << "</td><td>";
    if (c != colours.end()) {
      h << "<span class=\"swatch\" style=\"background:" << c->second << "\"></span>";
    }
    h << HtmlEscape(p.pod) << "</td><td>" << HtmlEscape(p.request) << "</td><td>"
      << HtmlEscape(p.node) << " (" << HtmlEscape(p.model) << ")</td><td>" << p.free_before
      << "</td><td>" << HtmlEscape(JoinNames(p.devices, ", ")) << "</td><td>"
      << HtmlEscape(JoinNames(p.solver, ", ")) << "</td><td class=\""
      << (p.rules_hold ? "ok" : "bad") << "\">" << (p.rules_hold ? "kept" : "broken")
      << "</td><td class=\"" << (p.as_good ? "ok" : "bad") << "\">" << (p.as_good ? "yes" : "no")
      << "</td><td>" << HtmlEscape(p.note) << "</td></tr>\n";
  }
  h << "</table>\n";

  if (!result.gangs.empty()) {
    h << "<h2>Multi-node gangs</h2>\n<p>Each gang was placed by the xpu-dra controller on the "
         "fabric (super-pods, leaves) from the nodes' labels; its members are filled and carry "
         "their rank.</p>\n";
    for (const auto& g : result.gangs) {
      h << "<div class=\"node\"><h3>gang " << HtmlEscape(g.name) << ": " << HtmlEscape(g.phase);
      if (!g.domain.empty()) h << " in " << HtmlEscape(g.tier) << " " << HtmlEscape(g.domain);
      h << "</h3>\n<p>" << HtmlEscape(g.message) << "</p>\n";
      if (!g.members.empty()) {
        h << "<p>ranks: " << HtmlEscape(JoinNames(g.members, ", ")) << "</p>\n";
      }
      const auto svg = svg_of_node.find("gang/" + g.name);
      if (svg != svg_of_node.end()) h << svg->second << "\n";
      h << "</div>\n";
    }
  }

  h << "<h2>Nodes at the end</h2>\n<p>Each device is filled in the colour of the pod holding "
       "it; a red outline marks a device tainted unhealthy.</p>\n";
  for (const auto& n : result.nodes) {
    h << "<div class=\"node\"><h3>" << HtmlEscape(n.node) << " (" << HtmlEscape(n.model) << "), "
      << n.owner.size() << " of " << n.devices << " devices held";
    if (!n.unhealthy.empty()) h << ", " << n.unhealthy.size() << " unhealthy";
    h << "</h3>\n";
    std::map<std::string, std::vector<std::string>> by_pod;
    for (const auto& [device, pod] : n.owner) by_pod[pod].push_back(device);
    if (!by_pod.empty()) {
      h << "<p>";
      for (const auto& [pod, devices] : by_pod) {
        h << "<span class=\"swatch\" style=\"background:" << colours.at(pod) << "\"></span>"
          << HtmlEscape(pod) << ": " << HtmlEscape(JoinNames(devices, ", ")) << "&nbsp;&nbsp; ";
      }
      h << "</p>\n";
    }
    const auto svg = svg_of_node.find(n.node);
    if (svg != svg_of_node.end()) h << svg->second << "\n";
    h << "</div>\n";
  }
  if (!result.containers.is_null()) h << ContainersHtml(result.containers);
  if (!result.lab_report_html.empty()) {
    // The lab's own page, kept whole (its styles stay its own) in an inline frame: still one
    // self-contained file, nothing fetched.
    h << "<h2>Placement lab</h2>\n<p>A synthetic job trace replayed on a fleet of the demo's "
         "server models, with the device choice of the stock DRA allocator (over plain slices "
         "and plain claims, and over xpu-dra's slices and rendered claims) beside xpu-dra's "
         "solver: rule violations, bandwidth below the best set, stranded devices and "
         "queueing delay (<code>xpuctl replay</code>, docs/placement-lab.md).</p>\n"
         "<iframe title=\"placement lab\" style=\"width:100%;height:1500px;border:1px solid "
         "#ccc\" srcdoc=\""
      << HtmlEscape(result.lab_report_html) << "\"></iframe>\n";
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace xpu::demo
