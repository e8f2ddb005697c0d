// MIG instances created at prepare (docs/partitions.md): the driver on the hgx-h200-mig fixture,
// its GPU instances made and destroyed through the real NVML backend and dlopen path, answered by
// the fake NVML, whose changes outlive each driver in a state file. The crash trials (prepare and
// unprepare) and the reboot are those of partitions_test.cc: no orphan GPU instance, none made
// twice, and the CDI spec naming the MIG device that exists.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/partition_node.h"

namespace xpu::plugin {
namespace {

const discovery::PartitionParent kGpu0{"gpu-0", "0000:13:00.0", 0};

struct MigNode : testing::PartitionNode {
  MigNode()
      : PartitionNode("hgx-h200-mig", "XPU_FAKE_NVML_JSON", "nvml.json", "XPU_FAKE_NVML_STATE",
                      "gpu", &discovery::OpenNvmlPartitions) {
    Rediscover();
  }
  size_t Held() const { return Slots().size(); }  // for CrashTrials: gpu-0's GPU instances
  // The first slots of gpu-0's GPU instances now.
  std::multiset<int64_t> Slots() const {
    std::multiset<int64_t> out;
    for (const auto& l : Live(kGpu0)) out.insert(l.placement.value_or(-1));
    return out;
  }
};

// Once settled: every record is a prepared claim's Created one whose spec names its MIG device,
// and gpu-0's GPU instances are exactly the recorded ones.
void CheckAgreement(MigNode& node, Driver& driver) {
  const std::multiset<int64_t> recorded = SettledRecords(
      node, driver,
      [](const checkpoint::Partition& p) { return "NVIDIA_VISIBLE_DEVICES=" + p.uuid; },
      [](const checkpoint::Partition& p) { return p.placement; });
  CHECK(node.Slots() == recorded);  // none orphaned, none made twice
}

TEST_CASE("driver (MIG): prepare creates the GPU instance at its slot, unprepare destroys it") {
  MigNode node;
  auto driver = node.Started();
  CHECK(node.Slots().empty());
  const std::string a = node.Prepared(*driver, "a", {"gpu-0-1g-18gb-6"});
  const std::vector<discovery::LivePartition> live = node.Live(kGpu0);
  REQUIRE(live.size() == 1);
  CHECK(live[0].profile == "1g.18gb");
  CHECK(live[0].placement == 6);
  CHECK(live[0].uuid.starts_with("MIG-"));
  const checkpoint::Checkpoint cp = driver->Snapshot();
  REQUIRE(cp.partitions.size() == 1);
  CHECK(cp.partitions[0].state == checkpoint::kPartitionCreated);
  CHECK(cp.partitions[0].placement == 6);
  CHECK(cp.partitions[0].id == live[0].id);
  CHECK(cp.partitions[0].uuid == live[0].uuid);
  CHECK_THAT(node.Spec(a), Catch::Contains("NVIDIA_VISIBLE_DEVICES=" + live[0].uuid));
  CHECK(driver->stats().partitions_created == 1);
  REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.Slots().empty());
  CHECK(driver->Snapshot().partitions.empty());
  CHECK(driver->stats().partitions_destroyed == 1);
}

TEST_CASE("driver (MIG): SIGKILL at each step of prepare and unprepare, restart, the retry") {
  testing::AllCrashTrials<MigNode>({"partition-intent", "partition-created", "partition-recorded"},
                                   "gpu-0-1g-18gb-6", CheckAgreement);
}

TEST_CASE("driver (MIG): the fallback layout goes to the free placements") {
  MigNode node;
  auto driver = node.Started();
  const auto layout = ParsePartitionLayout("1g.18gb*7", "--partition-layout");
  REQUIRE_OK(layout);
  REQUIRE(driver->ApplyPartitionLayout(*layout) > 0);
  CHECK(node.Slots() == std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6});  // gpu-0 had none
  CHECK(driver->ApplyPartitionLayout(*layout) == 0);
}

TEST_CASE("driver (MIG): after a reboot the GPU instance is made again and the spec follows") {
  MigNode node;
  std::string before;
  const std::string a = PreparedThenRebooted(node, "gpu-0-1g-18gb-6",
                                             [&](Driver& driver, const std::string& /*uid*/) {
                                               before = driver.Snapshot().partitions.at(0).uuid;
                                             });
  CHECK(node.Slots().empty());
  auto driver = node.Started();
  const std::vector<discovery::LivePartition> live = node.Live(kGpu0);
  REQUIRE(live.size() == 1);
  CHECK(live[0].placement == 6);
  REQUIRE(live[0].uuid != before);  // a new MIG device
  CHECK(driver->Snapshot().partitions.at(0).uuid == live[0].uuid);
  CHECK_THAT(node.Spec(a),
             Catch::Contains("NVIDIA_VISIBLE_DEVICES=" + live[0].uuid) && !Catch::Contains(before));
  CHECK_THAT(driver->Snapshot().claims.at(a).cdi_spec, !Catch::Contains(before));
  CheckAgreement(node, *driver);
  CHECK(driver->stats().partitions_created == 1);
}

}  // namespace
}  // namespace xpu::plugin
