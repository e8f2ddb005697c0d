// What the demo found, and the three ways it is shown: the terminal summary, out/demo.json for
// machines, and out/report.html for people (tables and, per node, the topology picture with
// each pod's devices coloured). Pure: rendering DOT to SVG is the caller's job.
#ifndef XPU_E2E_DEMO_REPORT_H_
#define XPU_E2E_DEMO_REPORT_H_

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace xpu::demo {

// One pod placed by the real kube-scheduler, beside the solver's answer on the same free state.
struct Placement {
  std::string step;     // the part of the demo: "training", "burst", "fault" ...
  std::string pod;      // namespace/name
  std::string request;  // what the claim asked for, in words
  std::string node;
  std::string model;                 // the fixture host the node runs on
  std::vector<std::string> devices;  // what the allocator picked (device names of the pool)
  std::vector<std::string> solver;   // the solver's best set of the same size on that node
  int free_before = 0;               // free healthy devices of the node before the placement
  bool rules_hold = false;           // the picked set obeys the node's vendor rules
  bool as_good = false;              // ... and scores as well as the solver's set
  std::string note;                  // e.g. the firstAvailable subrequest that was used
};

// A node at the end of the demo.
struct NodeView {
  std::string node;
  std::string model;
  std::string dot;                           // topology::ToDot of the node
  std::map<std::string, std::string> owner;  // device -> pod holding it
  std::set<std::string> unhealthy;           // devices tainted unhealthy
  int devices = 0;
};

// A multi-node gang at the end of the demo, with the fabric it was placed in.
struct GangView {
  std::string name;
  std::string phase;                 // Placed, Pending, Failed
  std::string tier;                  // the tier holding it, when placed
  std::string domain;                // the domain holding it, when placed
  std::string message;               // its Placed condition's message
  std::vector<std::string> members;  // node names in rank order
  struct FabricNode {
    std::string name;
    std::string leaf;
    std::string superpod;
  };
  std::vector<FabricNode> fabric;  // the candidate nodes and their domains
};

struct DemoResult {
  std::string kubernetes_version;  // what the API server reports
  std::vector<Placement> placements;
  std::vector<NodeView> nodes;
  std::vector<GangView> gangs;
  std::vector<std::string> story;  // what happened, one line per event, in order
  double seconds = 0;
  // The placement lab's report on the demo's fleet (`xpuctl replay --report`), a whole HTML page,
  // shown as the report's last section; empty: no section.
  std::string lab_report_html;
  // What each pod's container saw on the nodes with a container runtime (e2e/demo/containers.sh;
  // container_view.h); null: the runtime did not run, no section.
  nlohmann::json containers;
};

// The share of placements as good as the solver's (1 when there are none).
double Agreement(const std::vector<Placement>& placements);

// {"kubernetesVersion", "placements": [{"step", "pod", "request", "node", "model", "devices",
// "solver", "freeBefore", "rulesHold", "asGoodAsSolver", "note"}], "agreement", "nodes": [...],
// "gangs": [{"name", "phase", "tier", "domain", "message", "members"}], "seconds",
// "containers" (when set)}.
nlohmann::json DemoJson(const DemoResult& result);

// One line for the terminal: pod, node, picked devices, the solver's set and the verdicts.
std::string SummaryLine(const Placement& p);

// The node's DOT with every held device filled in its pod's colour and unhealthy devices
// outlined red; the colours come from PodColours.
std::string ColouredDot(const NodeView& node, const std::map<std::string, std::string>& colours);

// The fabric as a DOT digraph: super-pods and leaves as nested clusters, nodes as boxes; the
// gang's members filled and labelled with their rank.
std::string GangFabricDot(const GangView& gang);

// A colour for each pod that holds devices at the end, stable in pod order.
std::map<std::string, std::string> PodColours(const std::vector<NodeView>& nodes);

// The self-contained page: summary, placements table, per node the picture (`svg_of_node`:
// node -> inline SVG, prolog stripped; a gang's fabric picture under "gang/<name>") with its
// legend. No scripts, no network.
std::string ReportHtml(const DemoResult& result,
                       const std::map<std::string, std::string>& svg_of_node);

// `svg` without its XML declaration and DOCTYPE, ready to inline in HTML.
std::string InlineSvg(const std::string& svg);

}  // namespace xpu::demo

#endif  // XPU_E2E_DEMO_REPORT_H_
