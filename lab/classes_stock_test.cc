// The controller's DeviceClasses (controller/device_classes.h) on a MIG node's slices, through the
// stock allocator (the upstream tier): its CEL, evaluated by upstream's own code, selects
// partitions by kind and never a partition for a whole-device class, and the counters make whole
// and partitioned use of a GPU exclude each other.
#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "api/resource.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "controller/config.h"
#include "controller/device_classes.h"
#include "controller/reference_servers.h"
#include "controller/slices.h"
#include "lab/stock_allocator.h"
#include "lab/testing/stock.h"

namespace xpu::lab {
namespace {

using nlohmann::json;
using Picked = std::optional<std::vector<std::string>>;

constexpr const char* kMigNode = "n1";

// The default config and a capability class without any filter: before partition devices were
// kept out of whole-device classes explicitly, it selected them too.
controller::Config ConfigWithAnyClass() {
  controller::Config config = controller::DefaultConfig();
  controller::CapabilityClass any;
  any.name = "any-accelerator";
  config.capability_classes.push_back(any);
  REQUIRE_OK(controller::ValidateConfig(config));
  return config;
}

// The reference HGX H200 with MIG on gpu-0 and gpu-1, its slices as the controller writes them.
json MigSlices(const controller::Config& config) {
  const controller::ReferenceServer* server = controller::FindReferenceServer("hgx-h200");
  REQUIRE(server != nullptr);
  api::NodeInventory inventory = server->inventory;
  inventory.status.devices.at(0).partitioning = api::testing::H200MigPartitioning();
  inventory.status.devices.at(1).partitioning = api::testing::H200MigPartitioning();
  REQUIRE_OK(api::ValidateNodeInventory(inventory));
  const controller::NodeFacts node{kMigNode, "uid-1", {}};
  auto pool = controller::BuildPool(inventory, node, config, controller::PublishOptions{});
  REQUIRE_OK(pool);
  json slices = json::array();
  for (const auto& slice : controller::SliceObjects(*pool, node, "xpu.dra.dev", 1)) {
    slices.push_back(api::resource::ToJson(slice));
  }
  return slices;
}

std::unique_ptr<StockAllocator> StartedWithClasses() {
  std::unique_ptr<StockAllocator> stock = testing::StartStockAllocator();
  const controller::Config config = ConfigWithAnyClass();
  json classes = json::array();
  for (const auto& c : controller::DesiredDeviceClasses(config, "xpu.dra.dev")) {
    classes.push_back(api::resource::ToJson(c));
  }
  REQUIRE_OK(stock->SetClasses(classes));
  REQUIRE_OK(stock->PutSlices(kMigNode, MigSlices(config)));
  return stock;
}

// A claim with one request of `device_class`: `count` devices (0: allocationMode All), narrowed
// by the CEL `selector` when given.
json ClassClaim(const std::string& device_class, int count, const std::string& selector = "") {
  json exactly = {{"deviceClassName", device_class}};
  if (count > 0) {
    exactly["allocationMode"] = "ExactCount";
    exactly["count"] = count;
  } else {
    exactly["allocationMode"] = "All";
  }
  if (!selector.empty()) {
    exactly["selectors"] = json::array({{{"cel", {{"expression", selector}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "c"}, {"namespace", "default"}}},
          {"spec",
           {{"devices", {{"requests", json::array({{{"name", "r"}, {"exactly", exactly}}})}}}}}};
}

Picked AllocateOnMig(StockAllocator& stock, const json& claim,
                     const std::vector<std::string>& allocated = {}) {
  std::vector<std::string> ids;
  for (const auto& d : allocated) ids.push_back("xpu.dra.dev/" + std::string(kMigNode) + "/" + d);
  StatusOr<Picked> devices = stock.Allocate(kMigNode, kMigNode, ids, claim);
  REQUIRE_OK(devices);
  return *devices;
}

const std::string kXpuAttributes = "device.attributes['xpu.dra.dev']";

std::vector<std::string> AllGpus() {
  std::vector<std::string> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back("gpu-" + std::to_string(i));
  return gpus;
}

TEST_CASE("stock allocator: whole-device classes select the 8 whole GPUs and no partition") {
  const std::unique_ptr<StockAllocator> stock = StartedWithClasses();
  for (const char* klass : {"nvidia.xpu.dra.dev", "any-accelerator", "any-accelerator.nvidia",
                            "training-large-memory", "training-large-memory.nvidia"}) {
    INFO(klass);
    Picked all = AllocateOnMig(*stock, ClassClaim(klass, 0));
    REQUIRE(all.has_value());
    std::sort(all->begin(), all->end());
    CHECK(*all == AllGpus());
  }
}

TEST_CASE("stock allocator: a partition class selects partitions of its kind") {
  const std::unique_ptr<StockAllocator> stock = StartedWithClasses();
  const std::string one_small =
      kXpuAttributes + ".profile == '1g.18gb' && " + kXpuAttributes + ".parent == 'gpu-0'";
  // Highest placement first (controller/partitions.h).
  CHECK(AllocateOnMig(*stock, ClassClaim("mig.xpu.dra.dev", 1, one_small)) ==
        Picked({"gpu-0-1g-18gb-6"}));
  // Any MIG partition: the first one published.
  const Picked any = AllocateOnMig(*stock, ClassClaim("mig.xpu.dra.dev", 1));
  REQUIRE(any.has_value());
  CHECK(any->at(0).starts_with("gpu-0-"));
  // No vNPU or vHCU here.
  CHECK(AllocateOnMig(*stock, ClassClaim("vnpu.xpu.dra.dev", 1)) == std::nullopt);
  CHECK(AllocateOnMig(*stock, ClassClaim("vhcu.xpu.dra.dev", 1)) == std::nullopt);
  // All seven 1g.18gb placements of one GPU at once: their slots and compute add up to 7 of 7.
  const Picked seven = AllocateOnMig(*stock, ClassClaim("mig.xpu.dra.dev", 7, one_small));
  REQUIRE(seven.has_value());
  CHECK(seven->size() == 7);
}

TEST_CASE("stock allocator: whole and partitioned use of a GPU exclude each other") {
  const std::unique_ptr<StockAllocator> stock = StartedWithClasses();
  const std::string gpu0 = kXpuAttributes + ".index == 0";
  const std::string on_gpu0 = kXpuAttributes + ".parent == 'gpu-0'";
  // With one partition of gpu-0 allocated, gpu-0 whole does not fit; gpu-1 whole does.
  CHECK(AllocateOnMig(*stock, ClassClaim("nvidia.xpu.dra.dev", 1, gpu0), {"gpu-0-1g-18gb-6"}) ==
        std::nullopt);
  CHECK(AllocateOnMig(*stock, ClassClaim("nvidia.xpu.dra.dev", 1, kXpuAttributes + ".index == 1"),
                      {"gpu-0-1g-18gb-6"}) == Picked({"gpu-1"}));
  // The partition's slot is taken: the next 1g.18gb goes to the next placement.
  CHECK(AllocateOnMig(*stock,
                      ClassClaim("mig.xpu.dra.dev", 1,
                                 on_gpu0 + " && " + kXpuAttributes + ".profile == '1g.18gb'"),
                      {"gpu-0-1g-18gb-6"}) == Picked({"gpu-0-1g-18gb-5"}));
  // With gpu-0 whole allocated, no partition of it fits; one of gpu-1 does.
  CHECK(AllocateOnMig(*stock, ClassClaim("mig.xpu.dra.dev", 1, on_gpu0), {"gpu-0"}) ==
        std::nullopt);
  const Picked other = AllocateOnMig(*stock, ClassClaim("mig.xpu.dra.dev", 1), {"gpu-0"});
  REQUIRE(other.has_value());
  CHECK(other->at(0).starts_with("gpu-1-"));
  // Without either allocated, both fit.
  CHECK(AllocateOnMig(*stock, ClassClaim("nvidia.xpu.dra.dev", 1, gpu0)) == Picked({"gpu-0"}));
}

}  // namespace
}  // namespace xpu::lab
