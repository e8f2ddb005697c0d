// What the controller's measured runs (controller_measure, gang_measure, pending_measure,
// upstream_publish_measure) share: one series of a /metrics page, the metrics port the controller
// logs, waiting for a full publish, and starting the controller and waiting for its publish.
#ifndef XPU_BENCH_CONTROLLER_RUN_H_
#define XPU_BENCH_CONTROLLER_RUN_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "base/status.h"
#include "bench/measure_support.h"
#include "controller/testing/cluster.h"
#include "e2e/client/child_process.h"
#include "e2e/client/kube_sim_process.h"

namespace xpu::bench {

// "--name value" pairs into `values` (name -> value, defaults already in); an unknown name or a
// name without a value is an error naming it.
inline Status ParseValueFlags(int argc, char** argv, std::map<std::string, std::string>& values) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (!flag.starts_with("--") || !values.contains(flag.substr(2)) || i + 1 >= argc) {
      return InvalidArgumentError("unknown flag or missing value: " + flag);
    }
    values[flag.substr(2)] = argv[i + 1];
  }
  return OkStatus();
}

// The value of `series` on a /metrics page; 0 when absent.
inline double MetricValue(const std::string& page, const std::string& series) {
  const auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(page.substr(at + series.size() + 2));
}

// The port of the controller's metrics endpoint, from its log ("(port N)"); 0 when it has not
// said so within `timeout`.
inline int MetricsPort(const e2e::ChildProcess& controller, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    const std::string log = controller.Log();
    if (auto at = log.find("(port "); at != std::string::npos) return std::stoi(log.substr(at + 6));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

// Waits until the controller has written `pools` pools whole (every slice of each: a node has
// two in groups mode); the number written.
inline double WaitPublished(int port, int pools, std::chrono::seconds timeout) {
  const std::string published = "xpu_dra_controller_pools_published";
  const auto until = std::chrono::steady_clock::now() + timeout;
  double done = 0;
  while (done < pools && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    done = MetricValue(e2e::HttpGet(port, "/metrics"), published);
  }
  return done;
}

// How a measured run starts xpu-dra-controller: `binary` against `kubeconfig`, its Leases in
// xpu-dra, --qps and --burst `qps`, no leader election, metrics on a free port, logging at
// `log_level`, then `extra_args`; its output to `log_path`.
struct ControllerRun {
  std::string binary;
  std::string kubeconfig;
  std::string qps;
  std::string log_level = "info";
  std::vector<std::string> extra_args;
  std::string log_path;
};

// A controller that has published: the process, its metrics port, and the seconds from its start
// until every pool's slices were created.
struct PublishedController {
  std::unique_ptr<e2e::ChildProcess> process;
  int port = 0;
  double publish_seconds = 0;
};

// Starts the controller as `run` says and waits up to `timeout` until it has written `pools`
// pools whole. Errors: it did not start, logged no metrics port within 30 s (the log), or wrote
// fewer pools in time (the end of the log); the process is killed then.
inline StatusOr<PublishedController> StartAndPublish(const ControllerRun& run, int pools,
                                                     std::chrono::seconds timeout) {
  std::vector<std::string> args = {
      "--kubeconfig",   run.kubeconfig, "--namespace", "xpu-dra",        "--qps",
      run.qps,          "--burst",      run.qps,       "--leader-elect", "false",
      "--metrics-addr", "127.0.0.1:0",  "--log-level", run.log_level};
  args.insert(args.end(), run.extra_args.begin(), run.extra_args.end());
  const Stopwatch since_start;
  PublishedController out;
  ASSIGN_OR_RETURN(out.process, e2e::ChildProcess::Start(run.binary, args, run.log_path));
  out.port = MetricsPort(*out.process, std::chrono::seconds(30));
  if (out.port == 0) return InternalError("no metrics port in the log:\n" + out.process->Log());
  const double done = WaitPublished(out.port, pools, timeout);
  out.publish_seconds = since_start.ElapsedSeconds();
  if (done < pools) {
    const std::string log = out.process->Log();
    return InternalError("only " + std::to_string(static_cast<int64_t>(done)) +
                         " pools published; the controller's log ends:\n" +
                         log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
  }
  return out;
}

// kube-sim with a fleet: nodes "node-<i>" with the fixture host's inventory and live plugin
// Leases, written by 4 threads; `shape` may change each node's inventory and labels first.
struct SimFleet {
  std::unique_ptr<e2e::KubeSimProcess> sim;
  std::unique_ptr<api::client::Client> client;
};
using NodeShaper =
    std::function<void(int node, api::NodeInventory&, std::map<std::string, std::string>&)>;

inline StatusOr<SimFleet> StartSimFleet(const std::string& sim_binary,
                                        const std::string& source_dir, const std::string& host,
                                        int nodes, const std::vector<std::string>& namespaces,
                                        const NodeShaper& shape = nullptr) {
  namespace ct = controller::testing;
  SimFleet fleet;
  // 20,000 events of history: every watch resumes and every paged list completes within it, and
  // kube-sim keeps each event's objects whole (at 65,000 nodes 200,000 events took most of the
  // machine's memory).
  ASSIGN_OR_RETURN(fleet.sim, e2e::KubeSimProcess::Start(sim_binary, {"--history", "20000"}));
  api::client::ClientOptions unlimited;
  unlimited.qps = 0;
  ASSIGN_OR_RETURN(fleet.client, ct::Connect(*fleet.sim, unlimited));
  for (const std::string& ns : namespaces) RETURN_IF_ERROR(ct::MakeNamespace(*fleet.client, ns));
  ASSIGN_OR_RETURN(const api::NodeInventory inventory, ct::FixtureInventory(source_dir, host, "x"));
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      for (int i = next++; i < nodes; i = next++) {
        const std::string name = "node-" + std::to_string(i);
        api::NodeInventory inv = inventory;
        inv.metadata.name = name;
        std::map<std::string, std::string> labels = {{"kubernetes.io/hostname", name}};
        if (shape) shape(i, inv, labels);
        if (!ct::MakeNode(*fleet.client, name, labels).ok() ||
            !ct::PutInventory(*fleet.client, inv).ok() ||
            !ct::RenewPluginLease(*fleet.client, "xpu-dra", name, 3600).ok()) {
          ++errors;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  if (errors > 0) return InternalError(std::to_string(errors) + " setup writes failed");
  return fleet;
}

}  // namespace xpu::bench

#endif  // XPU_BENCH_CONTROLLER_RUN_H_
