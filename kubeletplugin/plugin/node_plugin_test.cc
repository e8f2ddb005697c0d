// The node plugin's loops on a fake clock: how many periods a loop runs before it sees the stop,
// and what the checklist loop logs.
#include "kubeletplugin/plugin/node_plugin.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "base/clock.h"
#include "base/testing/temp_dir.h"

namespace xpu::plugin {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

// A FakeClock that requests the stop once `limit` has passed on it, at the end of a nap: the loop
// under test returns after the period it was in.
class StopAfter final : public Clock {
 public:
  StopAfter(nanoseconds limit, StopFlag* stop) : limit_(limit), stop_(stop) {}

  SteadyTime Now() const override { return fake_.Now(); }
  WallTime WallNow() const override { return fake_.WallNow(); }
  void Sleep(nanoseconds d, const StopFlag& done) override {
    fake_.Sleep(d, done);
    if (Elapsed() >= limit_) stop_->Set();
  }
  nanoseconds Elapsed() const { return fake_.Now() - start_; }

 private:
  FakeClock fake_;
  const SteadyTime start_ = fake_.Now();
  const nanoseconds limit_;
  StopFlag* const stop_;
};

// The count of a histogram without labels in Prometheus text; -1 when it is not there.
long Count(const std::string& text, const std::string& histogram) {
  std::istringstream lines(text);
  const std::string prefix = histogram + "_count ";
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(prefix)) return std::stol(line.substr(prefix.size()));
  }
  return -1;
}

PluginOptions OptionsUnder(const std::string& host_root) {
  PluginOptions options;
  options.node_name = "n1";
  options.host_root = host_root;
  options.vendor_lib_dirs = {host_root};  // no libraries there: nothing of the host is read
  return options;
}

// A plugin on an empty host root, its log kept, and a clock that stops it after `stop_after`.
struct Harness {
  Harness(const std::function<void(PluginOptions*)>& adjust, nanoseconds stop_after)
      : clock(stop_after, &stop) {
    PluginOptions options = OptionsUnder(host.path());
    adjust(&options);
    plugin = std::make_unique<NodePlugin>(options, stop, log);
  }
  testing::TempDir host;
  StopFlag stop;
  std::ostringstream log;
  StopAfter clock;
  std::unique_ptr<NodePlugin> plugin;
};

TEST_CASE("TelemetryLoop samples at once, then once a period, until the stop", "[node_plugin]") {
  struct Case {
    const char* name;
    milliseconds interval;
    nanoseconds stop_after;
    long samples;
    nanoseconds elapsed;  // on the clock when the loop returned
  };
  const Case cases[] = {
      {"three periods begun", 10s, 25s, 3, 25s},
      {"a period under a second", 100ms, 1s, 10, 1s},
      {"stopped within the first period", 1min, 30s, 1, 30s},
      {"no telemetry: returns at once", 0ms, 1s, 0, 0s},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Harness h([&](PluginOptions* o) { o->telemetry_interval = c.interval; }, c.stop_after);

    h.plugin->TelemetryLoop(h.clock);

    CHECK(Count(h.plugin->RenderMetrics(), "xpu_dra_plugin_telemetry_sample_seconds") == c.samples);
    CHECK(h.clock.Elapsed() == c.elapsed);
    CHECK(h.log.str().find("telemetry:") == std::string::npos);  // no inventory: no errors
  }
}

TEST_CASE("TelemetryLoop returns at once after Finish", "[node_plugin]") {
  testing::TempDir host;
  StopFlag stop;
  std::ostringstream log;
  NodePlugin plugin(OptionsUnder(host.path()), stop, log);
  StopAfter clock(1min, &stop);

  plugin.Finish();
  plugin.TelemetryLoop(clock);

  CHECK(Count(plugin.RenderMetrics(), "xpu_dra_plugin_telemetry_sample_seconds") == 0);
  CHECK(clock.Elapsed() == 0ns);
  CHECK_FALSE(stop.IsSet());
}

TEST_CASE("ChecklistLoop runs at once, then once an interval, and logs a finding once",
          "[node_plugin]") {
  struct Case {
    const char* name;
    milliseconds interval;
    nanoseconds stop_after;
    long runs;
  };
  const Case cases[] = {
      {"three intervals begun", 10min, 25min, 3},
      {"stopped within the first interval", 10min, 5min, 1},
      {"interval zero: at start only", 0ms, 1h, 1},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    // No devices, no driver: the checklist has findings to log.
    Harness h([&](PluginOptions* o) { o->node_checklist_interval = c.interval; }, c.stop_after);

    h.plugin->ChecklistLoop(h.clock);

    CHECK(Count(h.plugin->RenderMetrics(), "xpu_dra_plugin_node_checklist_seconds") == c.runs);
    // The same findings each run: logged by the first only.
    const std::string text = h.log.str();
    const size_t first = text.find("node checklist: ");
    REQUIRE(first != std::string::npos);
    const std::string line = text.substr(first, text.find('\n', first) - first);
    size_t times = 0;
    for (size_t at = text.find(line); at != std::string::npos; at = text.find(line, at + 1)) {
      ++times;
    }
    CHECK(times == 1);
  }
}

TEST_CASE("ChecklistLoop does nothing with --node-checklist=false", "[node_plugin]") {
  Harness h([](PluginOptions* o) { o->node_checklist = false; }, 1h);
  h.plugin->ChecklistLoop(h.clock);
  CHECK(Count(h.plugin->RenderMetrics(), "xpu_dra_plugin_node_checklist_seconds") == 0);
  CHECK(h.clock.Elapsed() == 0ns);
}

}  // namespace
}  // namespace xpu::plugin
