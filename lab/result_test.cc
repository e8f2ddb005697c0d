#include "lab/result.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace xpu::lab {
namespace {

size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The sample's counts and the JSON member each is printed as, unchanged.
struct SampleCount {
  int64_t PolicyMetrics::*field;
  const char* key;
  int64_t value;
};
constexpr SampleCount kSampleCounts[] = {
    {&PolicyMetrics::placements, "placements", 90},
    {&PolicyMetrics::unplaced, "unplaced", 7},
    {&PolicyMetrics::rejected, "rejected", 3},
    {&PolicyMetrics::rule_violations, "ruleViolations", 2},
    {&PolicyMetrics::below_best_bandwidth, "belowBestBandwidth", 5},
    {&PolicyMetrics::below_fleet_best_bandwidth, "belowFleetBestBandwidth", 11},
    {&PolicyMetrics::below_vendor_best_bandwidth, "belowVendorBestBandwidth", 8},
    {&PolicyMetrics::gangs, "gangs", 4},
    {&PolicyMetrics::allocator_calls, "allocatorCalls", 1234},
    {&PolicyMetrics::partition_placements, "partitionPlacements", 61},
    {&PolicyMetrics::fragmented_waits, "fragmentedWaits", 6},
};

// The sample's figures and the JSON member each is printed as, rounded.
struct SampleFigure {
  double PolicyMetrics::*field;
  const char* key;
  double value;
  double json;
};
constexpr SampleFigure kSampleFigures[] = {
    {&PolicyMetrics::mean_bandwidth_shortfall, "meanBandwidthShortfall", 0.123456789, 0.123457},
    {&PolicyMetrics::queue_delay_p50, "queueDelayP50", 1.23456, 1.235},
    {&PolicyMetrics::queue_delay_p95, "queueDelayP95", 98.7654321, 98.765},
    {&PolicyMetrics::queue_delay_mean, "queueDelayMean", 10.0006, 10.001},
    {&PolicyMetrics::utilisation, "utilisation", 0.87654321, 0.876543},
    {&PolicyMetrics::makespan, "makespan", 36000.0004, 36000.0},
    {&PolicyMetrics::largest_profile_fits, "largestProfileFits", 0.71234567, 0.712346},
};

// kSampleCounts and kSampleFigures, with the stranded devices and the plots' data scaled by
// `scale`.
PolicyMetrics SampleMetrics(const std::string& name, double scale) {
  PolicyMetrics m;
  m.policy = name;
  m.jobs = 100;
  for (const SampleCount& c : kSampleCounts) m.*c.field = c.value;
  for (const SampleFigure& f : kSampleFigures) m.*f.field = f.value;
  m.stranded_device_seconds = 7200.12345 * scale;
  m.gang_tiers = {{"leaf", 3}, {"spine", 1}};
  m.utilisation_series = {{0, 0}, {600, 0.5 * scale}, {3600, 0.9}, {36000, 0}};
  m.stranded_series = {{0, 0}, {1200, 6 * scale}, {7200, 2}, {36000, 0}};
  m.queue_delays = {0, 0, 0, 1.5, 2, 30, 45.5, 120 * scale};
  return m;
}

ReplayResult SampleResult() {
  return {.trace = "synthetic 100 (seed 1)",
          .fleet = "6 x atlas800-9000, 4 x hgx-h200",
          .node_order = "first",
          .scheduler = "kube",
          .scheduler_seed = 1,
          .nodes = 10,
          .devices = 80,
          .jobs = 100,
          .policies = {SampleMetrics("stock-unordered", 1), SampleMetrics("solver", 2)}};
}

TEST_CASE("the replay JSON has every documented member, rounded") {
  const auto j = ToJson(SampleResult());
  CHECK(j.at("trace") == "synthetic 100 (seed 1)");
  CHECK(j.at("fleet") == "6 x atlas800-9000, 4 x hgx-h200");
  CHECK(j.at("nodeOrder") == "first");
  CHECK(j.at("scheduler") == "kube");
  CHECK(j.at("schedulerSeed") == 1);
  CHECK(j.at("nodes") == 10);
  CHECK(j.at("devices") == 80);
  CHECK(j.at("jobs") == 100);
  CHECK(j.size() == 9);
  REQUIRE(j.at("policies").size() == 2);
  for (const char* name : {"stock-unordered", "solver"}) {
    const auto& p = j.at("policies").at(name);
    CHECK(p.size() == 22);
    CHECK(p.contains("belowFleetBestBandwidth"));
    CHECK(p.contains("meanBottleneckGBps"));
    CHECK(p.at("notes").is_array());
    for (const SampleCount& c : kSampleCounts) {
      INFO(c.key);
      CHECK(p.at(c.key) == c.value);
    }
    for (const SampleFigure& f : kSampleFigures) {
      INFO(f.key);
      CHECK(p.at(f.key) == f.json);
    }
    CHECK(p.at("gangTiers") == nlohmann::json({{"leaf", 3}, {"spine", 1}}));
  }
  CHECK(j.at("policies").at("stock-unordered").at("strandedDeviceSeconds") == 7200.123);
  CHECK(j.at("policies").at("solver").at("strandedDeviceSeconds") == 14400.247);
  CHECK(ToJson(SampleResult()).dump() == j.dump());
}

TEST_CASE("the text table has the facts and a row per policy") {
  const std::string t = TextTable(SampleResult());
  INFO(t);
  CHECK(t.find("trace: synthetic 100 (seed 1)\n") != std::string::npos);
  CHECK(t.find("fleet: 6 x atlas800-9000, 4 x hgx-h200 (10 nodes, 80 devices)\n") !=
        std::string::npos);
  CHECK(t.find("node order: first\n") != std::string::npos);
  CHECK(t.find("scheduler: kube (the stock policies' node choice, ties broken with seed 1)\n") !=
        std::string::npos);
  CHECK(t.find("below-vendor-best") != std::string::npos);
  const std::string html = ReportHtml(SampleResult());
  CHECK(html.find("<th>below-vendor-best</th>") != std::string::npos);
  CHECK(html.find("<dt>scheduler</dt><dd>kube (the stock policies&#39; node choice") !=
        std::string::npos);
  ReplayResult no_stock = SampleResult();
  no_stock.scheduler.clear();  // no stock policy ran: no scheduler to report
  CHECK(TextTable(no_stock).find("scheduler:") == std::string::npos);
  CHECK(ReportHtml(no_stock).find("<dt>scheduler</dt>") == std::string::npos);
  CHECK(t.find("\nstock-unordered  ") != std::string::npos);
  CHECK(t.find("\nsolver           ") != std::string::npos);
  CHECK(t.find("5 (12.3%)") != std::string::npos);
  CHECK(t.find("87.7") != std::string::npos);
  CHECK(t.find("gangs: 4 (leaf 3, spine 1)") != std::string::npos);
  CHECK(TextTable(SampleResult()) == t);

  ReplayResult no_gangs = SampleResult();
  for (auto& m : no_gangs.policies) {
    m.gangs = 0;
    m.gang_tiers.clear();
  }
  CHECK(TextTable(no_gangs).find("gangs:") == std::string::npos);

  CHECK(t.find("  solver           partitions: 61 placed, 6 waited on fragmentation, largest "
               "profile fits 71.2% of device-time\n") != std::string::npos);
  ReplayResult no_partitions = SampleResult();
  for (auto& m : no_partitions.policies) m.partition_placements = m.fragmented_waits = 0;
  CHECK(TextTable(no_partitions).find("partitions:") == std::string::npos);
  CHECK(ReportHtml(no_partitions).find("Partition jobs") == std::string::npos);
  CHECK(ReportHtml(SampleResult()).find("<li>solver: 61 placed, 6 waited on fragmentation") !=
        std::string::npos);
}

TEST_CASE("the HTML report is self-contained, escaped and byte-stable") {
  ReplayResult r = SampleResult();
  r.fleet = "2 x <odd&name>";
  r.policies[1].policy = "so<l>v&er";
  const std::string html = ReportHtml(r);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("<title>xpu-dra placement lab</title>") != std::string::npos);
  CHECK(CountOf(html, "<svg") == 3);
  CHECK(CountOf(html, "</svg>") == 3);
  CHECK(CountOf(html, "<polyline class=\"series\"") == 6);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("<odd") == std::string::npos);
  CHECK(html.find("so<l>") == std::string::npos);
  CHECK(html.find("2 x &lt;odd&amp;name&gt;") != std::string::npos);
  CHECK(html.find("so&lt;l&gt;v&amp;er") != std::string::npos);
  CHECK(html.find("no data") == std::string::npos);
  CHECK(ReportHtml(r) == html);
}

TEST_CASE("the HTML report draws empty plots") {
  ReplayResult r = SampleResult();
  for (auto& m : r.policies) {
    m.utilisation_series.clear();
    m.stranded_series.clear();
    m.queue_delays.clear();
  }
  const std::string html = ReportHtml(r);
  CHECK(CountOf(html, "<svg") == 3);
  CHECK(CountOf(html, "no data") == 3);
  CHECK(CountOf(html, "<polyline class=\"series\"") == 0);

  ReplayResult none;
  const std::string bare = ReportHtml(none);
  CHECK(CountOf(bare, "<svg") == 3);
  CHECK(CountOf(bare, "no data") == 3);
  CHECK(ToJson(none).at("policies").empty());
  CHECK(!TextTable(none).empty());
}

}  // namespace
}  // namespace xpu::lab
