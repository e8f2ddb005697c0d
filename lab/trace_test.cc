#include "lab/trace.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "base/testing/require_ok.h"

namespace xpu::lab {
namespace {

// The error of parsing `text` as "jobs.csv"; fails the test when it parses.
std::string TraceErrorOf(std::string_view text) {
  const auto jobs = ParseTrace(text, "jobs.csv");
  REQUIRE_FALSE(jobs.ok());
  CHECK(jobs.status().code() == StatusCode::kInvalidArgument);
  return jobs.status().message();
}

TEST_CASE("a trace file parses: header, blank lines, comments, decimals, gangs, CRLF") {
  const std::string text =
      "#id,arrival,shape,duration\r\n"
      "train-1,0,8+8+8+8,3600\r\n"
      "\r\n"
      "# a comment\n"
      "  infer-7 , 12.5 , 1 , 95.25 \n"
      "late,1e3,4,60\n";
  const auto jobs = ParseTrace(text, "jobs.csv");
  REQUIRE_OK(jobs);
  REQUIRE(jobs->size() == 3);
  const Job& gang = (*jobs)[0];
  CHECK(gang.id == "train-1");
  CHECK(gang.arrival == 0);
  CHECK(gang.parts == std::vector<int>{8, 8, 8, 8});
  CHECK(gang.nodes() == 4);
  CHECK(gang.per_node() == 8);
  CHECK(gang.devices() == 32);
  CHECK(gang.duration == 3600);
  const Job& infer = (*jobs)[1];
  CHECK(infer.id == "infer-7");
  CHECK(infer.arrival == 12.5);
  CHECK(infer.parts == std::vector<int>{1});
  CHECK(infer.duration == 95.25);
  CHECK((*jobs)[2].arrival == 1000);
  const auto bom = ParseTrace("\xEF\xBB\xBF#id,arrival,shape,duration\na,0,1,10\n", "bom.csv");
  REQUIRE_OK(bom);
  CHECK(bom->front().id == "a");
}

TEST_CASE("trace errors name the line and the column") {
  const std::string bad_shape = TraceErrorOf("#id,arrival,shape,duration\n1,0,1,10\n2,5,8+x,100\n");
  CHECK(bad_shape ==
        "jobs.csv: line 3, column shape: \"8+x\" is not a device count "
        "(a positive integer)");

  const std::string columns = TraceErrorOf("a,0,1,10\n\nb,0,1\n");
  CHECK(columns == "jobs.csv: line 3: expected 4 columns (id,arrival,shape,duration), got 3");

  const std::string arrival = TraceErrorOf("a,soon,1,10\n");
  CHECK(arrival.find("line 1, column arrival") != std::string::npos);
  CHECK(arrival.find("\"soon\"") != std::string::npos);
  CHECK(TraceErrorOf("a,5x,1,10\n").find("line 1, column arrival") != std::string::npos);
  CHECK(TraceErrorOf("a,-1,1,10\n").find("line 1, column arrival") != std::string::npos);
  CHECK(TraceErrorOf("a,inf,1,10\n").find("line 1, column arrival") != std::string::npos);
  CHECK(TraceErrorOf("a,nan,1,10\n").find("line 1, column arrival") != std::string::npos);

  CHECK(TraceErrorOf("a,0,1,0\n").find("line 1, column duration") != std::string::npos);
  CHECK(TraceErrorOf("a,0,1,-5\n").find("line 1, column duration") != std::string::npos);
  CHECK(TraceErrorOf("a,0,1,\n").find("line 1, column duration") != std::string::npos);
  CHECK(TraceErrorOf("a,0,1,1e999\n").find("line 1, column duration") != std::string::npos);
  CHECK(TraceErrorOf("a,0,1,10s\n").find("line 1, column duration") != std::string::npos);

  CHECK(TraceErrorOf("a,0,0,10\n").find("line 1, column shape") != std::string::npos);
  CHECK(TraceErrorOf("a,0,-2,10\n").find("line 1, column shape") != std::string::npos);
  CHECK(TraceErrorOf("a,0,8+,10\n").find("line 1, column shape") != std::string::npos);
  CHECK(TraceErrorOf("a,0,,10\n").find("line 1, column shape") != std::string::npos);
  CHECK(TraceErrorOf("a,0,2.5,10\n").find("line 1, column shape") != std::string::npos);

  CHECK(TraceErrorOf(" ,0,1,10\n").find("line 1, column id") != std::string::npos);
}

TEST_CASE("a gang's parts must be equal") {
  const std::string e = TraceErrorOf("# gangs\ng,0,8+4,10\n");
  CHECK(e.find("jobs.csv: line 2, column shape: \"8+4\"") == 0);
  CHECK(e.find("unequal") != std::string::npos);
}

TEST_CASE("a duplicate id names both lines") {
  const std::string e = TraceErrorOf("#id,arrival,shape,duration\nx,0,1,10\ny,0,1,10\nx,1,2,10\n");
  CHECK(e == "jobs.csv: line 4, column id: duplicate id \"x\" (first on line 2)");
}

TEST_CASE("a trace without jobs is an error") {
  CHECK(TraceErrorOf("") == "jobs.csv: no jobs (every line is blank or a # comment)");
  CHECK(TraceErrorOf("#id,arrival,shape,duration\n\n").find("no jobs") != std::string::npos);
}

TEST_CASE("TraceCsv reads back as the same jobs") {
  std::vector<Job> jobs = {{"a", 0, {8, 8}, 3600},
                           {"b", 12.345, {1}, 0.5},
                           {"c", 1e6, {3}, 86400},
                           {"d", 0.1 + 0.2, {2}, 1.0 / 3}};
  const std::string csv = TraceCsv(jobs);
  CHECK(csv.rfind("#id,arrival,shape,duration\n", 0) == 0);
  CHECK(csv.find("a,0,8+8,3600\n") != std::string::npos);
  CHECK(csv.find("c,1000000,3,86400\n") != std::string::npos);
  const auto back = ParseTrace(csv, "round trip");
  REQUIRE_OK(back);
  CHECK(*back == jobs);

  const auto synthetic = SyntheticTrace({.jobs = 500, .fleet_devices = 64, .nodes = 8});
  const auto again = ParseTrace(TraceCsv(synthetic), "synthetic");
  REQUIRE_OK(again);
  CHECK(*again == synthetic);
}

TEST_CASE("the synthetic trace is deterministic") {
  SyntheticOptions options{.jobs = 300, .seed = 7, .fleet_devices = 80, .nodes = 10};
  const auto a = SyntheticTrace(options);
  const auto b = SyntheticTrace(options);
  REQUIRE(a.size() == 300);
  CHECK(a == b);
  CHECK(a.front().id == "job-000001");
  CHECK(a.back().id == "job-000300");
  options.seed = 8;
  CHECK(SyntheticTrace(options) != a);
  options.jobs = 0;
  CHECK(SyntheticTrace(options).empty());
}

// A pinned value: the generator must not change by accident (a change here changes every
// synthetic replay's numbers, and docs/placement-lab.md's examples).
TEST_CASE("the synthetic trace of seed 1 starts as pinned") {
  const std::string csv = TraceCsv(SyntheticTrace({.jobs = 5, .fleet_devices = 80, .nodes = 10}));
  INFO(csv);
  CHECK(csv ==
        "#id,arrival,shape,duration\n"
        "job-000001,0,3,73\n"
        "job-000002,3.395,8,103\n"
        "job-000003,5.275,2,72\n"
        "job-000004,8.227,1,92\n"
        "job-000005,10.605,1,70\n");
}

TEST_CASE("the synthetic mix and the offered load") {
  const SyntheticOptions options{.jobs = 20000, .fleet_devices = 80, .nodes = 10, .load = 0.9};
  const auto jobs = SyntheticTrace(options);
  REQUIRE(jobs.size() == 20000);
  int singles = 0;
  int gangs = 0;
  std::set<std::vector<int>> shapes;
  double device_seconds = 0;
  double last_arrival = 0;
  for (const auto& j : jobs) {
    singles += j.devices() == 1 ? 1 : 0;
    gangs += j.nodes() > 1 ? 1 : 0;
    shapes.insert(j.parts);
    CHECK(j.duration >= 1);
    CHECK(j.duration <= 86400);
    CHECK(j.duration == std::round(j.duration));
    CHECK(j.arrival * 1000 == Approx(std::round(j.arrival * 1000)).margin(1e-6));
    CHECK(j.arrival >= last_arrival);
    device_seconds += j.devices() * j.duration;
    last_arrival = j.arrival;
  }
  const double share = static_cast<double>(singles) / static_cast<double>(jobs.size());
  CHECK(share > 0.45);
  CHECK(share < 0.55);
  CHECK(gangs > 0);
  const std::set<std::vector<int>> all = {{1}, {2}, {3}, {4}, {6}, {8}, {8, 8}, {8, 8, 8, 8}};
  CHECK(shapes == all);
  const double offered = device_seconds / (options.fleet_devices * last_arrival);
  CHECK(offered > 0.7 * options.load);
  CHECK(offered < 1.3 * options.load);
}

TEST_CASE("the synthetic mix keeps to the fleet") {
  struct Case {
    int max_devices_per_node;
    int fleet_devices;
    int nodes;
    int most_nodes;     // the largest gang: 1 where the fleet holds none
    int most_per_node;  // the largest node part
  };
  for (const Case& c : {
           Case{4, 4, 1, 1, 4},   // one 4-device node
           Case{8, 8, 1, 1, 8},   // one 8-device node: no gang either
           Case{8, 24, 3, 2, 8},  // gangs of 2 but not of 4
           Case{6, 24, 3, 1, 6},  // gangs are 8 per node: none
       }) {
    INFO(c.max_devices_per_node << " per node, " << c.fleet_devices << " devices, " << c.nodes
                                << " nodes");
    int most_nodes = 0;
    int most_per_node = 0;
    for (const auto& j : SyntheticTrace({.jobs = 5000,
                         .fleet_devices = c.fleet_devices,
                         .max_devices_per_node = c.max_devices_per_node,
                         .nodes = c.nodes})) {
      most_nodes = std::max(most_nodes, j.nodes());
      most_per_node = std::max(most_per_node, j.per_node());
    }
    CHECK(most_nodes == c.most_nodes);
    CHECK(most_per_node == c.most_per_node);
  }
}

TEST_CASE("a trace's partition jobs: parsed, written back, and a bad one named") {
  const auto jobs =
      ParseTrace("#id,arrival,shape,duration\ni1,0, partition:1g.18gb ,30\n", "p.csv");
  REQUIRE_OK(jobs);
  REQUIRE(jobs->size() == 1);
  CHECK(jobs->front().partition());
  CHECK(jobs->front().profile == "1g.18gb");
  CHECK(jobs->front().parts.empty());
  CHECK(TraceCsv(*jobs) == "#id,arrival,shape,duration\ni1,0,partition:1g.18gb,30\n");
  const auto bad = ParseTrace("a,0,1,1\nb,0,partition:,1\n", "p.csv");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("p.csv: line 2, column shape") != std::string::npos);
  CHECK(bad.status().message().find("names no profile") != std::string::npos);
}

TEST_CASE("the synthetic trace with partitions: the share asked, by weight, deterministic") {
  SyntheticOptions options{.jobs = 20000, .fleet_devices = 64, .nodes = 8, .partition_share = 0.7};
  options.partitions = {{"small", 0.125, 3}, {"large", 0.5, 1}};
  options.partitionable_devices = 32;
  const auto jobs = SyntheticTrace(options);
  CHECK(jobs == SyntheticTrace(options));
  int small = 0;
  int large = 0;
  double offered = 0;
  for (const Job& j : jobs) {
    if (j.profile == "small") ++small;
    if (j.profile == "large") ++large;
    // Partition jobs load only the 32 partitionable devices: they count twice over the 64.
    offered += j.partition() ? (j.profile == "small" ? 0.125 : 0.5) * j.duration * 2
                             : j.devices() * j.duration;
  }
  CHECK(small + large == Approx(14000).epsilon(0.03));
  CHECK(static_cast<double>(small) / (small + large) == Approx(0.75).epsilon(0.03));
  // The mean is what the rate was set from: load 0.9 of 64 devices over the arrival window.
  CHECK(offered / (64 * jobs.back().arrival) == Approx(0.9).epsilon(0.1));
  // Without offers, no partition job, and the trace is the one without partitions.
  options.partitions.clear();
  SyntheticOptions plain{.jobs = 20000, .fleet_devices = 64, .nodes = 8};
  CHECK(SyntheticTrace(options) == SyntheticTrace(plain));
}

}  // namespace
}  // namespace xpu::lab
