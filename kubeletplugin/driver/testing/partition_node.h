// A node for the driver's partition tests (partitions_test.cc, mig_partitions_test.cc): a fixture
// host's devices, a disk of its own, a fake vendor library whose changes outlive each driver in a
// state file, and the fork helper of the crash trials.
#ifndef XPU_KUBELETPLUGIN_DRIVER_TESTING_PARTITION_NODE_H_
#define XPU_KUBELETPLUGIN_DRIVER_TESTING_PARTITION_NODE_H_

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/client/testing/fake_objects.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/testing/fake_claims.h"

namespace xpu::plugin::testing {

struct PartitionNode {
  using OpenFn =
      StatusOr<std::unique_ptr<discovery::PartitionBackend>> (*)(const std::vector<std::string>&);
  static constexpr const char* kNode = "n1";

  xpu::testing::TempDir dir;
  std::shared_ptr<api::client::testing::FakeObjects<api::resource::ResourceClaim>> claims =
      std::make_shared<api::client::testing::FakeObjects<api::resource::ResourceClaim>>(
          "resourceclaims", true);
  std::shared_ptr<const api::NodeInventory> inventory;
  std::vector<std::string> log;
  int uids = 0;
  std::string host;        // the fixture host root
  std::string state_env;   // the fake library's state variable
  std::string state_path;  // its file
  std::string request;     // the claims' request name
  OpenFn open = nullptr;

  // `json_env` names the fake library's fixture JSON, `json_file` under the host's fake-vendor/.
  PartitionNode(const std::string& host_name, const std::string& json_env,
                const std::string& json_file, std::string state_variable, std::string request_name,
                OpenFn open_backend)
      : host(std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/" + host_name),
        state_env(std::move(state_variable)),
        state_path(dir.path() + "/vendor-state.json"),
        request(std::move(request_name)),
        open(open_backend) {
    ::setenv(json_env.c_str(), (host + "/fake-vendor/" + json_file).c_str(), 1);
    ::setenv(state_env.c_str(), state_path.c_str(), 1);
    ::unsetenv("XPU_DRA_CRASH_AT");
    std::filesystem::create_directories(dir.path() + "/host/proc/sys/kernel/random");
    std::filesystem::create_directories(dir.path() + "/host/dev");
    Boot("1b4e28ba-2fa1-41d2-883f-0016d3cca427");
  }
  ~PartitionNode() { ::unsetenv(state_env.c_str()); }
  PartitionNode(const PartitionNode&) = delete;
  PartitionNode& operator=(const PartitionNode&) = delete;

  void Boot(const std::string& id) const {
    std::ofstream(dir.path() + "/host/proc/sys/kernel/random/boot_id") << id << "\n";
  }
  // A reboot: the partitions made since the fixture are gone, and the boot id is new.
  void Reboot() const {
    std::filesystem::remove(state_path);
    Boot("9a1c0d2e-3f4b-4c5d-8e6f-7a8b9c0d1e2f");
  }

  void Rediscover() {
    discovery::DiscoveryOptions o;
    o.host_root = host;
    o.vendor_lib_dirs = {XPU_FAKE_LIB_DIR};
    o.node_name = kNode;
    StatusOr<api::NodeInventory> inv = discovery::Discover(o);
    REQUIRE_OK(inv);
    inventory = std::make_shared<const api::NodeInventory>(*std::move(inv));
  }

  std::unique_ptr<discovery::PartitionBackend> Backend() const {
    StatusOr<std::unique_ptr<discovery::PartitionBackend>> backend = open({XPU_FAKE_LIB_DIR});
    INFO(backend.status().ToString());
    REQUIRE_OK(backend);
    return std::move(backend).value();
  }

  std::unique_ptr<Driver> NewDriver() {
    DriverOptions o;
    o.node_name = kNode;
    o.host_root = dir.path() + "/host";
    o.cdi_dir = dir.path() + "/cdi";
    o.state_dir = dir.path() + "/state";
    // The host root is an empty folder: no driver files (driver_test.cc tests them).
    o.driver_files = driverfiles::Policy{driverfiles::Mode::kOff, {}};
    auto driver = std::make_unique<Driver>(
        o, claims, [this] { return inventory; },
        [this](const std::string& line) { log.push_back(line); });
    driver->AddPartitionBackend(Backend());
    return driver;
  }

  // A new driver, started (its reconciliation done).
  std::unique_ptr<Driver> Started() {
    std::unique_ptr<Driver> driver = NewDriver();
    const Status started = driver->Start();
    INFO(started.ToString());
    REQUIRE_OK(started);
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
    return PutAllocatedClaim(*claims, name, request, kNode, devices,
                             "7c9e6679-7425-40de-944b-e07fc1f9000", ++uids);
  }

  // What the vendor lists on `parent` now.
  std::vector<discovery::LivePartition> Live(const discovery::PartitionParent& parent) const {
    StatusOr<std::vector<discovery::LivePartition>> live = Backend()->List(parent);
    REQUIRE_OK(live);
    return *std::move(live);
  }

  // The vendor ids on device `<kind>-<index>` now.
  std::vector<int64_t> LiveIds(const std::string& kind, int64_t index) const {
    std::vector<int64_t> ids;
    for (const auto& l : Live({kind + "-" + std::to_string(index), "", index})) ids.push_back(l.id);
    return ids;
  }

  std::string Spec(const std::string& uid) const {
    std::ifstream in(dir.path() + "/cdi/k8s.xpu.dra.dev-device_" + uid + ".json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// The records once the node has settled: each is a prepared claim's Created one whose CDI spec
// contains what `names_it` says of it; the key `key_of` gives each, for the caller to compare
// with what the device holds.
template <typename NamesIt, typename KeyOf>
std::multiset<int64_t> SettledRecords(PartitionNode& node, const Driver& driver, NamesIt names_it,
                                      KeyOf key_of) {
  const checkpoint::Checkpoint cp = driver.Snapshot();
  std::multiset<int64_t> recorded;
  for (const checkpoint::Partition& p : cp.partitions) {
    INFO(p.device << " " << p.state);
    CHECK(p.state == checkpoint::kPartitionCreated);
    REQUIRE(cp.claims.contains(p.claim_uid));
    CHECK_THAT(node.Spec(p.claim_uid), Catch::Contains(names_it(p)));
    recorded.insert(key_of(p));
  }
  return recorded;
}

// Claim "a" of `device`, prepared by a driver that then goes with a reboot of the node (the
// vendor's partitions gone, a new boot id, the CDI directory emptied as tmpfs is); `seen` gets
// the driver and the uid before it goes. Returns the claim's uid.
template <typename Seen>
std::string PreparedThenRebooted(PartitionNode& node, const std::string& device, Seen seen) {
  std::string uid;
  {
    auto driver = node.Started();
    uid = node.Prepared(*driver, "a", {device});
    seen(*driver, uid);
  }
  node.Reboot();
  std::filesystem::remove_all(node.dir.path() + "/cdi");
  return uid;
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

// A crash trial of prepare: claim `uid` prepared by a driver SIGKILLed at `point`, then a restart
// on the same disk and the kubelet's retry, `check(driver)` after each; the settled driver.
template <typename Check>
std::unique_ptr<Driver> PrepareCrashTrial(PartitionNode& node, const char* point,
                                          const std::string& uid, Check check) {
  { auto driver = node.Started(); }
  CHECK(KilledAt(point, [&] {
    auto driver = node.NewDriver();
    if (driver->Start().ok()) (void)driver->Prepare({{"default", "a", uid}});
  }));
  node.Rediscover();
  auto driver = node.Started();
  check(*driver);  // after the restart, before the retry
  const auto retry = driver->Prepare({{"default", "a", uid}});
  INFO(retry.at(uid).error);
  REQUIRE(retry.at(uid).error.empty());
  check(*driver);
  return driver;
}

// A crash trial of unprepare: claim `uid` prepared, then unprepared by a driver SIGKILLed at
// `point`, then a restart on the same disk, `check(driver)`, and the kubelet's retry, which must
// succeed; the settled driver.
template <typename Check>
std::unique_ptr<Driver> UnprepareCrashTrial(PartitionNode& node, const char* point,
                                            const std::string& uid, Check check) {
  {
    auto driver = node.Started();
    REQUIRE(driver->Prepare({{"default", "a", uid}}).at(uid).error.empty());
  }
  node.Rediscover();
  CHECK(KilledAt(point, [&] {
    auto driver = node.NewDriver();
    if (driver->Start().ok()) (void)driver->Unprepare({{"default", "a", uid}});
  }));
  auto driver = node.Started();
  check(*driver);
  REQUIRE(driver->Unprepare({{"default", "a", uid}}).at(uid).error.empty());
  CHECK(driver->Snapshot().partitions.empty());
  return driver;
}

inline const std::vector<const char*> kPreparePoints = {"partition-intent", "partition-created",
                                                        "partition-recorded", "prepare-after-cdi",
                                                        "prepare-after-checkpoint"};
inline const std::vector<const char*> kUnpreparePoints = {
    "unprepare-after-cdi", "partition-destroying", "partition-destroyed",
    "unprepare-after-checkpoint"};

// Crash trials at each of `points`, each in a section of its own on a new `NodeT` with claim "a"
// of `device`: PrepareCrashTrial (`prepare` true) or UnprepareCrashTrial, `check(node, driver)`
// after the restart and after the retry. At the end the trial's parent holds one partition after
// a prepare (node.Held(), then unprepared: none) and none after an unprepare.
template <typename NodeT, typename Check>
void CrashTrials(bool prepare, const std::vector<const char*>& points, const std::string& device,
                 Check check) {
  for (const char* point : points) {
    DYNAMIC_SECTION(point) {
      NodeT node;
      const std::string a = node.Claim("a", {device});
      auto checked = [&](Driver& d) { check(node, d); };
      if (prepare) {
        std::unique_ptr<Driver> driver = PrepareCrashTrial(node, point, a, checked);
        CHECK(node.Held() == 1);
        REQUIRE(driver->Unprepare({{"default", "a", a}}).at(a).error.empty());
      } else {
        UnprepareCrashTrial(node, point, a, checked);
      }
      CHECK(node.Held() == 0);
    }
  }
}

// A reboot trial: claim "a" of `device` prepared, the node rebooted, a new driver started. The
// partition is made again (one create, node.Held() 1) with the same CDI spec, and
// `check(node, driver)` holds. Returns the spec.
template <typename NodeT, typename Check>
std::string RebootTrial(NodeT& node, const std::string& device, Check check) {
  std::string spec;
  const std::string a = PreparedThenRebooted(
      node, device, [&](Driver& /*driver*/, const std::string& uid) { spec = node.Spec(uid); });
  CHECK(node.Held() == 0);
  auto driver = node.Started();
  CHECK(node.Held() == 1);
  CHECK(node.Spec(a) == spec);
  check(node, *driver);
  CHECK(driver->stats().partitions_created == 1);
  return spec;
}

// The crash trials of prepare at `prepare_points` and of unprepare at every step, on claims of
// `device` (CrashTrials).
template <typename NodeT, typename Check>
void AllCrashTrials(const std::vector<const char*>& prepare_points, const std::string& device,
                    Check check) {
  CrashTrials<NodeT>(true, prepare_points, device, check);
  CrashTrials<NodeT>(false, kUnpreparePoints, device, check);
}

}  // namespace xpu::plugin::testing

#endif  // XPU_KUBELETPLUGIN_DRIVER_TESTING_PARTITION_NODE_H_
