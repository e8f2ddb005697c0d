// The /metrics pages of the controller, the plugin and the device exporter, compared family by
// family with the pages the project's own hand-written renderer produced before the metrics moved
// onto prometheus-cpp (testdata/*.prom, captured from that renderer with the same recordings):
// the same metric names, types, HELP texts, label sets and values. Dashboards (deploy/grafana/)
// and the chart's PodMonitor read these names. The order of families and samples and the spelling
// of numbers ("1" or "1.0") may differ; nothing else may.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/metrics/metrics.h"
#include "controller/metrics.h"
#include "kubeletplugin/plugin/device_metrics.h"
#include "kubeletplugin/plugin/metrics.h"
#include "kubeletplugin/plugin/testing/telemetry_examples.h"

namespace xpu::metrics {
namespace {

// One family of a page: its TYPE and HELP lines and its samples, each keyed by the sample name
// and its labels sorted by name ("name{a=\"1\",b=\"2\"}"), `le` bounds written as numbers.
struct ParsedFamily {
  std::string type;
  std::string help;
  std::map<std::string, double> samples;
};
using Parsed = std::map<std::string, ParsedFamily>;

// `k="v",...}` from `at` (just past the `{`); the escapes are kept as written.
std::map<std::string, std::string> ParseLabels(const std::string& line, size_t& at) {
  std::map<std::string, std::string> labels;
  while (at < line.size() && line[at] != '}') {
    const size_t eq = line.find('=', at);
    const std::string name = line.substr(at, eq - at);
    std::string value;
    at = eq + 2;  // past `="`
    while (at < line.size() && line[at] != '"') {
      if (line[at] == '\\') value += line[at++];
      value += line[at++];
    }
    at += 1;  // the closing quote
    if (at < line.size() && line[at] == ',') ++at;
    if (name == "le") {
      std::ostringstream bound;
      bound.precision(17);
      bound << std::strtod(value.c_str(), nullptr);
      value = bound.str();
    }
    labels[name] = value;
  }
  ++at;  // the closing brace
  return labels;
}

// Samples belong to the family of the TYPE line above them.
Parsed Parse(const std::string& text) {
  Parsed out;
  std::istringstream in(text);
  std::string line;
  std::string family;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const size_t space = line.find(' ', 7);
      family = line.substr(7, space - 7);
      const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
      (line[2] == 'H' ? out[family].help : out[family].type) = rest;
      continue;
    }
    size_t at = line.find_first_of("{ ");
    std::string key = line.substr(0, at);
    if (line[at] == '{') {
      ++at;
      key += "{";
      for (const auto& [name, value] : ParseLabels(line, at)) {
        key.append(name).append("=\"").append(value).append("\",");
      }
      key += "}";
    }
    out[family].samples[key] = std::strtod(line.c_str() + at + 1, nullptr);
  }
  return out;
}

std::string Golden(const std::string& name) {
  std::ifstream in(std::string(XPU_SOURCE_DIR) + "/base/metrics/testdata/" + name);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void CheckSame(const std::string& golden_name, const std::string& now) {
  const Parsed want = Parse(Golden(golden_name));
  const Parsed got = Parse(now);
  INFO(golden_name << ", now:\n" << now);
  REQUIRE(!want.empty());
  for (const auto& [name, family] : want) {
    INFO(name);
    const auto it = got.find(name);
    REQUIRE(it != got.end());
    CHECK(it->second.type == family.type);
    CHECK(it->second.help == family.help);
    CHECK(it->second.samples.size() == family.samples.size());
    for (const auto& [key, value] : family.samples) {
      INFO(key);
      const auto sample = it->second.samples.find(key);
      REQUIRE(sample != it->second.samples.end());
      CHECK((sample->second == value || (std::isnan(value) && std::isnan(sample->second))));
    }
  }
  for (const auto& [name, family] : got) {
    INFO(name);
    CHECK(want.count(name) == 1);
  }
}

std::string ControllerPage() {
  Registry registry;
  controller::ControllerMetrics m(registry);
  m.slices_published.Set(12);
  m.pools_published.Set(6);
  m.slice_writes.Inc({"create", "ok"}, 2);
  m.slice_writes.Inc({"update", "conflict"});
  m.class_writes.Inc({"create", "exists"}, 4);
  m.reconcile_seconds.Observe({"pool", "ok"}, 0.003);
  m.reconcile_seconds.Observe({"pool", "ok"}, 0.75);
  m.reconcile_seconds.Observe({"classes", "error"}, 12);
  m.queue_depth.Set(2);
  m.queue_delayed.Set(1);
  m.nodes.Set({"live"}, 1);
  m.nodes.Set({"stale"}, 0);
  m.devices_tainted.Set({"xpu.dra.dev/unhealthy"}, 2);
  m.leader.Set(1);
  m.config_reloads.Inc({"ok"});
  m.config_valid.Set(1);
  m.fallbacks.Inc({"taints"});
  m.api_requests.Inc({"get", "200"}, 6);
  m.api_requests.Inc({"create", "0"});
  m.terminal_errors.Inc({"pool", "422"});
  m.gangs.Set({"Pending"}, 1);
  m.node_group_drift.Set({"ascend-a2"}, 1);
  // gang_writes stays without series: a labelled family never recorded.
  return registry.Render();
}

std::string PluginPage() {
  Registry registry;
  plugin::PluginMetrics m(registry);
  m.prepare_claims.Inc({"ok"}, 3);
  m.prepare_claims.Inc({"error"});
  m.prepare_seconds.Observe({"ok"}, 0.0125);
  m.prepare_seconds.Observe({"error"}, 1.5);
  m.unprepare_claims.Inc({"ok"});
  m.unprepare_seconds.Observe({"ok"}, 0.0005);
  plugin::DriverStats driver;
  driver.checkpoint_writes = 5;
  driver.prepared_claims = 2;
  driver.prepared_devices = 1000000;
  driver.partitions_created = 3;
  driver.partition_errors = 1;
  m.Collect(driver);
  plugin::PublisherStats publisher;
  publisher.errors = 2;
  m.Collect(publisher);
  m.telemetry_seconds.Observe(0.002);
  m.checklist_seconds.Observe(0.2);
  m.SetHealth({{"n1", "npu-0", plugin::HealthState::kHealthy, 0, ""},
               {"n1", "npu-1", plugin::HealthState::kUnhealthy, 0, "xid"}});
  m.api_requests.Inc({"get", "200"}, 7);
  m.registered.Set(1);
  m.xid_watched.Set(8);
  m.xid_fatal.Inc({"79"});
  m.device_recoveries.Inc();
  return registry.Render();
}

std::string DevicePage() {
  return plugin::RenderDeviceTelemetry(
      "n1", plugin::testing::TwoDevices(),
      {plugin::testing::GpuSample(), plugin::testing::NpuSample()});
}

TEST_CASE("the controller's metrics keep their names, types, help, labels and values") {
  CheckSame("controller.prom", ControllerPage());
}

TEST_CASE("the plugin's metrics keep their names, types, help, labels and values") {
  CheckSame("plugin.prom", PluginPage());
}

TEST_CASE("the device exporter's metrics keep their names, types, help, labels and values") {
  CheckSame("device.prom", DevicePage());
}

TEST_CASE("the parser reads what it compares") {
  const Parsed parsed = Parse(
      "# HELP a_seconds Help with \\\\ and \\n.\n# TYPE a_seconds histogram\n"
      "a_seconds_bucket{op=\"x\\\"y\",le=\"0.50\"} "
      "1.0\na_seconds_bucket{le=\"+Inf\",op=\"x\\\"y\"} 2\n"
      "a_seconds_sum{op=\"x\\\"y\"} 3.5\n# TYPE b gauge\nb Nan\n");
  REQUIRE(parsed.size() == 2);
  const ParsedFamily& a = parsed.at("a_seconds");
  CHECK(a.type == "histogram");
  CHECK(a.help == "Help with \\\\ and \\n.");
  CHECK(a.samples ==
        std::map<std::string, double>{{"a_seconds_bucket{le=\"0.5\",op=\"x\\\"y\",}", 1},
                                      {"a_seconds_bucket{le=\"inf\",op=\"x\\\"y\",}", 2},
                                      {"a_seconds_sum{op=\"x\\\"y\",}", 3.5}});
  CHECK(parsed.at("b").type == "gauge");
  CHECK(std::isnan(parsed.at("b").samples.at("b")));
}

}  // namespace
}  // namespace xpu::metrics
