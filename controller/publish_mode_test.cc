// xpu-dra-controller's publishing mode by Kubernetes version, end to end: the real binary against
// kube-sim, at start-up and on config reload. kube-sim serves /version 1.34 or 1.35 only, so
// --kubernetes-version stands for a 1.36 server; its feature gates are all on, so counters are
// kept and groups mode does not fall back.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "api/resource.h"
#include "base/testing/require_ok.h"
#include "controller/testing/cluster.h"
#include "controller/testing/slice_examples.h"  // kDriver
#include "e2e/client/child_process.h"

namespace xpu::controller {
namespace {

namespace fs = std::filesystem;
using api::resource::ResourceSlice;
using testing::Eventually;

// What the pool of `node` holds: its single devices and its group devices (groupSize > 1).
struct ModePool {
  int singles = 0;
  int groups = 0;
  friend bool operator==(const ModePool&, const ModePool&) = default;
};

ModePool ModePoolOf(api::client::Client& client, const std::string& node) {
  auto all = testing::ListSlices(client, testing::kDriver);
  REQUIRE_OK(all);
  ModePool out;
  for (const ResourceSlice& s : *all) {
    if (s.spec.pool.name != node) continue;
    for (const auto& d : s.spec.devices) {
      auto size = d.attributes.find("groupSize");
      const bool group = size != d.attributes.end() && size->second.int_value.value_or(1) > 1;
      ++(group ? out.groups : out.singles);
    }
  }
  return out;
}

void SwapConfig(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, path);  // as a ConfigMap update swaps the file
}

std::unique_ptr<e2e::ChildProcess> StartModeController(const testing::SimCluster& c,
                                                       const std::string& config_path,
                                                       const std::string& version,
                                                       const std::string& log_name) {
  const std::vector<std::string> args = {"--kubeconfig",
                                         c.sim->kubeconfig(),
                                         "--namespace",
                                         "xpu-dra",
                                         "--metrics-addr",
                                         "127.0.0.1:0",
                                         "--config-poll",
                                         "100ms",
                                         "--leader-elect",
                                         "false",
                                         "--config",
                                         config_path,
                                         "--kubernetes-version",
                                         version};
  auto p = e2e::ChildProcess::Start(XPU_CONTROLLER_BINARY, args, c.sim->dir() + "/" + log_name);
  REQUIRE_OK(p);
  return std::move(p).value();
}

TEST_CASE("xpu-dra-controller publishes groups by default from 1.36, and a configured mode wins",
          "[controller][e2e]") {
  testing::SimCluster c =
      xpu::testing::RequireValue(testing::StartControllerCluster(XPU_KUBE_SIM_BINARY));
  REQUIRE_OK(testing::MakeNode(*c.client, "n1"));
  auto inventory = testing::FixtureInventory(XPU_SOURCE_DIR, "hgx-h200", "n1");
  REQUIRE_OK(inventory);
  REQUIRE_OK(testing::PutInventory(*c.client, *inventory));
  REQUIRE_OK(testing::RenewPluginLease(*c.client, "xpu-dra", "n1", 3600));
  const std::string config = c.sim->dir() + "/config.yaml";
  SwapConfig(config, "vendorClasses: true\n");  // no publishing.mode
  const auto attributes = [&] { return ModePoolOf(*c.client, "n1") == ModePool{8, 0}; };
  const auto groups = [&] {
    const ModePool p = ModePoolOf(*c.client, "n1");
    return p.singles == 8 && p.groups > 0;
  };

  // 1.35: counters are alpha and off by default there, so attributes.
  auto controller = StartModeController(c, config, "1.35", "controller-135.log");
  REQUIRE(Eventually(attributes));
  controller->Stop();

  // 1.36: groups, for the same file.
  controller = StartModeController(c, config, "1.36", "controller-136.log");
  REQUIRE(Eventually(groups));
  // A reload that sets the mode wins over the version's default, and one that drops it again
  // gives the default back.
  SwapConfig(config, "publishing: {mode: attributes}\n");
  REQUIRE(Eventually(attributes));
  SwapConfig(config, "publishing: {groupSizes: [2, 4, 8]}\n");
  REQUIRE(Eventually(groups));
  controller->Stop();
  std::ifstream log(c.sim->dir() + "/controller-136.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("mode groups (publishing.mode unset: the default for server minor 36)") !=
        std::string::npos);
  CHECK(text.find("reloaded, mode attributes (publishing.mode)") != std::string::npos);
}

}  // namespace
}  // namespace xpu::controller
