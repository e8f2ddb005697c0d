// A measured run of gang placement by xpu-dra-controller against kube-sim (DESIGN.md budgets; not
// a test): N nodes x 8 NPUs (atlas800t-a2 inventories, live Leases) labelled into leaves of 32
// nodes, spines of 16 leaves and super-pods of 4 spines; a quarter of the nodes have one device
// unhealthy (they cannot give 8: live capacity). Once every pool is published, gangs of G nodes
// x 8 devices (up to a spine) are created one after another and kept, so capacity shrinks; each
// is timed from its create until a watch sees its status Placed. Budget: 64 nodes in 10,000 at
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
#include "bench/measure_support.h"
#include "controller/testing/cluster.h"
#include "e2e/client/child_process.h"
#include "e2e/client/kube_sim_process.h"

namespace {

namespace kc = xpu::api::client;
namespace ct = xpu::controller::testing;
using Clock = std::chrono::steady_clock;
using xpu::bench::Ms;
using xpu::bench::Percentile;
using xpu::bench::StatusMb;

int Fail(const std::string& what) { return xpu::bench::Fail("gang_measure", what); }

double MetricValue(const std::string& page, const std::string& series) {
  const auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(page.substr(at + series.size() + 2));
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 10000;
  int gangs = 20;
  int gang_nodes = 64;
  std::string qps = "200";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--nodes") {
      nodes = std::stoi(argv[i + 1]);
    } else if (flag == "--gangs") {
      gangs = std::stoi(argv[i + 1]);
    } else if (flag == "--gang-nodes") {
      gang_nodes = std::stoi(argv[i + 1]);
    } else if (flag == "--qps") {
      qps = argv[i + 1];
    } else {
      return Fail("usage: gang_measure [--nodes N] [--gangs M] [--gang-nodes G] [--qps Q]");
    }
  }
  auto sim = xpu::e2e::KubeSimProcess::Start(XPU_KUBE_SIM_BINARY, {"--history", "200000"});
  if (!sim.ok()) return Fail(sim.status().message());
  kc::ClientOptions unlimited;
  unlimited.qps = 0;
  auto client = ct::Connect(**sim, unlimited);
  if (!client.ok()) return Fail(client.status().message());
  if (!ct::MakeNamespace(**client, "xpu-dra").ok()) return Fail("namespace");
  if (!ct::MakeNamespace(**client, "train").ok()) return Fail("namespace");
  auto inventory = ct::FixtureInventory(XPU_SOURCE_DIR, "atlas800t-a2", "x");
  if (!inventory.ok()) return Fail(inventory.status().message());

  const auto setup_start = Clock::now();
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      for (int i = next++; i < nodes; i = next++) {
        const std::string name = "node-" + std::to_string(i);
        const int leaf = i / 32;
        const int spine = leaf / 16;
        xpu::api::NodeInventory inv = *inventory;
        inv.metadata.name = name;
        if (i % 4 == 3) inv.status.devices[static_cast<size_t>(i % 8)].health = "Unhealthy";
        if (!ct::MakeNode(**client, name,
                          {{"kubernetes.io/hostname", name},
                           {"topology.xpu.dra.dev/leaf", "leaf-" + std::to_string(leaf)},
                           {"topology.xpu.dra.dev/spine", "spine-" + std::to_string(spine)},
                           {"topology.xpu.dra.dev/superpod", "pod-" + std::to_string(spine / 4)}})
                 .ok() ||
            !ct::PutInventory(**client, inv).ok() ||
            !ct::RenewPluginLease(**client, "xpu-dra", name, 3600).ok()) {
          ++errors;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  if (errors > 0) return Fail(std::to_string(errors) + " setup writes failed");
  std::cout << "setup: " << nodes << " nodes in " << Ms(Clock::now() - setup_start) / 1000
            << " s\n";

  const auto start = Clock::now();
  auto controller = xpu::e2e::ChildProcess::Start(
      XPU_CONTROLLER_BINARY,
      {"--kubeconfig", (*sim)->kubeconfig(), "--namespace", "xpu-dra", "--qps", qps, "--burst", qps,
       "--leader-elect", "false", "--metrics-addr", "127.0.0.1:0", "--log-level", "debug"},
      (*sim)->dir() + "/controller.log");
  if (!controller.ok()) return Fail(controller.status().message());
  int port = 0;
  while (port == 0 && Clock::now() - start < std::chrono::seconds(30)) {
    const std::string log = (*controller)->Log();
    if (auto at = log.find("(port "); at != std::string::npos) port = std::stoi(log.substr(at + 6));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (port == 0) return Fail("no metrics port in the log:\n" + (*controller)->Log());
  const std::string created = R"(xpu_dra_controller_slice_writes_total{verb="create",result="ok"})";
  double done = 0;
  while (done < nodes && Clock::now() - start < std::chrono::seconds(900)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    done = MetricValue(xpu::e2e::HttpGet(port, "/metrics"), created);
  }
  if (done < nodes) return Fail("only " + std::to_string(done) + " pools published");
  std::cout << "full publish: " << nodes << " nodes in " << Ms(Clock::now() - start) / 1000
            << " s at QPS " << qps << "\n";
  // Steady state: the syncs that follow the publish (each slice's watch event re-checks its
  // pool) drain first; a gang created before waits behind them in the queue.
  const auto drain_start = Clock::now();
  const std::string depth = "xpu_dra_controller_queue_depth";
  while (MetricValue(xpu::e2e::HttpGet(port, "/metrics"), depth) > 0 &&
         Clock::now() - drain_start < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::cout << "work queue drained " << Ms(Clock::now() - drain_start) / 1000
            << " s after the publish\n";

  // Gangs, one after another; a watch sees each placed.
  kc::TypedInformer<xpu::api::AcceleratorGang> watch(client->get(), kc::AcceleratorGangs());
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
    const auto t0 = Clock::now();
    if (!(*client)->Create(kc::AcceleratorGangs(), "train", gang).ok()) {
      return Fail("create " + name);
    }
    xpu::MutexLock lock(mu);
    if (!cv.WaitFor(mu, std::chrono::seconds(60),
                    [&]() REQUIRES(mu) { return placed.contains(name); })) {
      return Fail(name + " not placed within 60 s:\n" + (*controller)->Log().substr(0, 4000));
    }
    latencies.push_back(Ms(Clock::now() - t0));
  }
  watch.Stop();
  std::cout << "gang placed (" << gangs << " gangs of " << gang_nodes << " x 8 in " << nodes
            << " nodes, created to status written): p50 " << Percentile(latencies, 0.5)
            << " ms, p99 " << Percentile(latencies, 0.99) << " ms, max "
            << Percentile(latencies, 1.0) << " ms (budget p99 2000 ms)\n";
  std::cout << "controller peak VmHWM " << StatusMb((*controller)->pid(), "VmHWM") << " MB\n";
  // Where a placement's time goes, from the controller's debug lines.
  std::istringstream log((*controller)->Log());
  int shown = 0;
  for (std::string line; std::getline(log, line) && shown < 3;) {
    if (line.find("candidates (") != std::string::npos) {
      std::cout << "  " << line.substr(line.find("msg=")) << "\n";
      ++shown;
    }
  }
  (*controller)->Stop();
  return 0;
}
