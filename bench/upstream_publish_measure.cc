// The publish of controller_measure against the real control plane (not a test): the upstream
// kube-apiserver and etcd that scripts/cluster starts (Kubernetes 1.37.2 by default,
// XPU_UPSTREAM_VERSION picks another pin), with the NodeInventory CRD applied from deploy/crds/.
//   - N nodes x 8 devices (hgx-h200 inventories, live plugin Leases) written first, by --writers
//     threads, unthrottled
//   - xpu-dra-controller started (the admin kubeconfig, --qps/--burst Q), timed until every
//     pool's slice is created
//   - kube-apiserver's and etcd's resident memory from /proc (VmRSS, and VmHWM: since their start
//     and, reset after the setup, during the publish), and the controller's
//   - the server's own apiserver_request_duration_seconds for the publish window (its /metrics,
//     read before and after through kubectl get --raw): count, sum, and p50/p99 estimated from the
//     buckets by linear interpolation, per verb and resource; etcd_request_duration_seconds as the
//     server sees etcd; apiserver_request_total's 429s and APF rejections.
// --server kube-sim runs the same publish against kube-sim (its memory; it has no such metrics),
// --mode publishes in that mode (default: the controller's default for the server's version),
// --controller runs another controller binary (a build of another tree).
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/client/client.h"
#include "base/mutex.h"
#include "bench/controller_run.h"
#include "bench/measure_support.h"
#include "controller/testing/cluster.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"

namespace {

namespace kc = xpu::api::client;
namespace ct = xpu::controller::testing;
using Clock = std::chrono::steady_clock;

int Fail(const std::string& what) { return xpu::bench::Fail("upstream_publish_measure", what); }

// One histogram of a /metrics page, summed over the label values not in its key: cumulative
// bucket counts by upper bound (+Inf included), count and sum.
struct Histogram {
  std::map<double, double> buckets;
  double count = 0;
  double sum = 0;
};
using Histograms = std::map<std::string, Histogram>;  // key -> histogram

// What a /metrics page says that this run reports.
struct ServerMetrics {
  Histograms requests;  // apiserver_request_duration_seconds by "VERB resource[/subresource]"
  Histograms etcd;      // etcd_request_duration_seconds by "operation type"
  std::map<std::string, double> watches;  // apiserver_longrunning_requests{verb="WATCH"}
  double throttled = 0;                   // apiserver_request_total{code="429"}
  double rejected = 0;                    // apiserver_flowcontrol_rejected_requests_total
};

// The labels of a sample line ("name{a="x",b="y"} 1") into `labels`; the value after them.
double ParseSample(const std::string& line, std::map<std::string, std::string>& labels) {
  const auto open = line.find('{');
  const auto close = line.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    return std::stod(line.substr(line.find(' ') + 1));
  }
  size_t at = open + 1;
  while (at < close) {
    const auto eq = line.find("=\"", at);
    if (eq == std::string::npos || eq > close) break;
    const std::string key = line.substr(at, eq - at);
    std::string value;
    size_t v = eq + 2;
    for (; v < close && line[v] != '"'; ++v) {
      if (line[v] == '\\' && v + 1 < close) ++v;
      value += line[v];
    }
    labels[key] = value;
    at = v + 1;
    if (at < close && line[at] == ',') ++at;
  }
  return std::stod(line.substr(close + 2));
}

double Bound(const std::string& le) {
  return le == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(le);
}

// Adds one sample of histogram `base` (its _bucket, _count or _sum line) to `into[key]`.
void AddHistogramSample(const std::string& name, const std::string& base, const std::string& key,
                        const std::map<std::string, std::string>& labels, double value,
                        Histograms& into) {
  Histogram& h = into[key];
  if (name == base + "_bucket") {
    h.buckets[Bound(labels.at("le"))] += value;
  } else if (name == base + "_count") {
    h.count += value;
  } else if (name == base + "_sum") {
    h.sum += value;
  }
}

ServerMetrics ParseMetrics(const std::string& page) {
  ServerMetrics out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    const bool requests = name.starts_with("apiserver_request_duration_seconds_");
    const bool etcd = name.starts_with("etcd_request_duration_seconds_");
    const bool total = name == "apiserver_request_total";
    const bool rejected = name == "apiserver_flowcontrol_rejected_requests_total";
    const bool longrunning = name == "apiserver_longrunning_requests";
    if (!requests && !etcd && !total && !rejected && !longrunning) continue;
    std::map<std::string, std::string> labels;
    const double value = ParseSample(line, labels);
    if (requests) {
      std::string key = labels["verb"] + " " + labels["resource"];
      if (!labels["subresource"].empty()) key += "/" + labels["subresource"];
      if (labels["resource"].empty()) continue;  // non-resource URLs (/metrics, /readyz)
      AddHistogramSample(name, "apiserver_request_duration_seconds", key, labels, value,
                         out.requests);
    } else if (etcd) {
      AddHistogramSample(name, "etcd_request_duration_seconds",
                         labels["operation"] + " " + labels["resource"], labels, value, out.etcd);
    } else if (total && labels["code"] == "429") {
      out.throttled += value;
    } else if (rejected) {
      out.rejected += value;
    } else if (longrunning && labels["verb"] == "WATCH" && value > 0) {
      out.watches[labels["resource"]] += value;
    }
  }
  return out;
}

// after - before, histogram by histogram (series that appeared in between count from zero).
Histograms Delta(const Histograms& before, const Histograms& after) {
  Histograms out;
  for (const auto& [key, h] : after) {
    Histogram d = h;
    if (auto it = before.find(key); it != before.end()) {
      d.count -= it->second.count;
      d.sum -= it->second.sum;
      for (auto& [le, n] : d.buckets) {
        if (auto b = it->second.buckets.find(le); b != it->second.buckets.end()) n -= b->second;
      }
    }
    if (d.count > 0) out[key] = d;
  }
  return out;
}

// The q-quantile (0..1) in seconds, as Prometheus' histogram_quantile estimates it: linear within
// the bucket that holds the rank; the highest finite bound when the rank is in +Inf's.
double Quantile(const Histogram& h, double q) {
  if (h.count <= 0 || h.buckets.empty()) return 0;
  const double rank = q * h.count;
  double lower = 0;
  double below = 0;
  for (const auto& [le, cum] : h.buckets) {
    if (cum >= rank) {
      if (le == std::numeric_limits<double>::infinity()) return lower;
      if (cum == below) return le;
      return lower + (le - lower) * (rank - below) / (cum - below);
    }
    lower = le;
    below = cum;
  }
  return lower;
}

void PrintHistograms(const std::string& metric, const Histograms& histograms, size_t top) {
  std::vector<std::pair<std::string, Histogram>> rows(histograms.begin(), histograms.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  if (rows.size() > top) rows.resize(top);
  std::cout << metric << " during the publish (by count; p50/p99 estimated from buckets):\n";
  for (const auto& [key, h] : rows) {
    std::cout << "  " << std::left << std::setw(44) << key << std::right << " count "
              << std::setw(7) << h.count << "  sum " << std::fixed << std::setprecision(2)
              << std::setw(8) << h.sum << " s  mean " << std::setw(7) << 1000 * h.sum / h.count
              << " ms  p50 " << std::setw(7) << 1000 * Quantile(h, 0.5) << " ms  p99 "
              << std::setw(7) << 1000 * Quantile(h, 0.99) << " ms\n"
              << std::defaultfloat << std::setprecision(6);
  }
}

// The server's processes: the pids scripts/cluster recorded in DIR/pids ("name pid" lines), or
// the kube-sim child of this process whose command line names DIR.
std::map<std::string, pid_t> ServerPids(const xpu::e2e::Cluster& cluster) {
  std::map<std::string, pid_t> out;
  if (cluster.kind() == xpu::e2e::ClusterKind::kUpstream) {
    std::ifstream in(cluster.dir() + "/pids");
    std::string name;
    pid_t pid = 0;
    while (in >> name >> pid) {
      if (name == "kube-apiserver" || name == "etcd") out[name] = pid;
    }
    return out;
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    if (cmdline.find(cluster.dir() + "/kubeconfig") != std::string::npos &&
        cmdline.find("kube-sim") != std::string::npos) {
      out["kube-sim"] = std::stoi(pid);
    }
  }
  return out;
}

// Waits up to 60 s for the controller's DeviceClasses to be there and stay the same for 2 s; how
// many there are.
size_t WaitDeviceClasses(kc::Client& client) {
  const auto until = Clock::now() + std::chrono::seconds(60);
  size_t n = 0;
  int same = 0;
  while (same < 10 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto classes = client.ListAll(kc::DeviceClasses(), "");
    const size_t now = classes.ok() ? classes->items.size() : 0;
    same = now > 0 && now == n ? same + 1 : 0;
    n = now;
  }
  return n;
}

// Resets a process's VmHWM to its current VmRSS (clear_refs 5), so a later VmHWM is a peak from
// now on; false when not allowed.
bool ResetPeak(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// User + system CPU seconds a process has used (/proc/<pid>/stat); -1 when unreadable.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));  // from field 3, the state
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The fleet on the real server: nodes "node-<i>" with the fixture host's inventory (status
// through the status subresource, as the plugin writes it) and a live plugin Lease.
xpu::Status WriteFleet(kc::Client& client, const xpu::api::NodeInventory& inventory, int nodes,
                       int writers) {
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  xpu::Mutex mu;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      for (int i = next++; i < nodes; i = next++) {
        const std::string name = "node-" + std::to_string(i);
        xpu::api::NodeInventory inv = inventory;
        inv.metadata.name = name;
        xpu::Status s = ct::MakeNode(client, name, {{"kubernetes.io/hostname", name}}).status();
        if (s.ok()) s = ct::PutInventory(client, inv);
        if (s.ok()) s = ct::RenewPluginLease(client, "xpu-dra", name, 3600);
        if (!s.ok() && errors++ == 0) {
          xpu::MutexLock lock(mu);
          first_error = s.message();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (errors > 0) {
    xpu::MutexLock lock(mu);
    return xpu::InternalError(std::to_string(errors) +
                              " nodes' setup writes failed; the first: " + first_error);
  }
  return xpu::OkStatus();
}

// The server's /metrics, kept as DIR/metrics-<when>.txt (XPU_KEEP_CLUSTER=1 keeps DIR).
xpu::StatusOr<ServerMetrics> ReadServerMetrics(const xpu::e2e::Cluster& cluster,
                                               const std::string& when) {
  ASSIGN_OR_RETURN(const std::string page, cluster.Kubectl({"get", "--raw", "/metrics"}));
  std::ofstream(cluster.dir() + "/metrics-" + when + ".txt") << page;
  return ParseMetrics(page);
}

// The server: the upstream control plane with our CRDs established, or kube-sim (our kinds built
// in) with the history controller_measure gives it.
xpu::StatusOr<std::unique_ptr<xpu::e2e::Cluster>> StartServer(xpu::e2e::ClusterKind kind) {
  xpu::e2e::ClusterOptions options;
  options.kind = kind;
  options.kube_sim_flags = {"--history", "200000"};
  ASSIGN_OR_RETURN(auto cluster, xpu::e2e::Cluster::Start(options));
  if (kind == xpu::e2e::ClusterKind::kKubeSim) return cluster;
  const std::string crds = std::string(XPU_SOURCE_DIR) + "/deploy/crds/";
  RETURN_IF_ERROR(cluster->Kubectl({"apply", "--server-side", "-f", crds}).status());
  RETURN_IF_ERROR(cluster->WaitEstablished({"nodeinventories.xpu.dra.dev"}));
  return cluster;
}

void PrintServerMemory(const std::map<std::string, pid_t>& pids, const std::string& when) {
  for (const auto& [name, pid] : pids) {
    std::cout << name << " resident memory " << when << ": " << xpu::bench::MemoryText(pid) << "\n";
  }
}

void PrintServerMetrics(const ServerMetrics& before, const ServerMetrics& after) {
  PrintHistograms("apiserver_request_duration_seconds", Delta(before.requests, after.requests), 24);
  std::cout
      << "  (a WATCH is observed when it ends; open at the end, the controller's kinds, every "
         "client's:";
  for (const auto& [resource, n] : after.watches) {
    if (std::set<std::string>{"nodeinventories", "nodes", "leases", "resourceslices",
                              "resourceclaims", "deviceclasses", "acceleratorgangs"}
            .contains(resource)) {
      std::cout << " " << resource << " " << n;
    }
  }
  std::cout << ")\n";
  PrintHistograms("etcd_request_duration_seconds", Delta(before.etcd, after.etcd), 10);
  std::cout << "apiserver_request_total code=429 during the publish: "
            << after.throttled - before.throttled
            << "; apiserver_flowcontrol_rejected_requests_total: "
            << after.rejected - before.rejected << "\n";
}

// Starts the controller, waits for every pool's slice; the publish's figures on stdout.
int Publish(const xpu::e2e::Cluster& cluster, kc::Client& client,
            const std::map<std::string, pid_t>& pids, std::map<std::string, std::string>& flags) {
  const bool upstream = cluster.kind() == xpu::e2e::ClusterKind::kUpstream;
  const int nodes = std::stoi(flags["nodes"]);
  const std::string qps = flags["qps"];
  std::optional<ServerMetrics> before;
  if (upstream) {
    auto read = ReadServerMetrics(cluster, "before");
    if (!read.ok()) return Fail(read.status().message());
    before = *read;
  }
  bool reset = true;
  std::map<std::string, double> cpu;
  for (const auto& [name, pid] : pids) {
    reset = ResetPeak(pid) && reset;
    cpu[name] = CpuSeconds(pid);
  }
  xpu::bench::ControllerRun run = {.binary = flags["controller"],
                                   .kubeconfig = cluster.kubeconfig(),
                                   .qps = qps,
                                   .extra_args = {"--claim-debounce", "100ms"},
                                   .log_path = cluster.dir() + "/controller.log"};
  if (!flags["mode"].empty()) {  // the built-in config, in this publishing mode
    std::string config = xpu::e2e::kBuiltInConfigAttributes;
    config.replace(config.find("attributes"), std::string("attributes").size(), flags["mode"]);
    std::ofstream(cluster.dir() + "/controller-config.yaml") << config;
    run.extra_args.insert(run.extra_args.end(),
                          {"--config", cluster.dir() + "/controller-config.yaml"});
  }
  std::cout << "controller: " << flags["controller"] << "\n";
  auto controller =
      xpu::bench::StartAndPublish(run, nodes, std::chrono::seconds(std::stoi(flags["timeout"])));
  if (!controller.ok()) return Fail(controller.status().message());
  const double publish_s = controller->publish_seconds;
  const pid_t controller_pid = controller->process->pid();
  std::cout << "full publish (" << flags["server"] << "): " << nodes << " nodes x 8 devices in "
            << publish_s << " s at QPS " << qps << "\n";
  std::cout << "controller resident memory after publish: "
            << xpu::bench::MemoryText(controller_pid) << "; CPU " << CpuSeconds(controller_pid)
            << " s\n";
  std::cout << "server CPU during the publish (user + system):";
  for (const auto& [name, pid] : pids) {
    std::cout << " " << name << " " << CpuSeconds(pid) - cpu[name] << " s";
  }
  std::cout << " (in " << publish_s << " s on " << std::thread::hardware_concurrency()
            << " CPUs)\n";
  PrintServerMemory(pids, std::string("after publish (VmHWM ") +
                              (reset ? "since the publish began)" : "since start; reset refused)"));
  if (upstream) {
    auto after = ReadServerMetrics(cluster, "after");
    if (!after.ok()) return Fail(after.status().message());
    PrintServerMetrics(*before, *after);
  }
  std::cout << "DeviceClasses the controller made (waited up to 60 s): "
            << WaitDeviceClasses(client) << "\n";
  controller->process->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"nodes", "2000"},
                                              {"qps", "500"},
                                              {"writers", "8"},
                                              {"timeout", "900"},
                                              {"server", "upstream"},
                                              {"mode", ""},
                                              {"controller", XPU_CONTROLLER_BINARY}};
  if (!xpu::bench::ParseValueFlags(argc, argv, flags).ok() ||
      (flags["server"] != "upstream" && flags["server"] != "kube-sim")) {
    return Fail(
        "usage: upstream_publish_measure [--nodes N] [--qps Q] [--writers W] [--timeout S] "
        "[--server upstream|kube-sim] [--mode attributes|groups] [--controller BINARY]");
  }
  std::cout << std::unitbuf;  // every line out at once, also when the run is cut short
  const int nodes = std::stoi(flags["nodes"]);
  auto cluster = StartServer(flags["server"] == "upstream" ? xpu::e2e::ClusterKind::kUpstream
                                                           : xpu::e2e::ClusterKind::kKubeSim);
  if (!cluster.ok()) return Fail(cluster.status().message());
  const auto pids = ServerPids(**cluster);
  std::cout << "server: " << flags["server"] << " " << (*cluster)->version() << " in "
            << (*cluster)->dir() << " (pids:";
  for (const auto& [name, pid] : pids) std::cout << " " << name << " " << pid;
  std::cout << ")\n";
  if (pids.empty()) return Fail("no server process found for " + (*cluster)->dir());
  auto client = (*cluster)->NewClient();
  if (!client.ok()) return Fail(client.status().message());
  if (auto s = ct::MakeNamespace(**client, "xpu-dra"); !s.ok()) return Fail(s.message());
  auto inventory = ct::FixtureInventory(XPU_SOURCE_DIR, "hgx-h200", "x");
  if (!inventory.ok()) return Fail(inventory.status().message());
  const xpu::bench::Stopwatch setup;
  if (auto s = WriteFleet(**client, *inventory, nodes, std::stoi(flags["writers"])); !s.ok()) {
    return Fail(s.message());
  }
  std::cout << "setup: " << nodes << " nodes (Node, NodeInventory + status, Lease) in "
            << setup.ElapsedSeconds() << " s\n";
  PrintServerMemory(pids, "after setup (VmHWM since start)");
  return Publish(**cluster, **client, pids, flags);
}
