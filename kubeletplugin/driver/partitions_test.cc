// Partitions created at prepare (docs/partitions.md): the driver on the atlas800t-a2-vnpu fixture,
// its vNPUs made and destroyed through the real DCMI backend and dlopen path, answered by the fake
// DCMI, whose changes outlive each driver in a state file. Crash trials fork a child that prepares
// or unprepares with $XPU_DRA_CRASH_AT set, so it is SIGKILLed at that step; a new driver then
// starts on the same disk and the kubelet's retry runs, and the device, the checkpoint and the CDI
// specs must agree: no orphan vNPU, none made twice.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/partition_node.h"

namespace xpu::plugin {
namespace {

// The atlas800t-a2-vnpu node, its vNPUs through the real DCMI backend.
struct VnpuNode : testing::PartitionNode {
  VnpuNode()
      : PartitionNode("atlas800t-a2-vnpu", "XPU_FAKE_DCMI_JSON", "dcmi.json", "XPU_FAKE_DCMI_STATE",
                      "vnpu", &discovery::OpenDcmiPartitions) {
    for (const char* node : {"davinci_manager", "devmm_svm", "hisi_hdc", "dvpp_cmdlist"}) {
      std::ofstream(dir.path() + "/host/dev/" + node);
    }
    Rediscover();
  }

  size_t Held() const { return Live(2).size(); }  // for CrashTrials: npu-2's vNPUs
  // The vdev ids on an NPU now, as DCMI lists them.
  std::vector<int64_t> Live(int64_t npu) const { return LiveIds("npu", npu); }
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

// What must hold once the node has settled: every vNPU on npu-2 belongs to a prepared claim's
// Created record, every record's vNPU exists, and each prepared claim's spec names its vNPU.
void CheckAgreement(VnpuNode& node, Driver& driver) {
  const std::multiset<int64_t> recorded = SettledRecords(
      node, driver,
      [](const checkpoint::Partition& p) {
        return "ASCEND_VISIBLE_DEVICES=" + std::to_string(p.id);
      },
      [](const checkpoint::Partition& p) { return p.id; });
  const std::vector<int64_t> live = node.Live(2);
  CHECK(std::multiset<int64_t>(live.begin(), live.end()) == recorded);  // none made twice
}

TEST_CASE("driver (vNPU): SIGKILL at each step of prepare and unprepare, restart, the retry") {
  testing::AllCrashTrials<VnpuNode>(testing::kPreparePoints, "npu-2-vir05-1c-16g-0",
                                    CheckAgreement);
}

TEST_CASE("driver (vNPU): the fallback layout is made at start, once, and handed out as static") {
  VnpuNode node;
  auto driver = node.Started();
  const auto layout = ParsePartitionLayout("vir05_1c_16g*2,vir99*1", "--partition-layout");
  REQUIRE_OK(layout);
  // npu-1 has its two already; npu-3 holds a vir10_3c_32g and still fits two; vir99 is no
  // template of the 910B3 and is skipped.
  CHECK(driver->ApplyPartitionLayout(*layout) == 14);
  for (int64_t npu = 0; npu < 8; ++npu) {
    INFO(npu);
    CHECK(node.Live(npu).size() == (npu == 3 ? 3U : 2U));
  }
  CHECK(driver->ApplyPartitionLayout(*layout) == 0);  // what exists counts
  CHECK(driver->Snapshot().partitions.empty());       // no claim owns them
  // Rediscovered, they are existing partitions: a claim gets one as it is, and its unprepare
  // leaves it.
  node.Rediscover();
  auto again = node.Started();
  const std::string a = node.Prepared(*again, "a", {"npu-0-vir05-1c-16g-1"});
  CHECK(again->Snapshot().partitions.at(0).state == checkpoint::kPartitionStatic);
  REQUIRE(again->Unprepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.Live(0).size() == 2);
  CHECK(ParsePartitionLayout("", "--partition-layout").status().message() ==
        "--partition-layout: empty");
  CHECK_FALSE(ParsePartitionLayout("a*65", "--partition-layout").ok());
  CHECK_FALSE(ParsePartitionLayout("a*2x", "--partition-layout").ok());
  CHECK(ParsePartitionLayout("a,b*3", "--partition-layout").value() ==
        std::vector<PartitionLayoutEntry>{{"a", 1}, {"b", 3}});
}

TEST_CASE("driver (vNPU): after a reboot the prepared claim's vNPU is made again, same id") {
  VnpuNode node;
  const std::string spec = testing::RebootTrial(node, "npu-2-vir10-3c-32g-1", CheckAgreement);
  CHECK_THAT(spec, Catch::Contains("ASCEND_VISIBLE_DEVICES=132"));
  CHECK(node.Live(2) == std::vector<int64_t>{132});
}

}  // namespace
}  // namespace xpu::plugin
