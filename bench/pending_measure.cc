// A measured run of /autoscaler/pending (budget: <= 200 ms at 10,000 nodes with 1,000 pending
// claims; not a test): N kube-sim nodes (hgx-h200, 8 GPUs each, live Leases), M unallocated
// claims of which nine in ten ask for more GPUs than a node has (9 to 16: pending) and one in
// ten for 4 (served), and the controller started with two node groups (hgx-h200, atlas800t-a3).
// Once every pool is published and the answer lists the pending claims, GET /autoscaler/pending
// is timed --requests times; then the controller's peak VmHWM.
//
//   pending_measure [--nodes 10000] [--claims 1000] [--requests 20] [--qps 500]
//                   [--controller PATH]   (another build of xpu-dra-controller, e.g. an older one)
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api/client/client.h"
#include "api/testing/claim_json.h"
#include "bench/controller_run.h"
#include "bench/measure_support.h"
#include "e2e/client/child_process.h"
#include "e2e/client/kube_sim_process.h"

namespace {

namespace kc = xpu::api::client;

int Fail(const std::string& what) { return xpu::bench::Fail("pending_measure", what); }

// Claim i: 4 GPUs for every tenth, else 9 to 16 (more than any node has).
int GpusOf(int i) { return i % 10 == 0 ? 4 : 9 + i % 8; }

// The body of a 200 reply, parsed; discarded JSON otherwise.
nlohmann::json Body(const std::string& reply) {
  const size_t body = reply.find("\r\n\r\n");
  if (!reply.starts_with("HTTP/1.1 200") || body == std::string::npos) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  return nlohmann::json::parse(reply.substr(body + 4), nullptr, false);
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"nodes", "10000"},
                                              {"claims", "1000"},
                                              {"requests", "20"},
                                              {"qps", "500"},
                                              {"controller", XPU_CONTROLLER_BINARY}};
  if (!xpu::bench::ParseValueFlags(argc, argv, flags).ok()) {
    return Fail(
        "usage: pending_measure [--nodes N] [--claims M] [--requests R] [--qps Q] "
        "[--controller PATH]");
  }
  std::cout << std::unitbuf;  // each line as it comes: an old build may take minutes per answer
  const int nodes = std::stoi(flags["nodes"]);
  const int claims = std::stoi(flags["claims"]);
  const int requests = std::stoi(flags["requests"]);
  const std::string qps = flags["qps"];
  const xpu::bench::Stopwatch setup;
  auto fleet = xpu::bench::StartSimFleet(XPU_KUBE_SIM_BINARY, XPU_SOURCE_DIR, "hgx-h200", nodes,
                                         {"xpu-dra", "default"});
  if (!fleet.ok()) return Fail(fleet.status().message());
  auto& sim = fleet->sim;
  int expected = 0;
  for (int i = 0; i < claims; ++i) {
    auto created =
        fleet->client->Create(kc::ResourceClaims(), "default",
                              xpu::api::testing::ClaimJson("claim-" + std::to_string(i), "gpus",
                                                           "nvidia.xpu.dra.dev", GpusOf(i)));
    if (!created.ok()) {
      return Fail("create claim-" + std::to_string(i) + ": " + created.status().message());
    }
    expected += GpusOf(i) > 8 ? 1 : 0;
  }
  const std::string groups = sim->dir() + "/node-groups";
  std::filesystem::create_directories(groups);
  std::ofstream(groups + "/h200.yaml") << "name: h200\nmodel: hgx-h200\nmaxSize: 100\n";
  std::ofstream(groups + "/a3.yaml") << "name: a3\nmodel: atlas800t-a3\nmaxSize: 100\n";
  std::cout << "setup: " << nodes << " nodes, " << claims << " claims (" << expected
            << " that no node serves) in " << setup.ElapsedSeconds() << " s\n";

  const xpu::bench::ControllerRun run = {.binary = flags["controller"],
                                         .kubeconfig = sim->kubeconfig(),
                                         .qps = qps,
                                         .extra_args = {"--node-groups", groups},
                                         .log_path = sim->dir() + "/controller.log"};
  auto controller = xpu::bench::StartAndPublish(run, nodes, std::chrono::seconds(900));
  if (!controller.ok()) return Fail(controller.status().message());
  const int port = controller->port;
  std::cout << "full publish: " << controller->publish_seconds << " s at QPS " << qps << "\n";
  // The answer is complete once it names every live node and every pending claim.
  const std::string all_live = "none of the " + std::to_string(nodes) + " live nodes can serve it";
  std::vector<double> times;
  for (int tries = 0;; ++tries) {
    const xpu::bench::Stopwatch request;
    const nlohmann::json body = Body(xpu::e2e::HttpGet(port, "/autoscaler/pending"));
    const double ms = request.ElapsedMs();
    if (body.is_object() && static_cast<int>(body["pending"].size()) == expected &&
        (expected == 0 || body["pending"][0]["reason"] == all_live)) {
      times.push_back(ms);
      std::cout << "first complete answer: " << ms << " ms, " << body.dump().size() << " bytes\n";
      break;
    }
    if (tries > 600) return Fail("no complete answer: " + body.dump().substr(0, 400));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int i = 1; i < requests; ++i) {
    const xpu::bench::Stopwatch request;
    const std::string reply = xpu::e2e::HttpGet(port, "/autoscaler/pending");
    times.push_back(request.ElapsedMs());
    if (!reply.starts_with("HTTP/1.1 200")) return Fail("GET /autoscaler/pending: " + reply);
  }
  std::cout << "GET /autoscaler/pending (" << times.size() << " requests, " << nodes << " nodes, "
            << claims << " claims, " << expected << " pending): " << xpu::bench::LatencyText(times)
            << " (budget 200 ms)\n";
  std::cout << "controller resident memory: " << xpu::bench::MemoryText(controller->process->pid())
            << "\n";
  controller->process->Stop();
  return 0;
}
