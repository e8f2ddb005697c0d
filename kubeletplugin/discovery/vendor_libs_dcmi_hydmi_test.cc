// ProbeDcmi, ProbeHydmi and their vNPU and vHCU partition backends through the real dlopen path,
// against the fake libraries of kubeletplugin/discovery/testing/ answering from fake-vendor/*.json.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/testing/vendor_libs_checks.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): vendor_libs_checks.h
using xpu::testing::TempDir;

// The vendor ids `backend` lists on `parent`.
std::vector<int64_t> LiveIds(PartitionBackend& backend, const PartitionParent& parent) {
  std::vector<int64_t> out;
  const StatusOr<std::vector<LivePartition>> live = backend.List(parent);  // kept: loop over it
  REQUIRE_OK(live);
  for (const LivePartition& l : *live) out.push_back(l.id);
  return out;
}

std::map<std::string, int> CountTypes(const DcmiFacts& f) {
  std::map<std::string, int> n;
  for (const DcmiTopology& t : f.topology) ++n[t.type];
  return n;
}

TEST_CASE("dcmi: atlas800t-a2 reports 8 910B3 in one HCCS domain") {
  DcmiFacts f = Dcmi("atlas800t-a2");
  RequireLoaded(f.library, "dcmi", kFakeDir + "/libdcmi.so");
  CHECK(f.dcmi_version == "7.0.0");
  CHECK(f.driver_version == "24.1.rc3");
  CHECK(f.product_type == "Atlas 800T A2");
  REQUIRE(f.chips.size() == 8);
  for (int i = 0; i < 8; ++i) {
    const DcmiChip& c = f.chips[i];
    INFO("chip " << i);
    CHECK(c.card_id == i);
    CHECK(c.device_id == 0);
    CHECK(c.logic_id == i);
    CHECK(c.phy_id == i);
    CHECK(c.chip_type == "Ascend");
    CHECK(c.chip_name == "910B3");
    CHECK(c.chip_ver == "V1");
    CHECK(c.aicore_count == 20);
    CHECK(c.hbm_total_mb == 65536);
    CHECK(c.health == 0);
    CHECK(c.network_health == "ok");
    CHECK(c.hccs_healthy == std::optional<bool>(true));
    CHECK(c.hccs_hdlc_status == 3);
    CHECK(c.firmware_version == "7.5.0.1.129");  // the HILINK component on a 910B
    CHECK(c.error.empty());
  }
  CHECK(f.chips[0].pci_bus_id == "0000:13:00.0");
  CHECK(f.chips[0].device_ip == "192.168.101.10");
  CHECK(f.topology.size() == 28);  // 8 choose 2
  CHECK(CountTypes(f) == std::map<std::string, int>{{"hccs", 28}});
  CHECK(f.topology.front().a == 0);
  CHECK(f.topology.front().b == 1);
}

TEST_CASE("dcmi: atlas800t-a3 reports 16 dies, two per card, SIO pairs") {
  DcmiFacts f = Dcmi("atlas800t-a3");
  REQUIRE(f.library.loaded);
  CHECK(f.product_type == "Atlas 800T A3");
  REQUIRE(f.chips.size() == 16);
  for (int i = 0; i < 16; ++i) {
    CHECK(f.chips[i].card_id == i / 2);
    CHECK(f.chips[i].device_id == i % 2);
    CHECK(f.chips[i].logic_id == i);
    CHECK(f.chips[i].phy_id == i);
    CHECK(f.chips[i].chip_name == "910_9392");
    CHECK(f.chips[i].error.empty());
  }
  CHECK(f.topology.size() == 120);
  CHECK(CountTypes(f) == std::map<std::string, int>{{"sio", 8}, {"hccs-sw", 112}});
  for (const DcmiTopology& t : f.topology) {
    if (t.type == "sio") CHECK((t.a % 2 == 0 && t.b == t.a + 1));
  }
}

TEST_CASE("dcmi: atlas800-9000 reports two HCCS rings of four") {
  DcmiFacts f = LoadedDcmi("atlas800-9000", 8);
  CHECK(f.chips[0].chip_name == "910A");
  CHECK(f.chips[0].aicore_count == 32);
  CHECK(f.chips[0].hbm_total_mb == 32768);
  CHECK(f.chips[0].firmware_version == "7.1.0.3.220");  // the IMU component on a 910
  CHECK(CountTypes(f) == std::map<std::string, int>{{"hccs", 12}, {"sys", 16}});
  for (const DcmiTopology& t : f.topology) {
    CHECK(t.type == ((t.a < 4) == (t.b < 4) ? "hccs" : "sys"));
  }
}

TEST_CASE("dcmi: atlas800t-a2-dcmi-broken fails one chip's HBM call, the rest is read") {
  DcmiFacts f = LoadedDcmi("atlas800t-a2-dcmi-broken", 8);
  for (const DcmiChip& c : f.chips) {
    INFO("logic " << c.logic_id);
    if (c.logic_id == 5) {
      CHECK(c.error == "dcmi_get_device_hbm_info: -8005 inner error");
      CHECK(c.hbm_total_mb == 0);
      CHECK(c.chip_name == "910B3");
      CHECK(c.health == 0);
      CHECK(c.device_ip == "192.168.101.15");
      CHECK(c.firmware_version == "7.5.0.1.129");  // later calls still made
    } else {
      CHECK(c.error.empty());
      CHECK(c.hbm_total_mb == 65536);
    }
  }
  // No PCIe information is "not supported", not an error: the address stays empty.
  CHECK(f.chips[1].pci_bus_id.empty());
  CHECK(f.chips[2].pci_bus_id == "0000:17:00.0");
  // HCCS status read as broken: pcs_status 1, hdlc_status 0.
  CHECK(f.chips[3].hccs_healthy == std::optional<bool>(false));
  CHECK(f.chips[3].hccs_pcs_status == 1);
  CHECK(f.chips[3].hccs_hdlc_status == 0);
  CHECK(f.chips[2].hccs_healthy == std::optional<bool>(true));
  CHECK(f.chips[4].network_health == "unreachable");
  CHECK(f.chips[5].network_health == "ok");
  CHECK(f.topology.size() == 28);
}

TEST_CASE("dcmi: atlas800t-a2-vnpu reports each chip's whole resource and the vNPUs on it") {
  const DcmiFacts f = LoadedDcmi("atlas800t-a2-vnpu", 8);
  for (const DcmiChip& chip : f.chips) {
    INFO(chip.logic_id);
    CHECK(chip.error.empty());
    REQUIRE(chip.vnpu.has_value());
    CHECK(chip.vnpu->aicore == 20);
    CHECK(chip.vnpu->aicpu == 7);
    CHECK(chip.vnpu->memory_mb == 65536);
  }
  CHECK(f.chips[0].vnpu->vdevices.empty());
  const std::vector<DcmiVdevice>& on1 = f.chips[1].vnpu->vdevices;
  REQUIRE(on1.size() == 2);
  CHECK(on1[0].id == 100);
  CHECK(on1[0].name == "vir05_1c_16g");
  CHECK(on1[0].aicore == 5);
  CHECK(on1[0].aicpu == 1);
  CHECK(on1[0].memory_mb == 16384);
  CHECK(on1[0].in_use);
  CHECK(on1[1].id == 101);
  CHECK_FALSE(on1[1].in_use);
  REQUIRE(f.chips[3].vnpu->vdevices.size() == 1);
  CHECK(f.chips[3].vnpu->vdevices[0].name == "vir10_3c_32g");
  CHECK(f.chips[3].vnpu->vdevices[0].id == 102);
  // Without virtualisation DCMI answers "not supported": no vNPU facts and no error.
  const DcmiFacts plain = Dcmi("atlas800t-a2");
  CHECK_FALSE(plain.chips[1].vnpu.has_value());
  CHECK(plain.chips[1].error.empty());
}

TEST_CASE("dcmi: a failing VDEV_MNG call leaves that chip's vNPUs out and names the call") {
  TempDir dir;
  UseFixtureWith("XPU_FAKE_DCMI_JSON", "atlas800t-a2-vnpu/fake-vendor/dcmi.json", "callErrors",
                 R"([{"logicId": 3, "function": "dcmi_get_device_info", "code": -8005}])", dir);
  const DcmiFacts f = ProbeDcmi({kFakeDir});
  CHECK_FALSE(f.chips[3].vnpu.has_value());
  CHECK_THAT(f.chips[3].error,
             Catch::Contains("dcmi_get_device_info(VDEV_MNG, GET_TOTAL_RESOURCE): -8005"));
  CHECK(f.chips[1].vnpu.has_value());
}

// The backend `open` gives on the fake library whose variables start with `env` (XPU_FAKE_DCMI),
// answering from the host fixture `file`, its changes kept in a state file of `dir`.
std::unique_ptr<PartitionBackend> OpenWithState(
    StatusOr<std::unique_ptr<PartitionBackend>> (*open)(const std::vector<std::string>&),
    const std::string& env, const std::string& file, const TempDir& dir) {
  setenv((env + "_STATE").c_str(), (dir.path() + "/state.json").c_str(), 1);
  setenv((env + "_JSON").c_str(), (kHosts + file).c_str(), 1);
  StatusOr<std::unique_ptr<PartitionBackend>> opened = open({kFakeDir});
  REQUIRE_OK(opened);
  return std::move(opened).value();
}

// `backend` makes a `profile` on `parent`, asked for vendor id `id`, which gets id `want`.
void CreatesWithId(PartitionBackend& backend, const PartitionParent& parent,
                   const std::string& profile, int64_t id, int64_t want) {
  const StatusOr<LivePartition> made = backend.Create(parent, profile, id, std::nullopt);
  REQUIRE_OK(made);
  CHECK(made->id == want);
  CHECK(made->profile == profile);
}

// `backend` refuses a `profile` on `parent` as unavailable (retryable), saying `why`.
void RefusesBusy(PartitionBackend& backend, const PartitionParent& parent,
                 const std::string& profile, const std::string& why) {
  const Status refused = backend.Create(parent, profile, -1, std::nullopt).status();
  CHECK(refused.code() == StatusCode::kUnavailable);
  CHECK_THAT(refused.message(), Catch::Contains(why));
}

TEST_CASE("dcmi partitions: list, create with a chosen id, destroy, and what the device refuses") {
  TempDir dir;
  const std::unique_ptr<PartitionBackend> backend = OpenWithState(
      &OpenDcmiPartitions, "XPU_FAKE_DCMI", "atlas800t-a2-vnpu/fake-vendor/dcmi.json", dir);
  PartitionBackend& dcmi = *backend;
  CHECK(dcmi.kind() == "vnpu");
  const PartitionParent npu1{"npu-1", "", 1};
  auto ids = [&](const PartitionParent& p) { return LiveIds(dcmi, p); };
  CHECK(ids(npu1) == std::vector<int64_t>{100, 101});
  CreatesWithId(dcmi, npu1, "vir10_3c_32g", 140, 140);
  CHECK(ids(npu1) == std::vector<int64_t>{100, 101, 140});
  // 5 + 5 + 10 of 20 AI Cores are taken: another 10 does not fit.
  RefusesBusy(dcmi, npu1, "vir10_3c_32g",
              "npu-1: dcmi_create_vdevice(vir10_3c_32g): -8020 resource occupied");
  // An id in use elsewhere on the node, and a template the chip does not have.
  CHECK_FALSE(dcmi.Create({"npu-3", "", 3}, "vir05_1c_16g", 140, std::nullopt).ok());
  CHECK_FALSE(dcmi.Create(npu1, "vir99", -1, std::nullopt).ok());
  // The created one outlives the library: a second backend (a restarted plugin) sees it.
  auto again = OpenDcmiPartitions({kFakeDir});
  REQUIRE_OK(again);
  CHECK((*again)->List(npu1).value().size() == 3);
  REQUIRE_OK((*again)->Destroy(npu1, 140));
  CHECK(dcmi.Destroy(npu1, 140).code() == StatusCode::kNotFound);
  REQUIRE_OK(dcmi.Destroy(npu1, 100));  // one the fixture had
  CHECK(ids(npu1) == std::vector<int64_t>{101});
  CHECK(dcmi.List({"npu-9", "", 9}).status().code() == StatusCode::kNotFound);
  unsetenv("XPU_FAKE_DCMI_STATE");
}

TEST_CASE("dcmi partitions: a busy chip answers unavailable") {
  TempDir dir;
  UseFixtureWith("XPU_FAKE_DCMI_JSON", "atlas800t-a2-vnpu/fake-vendor/dcmi.json", "createBusy",
                 "[2]", dir);
  auto dcmi = OpenDcmiPartitions({kFakeDir});
  REQUIRE_OK(dcmi);
  CHECK((*dcmi)->Create({"npu-2", "", 2}, "vir05_1c_16g", -1, std::nullopt).status().code() ==
        StatusCode::kUnavailable);
  const StatusOr<LivePartition> elsewhere =
      (*dcmi)->Create({"npu-4", "", 4}, "vir05_1c_16g", -1, std::nullopt);
  REQUIRE_OK(elsewhere);
  CHECK(elsewhere->id == 103);  // after the fixture's 100-102
}

TEST_CASE("dcmi: faults deviceGone, unhealthy and init") {
  TempDir dir;
  auto with = [&](const std::string& key, const std::string& value) {
    UseFixtureWith("XPU_FAKE_DCMI_JSON", "atlas800t-a2/fake-vendor/dcmi.json", key, value, dir);
    return ProbeDcmi({kFakeDir});
  };
  DcmiFacts gone = with("deviceGone", "[6]");
  REQUIRE(gone.library.loaded);
  REQUIRE(gone.chips.size() == 8);
  CHECK(gone.chips[6].error == "dcmi_get_device_logic_id: -8008 device does not exist");
  CHECK(gone.chips[6].health == 0xFFFFFFFFU);
  CHECK(gone.chips[7].error.empty());
  CHECK(gone.topology.size() == 21);  // 7 choose 2

  DcmiFacts sick = with("unhealthy", "[2]");
  CHECK(sick.chips[2].health == 2);
  CHECK(sick.chips[1].health == 0);

  DcmiFacts init = with("init", "-8008");
  CheckInitFailed(init.library, "dcmi_init: -8008 device does not exist");
}

TEST_CASE("dcmi: no library anywhere") {
  if (RealLibraryOnLoaderPath("libdcmi.so")) {
    XPU_SKIP("a real libdcmi.so is on the loader path");
  }
  TempDir empty;
  DcmiFacts f = ProbeDcmi({empty.path()});
  CHECK_FALSE(f.library.loaded);
  CHECK(f.library.error.find("load libdcmi.so: not found in " + empty.path()) == 0);
  CHECK(f.chips.empty());
}

TEST_CASE("hydmi: hygon-dcu-8-vhcu reports each DCU and the vHCUs on them") {
  setenv("XPU_FAKE_HYDMI_JSON", (kHosts + "hygon-dcu-8-vhcu/fake-vendor/hydmi.json").c_str(), 1);
  const HydmiFacts f = ProbeHydmi({kFakeDir});
  RequireLoaded(f.library, "hydmi", std::string(kFakeDir) + "/libhydmi.so");
  CHECK(f.max_vdevices == 4);
  REQUIRE(f.devices.size() == 8);
  CHECK(f.devices[3].index == 3);
  CHECK(f.devices[3].name == "DCU-6320");
  CHECK(f.devices[3].compute_units == 80);
  CHECK(f.devices[3].memory_mib == 65536);
  CHECK(f.vdevices ==
        std::vector<HydmiVdevice>{{0, 2, 20, 16384}, {1, 2, 20, 16384}, {2, 5, 40, 32768}});
  // Without virtualisation: the devices, no vHCUs, no error.
  TempDir dir;
  UseFixtureWith("XPU_FAKE_HYDMI_JSON", "hygon-dcu-8-vhcu/fake-vendor/hydmi.json", "maxVDevices",
                 "0", dir);
  const HydmiFacts plain = ProbeHydmi({kFakeDir});
  CHECK(plain.library.loaded);
  CHECK(plain.library.error.empty());
  CHECK(plain.max_vdevices == 0);
  CHECK(plain.devices.size() == 8);
  unsetenv("XPU_FAKE_HYDMI_JSON");
}

TEST_CASE("hydmi: vHCU profile names spell a size, one way") {
  CHECK(VhcuProfileName(20, 16384) == "20cu.16gb");
  CHECK(VhcuProfileName(7, 3000) == "7cu.3000mb");
  int cus = 0;
  uint64_t mib = 0;
  REQUIRE(ParseVhcuProfileName("40cu.32gb", &cus, &mib));
  CHECK(cus == 40);
  CHECK(mib == 32768);
  REQUIRE(ParseVhcuProfileName("7cu.3000mb", &cus, &mib));
  CHECK(mib == 3000);
  for (const char* bad : {"", "cu.16gb", "20cu.", "20cu.16", "20cu.2048mb", "x20cu.16gb",
                          "20cu.16gbx", "0cu.16gb", "20cu.0gb", "vir05_1c_16g"}) {
    INFO(bad);
    CHECK_FALSE(ParseVhcuProfileName(bad, &cus, &mib));
  }
}

TEST_CASE("hydmi partitions: list, create, destroy, and what the device refuses") {
  TempDir dir;
  const std::unique_ptr<PartitionBackend> dmi = OpenWithState(
      &OpenHydmiPartitions, "XPU_FAKE_HYDMI", "hygon-dcu-8-vhcu/fake-vendor/hydmi.json", dir);
  CHECK(dmi->kind() == "vhcu");
  const PartitionParent dcu2{"dcu-2", "", 2};
  CHECK(dmi->List(dcu2).value()[0].profile == "20cu.16gb");
  auto ids = [&](const PartitionParent& p) { return LiveIds(*dmi, p); };
  CHECK(ids(dcu2) == std::vector<int64_t>{0, 1});
  // DMI picks the id (the lowest free one of the node, 3): the new vHCU is found by asking.
  CreatesWithId(*dmi, dcu2, "40cu.32gb", 99, 3);
  CHECK(ids(dcu2) == std::vector<int64_t>{0, 1, 3});
  // 20 + 20 + 40 of 80 compute units are taken: 20 more do not fit.
  RefusesBusy(*dmi, dcu2, "20cu.16gb", "dcu-2: dmiCreateVDevices(20cu.16gb): 11 out of resources");
  CHECK(dmi->Create(dcu2, "vir05_1c_16g", -1, std::nullopt).status().code() ==
        StatusCode::kInvalidArgument);
  // A fifth vHCU on one device is refused, even small.
  const PartitionParent dcu0{"dcu-0", "", 0};
  for (int k = 0; k < 4; ++k) REQUIRE_OK(dmi->Create(dcu0, "10cu.8gb", -1, std::nullopt));
  CHECK(dmi->Create(dcu0, "10cu.8gb", -1, std::nullopt).status().code() ==
        StatusCode::kUnavailable);
  // What was made outlives the library: a second backend (a restarted plugin) sees it.
  auto again = OpenHydmiPartitions({kFakeDir});
  REQUIRE_OK(again);
  CHECK((*again)->List(dcu2).value().size() == 3);
  REQUIRE_OK((*again)->Destroy(dcu2, 3));
  CHECK(dmi->Destroy(dcu2, 3).code() == StatusCode::kNotFound);
  REQUIRE_OK(dmi->Destroy(dcu2, 0));  // one the fixture had
  CHECK(ids(dcu2) == std::vector<int64_t>{1});
  unsetenv("XPU_FAKE_HYDMI_STATE");
  unsetenv("XPU_FAKE_HYDMI_JSON");
}

TEST_CASE("hydmi partitions: a busy device answers unavailable, and no DMI means no backend") {
  TempDir dir;
  const std::string busy_create =
      FixtureWith(kHosts + "hygon-dcu-8-vhcu/fake-vendor/hydmi.json", "createBusy", "[4]", dir);
  setenv("XPU_FAKE_HYDMI_JSON", FixtureWith(busy_create, "destroyBusy", "[2]", dir).c_str(), 1);
  auto dmi = OpenHydmiPartitions({kFakeDir});
  REQUIRE_OK(dmi);
  const Status busy = (*dmi)->Create({"dcu-4", "", 4}, "20cu.16gb", -1, std::nullopt).status();
  CHECK(busy.code() == StatusCode::kUnavailable);
  CHECK_THAT(busy.message(), Catch::Contains("17 device busy"));
  CHECK((*dmi)->Destroy({"dcu-5", "", 5}, 2).code() == StatusCode::kUnavailable);
  // A host whose DMI sees no virtualisation (the fake without a fixture): no backend.
  unsetenv("XPU_FAKE_HYDMI_JSON");
  const auto none = OpenHydmiPartitions({kFakeDir});
  CHECK(none.status().code() == StatusCode::kUnavailable);
  CHECK_THAT(none.status().message(), Catch::Contains("no vHCUs on this node"));
}

}  // namespace
}  // namespace xpu::discovery
