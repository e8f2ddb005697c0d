// ProbeNvml, the XID watcher and the MIG partition backend through the real dlopen path, against
// the fake NVML of kubeletplugin/discovery/testing/ answering from the host fixtures' nvml.json.
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/atomic_file.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/testing/vendor_libs_checks.h"
#include "kubeletplugin/discovery/vendor_libs.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace): vendor_libs_checks.h
using xpu::testing::TempDir;

TEST_CASE("nvml: hgx-h200 reports 8 H200 with normalised bus ids and NVLinks to switches") {
  NvmlFacts f = Nvml("hgx-h200");
  RequireLoaded(f.library, "nvml", kFakeDir + "/libnvidia-ml.so.1");
  CHECK(f.driver_version == "570.158.01");
  CHECK(f.cuda_driver_version == 12080);
  REQUIRE(f.devices.size() == 8);
  const NvmlDevice& d = f.devices[0];
  CHECK(d.index == 0);
  CHECK(d.minor_number == 0);
  CHECK(d.uuid == "GPU-f50ecb85-c568-5ac5-bbb9-403bcbc077e9");
  CHECK(d.name == "NVIDIA H200");
  CHECK(d.pci_bus_id == "0000:13:00.0");
  CHECK(d.memory_bytes == 150754820096ULL);
  CHECK(d.cc_major == 9);
  CHECK(d.cc_minor == 0);
  CHECK(d.numa_node == 0);
  CHECK(d.fabric_state == "not-supported");
  CHECK(d.cluster_uuid.empty());
  CHECK_FALSE(d.clique_id.has_value());
  CHECK(d.healthy);
  CHECK(d.xid_events.empty());
  CHECK(d.error.empty());
  REQUIRE(d.links.size() == 18);
  std::map<std::string, int> per_switch;  // 18 NVLink4 links over the 4 NVSwitches: 5+4+4+5
  for (const NvmlLink& l : d.links) {
    CHECK(l.active);
    CHECK(l.remote_type == "switch");
    ++per_switch[l.remote_pci_bus_id];
  }
  CHECK(per_switch ==
        std::map<std::string, int>{
            {"0000:03:00.0", 5}, {"0000:04:00.0", 4}, {"0000:05:00.0", 4}, {"0000:06:00.0", 5}});
  std::vector<std::string> uuids;
  for (const NvmlDevice& dev : f.devices) {
    CHECK(dev.error.empty());
    CHECK(dev.pci_bus_id.rfind("0000:", 0) == 0);
    CHECK(dev.pci_bus_id == [&] {
      std::string s = dev.pci_bus_id;
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      return s;
    }());
    uuids.push_back(dev.uuid);
  }
  std::sort(uuids.begin(), uuids.end());
  CHECK(std::unique(uuids.begin(), uuids.end()) == uuids.end());
}

TEST_CASE("nvml: gb200-tray reports a completed fabric clique") {
  NvmlFacts f = LoadedNvml("gb200-tray", 4);
  for (const NvmlDevice& d : f.devices) {
    CHECK(d.fabric_state == "completed");
    CHECK(d.cluster_uuid == "bca2fd68-ae96-5d45-9b9b-5fcf936e36e5");
    CHECK(d.clique_id == 32766U);
    CHECK(d.error.empty());
  }
  CHECK(f.devices[0].pci_bus_id == "0008:01:00.0");
}

TEST_CASE("nvml: pcie-2numa-8gpu has no NVLink and that is no error") {
  NvmlFacts f = LoadedNvml("pcie-2numa-8gpu", 8);
  for (const NvmlDevice& d : f.devices) {
    CHECK(d.links.empty());
    CHECK(d.error.empty());
  }
}

TEST_CASE("nvml: init failure leaves the library unloaded with the code and its name") {
  NvmlFacts f = Nvml("hgx-h200-nvml-init-fails");
  CHECK_FALSE(f.library.loaded);
  CHECK(f.library.path == kFakeDir + "/libnvidia-ml.so.1");
  CHECK(f.library.error == "nvmlInit_v2: 9 driver not loaded");
  CHECK(f.devices.empty());
}

TEST_CASE("nvml: hgx-h200-unhealthy reports XID 79 on GPU 3 and NVLink 7 of GPU 5 down") {
  NvmlFacts f = LoadedNvml("hgx-h200-unhealthy", 8);
  for (const NvmlDevice& d : f.devices) {
    INFO("gpu " << d.index);
    CHECK(d.healthy == (d.index != 3));
    CHECK(d.xid_events == (d.index == 3 ? std::vector<uint64_t>{79} : std::vector<uint64_t>{}));
    CHECK(d.error.empty());
    REQUIRE(d.links.size() == 18);
    for (const NvmlLink& l : d.links) CHECK(l.active == !(d.index == 5 && l.link == 7));
  }
}

// The placements' first slots of `p`, each spanning `size` slots.
std::vector<unsigned> Starts(const NvmlMigProfile& p, unsigned size) {
  std::vector<unsigned> out;
  for (const NvmlMigPlacement& at : p.placements) {
    CHECK(at.size == size);
    out.push_back(at.start);
  }
  return out;
}

TEST_CASE("nvml: hgx-h200-mig reports MIG mode, profiles, placements and GPU instances") {
  NvmlFacts f = Nvml("hgx-h200-mig");
  RequireLoaded(f.library, "nvml", kFakeDir + "/libnvidia-ml.so.1");
  REQUIRE(f.devices.size() == 8);
  for (const NvmlDevice& d : f.devices) {
    INFO("gpu " << d.index);
    CHECK(d.error.empty());
    REQUIRE(d.mig.has_value());
    CHECK(d.mig->enabled == (d.index < 4));
    CHECK(d.mig->pending_enabled == (d.index < 4));
    // With MIG mode off NVML answers no profiles, and nothing exists.
    CHECK(d.mig->profiles.size() == (d.index < 4 ? 7U : 0U));
  }
  const NvmlMig& mig = *f.devices[1].mig;
  // In NVML_GPU_INSTANCE_PROFILE_* order: 1_SLICE, 2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE,
  // 1_SLICE_REV1, 1_SLICE_REV2.
  std::vector<std::string> names;
  std::vector<unsigned> indexes;
  for (const NvmlMigProfile& p : mig.profiles) {
    names.push_back(p.name);
    indexes.push_back(p.profile);
  }
  CHECK(names == std::vector<std::string>{"MIG 1g.18gb", "MIG 2g.35gb", "MIG 3g.71gb",
                                          "MIG 4g.71gb", "MIG 7g.141gb", "MIG 1g.18gb+me",
                                          "MIG 1g.35gb"});
  CHECK(indexes == std::vector<unsigned>{0, 1, 2, 3, 4, 7, 9});
  const NvmlMigProfile& one = mig.profiles[0];
  CHECK(one.id == 19);
  CHECK(one.slice_count == 1);
  CHECK(one.instance_count == 7);
  CHECK(one.memory_mib == 16384);
  CHECK(Starts(one, 1) == std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6});
  CHECK(Starts(mig.profiles[1], 2) == std::vector<unsigned>{0, 2, 4});
  CHECK(Starts(mig.profiles[2], 4) == std::vector<unsigned>{0, 4});
  CHECK(Starts(mig.profiles[4], 8) == std::vector<unsigned>{0});
  CHECK(Starts(mig.profiles[6], 2) == std::vector<unsigned>{0, 2, 4, 6});
  // GPU 1: 1g.18gb (id 19) at slot 0 and 3g.71gb (id 9) at 4-7, each with its MIG device.
  REQUIRE(mig.instances.size() == 2);
  const NvmlGpuInstance& small = mig.instances[0];
  CHECK(small.profile_id == 19);
  CHECK(small.id == 7);
  CHECK(small.placement == NvmlMigPlacement{0, 1});
  CHECK(small.uuid == "MIG-4cb87259-21dd-5cca-9c06-13a08e48d65d");
  const NvmlGpuInstance& big = mig.instances[1];
  CHECK(big.profile_id == 9);
  CHECK(big.id == 2);
  CHECK(big.placement == NvmlMigPlacement{4, 4});
  CHECK(big.uuid == "MIG-de18a2fd-73ec-5d81-9b49-ea5912ed7d2c");
  CHECK(f.devices[0].mig->instances.empty());
  CHECK(f.devices[3].mig->instances.size() == 3);
  for (const NvmlDevice& d : f.devices) {
    for (const NvmlGpuInstance& gi : d.mig->instances) CHECK(gi.uuid.rfind("MIG-", 0) == 0);
  }
}

TEST_CASE("nvml: a GPU without MIG, and MIG calls answering not supported, are no error") {
  NvmlFacts plain = Nvml("hgx-h200");  // its fixture has no MIG: NOT_SUPPORTED
  REQUIRE(plain.devices.size() == 8);
  for (const NvmlDevice& d : plain.devices) {
    CHECK_FALSE(d.mig.has_value());
    CHECK(d.error.empty());
  }
  TempDir dir;
  UseFixtureWith("XPU_FAKE_NVML_JSON", "hgx-h200-mig/fake-vendor/nvml.json", "unhealthy",
                 R"([], "migNotSupported": [1, 5])", dir);
  NvmlFacts f = ProbeNvml({kFakeDir});
  REQUIRE(f.devices.size() == 8);
  for (const NvmlDevice& d : f.devices) {
    INFO("gpu " << d.index);
    CHECK(d.error.empty());
    CHECK(d.mig.has_value() == (d.index != 1 && d.index != 5));
  }
}

TEST_CASE("nvml: a failing MIG call leaves that GPU's MIG out and names the call") {
  TempDir dir;
  // GPU 0's first profile answers garbage: the fake's NVML_ERROR_UNKNOWN.
  UseFixtureWith("XPU_FAKE_NVML_JSON", "hgx-h200-mig/fake-vendor/nvml.json", "memorySizeMB",
                 R"("x")", dir);
  NvmlFacts f = ProbeNvml({kFakeDir});
  REQUIRE(f.devices.size() == 8);
  CHECK_FALSE(f.devices[0].mig.has_value());
  CHECK(f.devices[0].error == "nvmlDeviceGetGpuInstanceProfileInfoV: 999 unknown error");
  CHECK(f.devices[0].healthy);
  CHECK(f.devices[0].uuid.rfind("GPU-", 0) == 0);
  REQUIRE(f.devices[1].mig.has_value());
  CHECK(f.devices[1].mig->instances.size() == 2);
}

TEST_CASE("nvml: a lost GPU is unhealthy with its error, the others are read") {
  TempDir dir;
  UseFixtureWith("XPU_FAKE_NVML_JSON", "hgx-h200/fake-vendor/nvml.json", "deviceGone", "[2]", dir);
  NvmlFacts f = ProbeNvml({kFakeDir});
  REQUIRE(f.library.loaded);
  REQUIRE(f.devices.size() == 8);
  CHECK_FALSE(f.devices[2].healthy);
  CHECK(f.devices[2].error == "nvmlDeviceGetHandleByIndex_v2: 15 gpu is lost");
  CHECK(f.devices[2].uuid.empty());
  CHECK(f.devices[3].healthy);
  CHECK(f.devices[3].uuid.rfind("GPU-", 0) == 0);
}

// Writes the fake NVML's run-time control file whole (a rename), as a test injecting faults does.
void WriteControl(const std::string& path, const std::string& json) {
  REQUIRE_OK(WriteFileAtomically(path, json, 0644));
}

TEST_CASE("nvml: the XID watcher gets fatal XIDs injected at run time and checks a lost GPU") {
  TempDir dir;
  const std::string control = dir.path() + "/events.json";
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "hgx-h200/fake-vendor/nvml.json").c_str(), 1);
  setenv("XPU_FAKE_NVML_EVENTS", control.c_str(), 1);
  std::unique_ptr<XidEventSource> source = OpenNvmlXidEvents({kFakeDir});
  INFO(source->status().error);
  REQUIRE(source->status().loaded);
  CHECK(source->watched() == 8);
  auto nothing = source->Wait(std::chrono::milliseconds(0));
  REQUIRE_OK(nothing);
  CHECK(nothing->empty());

  // XID 79 on GPU 3 with the GPU gone, an application XID (13) on GPU 0: only the fatal one.
  WriteControl(control, R"({"events": [{"id": 1, "device": 3, "xid": 79},
                                       {"id": 2, "device": 0, "xid": 13}], "lost": [3]})");
  auto events = source->Wait(std::chrono::seconds(5));
  REQUIRE_OK(events);
  REQUIRE(events->size() == 1);
  CHECK(events->at(0).pci_address == "0000:54:00.0");
  CHECK(events->at(0).xid == 79);
  const Status lost = source->Check("0000:54:00.0");
  CHECK(lost.code() == StatusCode::kUnavailable);
  CHECK(lost.message() == "not on the bus (nvmlDeviceGetHandleByIndex_v2: 15 gpu is lost)");
  CHECK(source->Check("0000:13:00.0").ok());
  // A probe meanwhile sees the lost GPU too; events already raised are not raised again.
  NvmlFacts probed = ProbeNvml({kFakeDir});
  REQUIRE(probed.devices.size() == 8);
  CHECK_FALSE(probed.devices[3].healthy);
  CHECK(probed.devices[3].xid_events.empty());

  // Back on the bus: the check passes, nothing new arrives within a short wait.
  WriteControl(control, R"({"events": [{"id": 1, "device": 3, "xid": 79}], "lost": []})");
  CHECK(source->Check("0000:54:00.0").ok());
  auto after = source->Wait(std::chrono::milliseconds(50));
  REQUIRE_OK(after);
  CHECK(after->empty());
  CHECK(source->Check("0000:99:00.0").message() == "not on the bus");
  unsetenv("XPU_FAKE_NVML_EVENTS");
}

TEST_CASE("nvml: application XIDs are not device faults") {
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) CHECK(IsApplicationXid(xid));
  for (uint64_t xid : {48, 74, 79, 92, 94, 95, 119, 120}) CHECK_FALSE(IsApplicationXid(xid));
  CHECK(XidDescription(79) == "GPU has fallen off the bus");
  CHECK(XidDescription(12345).empty());
}

TEST_CASE("nvml: a missing fixture makes init fail, not the probe") {
  unsetenv("XPU_FAKE_NVML_JSON");
  NvmlFacts f = ProbeNvml({kFakeDir});
  CheckInitFailed(f.library, "nvmlInit_v2: 999 unknown error");
}

TEST_CASE("nvml: no library anywhere") {
  if (RealLibraryOnLoaderPath("libnvidia-ml.so.1")) {
    XPU_SKIP("a real libnvidia-ml.so.1 is on the loader path");
  }
  TempDir empty;
  NvmlFacts f = ProbeNvml({empty.path(), "/nonexistent/xpu"});
  CHECK_FALSE(f.library.loaded);
  CHECK(f.library.path.empty());
  CHECK(f.library.error.find("load libnvidia-ml.so.1: not found in " + empty.path() +
                             ", /nonexistent/xpu or the loader path") == 0);
}

TEST_CASE("nvml: a library lacking a required symbol is not loaded and names it") {
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "hgx-h200/fake-vendor/nvml.json").c_str(), 1);
  NvmlFacts f = ProbeNvml({kFakeDir + "/init-only", kFakeDir});
  CHECK_FALSE(f.library.loaded);
  CHECK(f.library.path == kFakeDir + "/init-only/libnvidia-ml.so.1");
  CHECK(f.library.error.find("missing required symbols nvmlShutdown, ") != std::string::npos);
  CHECK(f.library.error.find("nvmlDeviceGetMinorNumber") != std::string::npos);
  CHECK(f.library.error.find("nvmlInit_v2") == std::string::npos);
  CHECK(f.devices.empty());
  // The lib dirs are searched in order: the full fake behind it is not used.
  CHECK(ProbeNvml({kFakeDir, kFakeDir + "/init-only"}).library.loaded);
}

TEST_CASE("nvml: an older library lacking optional functions leaves those facts empty") {
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "gb200-tray/fake-vendor/nvml.json").c_str(), 1);
  NvmlFacts f = ProbeNvml({kFakeDir + "/old"});
  REQUIRE(f.library.loaded);
  CHECK(f.library.error.empty());
  CHECK(f.library.missing_symbols ==
        std::vector<std::string>{"nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetNumaNodeId",
                                 "nvmlDeviceGetGpuFabricInfo",
                                 "nvmlDeviceGetGpuInstanceProfileInfoV",
                                 "nvmlDeviceGetGpuInstancePossiblePlacements_v2"});
  REQUIRE(f.devices.size() == 4);
  for (const NvmlDevice& d : f.devices) {
    CHECK(d.error.empty());
    CHECK(d.memory_bytes > 0);  // from nvmlDeviceGetMemoryInfo
    CHECK_FALSE(d.numa_node.has_value());
    CHECK(d.fabric_state.empty());
    CHECK(d.cluster_uuid.empty());
    CHECK_FALSE(d.clique_id.has_value());
    CHECK(d.links.size() == 18);
  }
  // Without the versioned profile info and the _v2 placements there is no MIG, even where the
  // GPUs have it.
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "hgx-h200-mig/fake-vendor/nvml.json").c_str(), 1);
  NvmlFacts mig = ProbeNvml({kFakeDir + "/old"});
  REQUIRE(mig.devices.size() == 8);
  for (const NvmlDevice& d : mig.devices) {
    CHECK_FALSE(d.mig.has_value());
    CHECK(d.error.empty());
  }
}

// The (profile, id, placement) of each MIG instance `mig` lists on `gpu`, by placement.
std::vector<std::tuple<std::string, int64_t, int64_t>> MigInstances(PartitionBackend& mig,
                                                                    const PartitionParent& gpu) {
  StatusOr<std::vector<LivePartition>> live = mig.List(gpu);
  REQUIRE_OK(live);
  std::vector<std::tuple<std::string, int64_t, int64_t>> out;
  for (const LivePartition& l : *live) out.emplace_back(l.profile, l.id, l.placement.value_or(-1));
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return std::get<2>(a) < std::get<2>(b); });
  return out;
}

TEST_CASE("nvml partitions: list, create at a placement, what the GPU refuses, destroy") {
  TempDir dir;
  const std::string state = dir.path() + "/state.json";
  setenv("XPU_FAKE_NVML_STATE", state.c_str(), 1);
  setenv("XPU_FAKE_NVML_JSON", (kHosts + "hgx-h200-mig/fake-vendor/nvml.json").c_str(), 1);
  const PartitionParent gpu0{"gpu-0", "0000:13:00.0", 0};
  const PartitionParent gpu1{"gpu-1", "0000:14:00.0", 1};
  std::string uuid;
  {
    auto opened = OpenNvmlPartitions({kFakeDir});
    REQUIRE_OK(opened);
    PartitionBackend& mig = **opened;
    CHECK(mig.kind() == "mig");
    using Row = std::tuple<std::string, int64_t, int64_t>;
    // The fixture's: named as the inventory names them, with their MIG devices' UUIDs.
    CHECK(MigInstances(mig, gpu1) == std::vector<Row>{{"1g.18gb", 7, 0}, {"3g.71gb", 2, 4}});
    CHECK(mig.List(gpu1).value().at(0).uuid == "MIG-4cb87259-21dd-5cca-9c06-13a08e48d65d");
    CHECK(MigInstances(mig, gpu0).empty());

    const StatusOr<LivePartition> made = mig.Create(gpu0, "1g.18gb", -1, 6);
    REQUIRE_OK(made);
    CHECK(made->profile == "1g.18gb");
    CHECK(made->id == 1);
    CHECK(made->placement == 6);
    CHECK(made->uuid.starts_with("MIG-"));
    uuid = made->uuid;
    CHECK(mig.List(gpu0).value() == std::vector<LivePartition>{*made});
    // By index too (no PCI address).
    CHECK(mig.List({"gpu-0", "", 0}).value().size() == 1);
    // Discovery lists it with its UUID.
    const NvmlFacts f = ProbeNvml({kFakeDir});
    REQUIRE(f.devices[0].mig.has_value());
    REQUIRE(f.devices[0].mig->instances.size() == 1);
    CHECK(f.devices[0].mig->instances[0].uuid == uuid);
    CHECK(f.devices[0].mig->instances[0].placement.start == 6);

    // Slots 4-7 overlap slot 6: unavailable, as NVML's insufficient resources.
    const StatusOr<LivePartition> overlap = mig.Create(gpu0, "3g.71gb", -1, 4);
    CHECK(overlap.status().code() == StatusCode::kUnavailable);
    CHECK_THAT(overlap.status().message(),
               Catch::Contains("gpu-0: nvmlDeviceCreateGpuInstanceWithPlacement(3g.71gb at 4): 23 "
                               "insufficient resources"));
    CHECK(mig.Create(gpu0, "1g.18gb", -1, 6).status().code() == StatusCode::kUnavailable);
    // A profile the GPU lacks, a placement the profile lacks.
    CHECK(mig.Create(gpu0, "9g.99gb", -1, 0).status().code() == StatusCode::kInvalidArgument);
    CHECK(mig.Create(gpu0, "2g.35gb", -1, 3).status().code() == StatusCode::kInvalidArgument);
    // MIG mode off: node configuration, never switched here.
    const PartitionParent gpu4{"gpu-4", "0000:93:00.0", 4};
    const Status off = mig.Create(gpu4, "1g.18gb", -1, 0).status();
    CHECK(off.code() == StatusCode::kFailedPrecondition);
    CHECK_THAT(off.message(), Catch::Contains("MIG mode is node configuration"));
    CHECK(MigInstances(mig, gpu4).empty());
    CHECK(mig.List({"gpu-9", "", 9}).status().code() == StatusCode::kNotFound);
  }
  // The library unloaded: what was made outlives it (a restarted plugin sees it).
  {
    auto again = OpenNvmlPartitions({kFakeDir});
    REQUIRE_OK(again);
    PartitionBackend& mig = **again;
    REQUIRE(mig.List(gpu0).value().size() == 1);
    CHECK(mig.List(gpu0).value()[0].uuid == uuid);
    REQUIRE_OK(mig.Destroy(gpu0, 1));
    CHECK(mig.Destroy(gpu0, 1).code() == StatusCode::kNotFound);
    CHECK(MigInstances(mig, gpu0).empty());
    REQUIRE_OK(mig.Destroy(gpu1, 7));  // one the fixture had
    CHECK(MigInstances(mig, gpu1).size() == 1);
    CHECK(mig.Destroy(gpu1, 99).code() == StatusCode::kNotFound);
    // A reboot (the state gone): the fixture's instances again.
    REQUIRE_OK(mig.Create(gpu0, "2g.35gb", -1, 2));
    std::filesystem::remove(state);
    CHECK(MigInstances(mig, gpu0).empty());
    CHECK(MigInstances(mig, gpu1).size() == 2);
  }
  unsetenv("XPU_FAKE_NVML_STATE");
}

TEST_CASE("nvml partitions: a busy GPU answers unavailable") {
  TempDir dir;
  UseFixtureWith("XPU_FAKE_NVML_JSON", "hgx-h200-mig/fake-vendor/nvml.json", "migCreateBusy", "[2]",
                 dir);
  auto mig = OpenNvmlPartitions({kFakeDir});
  REQUIRE_OK(mig);
  const Status busy = (*mig)->Create({"gpu-2", "", 2}, "1g.18gb", -1, 0).status();
  CHECK(busy.code() == StatusCode::kUnavailable);
  CHECK_THAT(busy.message(), Catch::Contains("insufficient resources"));
  CHECK((*mig)->Create({"gpu-0", "", 0}, "7g.141gb", -1, 0).ok());
}

}  // namespace
}  // namespace xpu::discovery
