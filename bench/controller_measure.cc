// A measured run of xpu-dra-controller against kube-sim (docs/architecture.md budgets; not a test):
//   - full publish: N nodes x 8 devices (hgx-h200 inventories, live Leases) from the controller's
//     start until every pool's slice is created, at --qps (budget: 5,000 nodes in 60 s at QPS 200)
//   - peak resident memory of the controller (budget 300 MB)
//   - inventory change -> slice updated (budget p99 1 s): a device turned unhealthy, timed until
//     a watch sees the slice carry the taint
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

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
namespace ct = xpu::controller::testing;
using Clock = std::chrono::steady_clock;
using xpu::bench::Ms;
using xpu::bench::Percentile;
using xpu::bench::StatusMb;

int Fail(const std::string& what) { return xpu::bench::Fail("controller_measure", what); }

// What the measurement's own watch keeps of a slice: its pool, and whether its gpu-0 carries a
// taint. A decoded ResourceSlice per node would take gigabytes of the machine at 65,000 nodes.
struct SliceTaint {
  std::string pool;
  bool gpu0_tainted = false;
};

}  // namespace

namespace xpu::api {
template <>
StatusOr<SliceTaint> FromJson<SliceTaint>(const nlohmann::json& json) {
  SliceTaint out;
  const nlohmann::json spec = json.value("spec", nlohmann::json::object());
  out.pool = spec.value("pool", nlohmann::json::object()).value("name", "");
  for (const nlohmann::json& d : spec.value("devices", nlohmann::json::array())) {
    if (d.value("name", "") == "gpu-0") {
      out.gpu0_tainted = !d.value("taints", nlohmann::json::array()).empty();
    }
  }
  return out;
}
}  // namespace xpu::api

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"nodes", "5000"}, {"changes", "200"}, {"qps", "200"}};
  if (!xpu::bench::ParseValueFlags(argc, argv, flags).ok()) {
    return Fail("usage: controller_measure [--nodes N] [--changes M] [--qps Q]");
  }
  const int nodes = std::stoi(flags["nodes"]);
  const int changes = std::stoi(flags["changes"]);
  const std::string qps = flags["qps"];
  // The cluster: nodes with inventories and live plugin Leases.
  const auto setup_start = Clock::now();
  auto fleet = xpu::bench::StartSimFleet(XPU_KUBE_SIM_BINARY, XPU_SOURCE_DIR, "hgx-h200", nodes,
                                         {"xpu-dra"});
  if (!fleet.ok()) return Fail(fleet.status().message());
  auto& sim = fleet->sim;
  auto& client = fleet->client;
  auto inventory = ct::FixtureInventory(XPU_SOURCE_DIR, "hgx-h200", "x");
  if (!inventory.ok()) return Fail(inventory.status().message());
  std::cout << "setup: " << nodes << " nodes in " << Ms(Clock::now() - setup_start) / 1000
            << " s\n";

  const auto start = Clock::now();
  auto controller = xpu::e2e::ChildProcess::Start(
      XPU_CONTROLLER_BINARY,
      {"--kubeconfig", sim->kubeconfig(), "--namespace", "xpu-dra", "--qps", qps, "--burst", qps,
       "--leader-elect", "false", "--metrics-addr", "127.0.0.1:0", "--log-level", "info",
       "--claim-debounce", "100ms"},
      sim->dir() + "/controller.log");
  if (!controller.ok()) return Fail(controller.status().message());
  const int port = xpu::bench::MetricsPort(**controller, std::chrono::seconds(30));
  if (port == 0) return Fail("no metrics port in the log:\n" + (*controller)->Log());
  // 600 s, or more for a fleet past 30,000 nodes on a loaded machine (50 pools a second).
  const double done =
      xpu::bench::WaitPublished(port, nodes, std::chrono::seconds(std::max(600, nodes / 50)));
  const double publish_s = Ms(Clock::now() - start) / 1000;
  if (done < nodes) return Fail("only " + std::to_string(done) + " pools published");
  std::cout << "full publish: " << nodes << " nodes x 8 devices in " << publish_s << " s at QPS "
            << qps << " (budget 60 s for 5,000 at 200)\n";
  std::cout << "controller resident memory after publish: VmRSS "
            << StatusMb((*controller)->pid(), "VmRSS") << " MB, peak VmHWM "
            << StatusMb((*controller)->pid(), "VmHWM") << " MB (budget 300 MB)\n";

  // Inventory change -> slice updated, seen through a watch.
  kc::InformerOptions by_driver;
  by_driver.field_selector = "spec.driver=xpu.dra.dev";
  kc::TypedInformer<SliceTaint> slices(client.get(), kc::ResourceSlices(), by_driver);
  xpu::Mutex mu;
  xpu::CondVar cv;
  std::string tainted_pool;
  slices.AddHandlers({nullptr,
                      [&](const auto&, const auto& n) {
                        if (n->gpu0_tainted) {
                          xpu::MutexLock lock(mu);
                          tainted_pool = n->pool;
                          cv.NotifyAll();
                        }
                      },
                      nullptr});
  slices.Start();
  if (!slices.WaitForSync(std::chrono::seconds(600))) return Fail("slice informer did not sync");
  std::vector<double> latencies;
  for (int i = 0; i < changes; ++i) {
    const std::string name = "node-" + std::to_string((i * 7919) % nodes);
    xpu::api::NodeInventory inv = *inventory;
    inv.metadata.name = name;
    inv.status.devices[0].health = "Unhealthy";
    const auto t0 = Clock::now();
    if (!ct::PutInventory(*client, inv).ok()) return Fail("inventory write " + name);
    xpu::MutexLock lock(mu);
    if (!cv.WaitFor(mu, std::chrono::seconds(30),
                    [&]() REQUIRES(mu) { return tainted_pool == name; })) {
      return Fail("slice of " + name + " not updated within 30 s");
    }
    latencies.push_back(Ms(Clock::now() - t0));
  }
  slices.Stop();
  std::cout << "inventory change -> slice updated (" << changes << " changes): p50 "
            << Percentile(latencies, 0.5) << " ms, p99 " << Percentile(latencies, 0.99)
            << " ms, max " << Percentile(latencies, 1.0) << " ms (budget p99 1000 ms)\n";
  std::cout << "controller peak VmHWM " << StatusMb((*controller)->pid(), "VmHWM") << " MB\n";
  (*controller)->Stop();
  return 0;
}
