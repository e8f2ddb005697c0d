#include "kubeletplugin/plugin/plugin.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "e2e/client/kube_sim_process.h"

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
  REQUIRE(o.ok());
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
  REQUIRE(no_node.ok());
  CHECK(no_node->Validate().message() == "--node-name (or NODE_NAME) is required");
  auto bad_node = ParseFlags({"--node-name", "../../etc"}, "", &help);
  CHECK(bad_node->Validate().code() == StatusCode::kInvalidArgument);
  auto slow_lease = ParseFlags({"--node-name", "n", "--lease-renew", "20s"}, "", &help);
  CHECK(slow_lease->Validate().message() == "--lease-renew must be shorter than --lease-duration");
  REQUIRE(ParseFlags({"--help"}, "", &help).ok());
  CHECK(help);
  CHECK(Usage().find("--vendor-lib-dir") != std::string::npos);
}

template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// The plugin binary as a child process, stopped with SIGTERM.
class PluginProcess {
 public:
  explicit PluginProcess(std::vector<std::string> args) {
    args.insert(args.begin(), XPU_PLUGIN_BINARY);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    REQUIRE(::posix_spawn(&pid_, XPU_PLUGIN_BINARY, nullptr, nullptr, argv.data(), environ) == 0);
  }
  ~PluginProcess() {
    if (pid_ > 0) Stop();
  }
  PluginProcess(const PluginProcess&) = delete;
  PluginProcess& operator=(const PluginProcess&) = delete;
  int Stop() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
};

TEST_CASE(
    "xpu-dra-plugin publishes the inventory once its Node exists, renews its Lease and "
    "rediscovers when device nodes change",
    "[plugin][e2e]") {
  auto sim = e2e::KubeSimProcess::Start(XPU_KUBE_SIM_BINARY);
  REQUIRE(sim.ok());
  auto client = kc::Client::Create(*(*sim)->Config());
  REQUIRE(client.ok());
  kc::Client& c = **client;
  REQUIRE(
      c.Create(kc::Namespaces(), "",
               {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "xpu-dra"}}}})
          .ok());
  // A private copy of a fixture host, so a device node can be taken away.
  const fs::path host = fs::path((*sim)->dir()) / "host";
  fs::copy(std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2", host,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);

  PluginProcess plugin({"--kubeconfig", (*sim)->kubeconfig(), "--node-name", "n1", "--host-root",
                        host.string(), "--rediscover", "1h", "--lease-renew", "200ms",
                        "--lease-duration", "2"});
  // The Lease shows the plugin is up; without a Node there is no inventory yet.
  REQUIRE(Eventually([&] { return c.Get(kc::Leases(), "xpu-dra", "xpu-dra-plugin-n1").ok(); }));
  CHECK(c.Get(kc::NodeInventories(), "", "n1").status().code() == StatusCode::kNotFound);

  REQUIRE(c.Create(kc::Nodes(), "",
                   {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n1"}}}})
              .ok());
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

}  // namespace
}  // namespace xpu::plugin
