#include "kubeletplugin/discovery/discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "api/node_description.h"
#include "api/node_inventory.h"
#include "base/testing/require_ok.h"
#include "base/testing/skip.h"
#include "base/testing/text_file.h"
#include "kubeletplugin/discovery/golden.h"
#include "topology/solver.h"

namespace xpu::discovery {
namespace {

namespace fs = std::filesystem;

const std::string kSource = XPU_SOURCE_DIR;
const std::string kHosts = kSource + "/e2e/fixtures/hosts";

using xpu::testing::ReadText;
using xpu::testing::WriteText;

// A path under a directory: dir/name.
std::string Under(const std::string& dir, const std::string& name) {
  return std::string(dir).append("/").append(name);
}

api::NodeInventory DiscoverHost(const std::string& root, bool probe = false) {
  DiscoveryOptions options;
  options.host_root = root;
  options.node_name = "node-a";
  options.now = std::string(kGoldenTime);
  options.probe_vendor_libraries = probe;
  StatusOr<api::NodeInventory> inv = Discover(options);
  REQUIRE_OK(inv);
  REQUIRE_OK(api::ValidateNodeInventory(*inv));
  return *inv;
}

const api::Condition* FindCondition(const api::NodeInventory& inv, std::string_view type) {
  for (const api::Condition& c : inv.status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

const api::InventoryDevice* FindDevice(const api::NodeInventory& inv, std::string_view name) {
  for (const api::InventoryDevice& d : inv.status.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// A writable copy of a fixture host, removed at the end of the test.
class TempHost {
 public:
  explicit TempHost(const std::string& fixture) {
    char tmpl[] = "/tmp/xpu-discovery-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/root";
    if (fixture.empty()) {
      fs::create_directories(root_);
    } else {
      fs::copy(kHosts + "/" + fixture, root_,
               fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
  }
  ~TempHost() {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    for (const auto& e : fs::recursive_directory_iterator(
             dir_, fs::directory_options::skip_permission_denied, ec)) {
      if (!e.is_symlink()) {
        fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
    }
    fs::remove_all(dir_, ec);
  }
  const std::string& root() const { return root_; }
  const std::string& dir() const { return dir_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }
  // The sysfs directory of a PCI function.
  std::string PciDir(const std::string& bdf) const {
    return fs::canonical(Path("sys/bus/pci/devices/" + bdf)).string();
  }

 private:
  std::string dir_;
  std::string root_;
};

struct HostCase {
  std::string name;
  std::string prefix;
  size_t count;
  std::string vendor;
  std::string model;
  std::string rule_set;
  std::vector<std::string> groups;
  std::string driver_semver;
  std::map<std::string, std::string> nic_pairs;  // NIC -> device
};

// What hardware.md and scripts/gen-host-fixtures say each fixture host holds.
std::vector<HostCase> HostCases() {
  return {
      {"atlas800-9000",
       "npu",
       8,
       "huawei",
       "Ascend910",
       "ascend910-ring",
       {"ring-0", "ring-1"},
       "23.0.0",
       {}},
      {"atlas800t-a2",
       "npu",
       8,
       "huawei",
       "Ascend910B",
       "any",
       {"hccs-0"},
       "24.1.0-rc3",
       {{"enp25s0np0", "npu-0"},
        {"enp26s0np0", "npu-2"},
        {"enp153s0np0", "npu-4"},
        {"enp154s0np0", "npu-6"}}},
      {"atlas200t-a2-box16",
       "npu",
       16,
       "huawei",
       "Ascend910B",
       "ascend910b-box16",
       {"area-0", "area-1"},
       "24.1.0-rc3",
       {}},
      {"atlas800t-a3",
       "npu",
       16,
       "huawei",
       "Ascend910C",
       "ascend-a3",
       {"module-0", "module-1", "module-2", "module-3", "module-4", "module-5", "module-6",
        "module-7"},
       "25.0.0-rc1",
       {{"enp25s0np0", "npu-0"},
        {"enp26s0np0", "npu-2"},
        {"enp89s0np0", "npu-4"},
        {"enp90s0np0", "npu-6"},
        {"enp153s0np0", "npu-8"},
        {"enp154s0np0", "npu-10"},
        {"enp217s0np0", "npu-12"},
        {"enp218s0np0", "npu-14"}}},
      {"hgx-h200",
       "gpu",
       8,
       "nvidia",
       "H200",
       "nvswitch",
       {"board-0"},
       "570.158.1",
       {{"enp21s0np0", "gpu-0"},
        {"enp22s0np0", "gpu-1"},
        {"enp85s0np0", "gpu-2"},
        {"enp86s0np0", "gpu-3"},
        {"enp149s0np0", "gpu-4"},
        {"enp150s0np0", "gpu-5"},
        {"enp213s0np0", "gpu-6"},
        {"enp214s0np0", "gpu-7"}}},
      {"pcie-2numa-8gpu", "gpu", 8, "nvidia", "L40S", "pcie-tree", {}, "570.158.1", {}},
      {"gb200-tray", "gpu", 4, "nvidia", "GB200", "nvswitch", {"board-0"}, "570.158.1", {}},
      {"mixed-gpu-nic",
       "gpu",
       4,
       "nvidia",
       "H100-PCIe",
       "pcie-tree",
       {},
       "570.158.1",
       {{"enp21s0np0", "gpu-0"},
        {"enp22s0np0", "gpu-1"},
        {"enp149s0np0", "gpu-2"},
        {"enp150s0np0", "gpu-3"}}},
      {"hygon-dcu-8",
       "dcu",
       8,
       "hygon",
       "DCU-6320",
       "any",
       {"xgmi-hive-0", "xgmi-hive-1"},
       "6.3.8-v1.5.2",
       {}},
      {"cambricon-mlu370-x8",
       "mlu",
       8,
       "cambricon",
       "MLU370",
       "ring-sets",
       {"card-0", "card-1", "card-2", "card-3", "mlulink-0"},
       "5.10.29",
       {}},
      {"metax-c500-8", "gpu", 8, "metax", "C500", "pcie-tree", {}, "2.9.6", {}},
      {"enflame-s60-8", "gcu", 8, "enflame", "S60", "pcie-tree", {}, "1.2.4", {}},
  };
}

TEST_CASE("every fixture host gives its devices, rule set, groups, NIC pairs and versions") {
  for (const HostCase& c : HostCases()) {
    SECTION(c.name) {
      const api::NodeInventory inv = DiscoverHost(kHosts + "/" + c.name);
      const api::NodeInventoryStatus& s = inv.status;
      REQUIRE(s.devices.size() == c.count);
      for (size_t i = 0; i < c.count; ++i) {
        const api::InventoryDevice& d = s.devices[i];
        CHECK(d.name == c.prefix + "-" + std::to_string(i));
        CHECK(d.index == static_cast<int64_t>(i));
        CHECK(d.vendor == c.vendor);
        CHECK(d.model == c.model);
        CHECK(d.health == "Healthy");
        CHECK(d.numa_node.has_value());
        CHECK(d.pcie_root.starts_with("pci"));
        CHECK(d.pcie_path.size() >= 2);
        CHECK(d.pcie_path.front() == d.pcie_root);
        CHECK(d.pcie_path.back() == d.pci_address);
        CHECK(d.sources.at("pci") == "sysfs");
        REQUIRE(d.attributes.contains("driverVersion"));
        CHECK(*d.attributes.at("driverVersion").version == c.driver_semver);
      }
      CHECK(s.rule_set == c.rule_set);
      std::vector<std::string> groups;
      for (const api::InventoryGroup& g : s.groups) groups.push_back(g.name);
      CHECK(groups == c.groups);
      std::map<std::string, std::string> pairs;
      for (const api::InventoryNic& n : s.nics) pairs[n.name] = n.paired_device;
      CHECK(pairs == c.nic_pairs);
      CHECK(s.versions.at("driver").semver == c.driver_semver);
      const std::string boot = ReadText(kHosts + "/" + c.name + "/proc/sys/kernel/random/boot_id");
      CHECK(s.boot_id + "\n" == boot);
      CHECK(s.health == "Healthy");
      REQUIRE(FindCondition(inv, "Ready") != nullptr);
      CHECK(FindCondition(inv, "HostFiles") == nullptr);
      CHECK(FindCondition(inv, "DeviceNodes") == nullptr);
    }
  }
}

TEST_CASE("Ascend versions, hccn addresses and A3 modules") {
  const api::NodeInventory inv = DiscoverHost(kHosts + "/atlas800t-a3");
  const api::NodeInventoryStatus& s = inv.status;
  CHECK(s.versions.at("driver").raw == "25.0.rc1");
  CHECK(s.versions.at("firmware").raw == "7.7.0.1.231");
  CHECK(s.versions.at("firmware").semver == "7.7.0");
  CHECK(s.versions.at("cann").semver == "8.1.0-rc1");
  const api::InventoryDevice* npu5 = FindDevice(inv, "npu-5");
  REQUIRE(npu5 != nullptr);
  CHECK(*npu5->attributes.at("huawei.com/deviceIP").string_value == "192.168.103.15");
  CHECK(npu5->sources.at("deviceIP") == "hccn");
  CHECK(*npu5->attributes.at("module").string_value == "module-2");
  CHECK(*npu5->attributes.at("toolkitVersion").version == "8.1.0-rc1");
  CHECK(npu5->firmware_version == "7.7.0.1.231");
  size_t sio = 0;
  for (const api::InventoryLink& l : s.links) {
    CHECK(l.source == "server-model");
    sio += l.type == "sio" ? 1 : 0;
  }
  CHECK(sio == 8);
}

TEST_CASE("NVSwitch functions are not GPUs, the NVIDIA index is the device minor") {
  const api::NodeInventory inv = DiscoverHost(kHosts + "/hgx-h200");
  CHECK(inv.status.devices.size() == 8);
  for (const api::InventoryDevice& d : inv.status.devices) CHECK(d.sources.at("index") == "procfs");
  CHECK(inv.status.links.size() == 28);
  CHECK(inv.status.devices[0].memory == "143771Mi");
}

TEST_CASE("Hygon xGMI links and memory come from the KFD topology") {
  const api::NodeInventory inv = DiscoverHost(kHosts + "/hygon-dcu-8");
  REQUIRE(inv.status.links.size() == 12);
  for (const api::InventoryLink& l : inv.status.links) {
    CHECK(l.type == "xgmi");
    CHECK(l.source == "kfd");
    const int a = l.a.back() - '0';
    const int b = l.b.back() - '0';
    CHECK(a / 4 == b / 4);  // inside one hive of four
  }
  CHECK(inv.status.devices[0].memory == "64Gi");
  CHECK(inv.status.devices[0].sources.at("memory") == "kfd");
}

// The solver's answer for every count, with all devices free and with the first one taken.
std::vector<std::string> Answers(const topology::NodeSpec& spec) {
  StatusOr<topology::Node> node = topology::Node::Build(spec);
  REQUIRE_OK(node);
  std::vector<std::string> out;
  for (const topology::DeviceSet free :
       {node->All(), node->All() - topology::DeviceSet::FromMask(1)}) {
    for (int k = 1; k <= node->size(); ++k) {
      const topology::SolveResult r = topology::Solve(*node, free, k);
      std::string line = std::to_string(k) + ":";
      if (!r.feasible) {
        out.push_back(line + " infeasible");
        continue;
      }
      for (const std::string& n : node->Names(r.devices)) line += " " + n;
      line += " bottleneck=" + std::to_string(r.score.bottleneck_mbps) +
              " total=" + std::to_string(r.score.total_mbps) +
              " pref=" + std::to_string(r.score.preference) +
              " frag=" + std::to_string(r.score.fragmentation);
      out.push_back(line);
    }
  }
  return out;
}

TEST_CASE("the discovered inventory gives the solver the answers of the topology file") {
  for (const std::string name :
       {"atlas800-9000", "atlas800t-a2", "atlas200t-a2-box16", "atlas800t-a3", "hgx-h200",
        "pcie-2numa-8gpu", "cambricon-mlu370-x8"}) {
    SECTION(name) {
      const api::NodeInventory inv = DiscoverHost(Under(kHosts, name));
      StatusOr<topology::NodeSpec> discovered = api::NodeDescriptionFromInventory(inv);
      REQUIRE_OK(discovered);
      StatusOr<topology::NodeSpec> file = api::ReadNodeDescriptionFile(
          kSource + "/e2e/fixtures/topologies/" + std::string(name) + ".json");
      REQUIRE_OK(file);
      CHECK(Answers(*discovered) == Answers(*file));
    }
  }
}

TEST_CASE("each fixture host equals its golden inventory") {
  const std::vector<std::string> hosts = FixtureHosts(kHosts);
  REQUIRE(hosts.size() >= 15);
  for (const std::string& name : hosts) {
    SECTION(name) {
      StatusOr<std::string> got = GoldenInventory(Under(kHosts, name), name);
      REQUIRE_OK(got);
      const std::string want =
          ReadText(Under(kSource + "/e2e/fixtures/hosts-expected", name + ".json"));
      INFO("e2e/fixtures/hosts-expected/" + name +
           ".json differs from discovery; regenerate with: build/bin/gen-discovery-goldens "
           "e2e/fixtures/hosts e2e/fixtures/hosts-expected (then review the diff)");
      CHECK(*got == want);
    }
  }
}

TEST_CASE("a garbage numa_node and a missing /dev node are conditions, every device stays") {
  const api::NodeInventory inv = DiscoverHost(kHosts + "/atlas800t-a2-dcmi-broken");
  REQUIRE(inv.status.devices.size() == 8);
  const api::Condition* files = FindCondition(inv, "HostFiles");
  REQUIRE(files != nullptr);
  CHECK(files->status == "False");
  CHECK_THAT(files->message,
             Catch::Contains("0000:17:00.0/numa_node") && Catch::Contains("n/a garbage"));
  CHECK_FALSE(FindDevice(inv, "npu-2")->numa_node.has_value());
  const api::Condition* nodes = FindCondition(inv, "DeviceNodes");
  REQUIRE(nodes != nullptr);
  CHECK_THAT(nodes->message, Catch::Contains("/dev/davinci6"));
  CHECK(FindDevice(inv, "npu-6")->health == "Unhealthy");
  CHECK(FindDevice(inv, "npu-5")->health == "Healthy");
  CHECK(inv.status.health == "Degraded");
}

// Discovers `root`: `devices` devices and a HostFiles condition whose message has `problem`.
api::NodeInventory ExpectHostFilesProblem(const std::string& root, size_t devices,
                                          const std::string& problem) {
  api::NodeInventory inv = DiscoverHost(root);
  CHECK(inv.status.devices.size() == devices);
  const api::Condition* files = FindCondition(inv, "HostFiles");
  REQUIRE(files != nullptr);
  CHECK_THAT(files->message, Catch::Contains(problem));
  return inv;
}

TEST_CASE("an unreadable file is a condition naming it, the other devices still appear") {
  TempHost host("atlas800t-a2");
  SECTION("a file replaced by a directory") {
    const std::string vendor = host.PciDir("0000:14:00.0") + "/vendor";
    fs::remove(vendor);
    fs::create_directory(vendor);
    ExpectHostFilesProblem(host.root(), 7, "0000:14:00.0/vendor: is a directory");
  }
  SECTION("a broken symlink") {
    const std::string link = host.Path("sys/bus/pci/devices/0000:17:00.0");
    fs::remove(link);
    fs::create_symlink("../../../devices/pci0000:10/gone", link);
    const api::NodeInventory inv =
        ExpectHostFilesProblem(host.root(), 7, "/sys/devices/pci0000:10/gone");
    CHECK(FindDevice(inv, "npu-6") != nullptr);
  }
}

// A case of its own: skipped as root, which must not skip the sections above.
TEST_CASE("an unreadable file: one without read permission is a condition naming it") {
  if (::geteuid() == 0) XPU_SKIP("running as root: permissions do not stop reads");
  TempHost host("atlas800t-a2");
  const std::string numa = host.PciDir("0000:14:00.0") + "/numa_node";
  fs::permissions(numa, fs::perms::none);
  ExpectHostFilesProblem(host.root(), 8, "0000:14:00.0/numa_node: permission denied");
}

TEST_CASE("symlinks never lead outside the host root") {
  TempHost host("atlas800t-a2");
  // A complete NVIDIA GPU outside the root, and links to it by absolute and relative paths.
  const std::string outside = host.dir() + "/outside/sys/devices/pci0000:aa/0000:aa:00.0";
  fs::create_directories(outside);
  for (const auto& [file, text] : std::map<std::string, std::string>{{"vendor", "0x10de\n"},
                                                                     {"device", "0x2335\n"},
                                                                     {"class", "0x030200\n"},
                                                                     {"numa_node", "0\n"}}) {
    WriteText(Under(outside, file), text);
  }
  fs::create_symlink(outside, host.Path("sys/bus/pci/devices/0000:aa:00.0"));
  fs::create_symlink("../../../../../outside/sys/devices/pci0000:aa/0000:aa:00.0",
                     host.Path("sys/bus/pci/devices/0000:aa:00.1"));
  fs::create_symlink("/", host.Path("sys/class/net/rootlink"));
  fs::create_symlink("../../../../../../../../../..", host.Path("sys/class/net/uplink"));
  const api::NodeInventory inv = DiscoverHost(host.root());
  CHECK(inv.status.devices.size() == 8);
  for (const api::InventoryDevice& d : inv.status.devices) CHECK(d.vendor == "huawei");
  const api::Condition* files = FindCondition(inv, "HostFiles");
  REQUIRE(files != nullptr);
  CHECK_THAT(files->message, Catch::Contains("escapes the host root"));
  CHECK(inv.status.nics.size() == 4);
}

TEST_CASE("an empty host root gives an inventory without devices") {
  TempHost host("");
  const api::NodeInventory inv = DiscoverHost(host.root(), /*probe=*/true);
  CHECK(inv.status.devices.empty());
  CHECK(inv.status.rule_set == "pcie-tree");
  CHECK(FindCondition(inv, "Ready") != nullptr);
  CHECK(FindCondition(inv, "VendorLibrary") == nullptr);  // no device asks for a library
}

// Vendors without a fixture host: a minimal sysfs with two functions under one root port.
struct SmallHostCase {
  std::string vendor_id, device_id, pci_class;
  std::vector<std::string> dev_nodes;  // under the root; empty for DRM render nodes
  bool drm = false;
  std::string vendor, kind, model;
};

TEST_CASE("310P, Biren, Moore Threads and AMD Instinct devices are found with their nodes") {
  const std::vector<SmallHostCase> cases = {
      {"0x19e5",
       "0xd500",
       "0x120000",
       {"dev/davinci0", "dev/davinci1"},
       false,
       "huawei",
       "npu",
       "Ascend310P"},
      {"0x1ee0",
       "0x0100",
       "0x030200",
       {"dev/biren/card_0", "dev/biren/card_1"},
       false,
       "biren",
       "gpu",
       ""},
      {"0x1ed5",
       "0x0200",
       "0x030000",
       {"dev/mtgpu.0", "dev/mtgpu.1"},
       false,
       "mthreads",
       "gpu",
       ""},
      {"0x1002", "0x74a1", "0x120000", {}, true, "amd", "gpu", "MI300X"},
  };
  for (const SmallHostCase& c : cases) {
    INFO(c.vendor);
    TempHost host("");
    const std::string rp = "sys/devices/pci0000:40/0000:40:01.0";
    fs::create_directories(host.Path("sys/bus/pci/devices"));
    auto put = [&](const std::string& rel, const std::string& text) {
      fs::create_directories(fs::path(host.Path(rel)).parent_path());
      WriteText(host.Path(rel), text);
    };
    put(rp + "/vendor", "0x1d94\n");
    put(rp + "/device", "0x1470\n");
    put(rp + "/class", "0x060400\n");
    fs::create_symlink("../../../devices/pci0000:40/0000:40:01.0",
                       host.Path("sys/bus/pci/devices/0000:40:01.0"));
    for (int i = 0; i < 2; ++i) {
      std::string bdf = "0000:41:0";
      bdf += std::to_string(i);
      bdf += ".0";
      std::string dir = rp;
      dir += "/";
      dir += bdf;
      put(dir + "/vendor", c.vendor_id + "\n");
      put(dir + "/device", c.device_id + "\n");
      put(dir + "/class", c.pci_class + "\n");
      put(dir + "/numa_node", "1\n");
      fs::create_symlink("../../../devices/pci0000:40/0000:40:01.0/" + bdf,
                         host.Path("sys/bus/pci/devices/" + bdf));
      if (c.drm) {
        put(dir + "/drm/renderD" + std::to_string(128 + i) + "/dev", "226:128\n");
        put("dev/dri/renderD" + std::to_string(128 + i), "");
      }
    }
    for (const std::string& n : c.dev_nodes) put(n, "");
    const api::NodeInventory inv = DiscoverHost(host.root());
    REQUIRE(inv.status.devices.size() == 2);
    for (int i = 0; i < 2; ++i) {
      const api::InventoryDevice& d = inv.status.devices[static_cast<size_t>(i)];
      CHECK(d.name == c.kind + "-" + std::to_string(i));
      CHECK(d.vendor == c.vendor);
      if (!c.model.empty()) CHECK(d.model == c.model);
      CHECK(d.health == "Healthy");  // the device node was found
      CHECK(d.numa_node == 1);
      CHECK(d.pcie_root == "pci0000:40");
    }
    CHECK(FindCondition(inv, "DeviceNodes") == nullptr);
    CHECK(inv.status.health == "Healthy");
  }
}

TEST_CASE("a vendor library that does not load is a condition, sysfs facts stay") {
  const api::NodeInventory inv = DiscoverHost(kHosts + "/hgx-h200", /*probe=*/true);
  CHECK(inv.status.devices.size() == 8);
  const api::Condition* lib = FindCondition(inv, "VendorLibrary");
  REQUIRE(lib != nullptr);
  CHECK(lib->status == "False");
  CHECK(lib->reason == "NvmlUnavailable");
  CHECK_THAT(lib->message, Catch::StartsWith("nvml: "));
  CHECK(inv.status.rule_set == "nvswitch");
}

TEST_CASE("bad options fail") {
  DiscoveryOptions options;
  options.host_root = "/nonexistent/xpu-host-root";
  CHECK(Discover(options).status().code() == StatusCode::kInvalidArgument);
  options.host_root = kHosts + "/hgx-h200";
  options.node_name = "Not_A_Name";
  CHECK(Discover(options).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace xpu::discovery

namespace xpu::discovery {
namespace {

api::NodeInventory DiscoverWith(const std::string& host, DiscoveryOptions options) {
  options.host_root = kHosts + "/" + host;
  options.node_name = "node-a";
  options.now = std::string(kGoldenTime);
  StatusOr<api::NodeInventory> inv = Discover(options);
  REQUIRE_OK(inv);
  return *inv;
}

// What a vendor library's probe gives before its devices: `library` loaded from `path`, and the
// driver's version.
template <typename Facts>
Facts LoadedFacts(const std::string& library, const std::string& path,
                  const std::string& driver_version) {
  Facts f;
  f.library = {library, true, path, "", {}};
  f.driver_version = driver_version;
  return f;
}

TEST_CASE("NVML facts are merged: uuid, memory, health, NVSwitch links, clique") {
  DiscoveryOptions options;
  options.probe_nvml = [](const std::vector<std::string>&) {
    auto f = LoadedFacts<NvmlFacts>("nvml", "/lib/libnvidia-ml.so.1", "580.159.04");
    f.cuda_driver_version = 13000;
    const char* buses[] = {"0000:13:00.0", "0000:14:00.0", "0000:53:00.0", "0000:54:00.0",
                           "0000:93:00.0", "0000:94:00.0", "0000:d3:00.0", "0000:d4:00.0"};
    for (int i = 0; i < 8; ++i) {
      NvmlDevice& d = f.devices.emplace_back();
      d.index = i;
      d.uuid = "GPU-" + std::to_string(i);
      d.pci_bus_id = buses[i];
      d.memory_bytes = uint64_t{150} << 30;
      d.links.push_back({0, true, "0000:03:00.0", "switch"});
      d.fabric_state = "completed";
      d.cluster_uuid = "6f2d1c3e-8a51-4b8e-9a57-0f1d2e3c4b5a";
      d.clique_id = 7;
    }
    f.devices[3].healthy = false;
    f.devices[3].xid_events = {79};
    f.devices[5].xid_events = {13};  // an application XID: still healthy
    return f;
  };
  const api::NodeInventory inv = DiscoverWith("hgx-h200", options);
  CHECK(FindCondition(inv, "VendorLibrary") == nullptr);
  const api::InventoryDevice* gpu3 = FindDevice(inv, "gpu-3");
  CHECK(gpu3->uuid == "GPU-3");
  CHECK(gpu3->memory == "150Gi");
  CHECK(gpu3->sources.at("memory") == "nvml");
  CHECK(gpu3->health == "Unhealthy");
  CHECK(FindDevice(inv, "gpu-5")->health == "Healthy");
  CHECK(inv.status.health == "Degraded");
  CHECK(*gpu3->attributes.at("fabricDomain").string_value ==
        "6f2d1c3e-8a51-4b8e-9a57-0f1d2e3c4b5a.7");
  REQUIRE(inv.status.fabric.has_value());
  CHECK(inv.status.fabric->clique_id == "7");
  for (const api::InventoryLink& l : inv.status.links) CHECK(l.source == "nvml");
  CHECK(inv.status.versions.at("driver").semver == "580.159.4");
  CHECK(inv.status.versions.at("cuda").raw == "13.0");
  CHECK(api::ValidateNodeInventory(inv).ok());
}

TEST_CASE("NVML fills a NUMA node sysfs does not know, sysfs wins where it does") {
  TempHost host("hgx-h200");
  WriteText(host.PciDir("0000:53:00.0") + "/numa_node", "-1\n");
  DiscoveryOptions options;
  options.host_root = host.root();
  options.node_name = "node-a";
  options.probe_nvml = [](const std::vector<std::string>&) {
    auto f = LoadedFacts<NvmlFacts>("nvml", "/lib/libnvidia-ml.so.1", "");
    for (const char* bus : {"0000:13:00.0", "0000:53:00.0"}) {
      NvmlDevice& d = f.devices.emplace_back();
      d.pci_bus_id = bus;
      d.numa_node = 1;
    }
    return f;
  };
  StatusOr<api::NodeInventory> inv = Discover(options);
  REQUIRE_OK(inv);
  const api::InventoryDevice* gpu0 = FindDevice(*inv, "gpu-0");  // 0000:13:00.0, sysfs node 0
  const api::InventoryDevice* gpu2 = FindDevice(*inv, "gpu-2");  // 0000:53:00.0
  REQUIRE(gpu0 != nullptr);
  REQUIRE(gpu2 != nullptr);
  CHECK(gpu0->numa_node == 0);
  CHECK(gpu0->sources.at("numaNode") == "sysfs");
  CHECK(gpu2->numa_node == 1);
  CHECK(gpu2->sources.at("numaNode") == "nvml");
  CHECK(gpu2->attributes.at("numaNode").int_value == 1);
}

TEST_CASE("DCMI facts are merged: chips, HBM, topology, call errors") {
  DiscoveryOptions options;
  options.probe_dcmi = [](const std::vector<std::string>&) {
    auto f = LoadedFacts<DcmiFacts>("dcmi", "/usr/local/dcmi/libdcmi.so", "24.1.rc3");
    const char* buses[] = {"0000:13:00.0", "0000:14:00.0", "0000:17:00.0", "0000:18:00.0",
                           "0000:93:00.0", "0000:94:00.0", "0000:97:00.0", "0000:98:00.0"};
    for (int i = 0; i < 8; ++i) {
      DcmiChip& c = f.chips.emplace_back();
      c.card_id = i;
      c.logic_id = i;
      c.phy_id = i;
      c.chip_name = "910B3";
      c.pci_bus_id = buses[i];
      c.hbm_total_mb = 65536;
      c.device_ip = "10.0.0." + std::to_string(i);
      for (int j = i + 1; j < 8; ++j) f.topology.push_back({i, j, "hccs"});
    }
    f.chips[5].hbm_total_mb = 0;
    f.chips[5].error = "dcmi_get_device_hbm_info: -8005";
    f.chips[2].health = 3;
    return f;
  };
  const api::NodeInventory inv = DiscoverWith("atlas800t-a2", options);
  CHECK(FindDevice(inv, "npu-0")->model == "Ascend910B3");
  CHECK(FindDevice(inv, "npu-0")->sources.at("memory") == "dcmi");
  CHECK(FindDevice(inv, "npu-5")->sources.at("memory") == "server-model");
  CHECK(FindDevice(inv, "npu-2")->health == "Unhealthy");
  CHECK(*FindDevice(inv, "npu-4")->attributes.at("huawei.com/deviceIP").string_value == "10.0.0.4");
  REQUIRE(inv.status.links.size() == 28);
  for (const api::InventoryLink& l : inv.status.links) {
    CHECK(l.source == "dcmi");
    CHECK(l.bandwidth_gbps == 56);
  }
  const api::Condition* lib = FindCondition(inv, "VendorLibrary");
  REQUIRE(lib != nullptr);
  CHECK_THAT(lib->message, Catch::Contains("dcmi: logic id 5: dcmi_get_device_hbm_info: -8005"));
  CHECK(api::ValidateNodeInventory(inv).ok());
}

}  // namespace
}  // namespace xpu::discovery
