// The driver's logic with its claims read from in-memory objects (api/client/testing/
// fake_objects.h): no server. The disk is a temporary directory. driver_test.cc runs the same
// driver against kube-sim on the fixture host trees.
#include <catch2/catch.hpp>
#include <filesystem>
#include <memory>

#include "api/client/testing/fake_objects.h"
#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/fake_claims.h"

namespace xpu::plugin {
namespace {

namespace res = api::resource;
using api::client::ObjectKey;
using api::client::testing::FakeObjects;
using api::client::testing::FakeVerb;

struct FakeNode {
  xpu::testing::TempDir dir;
  std::shared_ptr<FakeObjects<res::ResourceClaim>> claims =
      std::make_shared<FakeObjects<res::ResourceClaim>>("resourceclaims", true);
  std::shared_ptr<const api::NodeInventory> inventory =
      std::make_shared<api::NodeInventory>(api::testing::ExampleNodeInventory());
  std::vector<std::string> log;

  std::unique_ptr<Driver> NewDriver() {
    DriverOptions o;
    o.node_name = "node-a3-1";
    o.host_root = dir.path() + "/host";
    o.cdi_dir = dir.path() + "/cdi";
    o.state_dir = dir.path() + "/state";
    // The host root is an empty folder: no driver files (driver_test.cc tests them).
    o.driver_files = driverfiles::Policy{driverfiles::Mode::kOff, {}};
    std::filesystem::create_directories(o.host_root);
    return std::make_unique<Driver>(
        o, claims, [this] { return inventory; },
        [this](const std::string& line) { log.push_back(line); });
  }

  // NewDriver(), started.
  std::unique_ptr<Driver> StartedDriver() {
    std::unique_ptr<Driver> driver = NewDriver();
    REQUIRE_OK(driver->Start());
    return driver;
  }

  std::string Claim(const std::string& name, const std::vector<std::string>& devices) {
    return testing::PutAllocatedClaim(*claims, name, "npus", "node-a3-1", devices,
                                      "0b5f1c2e-7d3a-4e6b-9c8d-00000000000", ++uids);
  }
  int uids = 0;
};

TEST_CASE("driver (fakes): prepares from the claim it reads, and checks uid and allocation") {
  FakeNode node;
  auto driver = node.StartedDriver();
  const std::string a = node.Claim("a", {"npu-0"});
  auto out = driver->Prepare({{"default", "a", a}});
  INFO(out.at(a).error);
  REQUIRE(out.at(a).error.empty());
  CHECK(out.at(a).devices.at(0).device == "npu-0");
  CHECK(driver->Snapshot().claims.contains(a));
  const int gets = node.claims->calls(FakeVerb::kGet);

  // Asked again: answered from the checkpoint, without reading the claim.
  CHECK(driver->Prepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.claims->calls(FakeVerb::kGet) == gets);

  // The kubelet names a uid the claim does not have (it was replaced).
  const std::string b = node.Claim("b", {"npu-1"});
  const std::string stale = "0b5f1c2e-7d3a-4e6b-9c8d-0000000000ff";
  CHECK(driver->Prepare({{"default", "b", stale}}).at(stale).error.find("has uid " + b) !=
        std::string::npos);

  // Not allocated.
  res::ResourceClaim unallocated = *node.claims->Find(ObjectKey::Namespaced("default", "b"));
  unallocated.status.allocation.reset();
  node.claims->Put(unallocated);
  CHECK(driver->Prepare({{"default", "b", b}}).at(b).error.find("is not allocated") !=
        std::string::npos);

  // The API does not answer: a retryable error, nothing prepared.
  const std::string c = node.Claim("c", {"npu-1"});
  node.claims->FailNext(FakeVerb::kGet, UnavailableError("get resourceclaims default/c: 503"));
  CHECK(driver->Prepare({{"default", "c", c}}).at(c).error.find("503") != std::string::npos);
  CHECK_FALSE(driver->Snapshot().claims.contains(c));
}

TEST_CASE("driver (fakes): a claim deleted from the API is unprepared, an API error keeps it") {
  FakeNode node;
  auto driver = node.StartedDriver();
  const std::string a = node.Claim("a", {"npu-0"});
  const std::string b = node.Claim("b", {"npu-1"});
  REQUIRE(driver->Prepare({{"default", "a", a}, {"default", "b", b}}).at(b).error.empty());
  REQUIRE(driver->Snapshot().claims.size() == 2);

  REQUIRE_OK(node.claims->Delete(ObjectKey::Namespaced("default", "b"), {}));
  // a's read (entries are checked in uid order: a first) fails: a is kept for the next pass,
  // and the deleted b is still collected.
  node.claims->FailNext(FakeVerb::kGet, UnavailableError("503"));
  REQUIRE_OK(driver->CollectDeletedClaims());
  CHECK(driver->Snapshot().claims.contains(a));
  CHECK_FALSE(driver->Snapshot().claims.contains(b));

  // a replaced by a new claim of the same name (another uid): its entry goes too.
  res::ResourceClaim replaced = *node.claims->Find(ObjectKey::Namespaced("default", "a"));
  replaced.metadata.uid = "0b5f1c2e-7d3a-4e6b-9c8d-0000000000aa";
  node.claims->Put(replaced);
  REQUIRE_OK(driver->CollectDeletedClaims());
  CHECK(driver->Snapshot().claims.empty());
  // Both devices are free again.
  const std::string d = node.Claim("d", {"npu-0", "npu-1"});
  CHECK(driver->Prepare({{"default", "d", d}}).at(d).error.empty());
}

}  // namespace
}  // namespace xpu::plugin
