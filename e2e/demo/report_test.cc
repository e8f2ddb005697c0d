#include "e2e/demo/report.h"

#include <catch2/catch.hpp>

namespace xpu::demo {
namespace {

Placement Made(const std::string& pod, std::vector<std::string> devices,
               std::vector<std::string> solver, bool rules, bool good) {
  Placement p;
  p.step = "burst";
  p.pod = pod;
  p.request = "2 x huawei";
  p.node = "atlas800-9000";
  p.model = "atlas800-9000";
  p.devices = std::move(devices);
  p.solver = std::move(solver);
  p.rules_hold = rules;
  p.as_good = good;
  return p;
}

TEST_CASE("the agreement is the share of placements as good as the solver's") {
  CHECK(Agreement({}) == 1);
  std::vector<Placement> ps = {Made("a", {"npu-0"}, {"npu-0"}, true, true),
                               Made("b", {"npu-1", "npu-4"}, {"npu-1", "npu-2"}, false, false),
                               Made("c", {"npu-2"}, {"npu-2"}, true, true),
                               Made("d", {"npu-5"}, {"npu-3"}, true, false)};
  CHECK(Agreement(ps) == Approx(0.5));
}

TEST_CASE("demo.json has the documented shape") {
  DemoResult r;
  r.kubernetes_version = "v1.37.2";
  r.placements = {Made("a", {"npu-0", "npu-1"}, {"npu-2", "npu-3"}, true, true)};
  NodeView n;
  n.node = "atlas800-9000";
  n.model = "atlas800-9000";
  n.devices = 8;
  n.owner = {{"npu-0", "a"}, {"npu-1", "a"}};
  n.unhealthy = {"npu-7"};
  r.nodes = {n};
  const auto j = DemoJson(r);
  REQUIRE(j.at("placements").size() == 1);
  const auto& p = j.at("placements")[0];
  CHECK(p.at("pod") == "a");
  CHECK(p.at("node") == "atlas800-9000");
  CHECK(p.at("model") == "atlas800-9000");
  CHECK(p.at("devices") == nlohmann::json({"npu-0", "npu-1"}));
  CHECK(p.at("solver") == nlohmann::json({"npu-2", "npu-3"}));
  CHECK(p.at("rulesHold") == true);
  CHECK(p.at("asGoodAsSolver") == true);
  CHECK(j.at("agreement") == 1.0);
  CHECK(j.at("kubernetesVersion") == "v1.37.2");
  CHECK(j.at("nodes")[0].at("held").at("npu-1") == "a");
  CHECK(j.at("nodes")[0].at("unhealthy") == nlohmann::json({"npu-7"}));
}

TEST_CASE("the summary line shows the pick, the solver's set and the verdicts") {
  const auto same = SummaryLine(Made("a", {"npu-0", "npu-1"}, {"npu-0", "npu-1"}, true, true));
  CHECK(same.find("npu-0,npu-1") != std::string::npos);
  CHECK(same.find("(same)") != std::string::npos);
  CHECK(same.find("rules ok") != std::string::npos);
  const auto worse = SummaryLine(Made("b", {"npu-1", "npu-4"}, {"npu-2", "npu-3"}, false, false));
  CHECK(worse.find("npu-2,npu-3") != std::string::npos);
  CHECK(worse.find("RULES BROKEN") != std::string::npos);
  CHECK(worse.find("worse than solver") != std::string::npos);
}

TEST_CASE("pictures colour each pod's devices and outline unhealthy ones") {
  NodeView n;
  n.node = "x";
  n.dot = "graph \"x\" {\n  \"npu-0\";\n  \"npu-1\";\n}\n";
  n.owner = {{"npu-0", "pod-a"}, {"npu-1", "pod-b"}};
  n.unhealthy = {"npu-1"};
  const auto colours = PodColours({n});
  REQUIRE(colours.size() == 2);
  CHECK(colours.at("pod-a") != colours.at("pod-b"));
  const auto dot = ColouredDot(n, colours);
  CHECK(dot.find("\"npu-0\" [style=filled, fillcolor=\"" + colours.at("pod-a")) !=
        std::string::npos);
  CHECK(dot.find("\"npu-1\" [color=\"#d32f2f\"") != std::string::npos);
  CHECK(dot.rfind('}') > dot.find("fillcolor"));  // still one closed graph
}

TEST_CASE("the report is self-contained HTML with inline SVG and escaped text") {
  DemoResult r;
  r.placements = {Made("<pod>", {"npu-0"}, {"npu-0"}, true, true)};
  NodeView n;
  n.node = "atlas800-9000";
  n.model = "atlas800-9000";
  n.owner = {{"npu-0", "<pod>"}};
  r.nodes = {n};
  r.story = {"a & b"};
  const std::string svg = "<?xml version=\"1.0\"?>\n<!DOCTYPE svg>\n<svg width=\"1\"><g/></svg>\n";
  CHECK(InlineSvg(svg) == "<svg width=\"1\"><g/></svg>\n");
  const auto html = ReportHtml(r, {{"atlas800-9000", InlineSvg(svg)}});
  CHECK(html.find("<svg width=\"1\">") != std::string::npos);
  CHECK(html.find("&lt;pod&gt;") != std::string::npos);
  CHECK(html.find("<pod>") == std::string::npos);
  CHECK(html.find("a &amp; b") != std::string::npos);
  CHECK(html.find("src=\"http") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<?xml") == std::string::npos);
}

TEST_CASE("the placement lab's page becomes the report's last section, escaped into a frame") {
  DemoResult r;
  r.kubernetes_version = "v1.37.2";
  CHECK(ReportHtml(r, {}).find("Placement lab") == std::string::npos);
  r.lab_report_html = "<html><body><h1>lab</h1><svg><text>a \"b\" & c</text></svg></body></html>";
  const std::string html = ReportHtml(r, {});
  CHECK(html.find("<h2>Placement lab</h2>") != std::string::npos);
  CHECK(html.find("srcdoc=\"&lt;html&gt;&lt;body&gt;&lt;h1&gt;lab") != std::string::npos);
  CHECK(html.find("a &quot;b&quot; &amp; c") != std::string::npos);
  CHECK(html.find("src=\"http") == std::string::npos);
}

GangView TwoLeafGang() {
  GangView g;
  g.name = "llm";
  g.phase = "Placed";
  g.tier = "leaf";
  g.domain = "leaf-2";
  g.message = "2 nodes x 8 devices in leaf leaf-2";
  g.members = {"a2-4", "a2-3"};
  g.fabric = {{"a2-1", "leaf-1", "pod-1"},
              {"a2-2", "leaf-1", "pod-1"},
              {"a2-3", "leaf-2", "pod-1"},
              {"a2-4", "leaf-2", "pod-1"}};
  return g;
}

TEST_CASE("the gang picture nests leaves in super-pods and marks the members with their rank") {
  const std::string dot = GangFabricDot(TwoLeafGang());
  CHECK(dot.starts_with("digraph \"gang llm\" {"));
  CHECK(dot.find("label=\"superpod pod-1\"") != std::string::npos);
  CHECK(dot.find("label=\"leaf leaf-1\"") != std::string::npos);
  CHECK(dot.find("\"a2-4\" [label=\"a2-4\\nrank 0\", style=filled") != std::string::npos);
  CHECK(dot.find("\"a2-3\" [label=\"a2-3\\nrank 1\", style=filled") != std::string::npos);
  CHECK(dot.find("\"a2-1\";") != std::string::npos);  // not a member: plain
  CHECK(dot.find("\"a2-4\" -> \"a2-3\"") != std::string::npos);
  CHECK(dot.find("Placed in leaf leaf-2") != std::string::npos);
}

TEST_CASE("gangs go into demo.json and the report") {
  DemoResult r;
  r.gangs = {TwoLeafGang()};
  GangView pending;
  pending.name = "wide";
  pending.phase = "Pending";
  pending.message = "no domain up to tier leaf has 3 nodes";
  r.gangs.push_back(pending);
  const auto j = DemoJson(r);
  REQUIRE(j.at("gangs").size() == 2);
  CHECK(j.at("gangs")[0].at("members") == nlohmann::json({"a2-4", "a2-3"}));
  CHECK(j.at("gangs")[1].at("phase") == "Pending");
  const auto html = ReportHtml(r, {{"gang/llm", "<svg id=\"g\"></svg>"}});
  CHECK(html.find("<h2>Multi-node gangs</h2>") != std::string::npos);
  CHECK(html.find("<svg id=\"g\">") != std::string::npos);
  CHECK(html.find("no domain up to tier leaf has 3 nodes") != std::string::npos);
}

}  // namespace
}  // namespace xpu::demo
