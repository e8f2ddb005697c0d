// Hardware discovery of the 16-device fixture hosts (budget: 50 ms per discovery): the whole
// sysfs walk, version files, server model and NIC pairing, and validation of the inventory.
// Vendor libraries are not probed (the fixtures' fake libraries are not loaded here).
#include <benchmark/benchmark.h>

#include <string>

#include "kubeletplugin/discovery/discovery.h"

namespace xpu::bench {
namespace {

void BM_Discover(benchmark::State& state, const std::string& host) {
  discovery::DiscoveryOptions options;
  options.host_root = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/" + host;
  options.node_name = "bench";
  options.now = "2026-01-01T00:00:00Z";
  options.probe_vendor_libraries = false;
  for (auto _ : state) {
    StatusOr<api::NodeInventory> inventory = discovery::Discover(options);
    if (!inventory.ok() || inventory->status.devices.size() != 16) {
      state.SkipWithError("discovery failed");
      return;
    }
    benchmark::DoNotOptimize(inventory);
  }
}

BENCHMARK_CAPTURE(BM_Discover, atlas200t_a2_box16, std::string("atlas200t-a2-box16"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Discover, atlas800t_a3, std::string("atlas800t-a3"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xpu::bench

BENCHMARK_MAIN();
