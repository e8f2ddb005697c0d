// The acceptance report: result reading, the checklist, the rework cost, the text and JSON
// renderings against goldens in xpuctl/accept/testdata/report/ (regenerate with
// XPU_UPDATE_GOLDENS=1), and the HTML page's structure.
#include "xpuctl/accept/report.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/golden.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "xpuctl/accept/checklist.h"
#include "xpuctl/accept/results.h"

namespace xpu::accept {
namespace {

using nlohmann::json;
using testing::RequireValue;

const std::string kData = std::string(XPU_SOURCE_DIR) + "/xpuctl/accept/testdata/report/";

json Fixture(const std::string& name) {
  std::ifstream in(kData + name);
  REQUIRE(in);
  return json::parse(in);
}

// A fixture read under its bare name, so that the goldens do not hold this checkout's path.
Result Load(const std::string& name) { return RequireValue(ParseResult(Fixture(name), name)); }

Result Parsed(const json& doc) { return RequireValue(ParseResult(doc, "r.json")); }

std::string ErrorOf(const json& doc) {
  StatusOr<Result> r = ParseResult(doc, "r.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  return r.status().message();
}

controller::Config SupportConfig() {
  return RequireValue(controller::ParseConfig(R"(supportMatrix:
- {vendor: nvidia, driver: ">=535.0.0 <600.0.0"}
- {vendor: huawei, family: ascend910b, driver: ">=24.1.0"}
)"));
}

Report TwoVendors(const std::string& baseline = "") {
  static const controller::Config config = SupportConfig();
  return RequireValue(BuildReport({Load("nvidia.json"), Load("huawei.json")}, {baseline, &config}));
}

// `got` equals the golden testdata/report/<name> (XPU_UPDATE_GOLDENS=1 rewrites it).
void CheckGolden(const std::string& name, const std::string& got) {
  xpu::testing::CheckGolden(kData + name, got, "build/bin/accept_test \"[accept-report]\"");
}

const ChecklistItem& ItemOf(const VendorReport& v, std::string_view name) {
  for (const ChecklistItem& i : v.checklist) {
    if (i.item == name) return i;
  }
  FAIL("no checklist item " << name);
  return v.checklist.front();
}

TEST_CASE("results: the fixtures read, typed", "[accept-report]") {
  const Result r = Load("huawei.json");
  CHECK(r.vendor == "huawei");
  CHECK(r.image == "registry.example.com/acc/torch:cann");
  CHECK(r.device_count == 2);
  CHECK(r.Stage("operators").status == StageStatus::kFail);
  CHECK(r.Stage("environment").status == StageStatus::kPass);
  CHECK(r.facts.environment.extension_version == "torch_npu 2.6.0");
  REQUIRE(r.facts.operators.gaps.size() == 1);
  CHECK(r.facts.operators.gaps[0].op == "cumsum");
  CHECK(r.facts.operators.fallbacks.size() == 1);
  CHECK(r.facts.convergence.loss.size() == 10);
  CHECK(r.facts.collectives.points.size() == 20);
  CHECK(r.facts.collectives.gate_measured_gbps.has_value());
  CHECK(r.raw.at("pod") == "accept-huawei-0");
}

TEST_CASE("results: another schema version is refused, naming schemaVersion", "[accept-report]") {
  json doc = Fixture("nvidia.json");
  doc["schemaVersion"] = "xpu.dra.dev/acceptance-result/v99";
  CHECK(ErrorOf(doc) ==
        "result r.json: schemaVersion: \"xpu.dra.dev/acceptance-result/v99\" is not the version "
        "this xpuctl reads (xpu.dra.dev/acceptance-result/v1)");
  doc.erase("schemaVersion");
  CHECK(ErrorOf(doc) == "result r.json: schemaVersion: required");
}

TEST_CASE("results: bad fields are named", "[accept-report]") {
  json doc = Fixture("nvidia.json");
  doc["stages"]["operators"]["status"] = "ok";
  CHECK(ErrorOf(doc) ==
        "result r.json: stages.operators.status: expected pass, fail or skip, got \"ok\"");
  doc = Fixture("nvidia.json");
  doc["stages"]["performance"]["trainTokensPerSecond"] = "fast";
  CHECK(ErrorOf(doc) ==
        "result r.json: stages.performance.trainTokensPerSecond: expected a "
        "number, got string \"fast\"");
  doc = Fixture("nvidia.json");
  doc.erase("vendor");
  CHECK(Parsed(doc).vendor == "cuda");  // the device type stands in
  doc["device"].erase("type");
  CHECK(ErrorOf(doc) == "result r.json: vendor: required (nor is device.type given)");
  doc = Fixture("nvidia.json");
  doc.erase("stages");
  CHECK(ErrorOf(doc) == "result r.json: stages: required");
  doc = Fixture("nvidia.json");
  doc["stages"]["collectives"]["results"][3] = 5;
  CHECK(ErrorOf(doc) ==
        "result r.json: stages.collectives.results[3]: expected an object, got number");
}

TEST_CASE("results: a missing or malformed file", "[accept-report]") {
  const testing::TempDir dir;
  StatusOr<Result> missing = LoadResultFile(dir.path() + "/none.json");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  std::ofstream(dir.path() + "/bad.json") << "{not json";
  StatusOr<Result> bad = LoadResultFile(dir.path() + "/bad.json");
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Matchers::Contains("not valid JSON"));
}

// How often `needle` stands in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The page of `report` is self-contained (no script, stylesheet link or fetched source) and holds
// its structure: two SVG plots or more, every vendor's images, a heading per vendor, a row per
// stage in the stages table and in each vendor's table, a row per acceptance item per vendor.
void CheckHtmlStructure(const Report& report) {
  const std::string html = RenderHtml(report);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("</html>") != std::string::npos);
  CHECK(std::regex_search(html, std::regex("<script", std::regex::icase)) == false);
  CHECK(std::regex_search(html, std::regex("<link\\b", std::regex::icase)) == false);
  CHECK(std::regex_search(html, std::regex("src\\s*=", std::regex::icase)) == false);
  CHECK(Count(html, "<svg") >= 2);
  CHECK(Count(html, "<svg") == Count(html, "</svg>"));
  CHECK(Count(html, "<polyline") >= 2);
  CHECK(Count(html, "<table") == Count(html, "</table>"));
  const size_t vendors = report.vendors.size();
  for (const VendorReport& v : report.vendors) {
    INFO("vendor " << v.vendor);
    CHECK(Count(html, "<h3 id=\"v-" + v.vendor + "\">") == 1);
    for (const std::string& image : v.images) CHECK(Count(html, "<code>" + image + "</code>") >= 1);
  }
  for (std::string_view stage : kStages) {
    INFO("stage " << stage);
    CHECK(Count(html, "<tr><th>" + std::string(stage) + "</th>") == 1 + vendors);
  }
  for (std::string_view item : kChecklistItems) {
    INFO("item " << item);
    CHECK(Count(html, "<tr><th>" + std::string(item) + "</th>") == vendors);
  }
}

TEST_CASE("report: goldens in text and JSON, the HTML page's structure", "[accept-report]") {
  const Report report = TwoVendors("nvidia");
  CheckGolden("expected.txt", RenderText(report));
  CheckGolden("expected.json", ReportJson(report).dump(2) + "\n");
  CheckHtmlStructure(report);
}

TEST_CASE("report: goldens of the kit's own results (deploy/acceptance/testdata)",
          "[accept-report]") {
  // CPU runs of the workload relabelled as two vendors (deploy/acceptance/testdata/README.md).
  std::vector<Result> results;
  for (const char* vendor : {"nvidia", "huawei"}) {
    const std::string name = std::string("deploy/acceptance/testdata/") + vendor + ".json";
    std::ifstream in(std::string(XPU_SOURCE_DIR) + "/" + name);
    REQUIRE(in);
    results.push_back(RequireValue(ParseResult(json::parse(in), name)));
  }
  const Report report = RequireValue(BuildReport(std::move(results), {"nvidia", nullptr}));
  CheckGolden("kit.txt", RenderText(report));
  CheckGolden("kit.json", ReportJson(report).dump(2) + "\n");
  CheckHtmlStructure(report);
}

TEST_CASE("report: the baseline defaults to the first vendor, and an unknown one is refused",
          "[accept-report]") {
  CHECK(TwoVendors().baseline == "nvidia");
  CHECK(TwoVendors("huawei").baseline == "huawei");
  CHECK(TwoVendors("huawei").vendors[0].metrics[0].versus_baseline.has_value());
  StatusOr<Report> r = BuildReport({Load("nvidia.json")}, {"amd", nullptr});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message() == "--baseline \"amd\": no result of that vendor (have nvidia)");
  CHECK_FALSE(BuildReport({}, {}).ok());
}

TEST_CASE("report: ratios against the baseline", "[accept-report]") {
  const Report report = TwoVendors();
  const VendorReport& hw = report.vendors[1];
  const auto metric = [&](std::string_view name) {
    for (const Metric& m : hw.metrics) {
      if (m.name == name) return m;
    }
    FAIL("no metric " << name);
    return Metric{};
  };
  CHECK(metric("train tokens/s").versus_baseline.value() == Approx(30000.0 / 50000.0));
  CHECK(metric("joules per token").versus_baseline.value() ==
        Approx(24000.0 / 28000.0).epsilon(1e-4));
  CHECK(metric("bus bandwidth at the gate size").versus_baseline.value() ==
        Approx(179.648 / 399.219));
  CHECK(metric("final loss delta").versus == "difference");
  CHECK(metric("final loss delta").versus_baseline.value() == Approx(2.642));
  CHECK_FALSE(report.vendors[1].passed);
  CHECK(report.vendors[0].passed);
}

TEST_CASE("report: the HTML page names both images and both curves' vendors", "[accept-report]") {
  const std::string html = RenderHtml(TwoVendors());
  CHECK(html.find("<code>registry.example.com/acc/torch:cuda</code>") != std::string::npos);
  CHECK(html.find("<code>registry.example.com/acc/torch:cann</code>") != std::string::npos);
  CHECK(html.find("<h2>Loss curves</h2>") != std::string::npos);
  CHECK(html.find("<h2>Bus bandwidth</h2>") != std::string::npos);
  CHECK(html.find("<h3 id=\"v-nvidia\">nvidia (baseline): passed</h3>") != std::string::npos);
  CHECK(html.find("<h3 id=\"v-huawei\">huawei: failed</h3>") != std::string::npos);
  CHECK(html.find("<tr><th>operators</th><td class=\"pass\">pass</td><td class=\"fail\">fail</td>"
                  "</tr>") != std::string::npos);
}

TEST_CASE("report: text from the results is HTML-escaped", "[accept-report]") {
  json doc = Fixture("nvidia.json");
  doc["image"] = "evil<script>alert(1)</script>";
  doc["stages"]["operators"]["status"] = "fail";
  doc["stages"]["operators"]["reason"] = "<img src=x onerror=alert(1)>";
  const std::string html = RenderHtml(RequireValue(BuildReport({Parsed(doc)}, {})));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("evil&lt;script&gt;") != std::string::npos);
}

TEST_CASE("report: the ten acceptance items and the rework cost, in every rendering",
          "[accept-report]") {
  const Report report = TwoVendors();
  for (const VendorReport& v : report.vendors) {
    REQUIRE(v.checklist.size() == kChecklistItems.size());
    for (size_t i = 0; i < kChecklistItems.size(); ++i) {
      CHECK(v.checklist[i].item == kChecklistItems[i]);
    }
  }
  const auto norm = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(c));
    }
    return out;
  };
  for (const std::string& text :
       {norm(ReportJson(report).dump()), norm(RenderHtml(report)), norm(RenderText(report))}) {
    for (const char* want :
         {"frameworkcompatibility", "modelcoverage", "operatorgap", "containerimage",
          "kubernetesinterface", "monitoring", "collectivecommunication", "virtuali",
          "failurerecovery", "supportboundar", "reworkcost"}) {
      CHECK(text.find(want) != std::string::npos);
    }
  }
  const VendorReport& nv = report.vendors[0];
  const VendorReport& hw = report.vendors[1];
  CHECK(ItemOf(nv, "operator gaps").status == ItemStatus::kCoveredPass);
  CHECK(ItemOf(hw, "operator gaps").status == ItemStatus::kCoveredFail);
  CHECK_THAT(ItemOf(hw, "operator gaps").evidence, Catch::Matchers::Contains("cumsum/bf16"));
  CHECK(ItemOf(hw, "virtualization").status == ItemStatus::kNotCovered);
  CHECK_THAT(ItemOf(hw, "virtualization").what_would_cover_it,
             Catch::Matchers::Contains("xpuctl doctor"));
  CHECK(ItemOf(nv, "monitoring").status == ItemStatus::kCoveredPass);
  CHECK(ItemOf(nv, "failure recovery").status == ItemStatus::kCoveredPass);
  CHECK(ItemOf(nv, "vendor support boundaries").status == ItemStatus::kCoveredPass);
  // 24.1.0 lies inside huawei/ascend910b's >=24.1.0.
  CHECK(ItemOf(hw, "vendor support boundaries").status == ItemStatus::kCoveredPass);
  CHECK_THAT(ItemOf(hw, "model coverage").what_would_cover_it,
             Catch::Matchers::Contains("decoder-only"));
}

TEST_CASE("checklist: support boundaries without a config, and outside the matrix",
          "[accept-report]") {
  const std::vector<VendorResults> v = GroupByVendor({Load("nvidia.json")});
  CHECK(Checklist(v[0], nullptr)[9].status == ItemStatus::kNotCovered);
  const controller::Config narrow = RequireValue(
      controller::ParseConfig("supportMatrix:\n- {vendor: nvidia, driver: \">=560.0.0\"}\n"));
  const ChecklistItem item = Checklist(v[0], &narrow)[9];
  CHECK(item.status == ItemStatus::kCoveredFail);
  CHECK(item.evidence == "driverVersion 550.54.15 outside >=560.0.0 (nvidia)");
}

TEST_CASE("checklist: failure recovery without the driver's health facts", "[accept-report]") {
  json doc = Fixture("nvidia.json");
  doc["stages"]["stability"].erase("healthEvents");
  doc["stages"]["stability"].erase("xids");
  const std::vector<VendorResults> v = GroupByVendor({Parsed(doc)});
  const ChecklistItem item = Checklist(v[0], nullptr)[8];
  CHECK(item.status == ItemStatus::kNotCovered);
  CHECK_THAT(item.what_would_cover_it, Catch::Matchers::Contains("xpuctl accept run"));
}

TEST_CASE("rework cost: derived from the results, it follows them", "[accept-report]") {
  const std::vector<VendorResults> both = GroupByVendor({Load("nvidia.json"), Load("huawei.json")});
  const ReworkCost base = DeriveReworkCost(both[0], both[0]);
  CHECK(base.is_baseline);
  CHECK(base.items.empty());
  const ReworkCost hw = DeriveReworkCost(both[1], both[0]);
  CHECK(hw.image_differs);
  CHECK(hw.extension == "torch_npu 2.6.0");
  CHECK(hw.operator_gaps == 1);
  CHECK(hw.fallbacks == 1);
  CHECK(hw.failed_stages == std::vector<std::string>{"operators", "convergence"});
  CHECK(hw.env_differences ==
        std::vector<std::string>{"ASCEND_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES (unset)"});
  CHECK(hw.items.size() == 7);

  // The same image, no gaps, no fallbacks, the stages passing: less to rework.
  json doc = Fixture("huawei.json");
  doc["image"] = "registry.example.com/acc/torch:cuda";
  doc["stages"]["operators"]["gaps"] = json::array();
  doc["stages"]["operators"]["fallbacks"] = json::array();
  doc["stages"]["operators"]["status"] = "pass";
  doc["stages"]["convergence"]["status"] = "pass";
  const std::vector<VendorResults> fixed = GroupByVendor({Load("nvidia.json"), Parsed(doc)});
  const ReworkCost less = DeriveReworkCost(fixed[1], fixed[0]);
  CHECK_FALSE(less.image_differs);
  CHECK(less.operator_gaps == 0);
  CHECK(less.fallbacks == 0);
  CHECK(less.failed_stages.empty());
  CHECK(less.items.size() == 3);  // the extension package, the toolkit, the variables
}

TEST_CASE("report: a partial result reports its missing stages as not run", "[accept-report]") {
  const Result partial = Load("huawei-partial.json");
  CHECK(partial.Stage("operators").status == StageStatus::kNotRun);
  CHECK(partial.Stage("collectives").status == StageStatus::kPass);
  // Alone, the vendor has run two stages and passed them.
  const Report alone = RequireValue(BuildReport({Load("nvidia.json"), partial}, {}));
  const VendorReport& hw = alone.vendors[1];
  CHECK(hw.passed);
  CHECK(hw.stages[1].status == StageStatus::kNotRun);
  CHECK(RenderText(alone).find("not run") != std::string::npos);
  CHECK(hw.rework_cost.not_run_stages.size() == 5);
  CHECK(ItemOf(hw, "operator gaps").status == ItemStatus::kNotCovered);
  CHECK(ItemOf(hw, "monitoring").status == ItemStatus::kNotCovered);
  // Beside the full result of the same vendor, the gang member adds its gang-scope curves.
  const Report grouped =
      RequireValue(BuildReport({Load("nvidia.json"), Load("huawei.json"), partial}, {}));
  REQUIRE(grouped.vendors.size() == 2);
  CHECK(grouped.vendors[1].files.size() == 2);
  CHECK(grouped.vendors[1].nodes == std::vector<std::string>{"node-b", "node-c"});
  CHECK(grouped.vendors[1].bus_curves.size() == 8);  // 4 ops x (node n=2, gang n=4)
  CHECK(grouped.vendors[1].stages[1].status == StageStatus::kFail);
}

}  // namespace
}  // namespace xpu::accept
