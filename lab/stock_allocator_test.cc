// The pipe to the stock DRA allocator, against the real binary that scripts/build-upstream builds
// (the upstream tier: a missing binary fails, it does not skip).
#include "lab/stock_allocator.h"

#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "lab/kube_score.h"
#include "lab/testing/stock.h"

namespace xpu::lab {
namespace {

using nlohmann::json;
using Devices = std::optional<std::vector<std::string>>;

json GpuClass() {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "DeviceClass"},
          {"metadata", {{"name", "gpu.example"}}},
          {"spec",
           {{"selectors",
             json::array({{{"cel", {{"expression", "device.driver == 'xpu.dra.dev'"}}}}})}}}};
}

// gpu-0..gpu-3 on node n1, each with its index; `links` adds a string attribute "link" per device.
json Slice(const std::vector<std::string>& links = {}) {
  json devices = json::array();
  for (int i = 0; i < 4; ++i) {
    json attributes = {{"index", {{"int", i}}}};
    if (!links.empty()) attributes["link"] = {{"string", links[static_cast<size_t>(i)]}};
    devices.push_back({{"name", "gpu-" + std::to_string(i)}, {"attributes", attributes}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", "n1-xpu.dra.dev"}}},
          {"spec",
           {{"driver", "xpu.dra.dev"},
            {"pool", {{"name", "n1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"nodeName", "n1"},
            {"devices", devices}}}};
}

json Claim(const json& requests, const json& constraints = json::array()) {
  json devices = {{"requests", requests}};
  if (!constraints.empty()) devices["constraints"] = constraints;
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", "c"}, {"namespace", "default"}}},
          {"spec", {{"devices", devices}}}};
}

json Exactly(int count, const json& selectors = json::array()) {
  json exactly = {
      {"deviceClassName", "gpu.example"}, {"allocationMode", "ExactCount"}, {"count", count}};
  if (!selectors.empty()) exactly["selectors"] = selectors;
  return {{"name", "r"}, {"exactly", exactly}};
}

// The binary started with the class and the slices of Slice() under "n1".
std::unique_ptr<StockAllocator> Started() {
  std::unique_ptr<StockAllocator> stock = testing::StartStockAllocator();
  REQUIRE_OK(stock->SetClasses(json::array({GpuClass()})));
  REQUIRE_OK(stock->PutSlices("n1", json::array({Slice()})));
  return stock;
}

Devices Allocate(StockAllocator& stock, const std::vector<std::string>& allocated,
                 const json& claim, const std::string& key = "n1") {
  StatusOr<Devices> devices = stock.Allocate(key, "n1", allocated, claim);
  REQUIRE_OK(devices);
  return *devices;
}

TEST_CASE("the stock allocator reports the module it runs") {
  const std::unique_ptr<StockAllocator> stock = Started();
  CHECK_THAT(stock->version(), Catch::Contains("k8s.io/dynamic-resource-allocation v"));
}

TEST_CASE("the stock allocator picks devices in slice order around the allocated ones") {
  const std::unique_ptr<StockAllocator> stock = Started();
  const json claim = Claim(json::array({Exactly(2)}));
  CHECK(Allocate(*stock, {}, claim) == Devices({"gpu-0", "gpu-1"}));
  CHECK(Allocate(*stock, {"xpu.dra.dev/n1/gpu-0"}, claim) == Devices({"gpu-1", "gpu-2"}));
  CHECK(Allocate(*stock, {"xpu.dra.dev/n1/gpu-0", "xpu.dra.dev/n1/gpu-1", "xpu.dra.dev/n1/gpu-3"},
                 claim) == std::nullopt);
  // Another node has none of these devices.
  StatusOr<Devices> elsewhere = stock->Allocate("n1", "n2", {}, claim);
  REQUIRE_OK(elsewhere);
  CHECK(*elsewhere == std::nullopt);
  CHECK(stock->requests() == 7);  // version, classes, slices and four allocations
}

TEST_CASE("the stock allocator honours selectors and constraints") {
  const std::unique_ptr<StockAllocator> stock = Started();
  const json high =
      json::array({{{"cel", {{"expression", "device.attributes['xpu.dra.dev'].index >= 2"}}}}});
  CHECK(Allocate(*stock, {}, Claim(json::array({Exactly(2, high)}))) ==
        Devices({"gpu-2", "gpu-3"}));

  // With gpu-0 taken, gpu-1 is the only one left on link a: matchAttribute backtracks to link b.
  REQUIRE_OK(stock->PutSlices("linked", json::array({Slice({"a", "a", "b", "b"})})));
  const json same_link =
      json::array({{{"requests", json::array({"r"})}, {"matchAttribute", "xpu.dra.dev/link"}}});
  CHECK(Allocate(*stock, {"xpu.dra.dev/n1/gpu-0"}, Claim(json::array({Exactly(2)}), same_link),
                 "linked") == Devices({"gpu-2", "gpu-3"}));
}

TEST_CASE("the stock allocator takes the first available subrequest that fits") {
  const std::unique_ptr<StockAllocator> stock = Started();
  const json request = {{"name", "r"},
                        {"firstAvailable", json::array({{{"name", "eight"},
                                                         {"deviceClassName", "gpu.example"},
                                                         {"allocationMode", "ExactCount"},
                                                         {"count", 8}},
                                                        {{"name", "three"},
                                                         {"deviceClassName", "gpu.example"},
                                                         {"allocationMode", "ExactCount"},
                                                         {"count", 3}}})}};
  CHECK(Allocate(*stock, {"xpu.dra.dev/n1/gpu-1"}, Claim(json::array({request}))) ==
        Devices({"gpu-0", "gpu-2", "gpu-3"}));
  // Each result names the subrequest it serves, which DynamicResources scores: index 1, 8 - 1.
  const json claim = Claim(json::array({request}));
  StatusOr<std::optional<std::vector<AllocatedDevice>>> results =
      stock->AllocateResults("n1", "n1", {"xpu.dra.dev/n1/gpu-1"}, claim);
  REQUIRE_OK(results);
  REQUIRE(results->has_value());
  std::vector<std::string> requests;
  for (const AllocatedDevice& d : **results) {
    CHECK(d.driver == "xpu.dra.dev");
    CHECK(d.pool == "n1");
    requests.push_back(d.request);
  }
  CHECK(requests == std::vector<std::string>{"r/three", "r/three", "r/three"});
  CHECK((**results)[1].device == "gpu-2");
  CHECK(PrioritizedListRaw(claim["spec"], requests) == 7);
  // An exactly request is named as it is.
  StatusOr<std::optional<std::vector<AllocatedDevice>>> plain =
      stock->AllocateResults("n1", "n1", {}, Claim(json::array({Exactly(1)})));
  REQUIRE_OK(plain);
  REQUIRE(plain->has_value());
  CHECK(**plain == std::vector<AllocatedDevice>{{"r", "xpu.dra.dev", "n1", "gpu-0"}});
  // Nothing fits: no results.
  StatusOr<std::optional<std::vector<AllocatedDevice>>> none =
      stock->AllocateResults("n1", "n1", {}, Claim(json::array({Exactly(5)})));
  REQUIRE_OK(none);
  CHECK_FALSE(none->has_value());
}

TEST_CASE("the stock allocator answers bad requests with an error and serves on") {
  const std::unique_ptr<StockAllocator> stock = Started();
  const json claim = Claim(json::array({Exactly(1)}));
  const StatusOr<Devices> unknown = stock->Allocate("nowhere", "n1", {}, claim);
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.status().message(), Catch::StartsWith("stock allocator: "));
  CHECK_THAT(unknown.status().message(), Catch::Contains("nowhere"));
  const StatusOr<Devices> malformed = stock->Allocate("n1", "n1", {"gpu-0"}, claim);
  REQUIRE_FALSE(malformed.ok());
  CHECK_THAT(malformed.status().message(), Catch::Contains("gpu-0"));
  CHECK(Allocate(*stock, {}, claim) == Devices({"gpu-0"}));
}

TEST_CASE("FindStockAllocator names a flag that is not an executable") {
  const StatusOr<std::string> found = FindStockAllocator("/nonexistent/x");
  REQUIRE_FALSE(found.ok());
  CHECK_THAT(found.status().message(), Catch::Contains("/nonexistent/x"));
  CHECK_THAT(found.status().message(), Catch::Contains("scripts/build-upstream"));
}

TEST_CASE("a stock allocator that exits at once fails to start with its exit status") {
  const StatusOr<std::unique_ptr<StockAllocator>> stock = StockAllocator::Start("/bin/true");
  REQUIRE_FALSE(stock.ok());
  CHECK_THAT(stock.status().message(), Catch::Contains("/bin/true"));
  CHECK_THAT(stock.status().message(), Catch::Contains("exit status 0"));
}

}  // namespace
}  // namespace xpu::lab
