#include "kubeletplugin/plugin/plugin.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "base/atomic_file.h"
#include "base/testing/require_ok.h"
#include "base/testing/text_file.h"
#include "e2e/client/child_process.h"
#include "e2e/client/claims.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/client/wait.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "kubeletplugin/checkpoint/checkpoint.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace xpu::plugin {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using nlohmann::json;

TEST_CASE("plugin flags", "[plugin]") {
  bool help = false;
  auto o = ParseFlags({"--host-root", "/host", "--vendor-lib-dir", "/a", "--vendor-lib-dir=/b",
                       "--rediscover", "30s", "--lease-renew", "500ms"},
                      "node-7", &help);
  REQUIRE_OK(o);
  CHECK_FALSE(help);
  CHECK(o->node_name == "node-7");  // from $NODE_NAME
  CHECK(o->host_root == "/host");
  CHECK(o->vendor_lib_dirs == std::vector<std::string>{"/a", "/b"});
  CHECK(o->rediscover == std::chrono::seconds(30));
  CHECK(o->lease_renew == std::chrono::milliseconds(500));
  CHECK(o->driver_name == "xpu.dra.dev");
  CHECK(o->ns == "xpu-dra");
  CHECK(o->Validate().ok());

  CHECK(ParseFlags({"--bogus"}, "", &help).status().message() == "unknown flag --bogus");
  CHECK(ParseFlags({"--rediscover", "5d"}, "", &help).status().message().find("unknown unit") !=
        std::string::npos);
  CHECK(ParseFlags({"--node-name"}, "", &help).status().message() ==
        "parse flag --node-name: needs a value");
  auto no_node = ParseFlags({}, "", &help);
  REQUIRE_OK(no_node);
  CHECK(no_node->Validate().message() == "--node-name (or NODE_NAME) is required");
  auto bad_node = ParseFlags({"--node-name", "../../etc"}, "", &help);
  CHECK(bad_node->Validate().code() == StatusCode::kInvalidArgument);
  auto slow_lease = ParseFlags({"--node-name", "n", "--lease-renew", "20s"}, "", &help);
  CHECK(slow_lease->Validate().message() == "--lease-renew must be shorter than --lease-duration");
  REQUIRE_OK(ParseFlags({"--help"}, "", &help));
  CHECK(help);
  CHECK(Usage().find("--vendor-lib-dir") != std::string::npos);
  // Health recovery and the node checklist: defaults, and set.
  CHECK(o->health_recovery_settle == std::chrono::seconds(60));
  CHECK(o->node_checklist);
  auto set =
      ParseFlags({"--health-recovery-settle", "250ms", "--node-checklist=false"}, "n", &help);
  REQUIRE_OK(set);
  CHECK(set->health_recovery_settle == std::chrono::milliseconds(250));
  CHECK_FALSE(set->node_checklist);
  CHECK(Usage().find("--health-recovery-settle") != std::string::npos);
  CHECK(Usage().find("--node-checklist") != std::string::npos);
  // The kubelet path's API rate limit: 50/s with a burst of 100 unless set; 0 disables it.
  CHECK(o->qps == 50);
  CHECK(o->burst == 100);
  auto rate = ParseFlags({"--qps", "0", "--burst", "7"}, "n", &help);
  REQUIRE_OK(rate);
  CHECK(rate->qps == 0);
  CHECK(rate->burst == 7);
  CHECK(rate->Validate().ok());
  CHECK(ParseFlags({"--burst", "0"}, "n", &help).status().code() == StatusCode::kInvalidArgument);
  CHECK(Usage().find("--qps N") != std::string::npos);
  // The fallback layout: only together with --partition-fallback layout, and well formed.
  auto layout =
      ParseFlags({"--partition-fallback", "layout", "--partition-layout", "vir05_1c_16g*4,1g.18gb"},
                 "n", &help);
  REQUIRE_OK(layout);
  CHECK(layout->Validate().ok());
  auto alone = ParseFlags({"--partition-layout", "vir05_1c_16g*4"}, "n", &help);
  CHECK(alone->Validate().message() ==
        "--partition-layout is given with --partition-fallback layout, and only then");
  auto without = ParseFlags({"--partition-fallback", "layout"}, "n", &help);
  CHECK(without->Validate().code() == StatusCode::kInvalidArgument);
  auto bad =
      ParseFlags({"--partition-fallback", "layout", "--partition-layout", "1g.18gb*0"}, "n", &help);
  CHECK(bad->Validate().message() ==
        "--partition-layout: entry \"1g.18gb*0\" is not PROFILE or PROFILE*COUNT (1 to 64)");
  auto nope = ParseFlags({"--partition-fallback", "some"}, "n", &help);
  CHECK(nope->Validate().message() ==
        "--partition-fallback: \"some\" is not whole, existing or layout");
  // Energy per claim into the claim's status: 30 s by default, 0 for metrics only, not below 1 s.
  CHECK(o->claim_status_interval == std::chrono::seconds(30));
  CHECK(Usage().find("--claim-status-interval") != std::string::npos);
  auto off = ParseFlags({"--claim-status-interval", "0"}, "n", &help);
  REQUIRE_OK(off);
  CHECK(off->claim_status_interval.count() == 0);
  CHECK(off->Validate().ok());
  auto hasty = ParseFlags({"--claim-status-interval", "100ms"}, "n", &help);
  CHECK(hasty->Validate().message() ==
        "--claim-status-interval: must be 0 (metrics only) or at least 1s");
}

using e2e::Eventually;

// The plugin binary as a child process, stopped with SIGTERM. `env` entries ("K=V") are added
// to the test's environment.
class PluginProcess {
 public:
  explicit PluginProcess(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), XPU_PLUGIN_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; *e != nullptr; ++e) env_.emplace_back(*e);
    for (auto& e : env) env_.push_back(std::move(e));
    std::vector<char*> envp;
    for (auto& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    REQUIRE(::posix_spawn(&pid_, XPU_PLUGIN_BINARY, nullptr, nullptr, argv.data(), envp.data()) ==
            0);
  }
  ~PluginProcess() {
    if (pid_ > 0) Stop();
  }
  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;
  int Stop() {
    ::kill(pid_, SIGTERM);
    return Wait();
  }
  // The exit code, or 128 + the signal that ended it.
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::vector<std::string> env_;
};

TEST_CASE(
    "xpu-dra-plugin publishes the inventory once its Node exists, renews its Lease and "
    "rediscovers when device nodes change",
    "[plugin][e2e]") {
  auto started = e2e::StartSimWithClient(XPU_KUBE_SIM_BINARY, {"xpu-dra"});
  REQUIRE_OK(started);
  auto& sim = started->sim;
  kc::Client& c = *started->client;
  // A private copy of a fixture host, so a device node can be taken away.
  const fs::path host = fs::path(sim->dir()) / "host";
  fs::copy(std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2", host,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);

  PluginProcess plugin({"--kubeconfig", sim->kubeconfig(), "--node-name", "n1", "--host-root",
                        host.string(), "--rediscover", "1h", "--lease-renew", "200ms",
                        "--lease-duration", "2"});
  // The Lease shows the plugin is up; without a Node there is no inventory yet.
  REQUIRE(Eventually([&] { return c.Get(kc::Leases(), "xpu-dra", "xpu-dra-plugin-n1").ok(); }));
  CHECK(c.Get(kc::NodeInventories(), "", "n1").status().code() == StatusCode::kNotFound);

  REQUIRE_OK(c.Create(kc::Nodes(), "",
                      {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}}));
  StatusOr<api::NodeInventory> inventory = NotFoundError("not yet");
  REQUIRE(Eventually([&] {
    auto got = c.Get(kc::NodeInventories(), "", "n1");
    if (!got.ok() || !got->contains("status")) return false;
    inventory = api::FromJson<api::NodeInventory>(*got);
    return inventory.ok() && inventory->status.devices.size() == 8;
  }));
  CHECK(inventory->status.devices[3].health == "Healthy");
  CHECK(inventory->metadata.owner_references.at(0).kind == "Node");

  // A device node vanishes: inotify wakes the plugin long before the 1 h period.
  fs::remove(host / "dev" / "davinci3");
  CHECK(Eventually([&] {
    auto got = api::FromJson<api::NodeInventory>(*c.Get(kc::NodeInventories(), "", "n1"));
    return got.ok() && got->status.devices.size() == 8 &&
           got->status.devices[3].health == "Unhealthy";
  }));
  CHECK(plugin.Stop() == 0);
}

// ---- The kubelet's side: registration, prepare/unprepare, health, metrics, crashes ----

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// kube-sim with a Node n1 and the namespaces, a private copy of a fixture host and the plugin's
// directories; the plugin started and stopped on demand.
class Rig {
 public:
  explicit Rig(const std::string& fixture = "atlas800t-a2") {
    auto started = e2e::StartSimWithClient(XPU_KUBE_SIM_BINARY, {"xpu-dra", "default"}, {"n1"});
    REQUIRE_OK(started);
    sim_ = std::move(started->sim);
    client_ = std::move(started->client);
    root_ = fs::path(sim_->dir()) / "node";
    fs::create_directories(root_);
    fs::copy(std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/" + fixture, root_ / "host",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    // A fixture's fake NVML link is relative to the source tree: point the copy's at the library.
    const fs::path nvml = root_ / "host/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
    if (fs::is_symlink(nvml)) {
      fs::remove(nvml);
      fs::create_symlink(std::string(XPU_FAKE_LIB_DIR) + "/libnvidia-ml.so.1", nvml);
    }
    for (const char* d : {"registry", "plugins", "cdi", "state"}) fs::create_directories(root_ / d);
    metrics_port_ = FreePort();
  }

  void StartPlugin(std::vector<std::string> env = {}, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args{"--kubeconfig",
                                  sim_->kubeconfig(),
                                  "--node-name",
                                  "n1",
                                  "--host-root",
                                  Path("host"),
                                  "--plugin-registry-dir",
                                  Path("registry"),
                                  "--plugin-dir",
                                  Path("plugins"),
                                  "--cdi-dir",
                                  Path("cdi"),
                                  "--state-dir",
                                  Path("state"),
                                  "--metrics-addr",
                                  "127.0.0.1:" + std::to_string(metrics_port_),
                                  "--health-interval",
                                  "200ms",
                                  "--health-resend",
                                  "1s",
                                  "--lease-renew",
                                  "200ms",
                                  "--lease-duration",
                                  "2"};
    args.insert(args.end(), flags.begin(), flags.end());
    plugin_ = std::make_unique<PluginProcess>(std::move(args), std::move(env));
  }
  // Until the registration socket answers GetInfo (a SIGKILLed plugin leaves stale sockets
  // behind until the next one replaces them).
  bool WaitForSockets() {
    e2e::KubeletStandIn kubelet;
    return Eventually([&] {
      return IsSocket(RegSocket()) && IsSocket(DraSocket()) && kubelet.GetInfo(RegSocket()).ok();
    });
  }
  int StopPlugin() { return plugin_->Stop(); }
  int WaitPlugin() { return plugin_->Wait(); }

  std::string Path(const std::string& rel) const { return (root_ / rel).string(); }
  std::string RegSocket() const { return Path("registry/xpu.dra.dev-reg.sock"); }
  std::string DraSocket() const { return Path("plugins/dra.sock"); }
  std::string CdiPath(const std::string& uid) const {
    return Path("cdi/k8s.xpu.dra.dev-device_" + uid + ".json");
  }
  std::set<std::string> CdiClaims() const {
    std::set<std::string> out;
    const std::string prefix = "k8s.xpu.dra.dev-device_";
    for (const auto& e : fs::directory_iterator(Path("cdi"))) {
      const std::string name = e.path().filename().string();
      if (name.starts_with(prefix) && name.ends_with(".json")) {
        out.insert(name.substr(prefix.size(), name.size() - prefix.size() - 5));
      }
    }
    return out;
  }
  std::set<std::string> CheckpointClaims() const {
    checkpoint::CheckpointStore store(Path("state/checkpoint.json"));
    auto cp = store.Load();
    REQUIRE_OK(cp);
    std::set<std::string> out;
    for (const auto& [uid, c] : cp->claims) out.insert(uid);
    return out;
  }
  int metrics_port() const { return metrics_port_; }
  kc::Client& client() { return *client_; }

  // An allocated claim in "default"; returns its uid.
  std::string Claim(const std::string& name, const std::vector<std::string>& devices) {
    e2e::ClaimSpec spec;
    spec.name = name;
    spec.devices = devices;
    spec.pool = "n1";
    StatusOr<std::string> uid = e2e::CreateClaim(*client_, spec);
    INFO(uid.status().ToString());
    REQUIRE_OK(uid);
    return *uid;
  }

 private:
  std::unique_ptr<e2e::KubeSimProcess> sim_;
  std::unique_ptr<kc::Client> client_;
  fs::path root_;
  int metrics_port_ = 0;
  std::unique_ptr<PluginProcess> plugin_;
};

TEST_CASE(
    "the kubelet registers the plugin, prepares and unprepares claims, reads health and "
    "metrics",
    "[plugin][e2e][kubelet]") {
  Rig rig;
  rig.StartPlugin();
  REQUIRE(rig.WaitForSockets());
  e2e::KubeletStandIn kubelet;
  auto info = kubelet.Register(rig.RegSocket());
  INFO(info.status().ToString());
  REQUIRE_OK(info);
  CHECK(info->type == "DRAPlugin");
  CHECK(info->name == "xpu.dra.dev");
  CHECK(info->endpoint == rig.DraSocket());
  CHECK(info->supported_versions == std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                                             "v1.DRAResourceHealth",
                                                             "v1alpha1.DRAResourceHealth"});
  struct stat st {};
  REQUIRE(::stat(rig.DraSocket().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  const std::string a = rig.Claim("a", {"npu-0", "npu-1"});
  const std::string b = rig.Claim("b", {"npu-2"});
  const std::string missing = "00000000-0000-4000-8000-0000000000aa";
  auto prepared =
      kubelet.Prepare(rig.DraSocket(), "v1",
                      {{"default", "a", a}, {"default", "b", b}, {"default", "gone", missing}});
  INFO(prepared.status().ToString());
  REQUIRE_OK(prepared);
  REQUIRE(prepared->size() == 3);
  CHECK(prepared->at(a).error.empty());
  REQUIRE(prepared->at(a).devices.size() == 2);
  CHECK(prepared->at(a).devices[1].device_name == "npu-1");
  CHECK(prepared->at(a).devices[1].pool_name == "n1");
  CHECK(prepared->at(a).devices[1].cdi_device_ids ==
        std::vector<std::string>{"k8s.xpu.dra.dev/device=" + a + "-npu-1"});
  CHECK(prepared->at(b).devices.size() == 1);
  CHECK(prepared->at(missing).error.find("not found") != std::string::npos);
  CHECK(rig.CdiClaims() == std::set<std::string>{a, b});
  // Repeated, and over v1beta1: the same devices.
  auto again = kubelet.Prepare(rig.DraSocket(), "v1beta1", {{"default", "a", a}});
  REQUIRE_OK(again);
  CHECK(again->at(a).devices.size() == 2);
  CHECK(again->at(a).devices[0].cdi_device_ids == prepared->at(a).devices[0].cdi_device_ids);

  // Health: the complete device list at once.
  auto health = kubelet.WatchHealth(rig.DraSocket(), std::chrono::seconds(5),
                                    [](const e2e::KubeletHealthMessage&) { return false; });
  REQUIRE_FALSE(health.empty());
  CHECK(health[0].devices.size() == 8);

  // Metrics and readiness.
  const std::string metrics = e2e::HttpGet(rig.metrics_port(), "/metrics");
  CHECK(metrics.find("xpu_dra_plugin_prepare_claims_total{result=\"ok\"} 3") != std::string::npos);
  CHECK(metrics.find("xpu_dra_plugin_prepare_claims_total{result=\"error\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("xpu_dra_plugin_prepared_devices 3") != std::string::npos);
  CHECK(metrics.find("xpu_dra_plugin_registered 1") != std::string::npos);
  CHECK(metrics.find("xpu_dra_plugin_api_requests_total{verb=\"get\",code=\"200\"}") !=
        std::string::npos);
  CHECK(e2e::HttpGet(rig.metrics_port(), "/readyz").starts_with("HTTP/1.1 200"));

  auto unprepared =
      kubelet.Unprepare(rig.DraSocket(), "v1", {{"default", "a", a}, {"default", "x", missing}});
  REQUIRE_OK(unprepared);
  CHECK(unprepared->at(a).empty());
  CHECK(unprepared->at(missing).empty());
  CHECK(rig.CdiClaims() == std::set<std::string>{b});
  CHECK(rig.CheckpointClaims() == std::set<std::string>{b});
  CHECK(rig.StopPlugin() == 0);
  CHECK_FALSE(fs::exists(rig.RegSocket()));
  CHECK_FALSE(fs::exists(rig.DraSocket()));
}

TEST_CASE(
    "a crash at any step of prepare or unprepare leaves CDI specs and checkpoint "
    "consistent",
    "[plugin][e2e][crash]") {
  Rig rig;
  e2e::KubeletStandIn kubelet;
  int n = 0;
  for (const std::string point :
       {"prepare-after-get", "prepare-after-cdi", "prepare-after-checkpoint", "unprepare-after-cdi",
        "unprepare-after-checkpoint"}) {
    INFO("crash at " << point);
    const std::string name = "c" + std::to_string(n);
    const std::string uid = rig.Claim(name, {"npu-" + std::to_string(n)});
    ++n;
    rig.StartPlugin({"XPU_DRA_CRASH_AT=" + point});
    REQUIRE(rig.WaitForSockets());
    const bool in_unprepare = point.starts_with("unprepare");
    if (in_unprepare) {
      auto p = kubelet.Prepare(rig.DraSocket(), "v1", {{"default", name, uid}});
      REQUIRE_OK(p);
      REQUIRE(p->at(uid).error.empty());
      CHECK_FALSE(kubelet.Unprepare(rig.DraSocket(), "v1", {{"default", name, uid}}).ok());
    } else {
      CHECK_FALSE(kubelet.Prepare(rig.DraSocket(), "v1", {{"default", name, uid}}).ok());
    }
    CHECK(rig.WaitPlugin() == 128 + SIGKILL);
    // Restart: the disk is consistent (every spec has an entry and every entry its spec).
    rig.StartPlugin();
    REQUIRE(rig.WaitForSockets());
    CHECK(rig.CdiClaims() == rig.CheckpointClaims());
    // The kubelet retries; the answer is whole.
    if (in_unprepare) {
      auto u = kubelet.Unprepare(rig.DraSocket(), "v1", {{"default", name, uid}});
      REQUIRE_OK(u);
      CHECK(u->at(uid).empty());
      CHECK_FALSE(rig.CdiClaims().contains(uid));
    } else {
      auto p = kubelet.Prepare(rig.DraSocket(), "v1", {{"default", name, uid}});
      REQUIRE_OK(p);
      CHECK(p->at(uid).error.empty());
      CHECK(p->at(uid).devices.size() == 1);
      CHECK(rig.CdiClaims().contains(uid));
    }
    CHECK(rig.CdiClaims() == rig.CheckpointClaims());
    CHECK(rig.StopPlugin() == 0);
  }

  // A reboot: the tmpfs CDI dir is empty and the boot id new; prepared claims get their specs back.
  const std::set<std::string> prepared = rig.CheckpointClaims();
  REQUIRE_FALSE(prepared.empty());
  for (const auto& e : fs::directory_iterator(rig.Path("cdi"))) fs::remove(e.path());
  std::ofstream(rig.Path("host/proc/sys/kernel/random/boot_id"))
      << "5e5e5e5e-0000-4000-8000-000000000001\n";
  rig.StartPlugin();
  REQUIRE(rig.WaitForSockets());
  CHECK(rig.CdiClaims() == prepared);
  CHECK(rig.StopPlugin() == 0);
}

TEST_CASE("the plugin exports per-device telemetry from the host's own DCMI on /metrics",
          "[plugin][e2e]") {
  Rig rig;
  // The (fake) DCMI where the Ascend driver installs libdcmi.so: found without --vendor-lib-dir.
  const std::string driver_dir = rig.Path("host/usr/local/Ascend/driver/lib64/driver");
  fs::create_directories(driver_dir);
  fs::create_symlink(std::string(XPU_FAKE_LIB_DIR) + "/libdcmi.so", driver_dir + "/libdcmi.so");
  rig.StartPlugin({"XPU_FAKE_DCMI_JSON=" + rig.Path("host/fake-vendor/dcmi.json")});
  REQUIRE(rig.WaitForSockets());
  const std::string npu0 = R"({node="n1",device="npu-0",vendor="huawei",)";
  std::string metrics;
  CHECK(Eventually([&] {
    metrics = e2e::HttpGet(rig.metrics_port(), "/metrics");
    return metrics.find("xpu_dra_device_temperature_celsius" + npu0) != std::string::npos;
  }));
  INFO(metrics);
  // atlas800t-a2's fake-vendor/dcmi.json: NPU 0 at 40 C, 90.0 W, 2048 MiB of HBM used.
  const size_t temp = metrics.find("xpu_dra_device_temperature_celsius" + npu0);
  REQUIRE(temp != std::string::npos);
  CHECK(metrics.substr(metrics.find("} ", temp), 5) == "} 40\n");
  const size_t used = metrics.find("xpu_dra_device_memory_used_bytes" + npu0);
  REQUIRE(used != std::string::npos);
  CHECK(metrics.substr(metrics.find("} ", used), 13) == "} 2147483648\n");
  size_t temperatures = 0;
  for (size_t at = 0;
       (at = metrics.find("\nxpu_dra_device_temperature_celsius{", at)) != std::string::npos;
       ++at) {
    ++temperatures;
  }
  CHECK(temperatures == 8);
  CHECK(metrics.find("xpu_dra_device_link_up" + npu0) != std::string::npos);
  CHECK(metrics.find("xpu_dra_plugin_telemetry_sample_seconds_count") != std::string::npos);
  CHECK(rig.StopPlugin() == 0);
}

// The published inventory of n1; nullopt while there is none with a status.
std::optional<api::NodeInventory> PublishedInventory(kc::Client& c) {
  auto got = c.Get(kc::NodeInventories(), "", "n1");
  if (!got.ok() || !got->contains("status")) return std::nullopt;
  auto inv = api::FromJson<api::NodeInventory>(*got);
  if (!inv.ok()) return std::nullopt;
  return *std::move(inv);
}

// The published inventory's condition of `type`; nullopt while there is none.
std::optional<api::Condition> PublishedCondition(kc::Client& c, const std::string& type) {
  const std::optional<api::NodeInventory> inv = PublishedInventory(c);
  if (!inv) return std::nullopt;
  for (const api::Condition& cond : inv->status.conditions) {
    if (cond.type == type) return cond;
  }
  return std::nullopt;
}

// The device named `name` of the published inventory, with the inventory's XidErrors condition;
// nullopt while there is none.
struct PublishedDevice {
  api::InventoryDevice device;
  std::optional<api::Condition> xid_errors;
};
std::optional<PublishedDevice> Published(kc::Client& c, const std::string& name) {
  const std::optional<api::NodeInventory> inv = PublishedInventory(c);
  if (!inv) return std::nullopt;
  for (const api::InventoryDevice& d : inv->status.devices) {
    if (d.name != name) continue;
    PublishedDevice out{d, std::nullopt};
    for (const api::Condition& cond : inv->status.conditions) {
      if (cond.type == "XidErrors") out.xid_errors = cond;
    }
    return out;
  }
  return std::nullopt;
}

// Writes the fake NVML's control file whole (a rename), so it never reads half of it.
void WriteNvmlControl(const std::string& path, const std::string& text) {
  REQUIRE_OK(WriteFileAtomically(path, text, 0644));
}

TEST_CASE(
    "a fatal XID makes its GPU unhealthy at once and a verified recovery makes it healthy again "
    "without a restart",
    "[plugin][e2e][xid]") {
  Rig rig("hgx-h200");
  const std::string control = rig.Path("nvml-events.json");
  rig.StartPlugin({"XPU_FAKE_NVML_JSON=" + rig.Path("host/fake-vendor/nvml.json"),
                   "XPU_FAKE_NVML_EVENTS=" + control},
                  {"--health-recovery-settle", "2s"});
  REQUIRE(rig.WaitForSockets());
  // Published healthy, and the watcher waits on all eight GPUs' events.
  REQUIRE(Eventually([&] {
    auto gpu = Published(rig.client(), "gpu-3");
    return gpu && gpu->device.health == "Healthy" && !gpu->xid_errors;
  }));
  REQUIRE(Eventually([&] {
    return e2e::HttpGet(rig.metrics_port(), "/metrics")
               .find("xpu_dra_plugin_xid_watched_devices 8\n") != std::string::npos;
  }));

  // XID 79: GPU 3 falls off the bus.
  WriteNvmlControl(control, R"({"events": [{"id": 1, "device": 3, "xid": 79}], "lost": [3]})");
  std::optional<PublishedDevice> gpu;
  REQUIRE(Eventually([&] {
    gpu = Published(rig.client(), "gpu-3");
    return gpu && gpu->device.health == "Unhealthy" && gpu->xid_errors;
  }));
  CHECK(gpu->xid_errors->status == "False");
  CHECK(gpu->xid_errors->reason == "FatalXid");
  CHECK(gpu->xid_errors->message.starts_with("gpu-3: XID 79 (GPU has fallen off the bus) at "));
  CHECK(Published(rig.client(), "gpu-2")->device.health == "Healthy");
  // The kubelet's health stream says so too, with the XID as the reason.
  e2e::KubeletStandIn kubelet;
  std::string reason;
  kubelet.WatchHealth(
      rig.DraSocket(), std::chrono::seconds(20), [&](const e2e::KubeletHealthMessage& m) {
        for (const e2e::KubeletDeviceHealth& d : m.devices) {
          if (d.device_name == "gpu-3" && d.health == e2e::KubeletHealth::kUnhealthy) {
            reason = d.message;
          }
        }
        return reason.empty();
      });
  CHECK(reason.starts_with("gpu-3: XID 79 (GPU has fallen off the bus)"));
  // Still lost: the check's failure is in the message, and the GPU stays unhealthy.
  REQUIRE(Eventually([&] {
    gpu = Published(rig.client(), "gpu-3");
    return gpu && gpu->xid_errors &&
           gpu->xid_errors->message.find("NVML: not on the bus") != std::string::npos;
  }));
  CHECK(gpu->device.health == "Unhealthy");

  // Back on the bus: NVML answers again, but the GPU stays unhealthy for the settle period...
  const auto cleared = std::chrono::steady_clock::now();
  WriteNvmlControl(control, R"({"events": [{"id": 1, "device": 3, "xid": 79}], "lost": []})");
  REQUIRE(Eventually([&] {
    gpu = Published(rig.client(), "gpu-3");
    return gpu && gpu->xid_errors && gpu->xid_errors->message.find("NVML:") == std::string::npos;
  }));
  CHECK(gpu->device.health == "Unhealthy");
  CHECK(gpu->xid_errors->status == "False");
  // ...then healthy again, from the same process. The settle period (2 s) counts from the last
  // failing check, at most one --health-interval (200 ms) before the fault was cleared.
  REQUIRE(Eventually([&] {
    gpu = Published(rig.client(), "gpu-3");
    return gpu && gpu->device.health == "Healthy";
  }));
  CHECK(std::chrono::steady_clock::now() - cleared >= std::chrono::milliseconds(1500));
  REQUIRE(gpu->xid_errors);
  CHECK(gpu->xid_errors->status == "True");
  CHECK(gpu->xid_errors->reason == "Recovered");
  CHECK(gpu->xid_errors->message.find(", recovered at ") != std::string::npos);
  const std::string metrics = e2e::HttpGet(rig.metrics_port(), "/metrics");
  CHECK(metrics.find("xpu_dra_plugin_xid_fatal_events_total{xid=\"79\"} 1\n") != std::string::npos);
  CHECK(metrics.find("xpu_dra_plugin_device_recoveries_total 1\n") != std::string::npos);
  CHECK(rig.StopPlugin() == 0);
}

TEST_CASE("the plugin publishes the node checklist's failures as a NodeInventory condition",
          "[plugin][e2e][checklist]") {
  Rig rig("atlas800t-a2-dcmi-broken");  // /dev/davinci6 missing, containerd 1.6, kubelet 1.31
  rig.StartPlugin({}, {"--node-checklist-interval", "300ms"});
  REQUIRE(rig.WaitForSockets());
  std::optional<api::Condition> checklist;
  REQUIRE(Eventually([&] {
    checklist = PublishedCondition(rig.client(), "NodeChecklist");
    return checklist.has_value();
  }));
  INFO(checklist->message);
  CHECK(checklist->status == "False");
  CHECK(checklist->reason == "ChecksFailed");
  // Without the host's DCMI (none in this fixture's library folders) four checks fail.
  CHECK(checklist->message.starts_with(
      "4 fail (device-nodes, health, container-runtime, kubelet), 5 warn (iommu, vendor-library, "
      "driver-files, cdi-spec-dirs, collective-network) of 16 checks (xpuctl doctor); "
      "device-nodes: fail, "));
  CHECK(checklist->message.find("/dev/davinci6 missing") != std::string::npos);
  CHECK(checklist->message.find("; kubelet: fail, ") != std::string::npos);
  // The device node appears: a later run publishes two failures fewer (device-nodes, and health,
  // which rediscovery finds healthy), the status (still False) keeping its lastTransitionTime.
  xpu::testing::WriteText(rig.Path("host/dev/davinci6"), "");
  std::optional<api::Condition> later;
  CHECK(Eventually([&] {
    later = PublishedCondition(rig.client(), "NodeChecklist");
    return later && later->message.starts_with("2 fail (container-runtime, kubelet)");
  }));
  INFO(later->message);
  CHECK(later->status == "False");
  CHECK(later->last_transition_time == checklist->last_transition_time);
  CHECK(rig.StopPlugin() == 0);

  // Turned off: the next plugin publishes the inventory without it.
  rig.StartPlugin({}, {"--node-checklist=false"});
  REQUIRE(rig.WaitForSockets());
  CHECK(Eventually([&] {
    return !PublishedCondition(rig.client(), "NodeChecklist") &&
           PublishedCondition(rig.client(), "Ready");
  }));
  CHECK(rig.StopPlugin() == 0);
}

TEST_CASE("a claim deleted from the API while the plugin was down is unprepared after start",
          "[plugin][e2e]") {
  Rig rig;
  e2e::KubeletStandIn kubelet;
  rig.StartPlugin();
  REQUIRE(rig.WaitForSockets());
  const std::string kept = rig.Claim("kept", {"npu-0"});
  const std::string gone = rig.Claim("gone", {"npu-1"});
  auto p = kubelet.Prepare(rig.DraSocket(), "v1",
                           {{"default", "kept", kept}, {"default", "gone", gone}});
  REQUIRE_OK(p);
  REQUIRE(rig.CdiClaims() == std::set<std::string>{kept, gone});
  CHECK(rig.StopPlugin() == 0);
  REQUIRE_OK(rig.client().Delete(kc::ResourceClaims(), "default", "gone"));
  rig.StartPlugin();
  REQUIRE(rig.WaitForSockets());
  CHECK(Eventually([&] {
    return rig.CdiClaims() == std::set<std::string>{kept} &&
           rig.CheckpointClaims() == std::set<std::string>{kept};
  }));
  CHECK(rig.StopPlugin() == 0);
}

TEST_CASE("a corrupt checkpoint stops the plugin before it serves", "[plugin][e2e]") {
  Rig rig;
  std::ofstream(rig.Path("state/checkpoint.json"))
      << "{\"version\":1,\"checksum\":\"00000000\",\"data\":{}}";
  rig.StartPlugin();
  CHECK(rig.WaitPlugin() == 3);
  CHECK_FALSE(fs::exists(rig.RegSocket()));
  CHECK_FALSE(fs::exists(rig.DraSocket()));
}

TEST_CASE("hostile input on the sockets gets per-claim errors and the plugin keeps serving",
          "[plugin][e2e][hostile]") {
  Rig rig;
  rig.StartPlugin();
  REQUIRE(rig.WaitForSockets());
  e2e::KubeletStandIn kubelet;
  const std::string good = rig.Claim("good", {"npu-0"});
  const std::string other = rig.Claim("other", {"npu-1"});

  // Garbage bytes on the DRA socket: the connection fails, the server does not.
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, rig.DraSocket().c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::string garbage(size_t{64} << 10, '\0');
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919) % 251);
    CHECK(::write(fd, garbage.data(), garbage.size()) > 0);
    ::close(fd);
  }

  // One batch: empty and path-like uids, megabyte-long strings, an unknown claim, and 10,000
  // claims whose uids are not UUIDs; the good claim among them is prepared.
  const std::string megabyte(1 << 20, 'm');
  const std::string unknown = "00000000-0000-4000-8000-0000000000bb";
  std::vector<e2e::KubeletClaim> batch = {
      {"default", "empty", ""},       {"default", "dots", "../../etc/passwd"},
      {"default", "slash", "a/b"},    {"default", "long-uid", megabyte},
      {"default", megabyte, unknown}, {"default", "good", good}};
  for (int i = 0; i < 10'000; ++i) batch.push_back({"default", "many", "x" + std::to_string(i)});
  auto answer = kubelet.Prepare(rig.DraSocket(), "v1", batch);
  INFO(answer.status().ToString());
  REQUIRE_OK(answer);
  CHECK(answer->size() == 10'006);  // one entry per uid, the empty one included
  CHECK(answer->at("").error.find("is not a UUID") != std::string::npos);
  CHECK(answer->at("../../etc/passwd").error.find("is not a UUID") != std::string::npos);
  CHECK(answer->at("x9999").error.find("is not a UUID") != std::string::npos);
  CHECK(answer->at(megabyte).error.size() < 512);  // echoed input is cut
  CHECK(answer->at(unknown).error.find("not a valid namespace (DNS label) and name") !=
        std::string::npos);
  CHECK(answer->at(unknown).error.size() < 512);
  CHECK(answer->at(good).error.empty());
  CHECK(answer->at(good).devices.size() == 1);
  // Nothing outside the CDI directory, and only the good claim on disk.
  CHECK(rig.CdiClaims() == std::set<std::string>{good});
  CHECK(rig.CheckpointClaims() == std::set<std::string>{good});

  // Concurrent prepares of one claim: the same answer each time, one spec.
  std::vector<std::future<StatusOr<std::map<std::string, e2e::KubeletPrepareResult>>>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      return e2e::KubeletStandIn().Prepare(rig.DraSocket(), "v1", {{"default", "other", other}});
    }));
  }
  std::set<std::vector<std::string>> ids;
  for (auto& call : calls) {
    auto r = call.get();
    REQUIRE_OK(r);
    REQUIRE(r->at(other).error.empty());
    REQUIRE(r->at(other).devices.size() == 1);
    ids.insert(r->at(other).devices[0].cdi_device_ids);
  }
  CHECK(ids.size() == 1);
  CHECK(rig.CdiClaims() == std::set<std::string>{good, other});

  // Still serving, and the unprepare of hostile uids is as safe.
  auto undone = kubelet.Unprepare(rig.DraSocket(), "v1",
                                  {{"default", "dots", "../../etc/passwd"},
                                   {"default", "good", good},
                                   {"default", "other", other}});
  REQUIRE_OK(undone);
  CHECK(undone->at("../../etc/passwd").find("is not a UUID") != std::string::npos);
  CHECK(undone->at(good).empty());
  CHECK(rig.CdiClaims().empty());
  CHECK(rig.CheckpointClaims().empty());
  CHECK(rig.StopPlugin() == 0);
}

}  // namespace
}  // namespace xpu::plugin
