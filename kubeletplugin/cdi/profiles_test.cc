#include "kubeletplugin/cdi/profiles.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/testing/require_ok.h"
#include "kubeletplugin/cdi/cdi.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/driverfiles/driver_files.h"

namespace xpu::cdi {
namespace {

namespace fs = std::filesystem;

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts";
const std::string kProfileClaimUid = "3f6c0a4e-0000-4000-8000-000000000001";

DeviceFacts Facts(std::string vendor, std::string kind, int64_t index, std::string node,
                  std::string uuid = "") {
  DeviceFacts f;
  f.name = kind + "-" + std::to_string(index);
  f.vendor = std::move(vendor);
  f.kind = std::move(kind);
  f.index = index;
  f.uuid = std::move(uuid);
  f.device_node = std::move(node);
  return f;
}

// A fresh host root in the temp dir named `name`, holding one-line `files` (relative paths).
fs::path HostWith(const std::string& name, std::initializer_list<const char*> files) {
  fs::path root = fs::temp_directory_path() / name;
  fs::remove_all(root);
  for (const char* f : files) {
    fs::create_directories((root / f).parent_path());
    std::ofstream(root / f).put('\n');
  }
  return root;
}

std::vector<std::string> Paths(const std::vector<DeviceNode>& nodes) {
  std::vector<std::string> out;
  for (const DeviceNode& n : nodes) out.push_back(n.path);
  return out;
}

// The inventory of a fixture host, discovered without vendor libraries.
api::NodeInventory DiscoverFixture(const std::string& root) {
  discovery::DiscoveryOptions options;
  options.host_root = root;
  options.node_name = "node-a";
  options.now = "2026-01-01T00:00:00Z";
  options.probe_vendor_libraries = false;
  StatusOr<api::NodeInventory> inv = discovery::Discover(options);
  INFO(root << ": " << inv.status().ToString());
  REQUIRE_OK(inv);
  return *inv;
}

// The facts of every device of a fixture host's inventory, each with the device node
// discovery::DeviceNodePath names under `root`.
std::vector<DeviceFacts> FactsOfAll(const api::NodeInventory& inv, const std::string& root) {
  std::vector<DeviceFacts> facts;
  for (const api::InventoryDevice& d : inv.status.devices) {
    facts.push_back(FactsOf(d, discovery::DeviceNodePath(root, d)));
  }
  return facts;
}

// The spec the plugin writes for a claim of `facts`: one CDI device per claim device.
Spec SpecFor(const std::vector<DeviceFacts>& facts, const ClaimEdits& edits) {
  Spec spec;
  spec.kind = "k8s.xpu.dra.dev/device";
  for (size_t i = 0; i < facts.size(); ++i) {
    spec.devices.push_back({kProfileClaimUid + "-" + facts[i].name, edits.per_device[i]});
  }
  spec.edits = edits.common;
  return spec;
}

std::vector<std::string> FixtureHosts() {
  std::vector<std::string> hosts;
  for (const auto& e : fs::directory_iterator(kHosts)) {
    if (e.is_directory()) hosts.push_back(e.path().filename().string());
  }
  std::sort(hosts.begin(), hosts.end());
  return hosts;
}

TEST_CASE("Ascend profile: davinci nodes, the control nodes present and physical ids") {
  const std::string root = kHosts + "/atlas800t-a2";
  // Given out of order: the per-device edits follow the input, the variables the index.
  const std::vector<DeviceFacts> facts = {Facts("huawei", "npu", 5, "/dev/davinci5"),
                                          Facts("huawei", "npu", 2, "/dev/davinci2")};
  const ClaimEdits edits = EditsForClaim(facts, root);
  REQUIRE(edits.per_device.size() == 2);
  CHECK(Paths(edits.per_device[0].device_nodes) == std::vector<std::string>{"/dev/davinci5"});
  CHECK(Paths(edits.per_device[1].device_nodes) == std::vector<std::string>{"/dev/davinci2"});
  CHECK(edits.per_device[0].device_nodes[0].host_path.empty());
  CHECK(Paths(edits.common.device_nodes) ==
        std::vector<std::string>{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc",
                                 "/dev/dvpp_cmdlist"});
  CHECK(edits.common.env ==
        std::vector<std::string>{"ASCEND_VISIBLE_DEVICES=2,5", "XPU_DRA_DEVICES=npu-2,npu-5"});
  CHECK(edits.common.mounts.empty());
}

TEST_CASE("Ascend profile leaves out control nodes the host does not have") {
  const fs::path root = HostWith("profiles_test_ascend_partial", {"dev/davinci_manager"});
  const ClaimEdits edits =
      EditsForClaim({Facts("huawei", "npu", 0, "/dev/davinci0")}, root.string());
  CHECK(Paths(edits.common.device_nodes) == std::vector<std::string>{"/dev/davinci_manager"});
  fs::remove_all(root);
}

TEST_CASE("NVIDIA profile: uuids when every device has one, else indexes") {
  const std::string root = kHosts + "/hgx-h200";
  const ClaimEdits with_uuids =
      EditsForClaim({Facts("nvidia", "gpu", 3, "/dev/nvidia3", "GPU-bbb"),
                     Facts("nvidia", "gpu", 1, "/dev/nvidia1", "GPU-aaa")},
                    root);
  CHECK(Paths(with_uuids.common.device_nodes) ==
        std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                 "/dev/nvidia-modeset"});
  CHECK(with_uuids.common.env == std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=GPU-aaa,GPU-bbb",
                                                          "XPU_DRA_DEVICES=gpu-1,gpu-3"});
  const ClaimEdits one_missing =
      EditsForClaim({Facts("nvidia", "gpu", 3, "/dev/nvidia3", "GPU-bbb"),
                     Facts("nvidia", "gpu", 1, "/dev/nvidia1")},
                    root);
  CHECK(one_missing.common.env ==
        std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=1,3", "XPU_DRA_DEVICES=gpu-1,gpu-3"});
  CHECK(Paths(one_missing.per_device[1].device_nodes) == std::vector<std::string>{"/dev/nvidia1"});
}

TEST_CASE("Hygon profile: render nodes, kfd and mkfd, container ordinals") {
  const std::string root = kHosts + "/hygon-dcu-8";
  const ClaimEdits edits = EditsForClaim({Facts("hygon", "dcu", 6, "/dev/dri/renderD134"),
                                          Facts("hygon", "dcu", 2, "/dev/dri/renderD130")},
                                         root);
  CHECK(Paths(edits.per_device[0].device_nodes) == std::vector<std::string>{"/dev/dri/renderD134"});
  CHECK(Paths(edits.common.device_nodes) == std::vector<std::string>{"/dev/kfd", "/dev/mkfd"});
  CHECK(edits.common.env ==
        std::vector<std::string>{"HIP_VISIBLE_DEVICES=0,1", "XPU_DRA_DEVICES=dcu-2,dcu-6"});
  // /opt/hyhal is a driver file (kubeletplugin/driverfiles/), not the profile's.
  CHECK(edits.common.mounts.empty());
}

TEST_CASE("Biren, Moore Threads and AMD profiles on a host root of their own") {
  const fs::path root = HostWith("profiles_test_other_vendors",
                                 {"dev/kfd", "usr/bin/brsmi", "usr/lib/libbiren-ml.so.1",
                                  "usr/lib/libbiren-ml.so", "usr/lib/libother.so"});
  const ClaimEdits biren =
      EditsForClaim({Facts("biren", "gpu", 3, "/dev/biren/card_3")}, root.string());
  CHECK(Paths(biren.per_device[0].device_nodes) == std::vector<std::string>{"/dev/biren/card_3"});
  CHECK(biren.common.device_nodes.empty());
  CHECK(biren.common.mounts.empty());  // brsmi and libbiren-ml: driver files
  CHECK(biren.common.env ==
        std::vector<std::string>{"SUPA_VISIBLE_DEVICES=0", "XPU_DRA_DEVICES=gpu-3"});

  const ClaimEdits mt = EditsForClaim(
      {Facts("mthreads", "gpu", 2, "/dev/mtgpu.2"), Facts("mthreads", "gpu", 0, "/dev/mtgpu.0")},
      root.string());
  CHECK(mt.common.env ==
        std::vector<std::string>{"MTHREADS_VISIBLE_DEVICES=0,2", "XPU_DRA_DEVICES=gpu-0,gpu-2"});

  const ClaimEdits amd =
      EditsForClaim({Facts("amd", "gpu", 5, "/dev/dri/renderD133")}, root.string());
  CHECK(Paths(amd.common.device_nodes) == std::vector<std::string>{"/dev/kfd"});
  CHECK(amd.common.env ==
        std::vector<std::string>{"HIP_VISIBLE_DEVICES=0", "XPU_DRA_DEVICES=gpu-5"});
  fs::remove_all(root);
}

TEST_CASE("Cambricon profile: the device's ipcm node and the control node") {
  const std::string root = kHosts + "/cambricon-mlu370-x8";
  const ClaimEdits edits =
      EditsForClaim({Facts("cambricon", "mlu", 4, "/dev/cambricon_dev4")}, root);
  CHECK(Paths(edits.per_device[0].device_nodes) ==
        std::vector<std::string>{"/dev/cambricon_dev4", "/dev/cambricon_ipcm4"});
  CHECK(Paths(edits.common.device_nodes) == std::vector<std::string>{"/dev/cambricon_ctl"});
  CHECK(edits.common.env ==
        std::vector<std::string>{"CAMBRICON_VISIBLE_DEVICES=4", "XPU_DRA_DEVICES=mlu-4"});
}

TEST_CASE("Enflame and MetaX profiles") {
  const ClaimEdits gcu =
      EditsForClaim({Facts("enflame", "gcu", 1, "/dev/gcu1")}, kHosts + "/enflame-s60-8");
  CHECK(Paths(gcu.common.device_nodes) == std::vector<std::string>{"/dev/gcuctl"});
  CHECK(gcu.common.env ==
        std::vector<std::string>{"ENFLAME_VISIBLE_DEVICES=1", "XPU_DRA_DEVICES=gcu-1"});
  const ClaimEdits metax =
      EditsForClaim({Facts("metax", "gpu", 7, "/dev/dri/renderD135")}, kHosts + "/metax-c500-8");
  CHECK(Paths(metax.common.device_nodes) == std::vector<std::string>{"/dev/mxcd"});
  CHECK(metax.common.env ==
        std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0", "XPU_DRA_DEVICES=gpu-7"});
}

TEST_CASE("A claim of two vendors gets both vendors' shared edits") {
  const std::string root = kHosts + "/hgx-h200";
  const ClaimEdits edits = EditsForClaim(
      {Facts("nvidia", "gpu", 0, "/dev/nvidia0", "GPU-a"), Facts("acme", "xpu", 0, "/dev/acme0")},
      root);
  CHECK(Paths(edits.per_device[1].device_nodes) == std::vector<std::string>{"/dev/acme0"});
  CHECK(edits.common.env ==
        std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=GPU-a", "XPU_DRA_DEVICES=xpu-0,gpu-0"});
}

TEST_CASE("EditsForClaim is deterministic") {
  const std::string root = kHosts + "/atlas800t-a3";
  std::vector<DeviceFacts> facts;
  for (int i : {7, 3, 11, 0}) {
    facts.push_back(Facts("huawei", "npu", i, "/dev/davinci" + std::to_string(i)));
  }
  const ClaimEdits a = EditsForClaim(facts, root);
  std::reverse(facts.begin(), facts.end());
  const ClaimEdits b = EditsForClaim(facts, root);
  CHECK(a.common == b.common);
}

TEST_CASE("DeviceNodePath names indexed and DRM nodes as discovery does") {
  const api::NodeInventory ascend = DiscoverFixture(kHosts + "/atlas800t-a2");
  REQUIRE_FALSE(ascend.status.devices.empty());
  for (const api::InventoryDevice& d : ascend.status.devices) {
    CHECK(discovery::DeviceNodePath(kHosts + "/atlas800t-a2", d) ==
          "/dev/davinci" + std::to_string(d.index));
  }
  const api::NodeInventory hygon = DiscoverFixture(kHosts + "/hygon-dcu-8");
  REQUIRE_FALSE(hygon.status.devices.empty());
  for (const api::InventoryDevice& d : hygon.status.devices) {
    const std::string node = discovery::DeviceNodePath(kHosts + "/hygon-dcu-8", d);
    INFO(d.name);
    CHECK(node.starts_with("/dev/dri/renderD"));
    CHECK(fs::exists(std::string(kHosts).append("/hygon-dcu-8").append(node)));
  }
  api::InventoryDevice unknown;
  unknown.vendor = "acme";
  CHECK(discovery::DeviceNodePath(kHosts + "/hygon-dcu-8", unknown).empty());
}

TEST_CASE("Every fixture host gives a valid spec for all its devices") {
  const std::vector<std::string> hosts = FixtureHosts();
  REQUIRE(hosts.size() >= 10);
  for (const std::string& host : hosts) {
    INFO(host);
    const std::string root = std::string(kHosts).append("/").append(host);
    const api::NodeInventory inv = DiscoverFixture(root);
    REQUIRE_FALSE(inv.status.devices.empty());
    const std::vector<DeviceFacts> facts = FactsOfAll(inv, root);
    for (const DeviceFacts& f : facts) {
      INFO(f.name);
      CHECK_FALSE(f.device_node.empty());
    }
    const ClaimEdits edits = EditsForClaim(facts, root);
    const Spec spec = SpecFor(facts, edits);
    const Status valid = Validate(spec);
    INFO(valid.ToString());
    CHECK(valid.ok());
    CHECK_FALSE(edits.common.env.empty());
    const std::string json = ToJson(spec);
    StatusOr<Spec> back = FromJson(json);
    INFO(back.status().ToString());
    REQUIRE_OK(back);
    CHECK(*back == spec);
    CHECK(MinimumVersion(spec) == "0.5.0");  // device names start with the claim uid
  }
}

// Not run by ctest directly: check-with-cdi-validate runs it with XPU_CDI_SPEC_OUT set and feeds
// the files to the upstream-format checker.
TEST_CASE("Write the spec of every fixture host", "[.write-specs]") {
  const char* out = std::getenv("XPU_CDI_SPEC_OUT");
  REQUIRE(out != nullptr);
  SpecStore store(out, "k8s.xpu.dra.dev/device");
  int n = 0;
  for (const std::string& host : FixtureHosts()) {
    const std::string root = std::string(kHosts).append("/").append(host);
    const api::NodeInventory inv = DiscoverFixture(root);
    const std::vector<DeviceFacts> facts = FactsOfAll(inv, root);
    Spec spec = SpecFor(facts, EditsForClaim(facts, root));
    // With each vendor's driver files (kubeletplugin/driverfiles/), as the plugin writes them.
    std::set<std::string> vendors;
    for (const DeviceFacts& f : facts) vendors.insert(f.vendor);
    for (const std::string& vendor : vendors) {
      StatusOr<driverfiles::DriverFiles> files =
          driverfiles::FindDriverFiles(vendor, root, std::string(driverfiles::kDefaultHookPath));
      INFO(host << " " << vendor << ": " << files.status().ToString());
      REQUIRE_OK(files);
      for (const Mount& m : files->edits.mounts) spec.edits.mounts.push_back(m);
      for (const Hook& h : files->edits.hooks) spec.edits.hooks.push_back(h);
    }
    // One claim uid per host, all in one directory as on a node.
    std::string uid = "00000000-0000-4000-8000-000000000000";
    const std::string number = std::to_string(++n);
    uid.replace(uid.size() - number.size(), number.size(), number);
    const Status written = store.Write(uid, spec).status();
    INFO(host << ": " << written.ToString());
    REQUIRE_OK(written);
  }
}

}  // namespace
}  // namespace xpu::cdi
