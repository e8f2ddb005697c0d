// vHCUs created at prepare (docs/partitions.md): the driver on the hygon-dcu-8-vhcu fixture, its
// vHCUs made and destroyed through the real DMI backend and dlopen path, answered by the fake
// DMI, whose changes outlive each driver in a state file. DMI picks a vHCU's id itself, so the
// intent records the ids already on the device, and a create that crashed before its id was
// recorded is found as the one of its size that was not there. The crash trials and the reboot
// are those of partitions_test.cc: no orphan vHCU, none made twice, and the CDI spec naming the
// vHCU's conf file.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/partition_node.h"

namespace xpu::plugin {
namespace {

struct VhcuNode : testing::PartitionNode {
  VhcuNode()
      : PartitionNode("hygon-dcu-8-vhcu", "XPU_FAKE_HYDMI_JSON", "hydmi.json",
                      "XPU_FAKE_HYDMI_STATE", "dcu", &discovery::OpenHydmiPartitions) {
    for (const char* node : {"kfd", "mkfd"}) {
      std::ofstream(dir.path() + "/host/dev/" + node);
    }
    Rediscover();
  }
  ~VhcuNode() { ::unsetenv("XPU_FAKE_HYDMI_JSON"); }
  VhcuNode(const VhcuNode&) = delete;
  VhcuNode& operator=(const VhcuNode&) = delete;

  size_t Held() const { return Live(0).size(); }  // for CrashTrials: dcu-0's vHCUs
  // The vdev ids on a DCU now, as DMI lists them.
  std::vector<int64_t> Live(int64_t dcu) const { return LiveIds("dcu", dcu); }
};

std::string ConfMount(int64_t id) { return "/etc/vdev/vdev" + std::to_string(id) + ".conf"; }

// Once settled: every record is a prepared claim's Created one whose spec mounts its conf file,
// and dcu-0's vHCUs are exactly the recorded ones.
void CheckAgreement(VhcuNode& node, Driver& driver) {
  const std::multiset<int64_t> recorded = SettledRecords(
      node, driver, [](const checkpoint::Partition& p) { return ConfMount(p.id); },
      [](const checkpoint::Partition& p) { return p.id; });
  const std::vector<int64_t> live = node.Live(0);
  CHECK(std::multiset<int64_t>(live.begin(), live.end()) == recorded);  // none made twice
}

TEST_CASE("driver (vHCU): prepare creates the vHCU, the container gets it, unprepare destroys it") {
  VhcuNode node;
  auto driver = node.Started();
  CHECK(node.Live(0).empty());
  const std::string a = node.Prepared(*driver, "a", {"dcu-0-40cu-32gb-1"});
  // DMI gave the lowest free id of the node: the fixture's vHCUs hold 0-2.
  CHECK(node.Live(0) == std::vector<int64_t>{3});
  const checkpoint::Checkpoint cp = driver->Snapshot();
  REQUIRE(cp.partitions.size() == 1);
  CHECK(cp.partitions[0].state == checkpoint::kPartitionCreated);
  CHECK(cp.partitions[0].id == 3);
  CHECK(cp.partitions[0].ids_before.empty());
  const std::string spec = node.Spec(a);
  CHECK_THAT(spec, Catch::Contains("\"hostPath\": \"/etc/vdev/vdev3.conf\"") &&
                       Catch::Contains("\"containerPath\": \"/etc/vdev/docker/vdev3.conf\""));
  CHECK_THAT(spec, Catch::Contains("/dev/kfd") && Catch::Contains("/dev/mkfd"));
  CHECK_THAT(spec, Catch::Contains("HIP_VISIBLE_DEVICES=0"));

  // The whole DCU 2 holds two vHCUs of the fixture: a quarter of it is still free, a half is
  // refused by DMI (its compute units are taken) and the claim fails with nothing left behind.
  const std::string b = node.Prepared(*driver, "b", {"dcu-2-20cu-16gb-2"});
  CHECK(node.Live(2) == std::vector<int64_t>{0, 1, 4});
  const std::string c = node.Claim("c", {"dcu-2-40cu-32gb-0"});
  CHECK_THAT(driver->Prepare({{"default", "c", c}}).at(c).error,
             Catch::Contains("create vhcu 40cu.32gb") && Catch::Contains("out of resources"));
  CHECK(node.Live(2) == std::vector<int64_t>{0, 1, 4});

  REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
  REQUIRE(driver->Unprepare({{"default", "b", b}}).at(b).error.empty());
  CHECK(node.Live(0).empty());
  CHECK(node.Live(2) == std::vector<int64_t>{0, 1});  // the fixture's own are left alone
  CHECK(driver->Snapshot().partitions.empty());
  CHECK(driver->stats().partitions_created == 2);
  CHECK(driver->stats().partitions_destroyed == 2);
}

TEST_CASE("driver (vHCU): a vHCU that exists is handed over as it is and never destroyed") {
  VhcuNode node;
  auto driver = node.Started();
  // dcu-5 has the fixture's half (vdev 2, instance 0).
  const std::string a = node.Prepared(*driver, "a", {"dcu-5-40cu-32gb-0"});
  CHECK_THAT(node.Spec(a), Catch::Contains(ConfMount(2)));
  CHECK(driver->Snapshot().partitions.at(0).state == checkpoint::kPartitionStatic);
  REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
  CHECK(node.Live(5) == std::vector<int64_t>{2});
  CHECK(driver->stats().partitions_created == 0);
}

TEST_CASE("driver (vHCU): SIGKILL at each step of prepare and unprepare, restart, the retry") {
  testing::AllCrashTrials<VhcuNode>(testing::kPreparePoints, "dcu-0-20cu-16gb-0", CheckAgreement);
}

TEST_CASE("driver (vHCU): a crashed create is told apart from a vHCU an operator made") {
  VhcuNode node;
  const std::string a = node.Claim("a", {"dcu-0-20cu-16gb-0"});
  { auto driver = node.Started(); }
  // The operator's vHCU of the same size on the same device, there before the create.
  REQUIRE_OK(node.Backend()->Create({"dcu-0", "", 0}, "20cu.16gb", -1, std::nullopt));
  CHECK(testing::KilledAt("partition-created", [&] {
    auto driver = node.NewDriver();
    if (driver->Start().ok()) (void)driver->Prepare({{"default", "a", a}});
  }));
  CHECK(node.Live(0) == std::vector<int64_t>{3, 4});
  node.Rediscover();
  auto driver = node.Started();
  CHECK(node.Live(0) == std::vector<int64_t>{3});  // the crashed create undone, the operator's kept
  CHECK(driver->Snapshot().partitions.empty());
}

TEST_CASE("driver (vHCU): a vHCU whose rollback failed is destroyed by the periodic collection") {
  VhcuNode node;
  // vHCU 3 (the first made on dcu-0) cannot be destroyed for now.
  std::ifstream in(node.host + "/fake-vendor/hydmi.json");
  const std::string fixture(std::istreambuf_iterator<char>(in), {});
  const std::string busy_path = node.dir.path() + "/hydmi.json";
  std::string busy = fixture;
  busy.replace(busy.find("\"destroyBusy\": []"), 17, "\"destroyBusy\": [3]");
  std::ofstream(busy_path) << busy;
  ::setenv("XPU_FAKE_HYDMI_JSON", busy_path.c_str(), 1);
  auto driver = node.Started();
  // A half fits dcu-0, the three quarters after it do not: the claim fails, and the half made
  // for it cannot be taken back.
  const std::string b = node.Claim("b", {"dcu-0-40cu-32gb-0", "dcu-0-60cu-48gb-0"});
  CHECK_THAT(driver->Prepare({{"default", "b", b}}).at(b).error,
             Catch::Contains("out of resources"));
  CHECK(node.Live(0) == std::vector<int64_t>{3});
  REQUIRE(driver->Snapshot().partitions.size() == 1);
  CHECK(driver->Snapshot().partitions[0].state == checkpoint::kPartitionDestroying);
  // The device lets go; the next collection destroys it, without a restart or the kubelet.
  std::ofstream(busy_path) << fixture;
  REQUIRE_OK(driver->CollectDeletedClaims());
  CHECK(node.Live(0).empty());
  CHECK(driver->Snapshot().partitions.empty());
}

TEST_CASE("driver (vHCU): after a reboot the prepared claim's vHCU is made again") {
  VhcuNode node;
  const std::string spec = testing::RebootTrial(node, "dcu-0-20cu-16gb-1", CheckAgreement);
  CHECK_THAT(spec, Catch::Contains(ConfMount(3)));
  CHECK(node.Live(0) == std::vector<int64_t>{3});
}

TEST_CASE("driver (vHCU): a recreated vHCU with another id rewrites the claim's spec") {
  VhcuNode node;
  std::string a;
  {
    auto driver = node.Started();
    const std::string x = node.Prepared(*driver, "x", {"dcu-0-20cu-16gb-0"});  // id 3
    a = node.Prepared(*driver, "a", {"dcu-0-20cu-16gb-1"});                    // id 4
    CHECK_THAT(node.Spec(a), Catch::Contains(ConfMount(4)));
    REQUIRE(driver->Unprepare({{"default", "x", x}}).at(x).error.empty());
  }
  node.Reboot();
  std::filesystem::remove_all(node.dir.path() + "/cdi");
  auto driver = node.Started();
  CHECK(node.Live(0) == std::vector<int64_t>{3});  // the lowest free id again
  const std::string spec = node.Spec(a);
  CHECK_THAT(spec, Catch::Contains(ConfMount(3)) &&
                       Catch::Contains("\"containerPath\": \"/etc/vdev/docker/vdev3.conf\""));
  CHECK_THAT(spec, !Catch::Contains("vdev4"));
  CHECK(driver->Snapshot().partitions.at(0).id == 3);
  CheckAgreement(node, *driver);
}

}  // namespace
}  // namespace xpu::plugin
