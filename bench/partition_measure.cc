// A measured run: how long prepare takes when it creates a vNPU, against what the vendor call
// itself costs. The driver runs in this process with its claims in memory; the vNPU is made
// through the real DCMI backend and dlopen path by the fake libdcmi.so, told to take
// --create-ms per create (faults.createDelayMs), on the atlas800t-a2-vnpu fixture. Each round
// prepares one claim of a vNPU and one of a whole NPU, then unprepares both.
//
//   partition_measure [--rounds N] [--create-ms MS]
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/client/testing/fake_objects.h"
#include "bench/measure_support.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/fake_claims.h"

namespace {

using xpu::bench::Fail;
using xpu::bench::Ms;
using xpu::bench::Percentile;
namespace res = xpu::api::resource;

constexpr const char* kProgram = "partition_measure";
const std::string kHost = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2-vnpu";

struct Timings {
  std::vector<double> prepare;
  std::vector<double> unprepare;
};

void Print(const std::string& what, const Timings& t) {
  std::cout << std::fixed << std::setprecision(2) << "  " << what << ": prepare p50 "
            << Percentile(t.prepare, 0.5) << " ms, p95 " << Percentile(t.prepare, 0.95)
            << " ms; unprepare p50 " << Percentile(t.unprepare, 0.5) << " ms, p95 "
            << Percentile(t.unprepare, 0.95) << " ms\n";
}

}  // namespace

int main(int argc, char** argv) {
  const auto flags = xpu::bench::FlagValues(argc, argv, {"--rounds", "--create-ms"});
  if (!flags.ok()) {
    return Fail(kProgram, flags.status().message() + " (--rounds N, --create-ms MS)");
  }
  const int rounds = flags->contains("--rounds") ? std::atoi(flags->at("--rounds").c_str()) : 50;
  const int create_ms =
      flags->contains("--create-ms") ? std::atoi(flags->at("--create-ms").c_str()) : 100;
  if (rounds < 1 || create_ms < 0) return Fail(kProgram, "--rounds >= 1, --create-ms >= 0");
  const std::string dir = std::filesystem::temp_directory_path() / "xpu-partition-measure";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/host/dev");
  for (const char* node : {"davinci_manager", "devmm_svm", "hisi_hdc", "dvpp_cmdlist"}) {
    std::ofstream(dir + "/host/dev/" + node);
  }
  nlohmann::json fixture = nlohmann::json::parse(std::ifstream(kHost + "/fake-vendor/dcmi.json"));
  fixture["faults"]["createDelayMs"] = create_ms;
  std::ofstream(dir + "/dcmi.json") << fixture.dump();
  ::setenv("XPU_FAKE_DCMI_JSON", (dir + "/dcmi.json").c_str(), 1);
  ::setenv("XPU_FAKE_DCMI_STATE", (dir + "/dcmi-state.json").c_str(), 1);

  xpu::discovery::DiscoveryOptions discover;
  discover.host_root = kHost;
  discover.vendor_lib_dirs = {XPU_FAKE_LIB_DIR};
  discover.node_name = "n1";
  xpu::StatusOr<xpu::api::NodeInventory> discovered = xpu::discovery::Discover(discover);
  if (!discovered.ok()) return Fail(kProgram, discovered.status().message());
  auto inventory = std::make_shared<const xpu::api::NodeInventory>(*std::move(discovered));

  auto claims = std::make_shared<xpu::api::client::testing::FakeObjects<res::ResourceClaim>>(
      "resourceclaims", true);
  xpu::plugin::DriverOptions options;
  options.node_name = "n1";
  options.host_root = dir + "/host";
  options.cdi_dir = dir + "/cdi";
  options.state_dir = dir + "/state";
  xpu::plugin::Driver driver(
      options, claims, [&inventory] { return inventory; }, [](const std::string&) {});
  auto dcmi = xpu::discovery::OpenDcmiPartitions({XPU_FAKE_LIB_DIR});
  if (!dcmi.ok()) return Fail(kProgram, dcmi.status().message());
  driver.AddPartitionBackend(std::move(dcmi).value());
  if (xpu::Status s = driver.Start(); !s.ok()) return Fail(kProgram, s.message());

  Timings vnpu;
  Timings whole;
  int serial = 0;
  auto round = [&](const std::string& device, Timings& t) -> std::string {
    const std::string name = "c" + std::to_string(serial);
    const std::string uid = xpu::plugin::testing::PutAllocatedClaim(
        *claims, name, "r", "n1", {device}, "5d3b8c1e-0f2a-4b6c-9d7e-100000", 100000 + ++serial);
    auto start = std::chrono::steady_clock::now();
    const std::string error = driver.Prepare({{"default", name, uid}}).at(uid).error;
    t.prepare.push_back(Ms(std::chrono::steady_clock::now() - start));
    if (!error.empty()) return "prepare " + device + ": " + error;
    start = std::chrono::steady_clock::now();
    const std::string undone = driver.Unprepare({{"default", name, uid}}).at(uid).error;
    t.unprepare.push_back(Ms(std::chrono::steady_clock::now() - start));
    return undone.empty() ? "" : "unprepare " + device + ": " + undone;
  };
  for (int i = 0; i < rounds; ++i) {
    for (auto [device, timings] :
         {std::pair{"npu-2-vir05-1c-16g-0", &vnpu}, std::pair{"npu-5", &whole}}) {
      if (std::string error = round(device, *timings); !error.empty()) {
        return Fail(kProgram, error);
      }
    }
  }
  const xpu::plugin::DriverStats stats = driver.stats();
  std::cout << kProgram << ": " << rounds << " rounds, the fake's create cost " << create_ms
            << " ms, " << stats.partitions_created << " vNPUs created and "
            << stats.partitions_destroyed << " destroyed\n";
  Print("vNPU created at prepare", vnpu);
  Print("whole NPU              ", whole);
  std::cout << std::fixed << std::setprecision(2) << "  prepare beyond the vendor call: p50 "
            << Percentile(vnpu.prepare, 0.5) - create_ms << " ms\n";
  std::filesystem::remove_all(dir);
  return 0;
}
