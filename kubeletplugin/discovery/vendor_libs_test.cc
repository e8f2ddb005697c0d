// ProbeNvml and ProbeDcmi through the real dlopen path, against the fake libraries of
// kubeletplugin/discovery/testing/ answering from the host fixtures' fake-vendor/*.json.
#include "kubeletplugin/discovery/vendor_libs.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "base/testing/temp_dir.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/xid_events.h"

namespace xpu::discovery {
namespace {

const std::string kFakeDir = XPU_FAKE_LIB_DIR;
const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/";

NvmlFacts Nvml(const std::string& host) {
  setenv("XPU_FAKE_NVML_JSON", (kHosts + host + "/fake-vendor/nvml.json").c_str(), 1);
  return ProbeNvml({kFakeDir});
}

DcmiFacts Dcmi(const std::string& host) {
  setenv("XPU_FAKE_DCMI_JSON", (kHosts + host + "/fake-vendor/dcmi.json").c_str(), 1);
  return ProbeDcmi({kFakeDir});
}

// Nvml(host), which must load and find `devices` GPUs.
NvmlFacts LoadedNvml(const std::string& host, size_t devices) {
  NvmlFacts f = Nvml(host);
  REQUIRE(f.library.loaded);
  REQUIRE(f.devices.size() == devices);
  return f;
}

// Dcmi(host), which must load and find `chips` chips.
DcmiFacts LoadedDcmi(const std::string& host, size_t chips) {
  DcmiFacts f = Dcmi(host);
  REQUIRE(f.library.loaded);
  REQUIRE(f.chips.size() == chips);
  return f;
}

using testing::TempDir;

// True when a real `file` is on the loader path: then "no library anywhere" cannot be tested.
bool RealLibraryOnLoaderPath(const char* file) {
  void* h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return false;
  dlclose(h);
  return true;
}

// The fake library's fixture `fixture` with the member `key` set to the JSON `value`, written to
// `dir`; its path.
std::string FixtureWith(const std::string& fixture, const std::string& key,
                        const std::string& value, const TempDir& dir) {
  std::ifstream in(fixture);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"" + key + "\": ");
  REQUIRE(at != std::string::npos);
  const size_t start = at + key.size() + 4;
  const size_t end = text.find_first_of(",\n}", start);
  text.replace(start, end - start, value);
  std::string path = dir.path() + "/" + key + ".json";
  std::ofstream(path) << text;
  return path;
}

// Points the fake library's variable `env` at the host's fixture `file` with `key` set to
// `value` (FixtureWith).
void UseFixtureWith(const char* env, const std::string& file, const std::string& key,
                    const std::string& value, const TempDir& dir) {
  setenv(env, FixtureWith(kHosts + file, key, value, dir).c_str(), 1);
}

// The vendor ids `backend` lists on `parent`.
std::vector<int64_t> LiveIds(PartitionBackend& backend, const PartitionParent& parent) {
  std::vector<int64_t> out;
  const StatusOr<std::vector<LivePartition>> live = backend.List(parent);  // kept: loop over it
  REQUIRE_OK(live);
  for (const LivePartition& l : *live) out.push_back(l.id);
  return out;
}

// `library` loaded from `path` with every symbol and no error.
void RequireLoaded(const LibraryStatus& library, const std::string& name, const std::string& path) {
  INFO(library.error);
  REQUIRE(library.loaded);
  CHECK(library.name == name);
  CHECK(library.path == path);
  CHECK(library.error.empty());
  CHECK(library.missing_symbols.empty());
}

// `library` was found but did not load: its init failed with `error`.
void CheckInitFailed(const LibraryStatus& library, const std::string& error) {
  CHECK_FALSE(library.loaded);
  CHECK(library.error == error);
}

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
  std::ofstream(path + ".tmp") << json;
  std::filesystem::rename(path + ".tmp", path);
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

std::map<std::string, int> CountTypes(const DcmiFacts& f) {
  std::map<std::string, int> n;
  for (const DcmiTopology& t : f.topology) ++n[t.type];
  return n;
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
