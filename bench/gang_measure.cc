// A measured run of gang placement by xpu-dra-controller against kube-sim (docs/architecture.md
// budgets; not a test): N nodes x 8 NPUs (atlas800t-a2 inventories, live Leases) labelled into
// leaves of 32 nodes, spines of 16 leaves and super-pods of 4 spines; a quarter of the nodes have
// one device unhealthy (they cannot give 8: live capacity). Once every pool is published, gangs of
// G nodes x 8 devices (up to a spine) are created one after another and kept, so capacity shrinks;
// each is timed from its create until a watch sees its status Placed. Budget: 64 nodes in 10,000 at
// QPS 200, p99 <= 2 s.
#include <atomic>
#include <chrono>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/accelerator_gang.h"
#include "api/client/client.h"
#include "api/client/informer.h"
#include "base/mutex.h"
#include "bench/controller_run.h"
#include "bench/measure_support.h"
#include "controller/testing/cluster.h"
#include "e2e/client/child_process.h"
#include "e2e/client/kube_sim_process.h"

namespace {

namespace kc = xpu::api::client;
int Fail(const std::string& what) { return xpu::bench::Fail("gang_measure", what); }

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"nodes", "10000"}, {"gangs", "20"}, {"gang-nodes", "64"}, {"qps", "200"}};
  if (!xpu::bench::ParseValueFlags(argc, argv, flags).ok()) {
    return Fail("usage: gang_measure [--nodes N] [--gangs M] [--gang-nodes G] [--qps Q]");
  }
  const int nodes = std::stoi(flags["nodes"]);
  const int gangs = std::stoi(flags["gangs"]);
  const int gang_nodes = std::stoi(flags["gang-nodes"]);
  const std::string qps = flags["qps"];
  if (nodes < 1 || gangs < 1 || gang_nodes < 1) {
    return Fail("--nodes, --gangs, --gang-nodes: at least 1");
  }
  const xpu::bench::Stopwatch setup;
  auto fleet = xpu::bench::StartSimFleet(
      XPU_KUBE_SIM_BINARY, XPU_SOURCE_DIR, "atlas800t-a2", nodes, {"xpu-dra", "train"},
      [](int i, xpu::api::NodeInventory& inv, std::map<std::string, std::string>& labels) {
        const int leaf = i / 32;
        const int spine = leaf / 16;
        if (i % 4 == 3) inv.status.devices[static_cast<size_t>(i % 8)].health = "Unhealthy";
        labels["topology.xpu.dra.dev/leaf"] = "leaf-" + std::to_string(leaf);
        labels["topology.xpu.dra.dev/spine"] = "spine-" + std::to_string(spine);
        labels["topology.xpu.dra.dev/superpod"] = "pod-" + std::to_string(spine / 4);
      });
  if (!fleet.ok()) return Fail(fleet.status().message());
  auto& sim = fleet->sim;
  auto& client = fleet->client;
  std::cout << "setup: " << nodes << " nodes in " << setup.ElapsedSeconds() << " s\n";

  const xpu::bench::ControllerRun run = {.binary = XPU_CONTROLLER_BINARY,
                                         .kubeconfig = sim->kubeconfig(),
                                         .qps = qps,
                                         .log_level = "debug",
                                         .extra_args = {},
                                         .log_path = sim->dir() + "/controller.log"};
  auto started = xpu::bench::StartAndPublish(run, nodes, std::chrono::seconds(900));
  if (!started.ok()) return Fail(started.status().message());
  xpu::e2e::ChildProcess& controller = *started->process;
  const int port = started->port;
  std::cout << "full publish: " << nodes << " nodes in " << started->publish_seconds << " s at QPS "
            << qps << "\n";
  // Steady state: the syncs that follow the publish (each slice's watch event re-checks its
  // pool) drain first; a gang created before waits behind them in the queue.
  const xpu::bench::Stopwatch drain;
  const std::string depth = "xpu_dra_controller_queue_depth";
  while (xpu::bench::MetricValue(xpu::e2e::HttpGet(port, "/metrics"), depth) > 0 &&
         drain.ElapsedSeconds() < 300) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::cout << "work queue drained " << drain.ElapsedSeconds() << " s after the publish\n";

  // Gangs, one after another; a watch sees each placed.
  kc::TypedInformer<xpu::api::AcceleratorGang> watch(client.get(), kc::AcceleratorGangs());
  xpu::Mutex mu;
  xpu::CondVar cv;
  std::set<std::string> placed;
  auto seen = [&](const auto& g) {
    if (g && g->status.phase == "Placed") {
      xpu::MutexLock lock(mu);
      placed.insert(g->metadata.name);
      cv.NotifyAll();
    }
  };
  watch.AddHandlers({seen, [&](const auto&, const auto& n) { seen(n); }, nullptr});
  watch.Start();
  if (!watch.WaitForSync(std::chrono::seconds(60))) return Fail("gang informer did not sync");
  std::vector<double> latencies;
  for (int i = 0; i < gangs; ++i) {
    const std::string name = "gang-" + std::to_string(i);
    const nlohmann::json gang = {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                                 {"kind", "AcceleratorGang"},
                                 {"metadata", {{"name", name}, {"namespace", "train"}}},
                                 {"spec",
                                  {{"nodes", gang_nodes},
                                   {"devicesPerNode", 8},
                                   {"capabilityClass", "huawei.xpu.dra.dev"},
                                   {"maxTier", "spine"}}}};
    const xpu::bench::Stopwatch placement;
    if (!client->Create(kc::AcceleratorGangs(), "train", gang).ok()) {
      return Fail("create " + name);
    }
    xpu::MutexLock lock(mu);
    if (!cv.WaitFor(mu, std::chrono::seconds(60),
                    [&]() REQUIRES(mu) { return placed.contains(name); })) {
      return Fail(name + " not placed within 60 s:\n" + controller.Log().substr(0, 4000));
    }
    latencies.push_back(placement.ElapsedMs());
  }
  watch.Stop();
  std::cout << "gang placed (" << gangs << " gangs of " << gang_nodes << " x 8 in " << nodes
            << " nodes, created to status written): " << xpu::bench::LatencyText(latencies)
            << " (budget p99 2000 ms)\n";
  // The first gang is the one whose placement computes every node's offer from the kept facts.
  std::cout << "first placement after the controller's start: " << latencies.front()
            << " ms, created to status written (budget 5 s)\n";
  std::cout << "controller resident memory: " << xpu::bench::MemoryText(controller.pid()) << "\n";
  // Where a placement's time goes, from the controller's debug lines.
  std::istringstream log(controller.Log());
  int shown = 0;
  for (std::string line; std::getline(log, line) && shown < 3;) {
    if (line.find("candidates (") != std::string::npos) {
      std::cout << "  " << line.substr(line.find("msg=")) << "\n";
      ++shown;
    }
  }
  controller.Stop();
  return 0;
}
