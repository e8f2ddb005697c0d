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
  const xpu::bench::Stopwatch setup;
  auto fleet = xpu::bench::StartSimFleet(XPU_KUBE_SIM_BINARY, XPU_SOURCE_DIR, "hgx-h200", nodes,
                                         {"xpu-dra"});
  if (!fleet.ok()) return Fail(fleet.status().message());
  auto& sim = fleet->sim;
  auto& client = fleet->client;
  auto inventory = ct::FixtureInventory(XPU_SOURCE_DIR, "hgx-h200", "x");
  if (!inventory.ok()) return Fail(inventory.status().message());
  std::cout << "setup: " << nodes << " nodes in " << setup.ElapsedSeconds() << " s\n";

  const xpu::bench::ControllerRun run = {.binary = XPU_CONTROLLER_BINARY,
                                         .kubeconfig = sim->kubeconfig(),
                                         .qps = qps,
                                         .extra_args = {"--claim-debounce", "100ms"},
                                         .log_path = sim->dir() + "/controller.log"};
  // 600 s, or more for a fleet past 30,000 nodes on a loaded machine (50 pools a second).
  auto controller =
      xpu::bench::StartAndPublish(run, nodes, std::chrono::seconds(std::max(600, nodes / 50)));
  if (!controller.ok()) return Fail(controller.status().message());
  const pid_t pid = controller->process->pid();
  std::cout << "full publish: " << nodes << " nodes x 8 devices in " << controller->publish_seconds
            << " s at QPS " << qps << " (budget 60 s for 5,000 at 200)\n";
  std::cout << "controller resident memory after publish: " << xpu::bench::MemoryText(pid)
            << " (budget 300 MB for VmHWM)\n";

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
    const xpu::bench::Stopwatch change;
    if (!ct::PutInventory(*client, inv).ok()) return Fail("inventory write " + name);
    xpu::MutexLock lock(mu);
    if (!cv.WaitFor(mu, std::chrono::seconds(30),
                    [&]() REQUIRES(mu) { return tainted_pool == name; })) {
      return Fail("slice of " + name + " not updated within 30 s");
    }
    latencies.push_back(change.ElapsedMs());
  }
  slices.Stop();
  std::cout << "inventory change -> slice updated (" << changes
            << " changes): " << xpu::bench::LatencyText(latencies) << " (budget p99 1000 ms)\n";
  std::cout << "controller resident memory at the end: " << xpu::bench::MemoryText(pid) << "\n";
  controller->process->Stop();
  return 0;
}
