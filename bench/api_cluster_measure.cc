// A measured run of the API client against kube-sim over HTTPS (budgets: docs/architecture.md):
//   1. list 5,000 ResourceSlices (40,000 devices) with pagination and decode them;
//   2. an informer holding 5,000 NodeInventories: time to sync and resident memory.
// The informers are measured first, in a process that has done nothing else but create the
// objects: one keeping typed NodeInventories (what the controller uses), one keeping JSON.
// Usage: api_cluster_measure [--nodes N] [--kube-sim PATH]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "api/client/client.h"
#include "api/client/informer.h"
#include "api/node_inventory.h"
#include "api/resource.h"
#include "base/heap.h"
#include "bench/api_objects.h"
#include "e2e/client/kube_sim_process.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace kc = xpu::api::client;

// A line of /proc/self/status in kB ("VmRSS", "VmHWM").
long StatusKb(const std::string& key) {  // NOLINT(google-runtime-int)
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Syncs an informer of T over every NodeInventory and prints time and memory; the heap is
// trimmed first so the baseline is what the process holds without it.
template <typename T>
void MeasureInformer(kc::Client& c, const char* what) {
  xpu::TrimHeap();
  const long before_kb = StatusKb("VmRSS");  // NOLINT(google-runtime-int)
  const auto t = Clock::now();
  kc::TypedInformer<T> informer(&c, kc::NodeInventories());
  informer.Start();
  if (!informer.WaitForSync(std::chrono::minutes(5))) {
    std::printf("%s: did not sync in 5 minutes\n", what);
    return;
  }
  const double sync_s = Seconds(t);
  const long after_kb = StatusKb("VmRSS");  // NOLINT(google-runtime-int)
  std::printf(
      "%s over %zu NodeInventories: synced in %.2f s; process RSS %.1f MB (informer %.1f MB)\n",
      what, informer.size(), sync_s, after_kb / 1024.0, (after_kb - before_kb) / 1024.0);
  informer.Stop();
}

int Fail(const xpu::Status& s) {
  std::cerr << "api_cluster_measure: " << s.ToString() << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 5000;
  std::string sim_binary =
      (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "kube-sim").string();
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << "usage: api_cluster_measure [--nodes N] [--kube-sim PATH]\n"
                   "Lists N ResourceSlices of 8 devices and syncs an informer over N\n"
                   "NodeInventories from a kube-sim it starts; prints times and memory.\n";
      return 0;
    }
    if (i + 1 >= argc) {
      std::cerr << "api_cluster_measure: " << flag << " needs a value\n";
      return 2;
    }
    if (flag == "--nodes") {
      nodes = std::stoi(argv[++i]);
    } else if (flag == "--kube-sim") {
      sim_binary = argv[++i];
    } else {
      std::cerr << "api_cluster_measure: unknown flag " << flag << "\n";
      return 2;
    }
  }
  auto sim = xpu::e2e::KubeSimProcess::Start(sim_binary, {"--history", "100000"});
  if (!sim.ok()) return Fail(sim.status());
  auto config = (*sim)->Config();
  if (!config.ok()) return Fail(config.status());
  kc::ClientOptions options;
  options.qps = 0;  // measure the server and the client, not the limiter
  auto client = kc::Client::Create(*config, options);
  if (!client.ok()) return Fail(client.status());
  kc::Client& c = **client;

  if (auto example =
          xpu::api::FromJson<xpu::api::NodeInventory>(xpu::bench::ExampleInventory("node-0"));
      !example.ok() || !xpu::api::ValidateNodeInventory(*example).ok()) {
    return Fail(example.ok() ? xpu::api::ValidateNodeInventory(*example) : example.status());
  }
  auto t = Clock::now();
  for (int i = 0; i < nodes; ++i) {
    nlohmann::json inv = xpu::bench::ExampleInventory("node-" + std::to_string(i));
    auto made = c.Create(kc::NodeInventories(), "", inv);
    if (!made.ok()) return Fail(made.status());
    (*made)["status"] = inv["status"];
    if (auto s = c.UpdateStatus(kc::NodeInventories(), "", *made); !s.ok()) return Fail(s.status());
  }
  std::printf("create %d NodeInventories (with status, %zu bytes of JSON each): %.2f s\n", nodes,
              xpu::bench::ExampleInventory("node-0").dump().size(), Seconds(t));

  MeasureInformer<xpu::api::NodeInventory>(c, "typed NodeInventory informer");
  MeasureInformer<nlohmann::json>(c, "JSON informer");

  t = Clock::now();
  for (int i = 0; i < nodes; ++i) {
    const std::string node = "node-" + std::to_string(i);
    if (auto s = c.Create(kc::ResourceSlices(), "", xpu::bench::ExampleSlice(node, 8)); !s.ok()) {
      return Fail(s.status());
    }
  }
  std::printf("create %d ResourceSlices (%d devices): %.2f s\n", nodes, nodes * 8, Seconds(t));

  t = Clock::now();
  auto list = c.ListAll(kc::ResourceSlices(), "", {});
  if (!list.ok()) return Fail(list.status());
  const double list_s = Seconds(t);
  t = Clock::now();
  size_t devices = 0;
  for (const auto& item : list->items) {
    auto slice = xpu::api::FromJson<xpu::api::resource::ResourceSlice>(item);
    if (!slice.ok()) return Fail(slice.status());
    devices += slice->spec.devices.size();
  }
  std::printf("list %zu slices (%zu devices) in pages of 500 over HTTPS: %.3f s; decode: %.3f s\n",
              list->items.size(), devices, list_s, Seconds(t));

  return 0;
}
