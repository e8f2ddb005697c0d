#include "base/metrics/metrics.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace xpu::metrics {
namespace {

TEST_CASE("counter exposition with labels, escaping and sorted series") {
  Registry registry;
  Counter& counter = registry.AddCounter(
      "xpu_dra_test_requests_total", "Requests by \"method\"\\ and\nresult.", {"method", "result"});
  counter.Inc({"POST", "ok"});
  counter.Inc({"GET", "ok"});
  counter.Inc({"GET", "ok"}, 2);
  counter.Inc({"a\"b\\c\nd", "error"}, 0.5);
  CHECK(counter.Value({"GET", "ok"}) == 3);
  CHECK(counter.Value({"GET", "error"}) == 0);
  CHECK(registry.Render() ==
        R"txt(# HELP xpu_dra_test_requests_total Requests by "method"\\ and\nresult.
# TYPE xpu_dra_test_requests_total counter
xpu_dra_test_requests_total{method="GET",result="ok"} 3
xpu_dra_test_requests_total{method="POST",result="ok"} 1
xpu_dra_test_requests_total{method="a\"b\\c\nd",result="error"} 0.5
)txt");
}

TEST_CASE("labels keep the order of the label names, not prometheus-cpp's sorted one") {
  Registry registry;
  Counter& requests =
      registry.AddCounter("xpu_dra_test_api_requests_total", "Attempts.", {"verb", "code"});
  requests.Inc({"get", "200"}, 6);
  requests.Inc({"create", "0"});
  requests.Inc({"create", "201"}, 2);
  CHECK(registry.Render() == R"txt(# HELP xpu_dra_test_api_requests_total Attempts.
# TYPE xpu_dra_test_api_requests_total counter
xpu_dra_test_api_requests_total{verb="create",code="0"} 1
xpu_dra_test_api_requests_total{verb="create",code="201"} 2
xpu_dra_test_api_requests_total{verb="get",code="200"} 6
)txt");
}

TEST_CASE("gauges and families are sorted and label-less families always render") {
  Registry registry;
  Gauge& health = registry.AddGauge("xpu_dra_test_device_healthy", "1 when healthy.", {"device"});
  Gauge& up = registry.AddGauge("xpu_dra_test_up", "");
  Counter& errors = registry.AddCounter("xpu_dra_test_errors_total", "Errors.");
  health.Set({"gpu-1"}, 1);
  health.Set({"gpu-0"}, 0);
  health.Add({"gpu-0"}, -2.5);
  up.Set(1);
  up.Add(1e6 - 1);
  CHECK(health.Value({"gpu-0"}) == -2.5);
  CHECK(registry.Render() == R"txt(# HELP xpu_dra_test_device_healthy 1 when healthy.
# TYPE xpu_dra_test_device_healthy gauge
xpu_dra_test_device_healthy{device="gpu-0"} -2.5
xpu_dra_test_device_healthy{device="gpu-1"} 1
# HELP xpu_dra_test_errors_total Errors.
# TYPE xpu_dra_test_errors_total counter
xpu_dra_test_errors_total 0
# TYPE xpu_dra_test_up gauge
xpu_dra_test_up 1000000
)txt");

  health.Clear();
  up.Clear();
  errors.Inc();
  CHECK(health.Value({"gpu-1"}) == 0);
  CHECK(registry.Render() == R"txt(# HELP xpu_dra_test_device_healthy 1 when healthy.
# TYPE xpu_dra_test_device_healthy gauge
# HELP xpu_dra_test_errors_total Errors.
# TYPE xpu_dra_test_errors_total counter
xpu_dra_test_errors_total 1
# TYPE xpu_dra_test_up gauge
xpu_dra_test_up 0
)txt");
}

TEST_CASE("histogram exposition has count, sum, cumulative buckets and +Inf") {
  Registry registry;
  Histogram& latency =
      registry.AddHistogram("xpu_dra_test_latency_seconds", "Latency.", {"op"}, {0.005, 0.5, 1});
  latency.Observe({"read"}, 0.00390625);
  latency.Observe({"read"}, 0.5);  // a bound is inclusive
  latency.Observe({"read"}, 3);
  latency.Observe({"write"}, 1);
  CHECK(latency.Count({"read"}) == 3);
  CHECK(latency.Sum({"read"}) == 3.50390625);
  CHECK(latency.Count({"none"}) == 0);
  CHECK(registry.Render() == R"txt(# HELP xpu_dra_test_latency_seconds Latency.
# TYPE xpu_dra_test_latency_seconds histogram
xpu_dra_test_latency_seconds_count{op="read"} 3
xpu_dra_test_latency_seconds_sum{op="read"} 3.50390625
xpu_dra_test_latency_seconds_bucket{op="read",le="0.005"} 1
xpu_dra_test_latency_seconds_bucket{op="read",le="0.5"} 2
xpu_dra_test_latency_seconds_bucket{op="read",le="1"} 2
xpu_dra_test_latency_seconds_bucket{op="read",le="+Inf"} 3
xpu_dra_test_latency_seconds_count{op="write"} 1
xpu_dra_test_latency_seconds_sum{op="write"} 1
xpu_dra_test_latency_seconds_bucket{op="write",le="0.005"} 0
xpu_dra_test_latency_seconds_bucket{op="write",le="0.5"} 0
xpu_dra_test_latency_seconds_bucket{op="write",le="1"} 1
xpu_dra_test_latency_seconds_bucket{op="write",le="+Inf"} 1
)txt");
}

TEST_CASE("a label-less histogram renders zero buckets and an explicit +Inf bound is dropped") {
  Registry registry;
  registry.AddHistogram("xpu_dra_test_wait_seconds", "Wait.", {},
                        {0.0005, 2.5, std::numeric_limits<double>::infinity()});
  CHECK(registry.Render() == R"txt(# HELP xpu_dra_test_wait_seconds Wait.
# TYPE xpu_dra_test_wait_seconds histogram
xpu_dra_test_wait_seconds_count 0
xpu_dra_test_wait_seconds_sum 0
xpu_dra_test_wait_seconds_bucket{le="0.0005"} 0
xpu_dra_test_wait_seconds_bucket{le="2.5"} 0
xpu_dra_test_wait_seconds_bucket{le="+Inf"} 0
)txt");
}

TEST_CASE("values are written by prometheus-cpp's serializer") {
  Registry registry;
  Gauge& gauge = registry.AddGauge("xpu_dra_test_value", "V.", {"case"});
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::string, double>> cases = {
      {"a_zero", 0},         {"b_int", 3},           {"c_negative", -42},       {"d_million", 1e6},
      {"e_fraction", 0.005}, {"f_small", 0.00005},   {"g_large", 150754820096}, {"h_inf", inf},
      {"i_minus_inf", -inf}, {"j_nan", std::nan("")}};
  for (const auto& [name, value] : cases) gauge.Set({name}, value);
  CHECK(registry.Render() == R"txt(# HELP xpu_dra_test_value V.
# TYPE xpu_dra_test_value gauge
xpu_dra_test_value{case="a_zero"} 0
xpu_dra_test_value{case="b_int"} 3
xpu_dra_test_value{case="c_negative"} -42
xpu_dra_test_value{case="d_million"} 1000000
xpu_dra_test_value{case="e_fraction"} 0.005
xpu_dra_test_value{case="f_small"} 5e-05
xpu_dra_test_value{case="g_large"} 150754820096
xpu_dra_test_value{case="h_inf"} +Inf
xpu_dra_test_value{case="i_minus_inf"} -Inf
xpu_dra_test_value{case="j_nan"} Nan
)txt");
}

TEST_CASE("bad samples are dropped and counted, never recorded") {
  Registry registry;
  Counter& counter = registry.AddCounter("xpu_dra_test_total", "T.", {"result"});
  Gauge& gauge = registry.AddGauge("xpu_dra_test_gauge", "G.", {"device"});
  Histogram& histogram = registry.AddHistogram("xpu_dra_test_seconds", "S.", {}, {1});
  const std::string before = registry.Render();
  counter.Inc();                 // no labels for a labelled family
  counter.Inc({"ok", "extra"});  // too many
  counter.Inc({"ok"}, -1);       // counters only go up
  counter.Inc({"ok"}, std::nan(""));
  gauge.Set(1);
  gauge.Add({"a", "b"}, 1);
  histogram.Observe({"x"}, 1);
  histogram.Observe(std::nan(""));
  CHECK(counter.DroppedSamples() == 4);
  CHECK(gauge.DroppedSamples() == 2);
  CHECK(histogram.DroppedSamples() == 2);
  CHECK(counter.Value({"ok"}) == 0);
  CHECK(counter.Value({"ok", "extra"}) == 0);
  CHECK(registry.Render() == before);
}

TEST_CASE("a second registration returns the same family") {
  Registry registry;
  Counter& first = registry.AddCounter("xpu_dra_test_total", "T.", {"result"});
  Counter& second = registry.AddCounter("xpu_dra_test_total", "Other help.", {"result"});
  CHECK(&first == &second);
  Histogram& h1 = registry.AddHistogram("xpu_dra_test_seconds", "S.", {}, LatencyBuckets());
  Histogram& h2 = registry.AddHistogram("xpu_dra_test_seconds", "S.", {}, LatencyBuckets());
  CHECK(&h1 == &h2);
  CHECK(h1.label_names().empty());
  CHECK(first.type() == MetricType::kCounter);
}

// Runs `register_family` in a child process; true if the child aborted.
bool Aborts(const std::function<void(Registry&)>& register_family) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Keep the expected message out of the test log.
    if (std::freopen("/dev/null", "w", stderr) == nullptr) std::_Exit(2);
    Registry registry;
    registry.AddCounter("xpu_dra_test_total", "T.", {"result"});
    registry.AddHistogram("xpu_dra_test_seconds", "S.", {}, {1, 2});
    register_family(registry);
    std::_Exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

TEST_CASE("registration mistakes abort") {
  CHECK_FALSE(Aborts([](Registry& r) { r.AddCounter("xpu_dra_test_total", "T.", {"result"}); }));
  CHECK(Aborts([](Registry& r) { r.AddCounter("1bad", "B."); }));
  CHECK(Aborts([](Registry& r) { r.AddCounter("bad-name", "B."); }));
  CHECK(Aborts([](Registry& r) { r.AddCounter("__reserved_total", "B."); }));
  CHECK(Aborts([](Registry& r) { r.AddGauge("ok_name", "B.", {"__reserved"}); }));
  CHECK(Aborts([](Registry& r) { r.AddGauge("ok_name", "B.", {"a:b"}); }));
  CHECK(Aborts([](Registry& r) { r.AddGauge("ok_name", "B.", {"a", "a"}); }));
  CHECK(Aborts([](Registry& r) { r.AddHistogram("ok_name", "B.", {"le"}, {1}); }));
  CHECK(Aborts([](Registry& r) { r.AddHistogram("ok_name", "B.", {}, {2, 1}); }));
  CHECK(Aborts([](Registry& r) { r.AddGauge("xpu_dra_test_total", "T.", {"result"}); }));
  CHECK(Aborts([](Registry& r) { r.AddCounter("xpu_dra_test_total", "T.", {"code"}); }));
  CHECK(Aborts([](Registry& r) { r.AddHistogram("xpu_dra_test_seconds", "S.", {}, {1, 3}); }));
  CHECK(Aborts([](Registry& r) { r.AddCounter("xpu_dra_test_seconds_count", "C."); }));
  CHECK(Aborts([](Registry& r) {
    r.AddCounter("clash_count", "C.");
    r.AddHistogram("clash", "H.", {}, {1});
  }));
  CHECK(Aborts([](Registry& r) { r.AddHistogram("xpu_dra_test_total", "H.", {}, {1}); }));
  CHECK(Aborts([](Registry&) { ExponentialBuckets(0, 2, 3); }));
}

TEST_CASE("bucket helpers") {
  const std::vector<double> latency = LatencyBuckets();
  REQUIRE(latency.size() == 14);
  CHECK(latency.front() == 0.0005);
  CHECK(latency.back() == 10);
  CHECK(ExponentialBuckets(1, 2, 4) == std::vector<double>{1, 2, 4, 8});
}

TEST_CASE("scope timer observes the elapsed seconds with labels set before the end") {
  Registry registry;
  Histogram& histogram =
      registry.AddHistogram("xpu_dra_test_op_seconds", "Op.", {"op", "result"}, {0.1, 1});
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const ScopeTimer::Clock clock = [&now] { return now; };
  {
    ScopeTimer timer(histogram, {"prepare", "ok"}, clock);
    now += std::chrono::milliseconds(250);
    CHECK(timer.Elapsed() == 0.25);
    timer.SetLabel("result", "error");
    timer.SetLabel("no_such_label", "x");
    CHECK(timer.labels() == std::vector<std::string>{"prepare", "error"});
  }
  CHECK(histogram.Count({"prepare", "ok"}) == 0);
  CHECK(histogram.Count({"prepare", "error"}) == 1);
  CHECK(histogram.Sum({"prepare", "error"}) == 0.25);

  {
    ScopeTimer timer(histogram, {"unprepare", "ok"}, clock);
    now += std::chrono::seconds(2);
    timer.Stop();
    now += std::chrono::seconds(5);
    timer.Stop();  // records once only
  }
  CHECK(histogram.Count({"unprepare", "ok"}) == 1);
  CHECK(histogram.Sum({"unprepare", "ok"}) == 2);

  {
    ScopeTimer timer(histogram, {"cancelled", "ok"}, clock);
    timer.Cancel();
  }
  CHECK(histogram.Count({"cancelled", "ok"}) == 0);

  {
    ScopeTimer timer(histogram);  // the real clock; labels given later
    timer.SetLabels({"real", "ok"});
  }
  CHECK(histogram.Count({"real", "ok"}) == 1);
  CHECK(histogram.Sum({"real", "ok"}) >= 0);
  CHECK(histogram.DroppedSamples() == 0);
}

TEST_CASE("concurrent recording from many threads gives exact totals") {
  Registry registry;
  Counter& counter = registry.AddCounter("xpu_dra_test_total", "T.", {"result"});
  Gauge& gauge = registry.AddGauge("xpu_dra_test_inflight", "I.");
  Histogram& histogram = registry.AddHistogram("xpu_dra_test_seconds", "S.", {"op"}, {0.5});
  constexpr int kThreads = 8;
  constexpr int kIterations = 20000;
  std::atomic<bool> empty_render{false};  // Catch2 assertions are not thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Registration races too: every thread gets the same families back.
      Counter& same = registry.AddCounter("xpu_dra_test_total", "T.", {"result"});
      for (int i = 0; i < kIterations; ++i) {
        same.Inc({i % 2 == 0 ? "ok" : "error"});
        gauge.Add({}, 1);
        histogram.Observe({t % 2 == 0 ? "even" : "odd"}, i % 2 == 0 ? 0.25 : 1);
        if (i % 1000 == 0 && registry.Render().empty()) empty_render = true;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  CHECK_FALSE(empty_render);
  CHECK(counter.Value({"ok"}) == 80000);
  CHECK(counter.Value({"error"}) == 80000);
  CHECK(gauge.Value() == 160000);
  CHECK(histogram.Count({"even"}) == 80000);
  CHECK(histogram.Count({"odd"}) == 80000);
  CHECK(histogram.Sum({"even"}) == 80000 * (0.25 + 1) / 2);
  const std::string text = registry.Render();
  CHECK(text.find("xpu_dra_test_seconds_bucket{op=\"odd\",le=\"0.5\"} 40000\n") !=
        std::string::npos);
  CHECK(text.find("xpu_dra_test_total{result=\"ok\"} 80000\n") != std::string::npos);
}

}  // namespace
}  // namespace xpu::metrics
