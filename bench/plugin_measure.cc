// A measured run of xpu-dra-plugin against kube-sim (docs/architecture.md budgets; not a test):
//   - start to registration socket (budget 200 ms): spawn to the socket answering GetInfo
//   - NodePrepareResources, 1 claim x 8 devices, incl. the claim GET over TLS and both fsyncs
//     (budget p50 5 ms): prepared and unprepared --claims times over the real sockets
//   - memory with 100 prepared claims (budget PSS 20 MB): the plugin's PSS, RSS and private bytes
//     (/proc/PID/smaps_rollup), and the other processes of the same executable, which PSS splits
//     shared pages with
//   - one NodePrepareResources call for batches of 1, 10, 100 and 1,000 new claims
// Uses the atlas800t-a2 fixture host (8 NPUs) and the kubelet stand-in.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/client/client.h"
#include "base/atomic_file.h"
#include "bench/measure_support.h"
#include "e2e/client/claims.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/kubelet/kubelet_stand_in.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace {

namespace fs = std::filesystem;
namespace kc = xpu::api::client;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

using xpu::bench::Ms;
using xpu::bench::Percentile;

int Fail(const std::string& what) { return xpu::bench::Fail("plugin_measure", what); }

constexpr std::string_view kUsage =
    "usage: plugin_measure [--claims N] [--plugin-flag FLAG]...\n"
    "Measures xpu-dra-plugin against kube-sim: start to registration socket,\n"
    "NodePrepareResources of 1 claim x 8 devices (N times, default 100), the\n"
    "plugin's memory (PSS, RSS, private) with 100 prepared claims whatever N is,\n"
    "and one prepare call\n"
    "for batches of 1, 10, 100 and 1,000 new claims. The prepare is set beside\n"
    "the fsync floor of the same run: the checkpoint's atomic write alone. The\n"
    "kubelet stand-in keeps one connection to the plugin, as the kubelet does.\n"
    "--plugin-flag adds a flag of the plugin (--cdi-driver-files=off).\n";

struct Options {
  int claims = 100;
  std::vector<std::string> plugin_flags;  // --plugin-flag: passed on to the plugin
  bool help = false;
};

xpu::StatusOr<Options> ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      options.help = true;
      return options;
    }
    if (a == "--claims" && i + 1 < argc) {
      options.claims = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--plugin-flag" && i + 1 < argc) {
      options.plugin_flags.emplace_back(argv[++i]);
    } else {
      return xpu::InvalidArgumentError("unknown flag " + a);
    }
  }
  return options;
}

// The node's directories under kube-sim's: the fixture host, the kubelet's registry, plugin and
// state directories, and the CDI directory.
struct NodeDirs {
  fs::path root;
  fs::path cdi;
  bool shm = false;  // the CDI directory is on tmpfs
  std::string reg;   // the registration socket
  std::string dra;   // the DRA socket
};

// kube-sim's namespaces and node n1.
void SeedCluster(kc::Client& c) {
  for (const char* ns : {"xpu-dra", "default"}) {
    (void)c.Create(kc::Namespaces(), "",
                   {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  }
  (void)c.Create(kc::Nodes(), "",
                 {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}});
}

NodeDirs MakeNodeDirs(const std::string& sim_dir) {
  NodeDirs d;
  d.root = fs::path(sim_dir) / "node";
  fs::create_directories(d.root);
  fs::copy(std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2", d.root / "host",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const char* dir : {"registry", "plugins", "state"}) fs::create_directories(d.root / dir);
  // The CDI directory is /var/run/cdi on a node: tmpfs. /dev/shm stands in for it where it exists.
  d.shm = fs::is_directory("/dev/shm");
  d.cdi = d.shm ? fs::path("/dev/shm") / ("xpu-plugin-measure-" + std::to_string(::getpid()))
                : d.root / "cdi";
  fs::create_directories(d.cdi);
  d.reg = (d.root / "registry/xpu.dra.dev-reg.sock").string();
  d.dra = (d.root / "plugins/dra.sock").string();
  return d;
}

std::vector<std::string> PluginArgs(const NodeDirs& d, const std::string& kubeconfig,
                                    const std::vector<std::string>& plugin_flags) {
  std::vector<std::string> args = {XPU_PLUGIN_BINARY,
                                   "--kubeconfig",
                                   kubeconfig,
                                   "--node-name",
                                   "n1",
                                   "--host-root",
                                   (d.root / "host").string(),
                                   "--plugin-registry-dir",
                                   (d.root / "registry").string(),
                                   "--plugin-dir",
                                   (d.root / "plugins").string(),
                                   "--cdi-dir",
                                   d.cdi.string(),
                                   "--state-dir",
                                   (d.root / "state").string(),
                                   "--metrics-addr",
                                   "127.0.0.1:0",
                                   "--log-level",
                                   "error"};
  args.insert(args.end(), plugin_flags.begin(), plugin_flags.end());
  return args;
}

// The plugin, spawned, and the time until its registration socket answered GetInfo.
struct Started {
  pid_t pid = -1;
  double start_ms = 0;
};

xpu::StatusOr<Started> SpawnPlugin(std::vector<std::string> args, xpu::e2e::KubeletStandIn& kubelet,
                                   const std::string& reg) {
  std::vector<char*> argv_c;
  for (auto& a : args) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  const auto spawned = Clock::now();
  Started started;
  if (::posix_spawn(&started.pid, XPU_PLUGIN_BINARY, nullptr, nullptr, argv_c.data(), environ) !=
      0) {
    return xpu::InternalError("spawn the plugin");
  }
  while (!kubelet.GetInfo(reg).ok()) {
    if (Clock::now() - spawned > std::chrono::seconds(30)) {
      return xpu::InternalError("no registration socket");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  started.start_ms = Ms(Clock::now() - spawned);
  return started;
}

// Creates claim `name` for npu-0.. npu-<devices - 1> of n1; its uid, "" when it failed.
std::string MakeClaim(kc::Client& c, const std::string& name, int devices, bool shared) {
  xpu::e2e::ClaimSpec spec;
  spec.name = name;
  for (int d = 0; d < devices; ++d) spec.devices.push_back("npu-" + std::to_string(d));
  spec.pool = "n1";
  spec.shared = shared;  // a shared device: any number of claims may hold it
  xpu::StatusOr<std::string> uid = xpu::e2e::CreateClaim(c, spec);
  return uid.ok() ? *uid : "";
}

std::string PrepareError(
    const xpu::StatusOr<std::map<std::string, xpu::e2e::KubeletPrepareResult>>& p,
    const std::string& uid) {
  return p.ok() ? p->at(uid).error : p.status().message();
}

// Prepare and unprepare of 1 claim x 8 devices, each beside the fsync floor of this disk.
struct PrepareTimes {
  std::vector<double> prepare_ms;
  std::vector<double> unprepare_ms;
  // The fsync floor of this disk, in the same run: the checkpoint's own write (temp file, fsync,
  // rename, directory fsync) of the checkpoint as a prepare leaves it, beside it. A prepare pays
  // this once, plus its claim GET and the CDI spec's write on tmpfs.
  std::vector<double> floor_ms;
};

xpu::StatusOr<PrepareTimes> MeasurePrepare(kc::Client& c, xpu::e2e::KubeletStandIn& kubelet,
                                           const NodeDirs& d, int claims) {
  PrepareTimes times;
  const fs::path checkpoint = d.root / "state/checkpoint.json";
  const std::string probe = (d.root / "state/floor-probe.json").string();
  // The claims exist before the first prepare, as they do long before a kubelet prepares them:
  // a claim created just before its prepare left kube-sim's work on this machine's two CPUs in
  // the timed call (the request then reached the plugin's handler 0.39 ms after it was sent,
  // against 0.10 ms).
  std::vector<std::string> uids;
  for (int i = 0; i < claims; ++i) {
    uids.push_back(MakeClaim(c, "p" + std::to_string(i), 8, false));
    if (uids.back().empty()) return xpu::InternalError("create claim p" + std::to_string(i));
  }
  for (int i = 0; i < claims; ++i) {
    const std::string name = "p" + std::to_string(i);
    const std::string& uid = uids[static_cast<size_t>(i)];
    auto t0 = Clock::now();
    auto p = kubelet.Prepare(d.dra, "v1", {{"default", name, uid}});
    times.prepare_ms.push_back(Ms(Clock::now() - t0));
    if (!p.ok() || !p->at(uid).error.empty() || p->at(uid).devices.size() != 8) {
      return xpu::InternalError("prepare " + name + ": " + PrepareError(p, uid));
    }
    std::ifstream in(checkpoint);
    const std::string content((std::istreambuf_iterator<char>(in)), {});
    t0 = Clock::now();
    if (!xpu::WriteFileAtomically(probe, content, 0600).ok()) {
      return xpu::InternalError("write " + probe);
    }
    times.floor_ms.push_back(Ms(Clock::now() - t0));
    t0 = Clock::now();
    auto u = kubelet.Unprepare(d.dra, "v1", {{"default", name, uid}});
    times.unprepare_ms.push_back(Ms(Clock::now() - t0));
    if (!u.ok() || !u->at(uid).empty()) return xpu::InternalError("unprepare " + name);
  }
  return times;
}

// Leaves 100 claims of one shared device prepared.
xpu::Status PrepareHundred(kc::Client& c, xpu::e2e::KubeletStandIn& kubelet, const NodeDirs& d) {
  for (int i = 0; i < 100; ++i) {
    const std::string name = "m" + std::to_string(i);
    const std::string uid = MakeClaim(c, name, 1, true);
    if (uid.empty()) return xpu::InternalError("create claim " + name);
    auto p = kubelet.Prepare(d.dra, "v1", {{"default", name, uid}});
    if (!p.ok() || !p->at(uid).error.empty()) {
      return xpu::InternalError("prepare " + name + ": " + PrepareError(p, uid));
    }
  }
  return xpu::OkStatus();
}

struct Batch {
  int size;
  double prepare_ms;
  double unprepare_ms;
  int errors;
};

// One NodePrepareResources call per batch of new claims (each GET under the plugin's client
// rate limit), then one NodeUnprepareResources of the batch.
xpu::StatusOr<std::vector<Batch>> MeasureBatches(kc::Client& c, xpu::e2e::KubeletStandIn& kubelet,
                                                 const NodeDirs& d) {
  std::vector<Batch> batches;
  for (const int size : {1, 10, 100, 1000}) {
    std::vector<xpu::e2e::KubeletClaim> batch;
    for (int i = 0; i < size; ++i) {
      const std::string name = "b" + std::to_string(size) + "-" + std::to_string(i);
      const std::string uid = MakeClaim(c, name, 1, true);
      if (uid.empty()) return xpu::InternalError("create claim " + name);
      batch.push_back({"default", name, uid});
    }
    auto t0 = Clock::now();
    auto p = kubelet.Prepare(d.dra, "v1", batch);
    const double prepared = Ms(Clock::now() - t0);
    if (!p.ok()) {
      return xpu::InternalError("prepare a batch of " + std::to_string(size) + ": " +
                                p.status().message());
    }
    int errors = 0;
    for (const auto& [uid, r] : *p) errors += !r.error.empty();
    t0 = Clock::now();
    auto u = kubelet.Unprepare(d.dra, "v1", batch);
    if (!u.ok()) return xpu::InternalError("unprepare a batch of " + std::to_string(size));
    batches.push_back({size, prepared, Ms(Clock::now() - t0), errors});
  }
  return batches;
}

// A process's memory from /proc/PID/smaps_rollup, in MB. PSS counts each page divided by the
// number of processes mapping it: what other processes share (libc, libcrypto) is not all ours.
struct Rollup {
  double rss = 0;
  double pss = 0;
  double priv = 0;  // Private_Clean + Private_Dirty: mapped by this process alone
  double anon = 0;  // Anonymous: heap, stacks
};

xpu::StatusOr<Rollup> ReadRollup(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/smaps_rollup";
  std::ifstream in(path);
  std::map<std::string, double> kb;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || !line.ends_with(" kB")) continue;
    kb[line.substr(0, colon)] = std::atof(line.c_str() + colon + 1);
  }
  if (!kb.contains("Pss")) return xpu::InternalError(path + ": no Pss field");
  return Rollup{.rss = kb["Rss"] / 1024,
                .pss = kb["Pss"] / 1024,
                .priv = (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024,
                .anon = kb["Anonymous"] / 1024};
}

// The other processes running the executable of `pid` (the same file, whatever its path).
int OtherProcessesOfExe(pid_t pid) {
  struct stat exe {};
  if (::stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &exe) != 0) return -1;
  int others = 0;
  for (const auto& entry :
       fs::directory_iterator("/proc", fs::directory_options::skip_permission_denied)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit) ||
        name == std::to_string(pid)) {
      continue;
    }
    struct stat other {};
    if (::stat((entry.path() / "exe").c_str(), &other) == 0 && other.st_dev == exe.st_dev &&
        other.st_ino == exe.st_ino) {
      ++others;
    }
  }
  return others;
}

std::string Format(const char* format, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The resident pages of `pid` (its page frame numbers, /proc/PID/pagemap); empty without the
// right to read them (CAP_SYS_ADMIN), when the kernel shows every frame number as 0.
std::vector<uint64_t> ResidentFrames(const std::string& pid) {
  std::ifstream maps("/proc/" + pid + "/maps");
  const int fd = ::open(("/proc/" + pid + "/pagemap").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::vector<uint64_t> frames;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (std::string line; std::getline(maps, line);) {
    uint64_t from = 0;
    uint64_t to = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64, &from, &to) != 2) continue;
    std::vector<uint64_t> entries((to - from) / page);
    const ssize_t n =
        ::pread(fd, entries.data(), entries.size() * 8, static_cast<off_t>(from / page * 8));
    for (ssize_t i = 0; i < n / 8; ++i) {
      const uint64_t e = entries[static_cast<size_t>(i)];
      if ((e >> 63) & 1) frames.push_back(e & ((uint64_t{1} << 55) - 1));  // present: the PFN
    }
  }
  ::close(fd);
  if (std::all_of(frames.begin(), frames.end(), [](uint64_t f) { return f == 0; })) return {};
  return frames;
}

// The plugin's PSS in MB as if this benchmark did not run: it links gRPC and protobuf for the
// kubelet stand-in, so the plugin's pages of those libraries count half in its plain PSS (and in
// no node's). Each resident page counts 1 / (the processes mapping it, less this one), from
// /proc/kpagecount. -1 where the frames cannot be read (not root).
double PssWithoutThisBenchmark(pid_t pid) {
  const std::vector<uint64_t> plugin = ResidentFrames(std::to_string(pid));
  std::vector<uint64_t> self = ResidentFrames("self");
  const int counts = ::open("/proc/kpagecount", O_RDONLY | O_CLOEXEC);
  if (plugin.empty() || self.empty() || counts < 0) {
    if (counts >= 0) ::close(counts);
    return -1;
  }
  std::sort(self.begin(), self.end());
  double pages = 0;
  for (const uint64_t frame : plugin) {
    uint64_t mapped = 1;
    if (::pread(counts, &mapped, 8, static_cast<off_t>(frame * 8)) != 8) mapped = 1;
    if (std::binary_search(self.begin(), self.end(), frame)) --mapped;
    pages += 1.0 / static_cast<double>(std::max<uint64_t>(mapped, 1));
  }
  ::close(counts);
  return pages * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// The plugin's memory at start and with 100 prepared claims.
struct Memory {
  Rollup start;
  Rollup prepared;
  int others = 0;         // other processes of the plugin's executable
  double pss_alone = -1;  // PssWithoutThisBenchmark, with 100 prepared claims
};

void PrintReport(bool shm, int claims, double start_ms, const PrepareTimes& t, const Memory& m,
                 const std::vector<Batch>& batches) {
  std::printf(
      "xpu-dra-plugin, atlas800t-a2 fixture (8 NPUs), kube-sim over TLS on loopback, "
      "checkpoint on disk, CDI dir on %s\n",
      shm ? "tmpfs (/dev/shm)" : "disk");
  std::printf("  start to registration socket answering GetInfo   %8.1f ms  (budget 200 ms)\n",
              start_ms);
  std::printf(
      "  NodePrepareResources 1 claim x 8 devices (n=%d)   p50 %6.2f ms  p90 %6.2f ms  "
      "p99 %6.2f ms  (budget p50 5 ms)\n",
      claims, Percentile(t.prepare_ms, 0.5), Percentile(t.prepare_ms, 0.9),
      Percentile(t.prepare_ms, 0.99));
  std::printf(
      "  fsync floor: the checkpoint's atomic write alone (n=%d)  p50 %6.2f ms  p99 %6.2f ms;"
      "  prepare p50 is %.2fx it (budget 2x)\n",
      claims, Percentile(t.floor_ms, 0.5), Percentile(t.floor_ms, 0.99),
      Percentile(t.prepare_ms, 0.5) / std::max(1e-9, Percentile(t.floor_ms, 0.5)));
  std::printf("  NodeUnprepareResources (n=%d)                      p50 %6.2f ms  p90 %6.2f ms\n",
              claims, Percentile(t.unprepare_ms, 0.5), Percentile(t.unprepare_ms, 0.9));
  // This benchmark maps gRPC and protobuf too (the kubelet stand-in): the PSS that counts is the
  // one without it, where the frames can be read.
  const bool alone = m.pss_alone >= 0;
  std::printf(
      "  plugin memory with 100 prepared claims: PSS %.1f MB (budget 20 MB; %s), RSS %.1f MB, "
      "private %.1f MB (Private_Clean + Private_Dirty; %.1f MB anonymous); %d other processes "
      "of the same executable\n",
      alone ? m.pss_alone : m.prepared.pss,
      alone ? ("without this benchmark's share of the libraries; " +
               Format("%.1f", m.prepared.pss) + " MB with it")
                  .c_str()
            : "with this benchmark's share of gRPC and protobuf; run as root for the figure "
              "without it",
      m.prepared.rss, m.prepared.priv, m.prepared.anon, m.others);
  std::printf(
      "  plugin memory at start: PSS %.1f MB (with this benchmark's share), RSS %.1f MB, private "
      "%.1f MB (%.1f MB anonymous)\n",
      m.start.pss, m.start.rss, m.start.priv, m.start.anon);
  for (const Batch& b : batches) {
    std::printf(
        "  one call, a batch of %4d new claims: prepare %8.1f ms (%d answered with an error), "
        "unprepare %6.1f ms\n",
        b.size, b.prepare_ms, b.errors, b.unprepare_ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const xpu::StatusOr<Options> options = ParseOptions(argc, argv);
  if (!options.ok()) return Fail(options.status().message());
  if (options->help) {
    std::cout << kUsage;
    return 0;
  }
  auto sim = xpu::e2e::KubeSimProcess::Start(XPU_KUBE_SIM_BINARY);
  if (!sim.ok()) return Fail(sim.status().message());
  auto client = kc::Client::Create(*(*sim)->Config());
  if (!client.ok()) return Fail(client.status().message());
  kc::Client& c = **client;
  SeedCluster(c);
  const NodeDirs dirs = MakeNodeDirs((*sim)->dir());
  xpu::e2e::KubeletStandIn kubelet(xpu::e2e::KubeletStandIn::Connections::kKeep);
  const xpu::StatusOr<Started> started =
      SpawnPlugin(PluginArgs(dirs, (*sim)->kubeconfig(), options->plugin_flags), kubelet, dirs.reg);
  if (!started.ok()) return Fail(started.status().message());
  const pid_t pid = started->pid;
  Memory memory;
  const xpu::StatusOr<Rollup> at_start = ReadRollup(pid);
  if (!at_start.ok()) return Fail(at_start.status().message());
  memory.start = *at_start;
  const xpu::StatusOr<PrepareTimes> times = MeasurePrepare(c, kubelet, dirs, options->claims);
  if (!times.ok()) return Fail(times.status().message());
  if (const xpu::Status s = PrepareHundred(c, kubelet, dirs); !s.ok()) return Fail(s.message());
  // Read 2 s after the last prepare, as scale.sh does: the plugin gives the pages a burst of
  // calls freed back 200 ms after it (base/heap.h).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const xpu::StatusOr<Rollup> prepared = ReadRollup(pid);
  if (!prepared.ok()) return Fail(prepared.status().message());
  memory.prepared = *prepared;
  memory.others = OtherProcessesOfExe(pid);
  memory.pss_alone = PssWithoutThisBenchmark(pid);
  const xpu::StatusOr<std::vector<Batch>> batches = MeasureBatches(c, kubelet, dirs);
  if (!batches.ok()) return Fail(batches.status().message());
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);

  fs::remove_all(dirs.cdi);
  PrintReport(dirs.shm, options->claims, started->start_ms, *times, memory, *batches);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0
                                                       : Fail("the plugin did not exit cleanly");
}
