// Partitions created at prepare (docs/partitions.md): the driver on the atlas800t-a2-vnpu fixture,
// its vNPUs made and destroyed through the real DCMI backend and dlopen path, answered by the fake
// DCMI, whose changes outlive each driver in a state file. Crash trials fork a child that prepares
// or unprepares with $XPU_DRA_CRASH_AT set, so it is SIGKILLed at that step; a new driver then
// starts on the same disk and the kubelet's retry runs, and the device, the checkpoint and the CDI
// specs must agree: no orphan vNPU, none made twice.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/client/testing/fake_objects.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/fake_claims.h"

namespace xpu::plugin {
namespace {

namespace res = api::resource;
using api::client::ObjectKey;
using api::client::testing::FakeObjects;

const std::string kHost = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2-vnpu";
const std::string kFakeLibDir = XPU_FAKE_LIB_DIR;
constexpr const char* kNode = "n1";

// A node: the fixture's devices, a disk of its own, and the fake DCMI's state file.
struct VnpuNode {
  xpu::testing::TempDir dir;
  std::shared_ptr<FakeObjects<res::ResourceClaim>> claims =
      std::make_shared<FakeObjects<res::ResourceClaim>>("resourceclaims", true);
  std::shared_ptr<const api::NodeInventory> inventory;
  std::vector<std::string> log;
  int uids = 0;

  VnpuNode() {
    ::setenv("XPU_FAKE_DCMI_JSON", (kHost + "/fake-vendor/dcmi.json").c_str(), 1);
    ::setenv("XPU_FAKE_DCMI_STATE", (dir.path() + "/dcmi-state.json").c_str(), 1);
    ::unsetenv("XPU_DRA_CRASH_AT");
    std::filesystem::create_directories(dir.path() + "/host/proc/sys/kernel/random");
    std::filesystem::create_directories(dir.path() + "/host/dev");
    for (const char* node : {"davinci_manager", "devmm_svm", "hisi_hdc", "dvpp_cmdlist"}) {
      std::ofstream(dir.path() + "/host/dev/" + node);
    }
    Boot("1b4e28ba-2fa1-41d2-883f-0016d3cca427");
    Rediscover();
  }
  ~VnpuNode() { ::unsetenv("XPU_FAKE_DCMI_STATE"); }
  VnpuNode(const VnpuNode&) = delete;
  VnpuNode& operator=(const VnpuNode&) = delete;

  void Boot(const std::string& id) const {
    std::ofstream(dir.path() + "/host/proc/sys/kernel/random/boot_id") << id << "\n";
  }
  // A reboot: the vNPUs made since the fixture are gone, and the boot id is new.
  void Reboot() const {
    std::filesystem::remove(dir.path() + "/dcmi-state.json");
    Boot("9a1c0d2e-3f4b-4c5d-8e6f-7a8b9c0d1e2f");
  }

  void Rediscover() {
    discovery::DiscoveryOptions o;
    o.host_root = kHost;
    o.vendor_lib_dirs = {kFakeLibDir};
    o.node_name = kNode;
    StatusOr<api::NodeInventory> inv = discovery::Discover(o);
    REQUIRE(inv.ok());
    inventory = std::make_shared<const api::NodeInventory>(*std::move(inv));
  }

  std::unique_ptr<Driver> NewDriver() {
    DriverOptions o;
    o.node_name = kNode;
    o.host_root = dir.path() + "/host";
    o.cdi_dir = dir.path() + "/cdi";
    o.state_dir = dir.path() + "/state";
    auto driver = std::make_unique<Driver>(
        o, claims, [this] { return inventory; },
        [this](const std::string& line) { log.push_back(line); });
    StatusOr<std::unique_ptr<discovery::PartitionBackend>> dcmi =
        discovery::OpenDcmiPartitions({kFakeLibDir});
    REQUIRE(dcmi.ok());
    driver->AddPartitionBackend(std::move(dcmi).value());
    return driver;
  }

  // A new driver, started (its reconciliation done).
  std::unique_ptr<Driver> Started() {
    std::unique_ptr<Driver> driver = NewDriver();
    const Status started = driver->Start();
    INFO(started.ToString());
    REQUIRE(started.ok());
    return driver;
  }

  // A claim of `devices`, prepared by `driver` without error; its uid.
  std::string Prepared(Driver& driver, const std::string& name,
                       const std::vector<std::string>& devices) {
    std::string uid = Claim(name, devices);
    const std::string error = driver.Prepare({{"default", name, uid}}).at(uid).error;
    INFO(error);
    REQUIRE(error.empty());
    return uid;
  }

  std::string Claim(const std::string& name, const std::vector<std::string>& devices) {
    return testing::PutAllocatedClaim(*claims, name, "vnpu", kNode, devices,
                                      "7c9e6679-7425-40de-944b-e07fc1f9000", ++uids);
  }

  // The vdev ids on an NPU now, as DCMI lists them.
  std::vector<int64_t> Live(int64_t npu) const {
    auto dcmi = discovery::OpenDcmiPartitions({kFakeLibDir});
    REQUIRE(dcmi.ok());
    StatusOr<std::vector<discovery::LivePartition>> live =
        (*dcmi)->List({"npu-" + std::to_string(npu), "", npu});
    REQUIRE(live.ok());
    std::vector<int64_t> ids;
    for (const auto& l : *live) ids.push_back(l.id);
    return ids;
  }

  std::string Spec(const std::string& uid) const {
    std::ifstream in(dir.path() + "/cdi/k8s.xpu.dra.dev-device_" + uid + ".json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST_CASE("driver (vNPU): prepare creates the vNPU, the container gets it, unprepare destroys it") {
  VnpuNode node;
  auto driver = node.Started();
  CHECK(node.Live(2).empty());
  const std::string a = node.Claim("a", {"npu-2-vir05-1c-16g-3"});
  const auto out = driver->Prepare({{"default", "a", a}});
  INFO(out.at(a).error);
  REQUIRE(out.at(a).error.empty());
  // Its id is the first of npu-2's sixteen: 100 + 16 * 2.
  CHECK(node.Live(2) == std::vector<int64_t>{132});
  const checkpoint::Checkpoint cp = driver->Snapshot();
  REQUIRE(cp.partitions.size() == 1);
  CHECK(cp.partitions[0].state == checkpoint::kPartitionCreated);
  CHECK(cp.partitions[0].id == 132);
  CHECK(cp.partitions[0].instance == 3);
  const std::string spec = node.Spec(a);
  CHECK_THAT(spec, Catch::Contains("ASCEND_VISIBLE_DEVICES=132"));
  CHECK_THAT(spec, Catch::Contains("/dev/vdavinci132"));
  CHECK_THAT(spec, Catch::Contains("/dev/davinci_manager"));
  CHECK(driver->stats().partitions_created == 1);

  // Discovery now sees vNPU 132 on npu-2; pinned, it keeps instance 3 (discovery alone numbers
  // it 0), so the published name stays the one the claim holds.
  node.Rediscover();
  api::NodeInventory pinned = *node.inventory;
  CHECK(pinned.status.devices[2].partitioning->partitions.at(0).instance == 0);
  PinPartitions(driver->PartitionRecords(), &pinned);
  CHECK(pinned.status.devices[2].partitioning->partitions.at(0).instance == 3);
  CHECK(api::ValidateNodeInventory(pinned).ok());

  // Another claim for the same device is refused; a second vNPU on npu-2 gets the next id.
  const std::string b = node.Claim("b", {"npu-2-vir05-1c-16g-3"});
  CHECK_THAT(
      driver->Prepare({{"default", "b", b}}).at(b).error,
      Catch::Contains("already prepared for claim " + a) || Catch::Contains("held by claim " + a));
  const std::string c = node.Prepared(*driver, "c", {"npu-2-vir10-3c-32g-1"});
  CHECK(node.Live(2) == std::vector<int64_t>{132, 133});

  REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.Live(2) == std::vector<int64_t>{133});
  REQUIRE(driver->Unprepare({{"default", "c", c}}).at(c).error.empty());
  CHECK(node.Live(2).empty());
  CHECK(driver->Snapshot().partitions.empty());
  CHECK(driver->stats().partitions_destroyed == 2);
}

TEST_CASE("driver (vNPU): a vNPU that exists is handed over as it is and never destroyed") {
  VnpuNode node;
  auto driver = node.Started();
  // npu-1 has the fixture's vNPUs 100 and 101 (vir05_1c_16g, instances 0 and 1).
  const std::string a = node.Prepared(*driver, "a", {"npu-1-vir05-1c-16g-1"});
  CHECK_THAT(node.Spec(a), Catch::Contains("ASCEND_VISIBLE_DEVICES=101"));
  CHECK(driver->Snapshot().partitions.at(0).state == checkpoint::kPartitionStatic);
  REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.Live(1) == std::vector<int64_t>{100, 101});
  CHECK(driver->stats().partitions_created == 0);
}

TEST_CASE("driver (vNPU): a create the device refuses fails the claim and leaves nothing") {
  VnpuNode node;
  auto driver = node.Started();
  // npu-3 holds a vir10_3c_32g (10 of 20 AI Cores); a takes 5 more; b asks for two vir05 and
  // only one fits. The scheduler would not allocate that; a stale allocation, or another user
  // of the device, can still ask.
  const std::string a = node.Prepared(*driver, "a", {"npu-3-vir05-1c-16g-0"});
  const std::string b = node.Claim("b", {"npu-3-vir05-1c-16g-1", "npu-3-vir05-1c-16g-2"});
  const std::string error = driver->Prepare({{"default", "b", b}}).at(b).error;
  CHECK_THAT(error, Catch::Contains("ResourceClaim default/b: device npu-3-vir05-1c-16g-2: create "
                                    "vnpu vir05_1c_16g") &&
                        Catch::Contains("-8020 resource occupied"));
  // The first of b's two vNPUs, made before the second failed, is taken back.
  CHECK(node.Live(3) == std::vector<int64_t>{102, 148});
  CHECK(driver->Snapshot().partitions.size() == 1);
  CHECK_FALSE(driver->Snapshot().claims.contains(b));
  CHECK(driver->stats().partition_errors == 1);
}

// Runs `step` in a child that is SIGKILLed at `point`; true when it was.
template <typename Step>
bool KilledAt(const char* point, Step step) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("XPU_DRA_CRASH_AT", point, 1);
    step();
    ::_exit(0);  // the point was never reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// What must hold once the node has settled: every vNPU on npu-2 belongs to a prepared claim's
// Created record, every record's vNPU exists, and each prepared claim's spec names its vNPU.
void CheckAgreement(VnpuNode& node, Driver& driver) {
  const checkpoint::Checkpoint cp = driver.Snapshot();
  std::set<int64_t> recorded;
  for (const checkpoint::Partition& p : cp.partitions) {
    INFO(p.device << " " << p.state);
    CHECK(p.state == checkpoint::kPartitionCreated);
    REQUIRE(cp.claims.contains(p.claim_uid));
    CHECK_THAT(node.Spec(p.claim_uid),
               Catch::Contains("ASCEND_VISIBLE_DEVICES=" + std::to_string(p.id)));
    recorded.insert(p.id);
  }
  const std::vector<int64_t> live = node.Live(2);
  CHECK(std::set<int64_t>(live.begin(), live.end()) == recorded);
  CHECK(live.size() == recorded.size());  // none made twice
}

TEST_CASE("driver (vNPU): SIGKILL at every step of prepare, then restart and the kubelet's retry") {
  for (const char* point : {"partition-intent", "partition-created", "partition-recorded",
                            "prepare-after-cdi", "prepare-after-checkpoint"}) {
    DYNAMIC_SECTION(point) {
      VnpuNode node;
      const std::string a = node.Claim("a", {"npu-2-vir05-1c-16g-0"});
      { auto driver = node.Started(); }
      CHECK(KilledAt(point, [&] {
        auto driver = node.NewDriver();
        if (driver->Start().ok()) (void)driver->Prepare({{"default", "a", a}});
      }));
      node.Rediscover();
      auto driver = node.Started();
      CheckAgreement(node, *driver);  // after the restart, before the retry
      const auto retry = driver->Prepare({{"default", "a", a}});
      INFO(retry.at(a).error);
      REQUIRE(retry.at(a).error.empty());
      CheckAgreement(node, *driver);
      CHECK(node.Live(2).size() == 1);
      REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
      CHECK(node.Live(2).empty());
    }
  }
}

TEST_CASE("driver (vNPU): SIGKILL at every step of unprepare, then restart and the retry") {
  for (const char* point : {"unprepare-after-cdi", "partition-destroying", "partition-destroyed",
                            "unprepare-after-checkpoint"}) {
    DYNAMIC_SECTION(point) {
      VnpuNode node;
      const std::string a = node.Claim("a", {"npu-2-vir05-1c-16g-0"});
      {
        auto driver = node.Started();
        REQUIRE(driver->Prepare({{"default", "a", a}}).at(a).error.empty());
      }
      node.Rediscover();
      CHECK(KilledAt(point, [&] {
        auto driver = node.NewDriver();
        if (driver->Start().ok()) (void)driver->Unprepare({{"default", "a", a}});
      }));
      auto driver = node.Started();
      CheckAgreement(node, *driver);
      REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
      CHECK(node.Live(2).empty());
      CHECK(driver->Snapshot().partitions.empty());
    }
  }
}

TEST_CASE("driver (vNPU): after a reboot the prepared claim's vNPU is made again, same id") {
  VnpuNode node;
  const std::string a = node.Claim("a", {"npu-2-vir10-3c-32g-1"});
  std::string spec;
  {
    auto driver = node.Started();
    REQUIRE(driver->Prepare({{"default", "a", a}}).at(a).error.empty());
    spec = node.Spec(a);
  }
  node.Reboot();
  std::filesystem::remove_all(node.dir.path() + "/cdi");  // tmpfs on most nodes
  CHECK(node.Live(2).empty());
  auto driver = node.Started();
  CHECK(node.Live(2) == std::vector<int64_t>{132});
  CHECK(node.Spec(a) == spec);
  CheckAgreement(node, *driver);
  CHECK(driver->stats().partitions_created == 1);
}

}  // namespace
}  // namespace xpu::plugin
