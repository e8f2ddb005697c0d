#include "kubeletplugin/driver/driver.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"
#include "e2e/client/claims.h"
#include "e2e/client/kube_sim_process.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/driver/config.h"

namespace xpu::plugin {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
namespace kc = api::client;
using xpu::testing::ReadText;
using xpu::testing::WriteText;

const std::string kHosts = std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts";

using testing::TempDir;

// kube-sim, a copy of a fixture host (so the boot id can change), and the driver's directories.
struct Node {
  std::unique_ptr<e2e::KubeSimProcess> sim;
  std::unique_ptr<kc::Client> client;
  TempDir dir;
  std::string host;
  std::shared_ptr<const api::NodeInventory> inventory;
  std::vector<std::string> log;

  explicit Node(const std::string& fixture = "atlas800t-a2") {
    auto started = e2e::StartSimWithClient(XPU_KUBE_SIM_BINARY, {"default"});
    REQUIRE_OK(started);
    sim = std::move(started->sim);
    client = std::move(started->client);
    host = dir.path() + "/host";
    fs::copy(kHosts + "/" + fixture, host,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    Rediscover();
  }

  void Rediscover() {
    discovery::DiscoveryOptions o;
    o.host_root = host;
    o.node_name = "n1";
    o.probe_vendor_libraries = false;
    auto inv = discovery::Discover(o);
    REQUIRE_OK(inv);
    inventory = std::make_shared<api::NodeInventory>(std::move(inv).value());
  }

  DriverOptions Options() const {
    DriverOptions o;
    o.node_name = "n1";
    o.host_root = host;
    o.cdi_dir = dir.path() + "/cdi";
    o.state_dir = dir.path() + "/state";
    return o;
  }

  std::unique_ptr<Driver> NewDriver() {
    fs::create_directories(dir.path() + "/cdi");
    return std::make_unique<Driver>(
        Options(), client.get(), [this] { return inventory; },
        [this](const std::string& line) { log.push_back(line); });
  }

  // NewDriver(), started.
  std::unique_ptr<Driver> StartedDriver() {
    std::unique_ptr<Driver> driver = NewDriver();
    REQUIRE_OK(driver->Start());
    return driver;
  }

  // Creates a claim and allocates it to `devices` (request "npus", pool n1, our driver unless
  // `driver` says otherwise); returns its uid.
  std::string Claim(const std::string& name, const std::vector<std::string>& devices,
                    const json& config = json::array(), const std::string& driver = "xpu.dra.dev",
                    const std::string& pool = "n1", bool allocate = true) {
    e2e::ClaimSpec spec;
    spec.name = name;
    spec.devices = devices;
    spec.config = config;
    spec.driver = driver;
    spec.pool = pool;
    spec.allocate = allocate;
    StatusOr<std::string> uid = e2e::CreateClaim(*client, spec);
    INFO(uid.status().ToString());
    REQUIRE_OK(uid);
    return *uid;
  }

  std::string CdiPath(const std::string& uid) const {
    return dir.path() + "/cdi/k8s.xpu.dra.dev-device_" + uid + ".json";
  }
  size_t CdiFiles() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir.path() + "/cdi")) n += e.is_regular_file();
    return n;
  }
  void SetBootId(const std::string& id) {
    std::ofstream(host + "/proc/sys/kernel/random/boot_id") << id << "\n";
  }
};

TEST_CASE("prepare writes a CDI spec and a checkpoint entry, and repeats give the same answer") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string uid = node.Claim("c1", {"npu-0", "npu-1"});
  auto out = driver->Prepare({{"default", "c1", uid}});
  REQUIRE(out.size() == 1);
  const PrepareResult& r = out.at(uid);
  INFO(r.error);
  REQUIRE(r.error.empty());
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[0].device == "npu-0");
  CHECK(r.devices[0].pool == "n1");
  CHECK(r.devices[0].request_names == std::vector<std::string>{"npus"});
  CHECK(r.devices[0].cdi_device_ids ==
        std::vector<std::string>{"k8s.xpu.dra.dev/device=" + uid + "-npu-0"});
  // The spec: both devices, the Ascend visibility variable with physical ids 0 and 1.
  const std::string text = ReadText(node.CdiPath(uid));
  auto spec = cdi::FromJson(text);
  REQUIRE_OK(spec);
  CHECK(spec->kind == "k8s.xpu.dra.dev/device");
  REQUIRE(spec->devices.size() == 2);
  CHECK(spec->devices[1].name == uid + "-npu-1");
  CHECK(text.find("ASCEND_VISIBLE_DEVICES=0,1") != std::string::npos);
  CHECK(text.find("/dev/davinci1") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(node.CdiPath(uid).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  // The checkpoint.
  checkpoint::CheckpointStore store(node.dir.path() + "/state/checkpoint.json");
  auto cp = store.Load();
  REQUIRE_OK(cp);
  REQUIRE(cp->claims.contains(uid));
  CHECK(cp->claims.at(uid).devices.size() == 2);
  // Idempotent, also after the claim is gone from the API.
  REQUIRE_OK(node.client->Delete(kc::ResourceClaims(), "default", "c1"));
  auto again = driver->Prepare({{"default", "c1", uid}});
  CHECK(again.at(uid) == r);
  CHECK(driver->stats().prepared_devices == 2);
}

TEST_CASE("a batch answers every claim: missing, unallocated, wrong uid, other driver or node") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string ok_uid = node.Claim("good", {"npu-2"});
  const std::string unallocated =
      node.Claim("unalloc", {"npu-3"}, json::array(), "xpu.dra.dev", "n1", /*allocate=*/false);
  const std::string other_driver = node.Claim("other", {"gpu-0"}, json::array(), "gpu.example.com");
  const std::string other_node =
      node.Claim("elsewhere", {"npu-4"}, json::array(), "xpu.dra.dev", "n2");
  const std::string unknown_dev = node.Claim("nodev", {"npu-9"});
  const std::string missing = "00000000-0000-4000-8000-000000000001";
  auto out = driver->Prepare({{"default", "good", ok_uid},
                              {"default", "unalloc", unallocated},
                              {"default", "other", other_driver},
                              {"default", "elsewhere", other_node},
                              {"default", "nodev", unknown_dev},
                              {"default", "nosuch", missing},
                              {"default", "good", "not-a-uuid"},
                              {"default", "other", "00000000-0000-4000-8000-000000000002"}});
  CHECK(out.size() == 8);
  CHECK(out.at(ok_uid).error.empty());
  CHECK(out.at(ok_uid).devices.size() == 1);
  CHECK(out.at(unallocated).error.find("is not allocated") != std::string::npos);
  CHECK(out.at(other_driver).error.empty());
  CHECK(out.at(other_driver).devices.empty());
  CHECK(out.at(other_node).error.empty());
  CHECK(out.at(other_node).devices.empty());
  CHECK(out.at(unknown_dev).error.find("device npu-9 of request npus is not on node n1") !=
        std::string::npos);
  CHECK(out.at(missing).error.find("not found") != std::string::npos);
  CHECK(out.at("not-a-uuid").error.find("is not a UUID") != std::string::npos);
  CHECK(out.at("00000000-0000-4000-8000-000000000002").error.find("the kubelet asked for") !=
        std::string::npos);
  CHECK(node.CdiFiles() == 1);  // only the good claim has devices here
}

TEST_CASE("a uid given twice in a batch is prepared once, with one answer that matches the disk") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string uid = node.Claim("twice", {"npu-1"});
  auto out = driver->Prepare({{"default", "twice", uid}, {"default", "twice", uid}});
  REQUIRE(out.size() == 1);
  INFO(out.at(uid).error);
  CHECK(out.at(uid).error.empty());
  CHECK(out.at(uid).devices.size() == 1);
  CHECK(node.CdiFiles() == 1);
  auto undone = driver->Unprepare({{"default", "twice", uid}, {"default", "twice", uid}});
  REQUIRE(undone.size() == 1);
  CHECK(undone.at(uid).error.empty());
  CHECK(node.CdiFiles() == 0);
  checkpoint::CheckpointStore store(node.dir.path() + "/state/checkpoint.json");
  auto cp = store.Load();
  REQUIRE_OK(cp);
  CHECK(cp->claims.empty());
}

TEST_CASE("errors do not echo oversized input in full") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string huge_uid(1 << 20, 'u');
  const std::string huge_name(1 << 20, 'n');
  const std::string missing = "00000000-0000-4000-8000-000000000003";
  const std::string good = node.Claim("fine", {"npu-5"});
  auto out = driver->Prepare(
      {{"default", "x", huge_uid}, {"default", huge_name, missing}, {"default", "fine", good}});
  REQUIRE(out.size() == 3);
  CHECK(out.at(huge_uid).error.find("is not a UUID") != std::string::npos);
  CHECK(out.at(huge_uid).error.size() < 512);
  CHECK_FALSE(out.at(missing).error.empty());
  CHECK(out.at(missing).error.size() <= 2048 + 32);
  CHECK(out.at(good).error.empty());  // the good claim of the batch is still prepared
  auto undone = driver->Unprepare({{"default", "x", huge_uid}});
  CHECK(undone.at(huge_uid).error.size() < 512);
}

TEST_CASE("a bounded batch answers in time: claims it cannot reach get a retryable error") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string known = node.Claim("known", {"npu-0"});
  const std::string late = node.Claim("late", {"npu-1"});
  REQUIRE(driver->Prepare({{"default", "known", known}}).at(known).error.empty());

  SECTION("a deadline too near to fetch: no GET, nothing written, the known claim still answered") {
    CallBounds near;
    near.deadline = CallBounds::Clock::now() + std::chrono::milliseconds(100);
    auto out = driver->Prepare({{"default", "known", known}, {"default", "late", late}}, near);
    REQUIRE(out.size() == 2);
    CHECK(out.at(known).error.empty());
    CHECK(out.at(known).devices.size() == 1);
    CHECK(out.at(late).error.find("deadline is near") != std::string::npos);
    CHECK(out.at(late).error.find("retry") != std::string::npos);
    CHECK(node.CdiFiles() == 1);
    CHECK(driver->Snapshot().claims.size() == 1);
  }
  SECTION("a caller that went away: the rest is left, and the next call prepares it") {
    CallBounds gone;
    gone.cancelled = [] { return true; };
    auto out = driver->Prepare({{"default", "late", late}}, gone);
    CHECK(out.at(late).error.find("cancelled") != std::string::npos);
    CHECK(node.CdiFiles() == 1);
    auto undone = driver->Unprepare({{"default", "known", known}}, gone);
    CHECK(undone.at(known).error.find("not unprepared: the caller cancelled") != std::string::npos);
    CHECK(node.CdiFiles() == 1);  // still prepared: the answer matches the disk
    CHECK(driver->Prepare({{"default", "late", late}}).at(late).error.empty());
    CHECK(node.CdiFiles() == 2);
  }
  SECTION("a far deadline changes nothing") {
    CallBounds far;
    far.deadline = CallBounds::Clock::now() + std::chrono::seconds(45);
    auto out = driver->Prepare({{"default", "late", late}}, far);
    CHECK(out.at(late).error.empty());
    CHECK(node.CdiFiles() == 2);
  }
}

TEST_CASE("a device never goes to two claims") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string a = node.Claim("a", {"npu-0"});
  const std::string b = node.Claim("b", {"npu-0", "npu-1"});
  auto out = driver->Prepare({{"default", "a", a}, {"default", "b", b}});
  const bool a_won = out.at(a).error.empty();
  CHECK(a_won != out.at(b).error.empty());
  CHECK((a_won ? out.at(b) : out.at(a)).error.find("npu-0 is already prepared for claim") !=
        std::string::npos);
  CHECK(node.CdiFiles() == 1);
}

TEST_CASE("a group device expands to its members and takes them all") {
  Node node("atlas800-9000");
  auto driver = node.StartedDriver();
  auto groups = api::GroupDevices(*node.inventory);
  REQUIRE_OK(groups);
  const auto quad = std::find_if(groups->begin(), groups->end(), [](const api::GroupDevice& g) {
    return g.size == 4 && std::find(g.members.begin(), g.members.end(), "npu-5") != g.members.end();
  });
  REQUIRE(quad != groups->end());
  const std::string uid = node.Claim("ring", {quad->name});
  auto out = driver->Prepare({{"default", "ring", uid}});
  INFO(out.at(uid).error);
  REQUIRE(out.at(uid).error.empty());
  REQUIRE(out.at(uid).devices.size() == 1);
  CHECK(out.at(uid).devices[0].device == quad->name);
  const std::string text = ReadText(node.CdiPath(uid));
  for (const char* n : {"/dev/davinci4", "/dev/davinci5", "/dev/davinci6", "/dev/davinci7"}) {
    CHECK(text.find(n) != std::string::npos);
  }
  CHECK(text.find("/dev/davinci0\"") == std::string::npos);
  CHECK(text.find("ASCEND_VISIBLE_DEVICES=4,5,6,7") != std::string::npos);
  CHECK(driver->Snapshot().claims.at(uid).devices[0].members.size() == 4);
  // A member is taken.
  const std::string single = node.Claim("single", {"npu-5"});
  CHECK(driver->Prepare({{"default", "single", single}})
            .at(single)
            .error.find("npu-5 is already prepared for claim " + uid) != std::string::npos);
  const std::string unknown = node.Claim("nogroup", {"npu-x3-0"});
  CHECK(driver->Prepare({{"default", "nogroup", unknown}})
            .at(unknown)
            .error.find("is not on node n1") != std::string::npos);
}

TEST_CASE("opaque config: env applied per request, bad config fails that claim only") {
  Node node;
  auto driver = node.StartedDriver();
  const json good =
      json::array({{{"source", "FromClass"},
                    {"opaque",
                     {{"driver", "xpu.dra.dev"},
                      {"parameters",
                       {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                        {"kind", "DeviceConfig"},
                        {"env", {{"HCCL_CONNECT_TIMEOUT", "300"}, {"A", "class"}}}}}}}},
                   {{"source", "FromClaim"},
                    {"requests", {"npus"}},
                    {"opaque",
                     {{"driver", "xpu.dra.dev"},
                      {"parameters",
                       {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                        {"kind", "DeviceConfig"},
                        {"env", {{"A", "claim"}}}}}}}}});
  const json bad = json::array({{{"source", "FromClaim"},
                                 {"opaque",
                                  {{"driver", "xpu.dra.dev"},
                                   {"parameters",
                                    {{"apiVersion", "xpu.dra.dev/v1alpha1"},
                                     {"kind", "DeviceConfig"},
                                     {"envv", {{"A", "1"}}}}}}}}});
  const std::string g = node.Claim("g", {"npu-5"}, good);
  const std::string b = node.Claim("b", {"npu-6"}, bad);
  auto out = driver->Prepare({{"default", "g", g}, {"default", "b", b}});
  INFO(out.at(g).error);
  CHECK(out.at(g).error.empty());
  const std::string text = ReadText(node.CdiPath(g));
  CHECK(text.find("HCCL_CONNECT_TIMEOUT=300") != std::string::npos);
  CHECK(text.find("A=claim") != std::string::npos);  // the claim's entry wins
  CHECK(text.find("A=class") == std::string::npos);
  CHECK(out.at(b).error ==
        "ResourceClaim default/b: status.allocation.devices.config[0] (FromClaim)"
        ".opaque.parameters.envv: unknown field; expected one of apiVersion, kind, env");
  CHECK_FALSE(fs::exists(node.CdiPath(b)));
}

TEST_CASE("opaque config parsing names the field") {
  auto parse = [](const json& p) { return ParseDeviceConfig(p, "p").status().message(); };
  CHECK(parse({{"apiVersion", "v1"}, {"kind", "DeviceConfig"}}) ==
        "p.apiVersion: expected \"xpu.dra.dev/v1alpha1\"");
  CHECK(parse({{"apiVersion", "xpu.dra.dev/v1alpha1"}, {"kind", "Other"}}) ==
        "p.kind: expected \"DeviceConfig\"");
  CHECK(parse({{"apiVersion", "xpu.dra.dev/v1alpha1"},
               {"kind", "DeviceConfig"},
               {"env", {{"1BAD", "x"}}}}) ==
        "p.env.1BAD: not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)");
  CHECK(parse({{"apiVersion", "xpu.dra.dev/v1alpha1"},
               {"kind", "DeviceConfig"},
               {"env", {{"XPU_DRA_X", "x"}}}}) ==
        "p.env.XPU_DRA_X: the XPU_DRA_ prefix is reserved for the driver");
  CHECK(
      parse({{"apiVersion", "xpu.dra.dev/v1alpha1"}, {"kind", "DeviceConfig"}, {"env", {{"N", 3}}}})
          .starts_with("p.env.N: expected a string"));
  CHECK(parse({{"apiVersion", "xpu.dra.dev/v1alpha1"}, {"kind", "DeviceConfig"}, {"envv", {}}})
            .starts_with("p.envv: unknown field; expected one of apiVersion, kind, env"));
  CHECK(parse({{"kind", "DeviceConfig"}}) == "p.apiVersion: expected \"xpu.dra.dev/v1alpha1\"");
  CHECK(parse(json::array()).starts_with("p: expected an object"));
}

TEST_CASE("unprepare works from the checkpoint alone and an unknown claim succeeds") {
  Node node;
  auto driver = node.StartedDriver();
  const std::string uid = node.Claim("c", {"npu-7"});
  REQUIRE(driver->Prepare({{"default", "c", uid}}).at(uid).error.empty());
  REQUIRE_OK(node.client->Delete(kc::ResourceClaims(), "default", "c"));
  auto out = driver->Unprepare({{"default", "c", uid}});
  CHECK(out.at(uid).error.empty());
  CHECK_FALSE(fs::exists(node.CdiPath(uid)));
  CHECK(driver->Snapshot().claims.empty());
  auto again = driver->Unprepare({{"default", "c", uid}});
  CHECK(again.at(uid).error.empty());
  // The device is free again.
  const std::string next = node.Claim("d", {"npu-7"});
  CHECK(driver->Prepare({{"default", "d", next}}).at(next).error.empty());
}

TEST_CASE(
    "start: orphan specs removed, missing specs and new boot ids rewritten, deleted claims "
    "unprepared") {
  Node node;
  std::string kept, deleted;
  {
    auto driver = node.StartedDriver();
    kept = node.Claim("kept", {"npu-0"});
    deleted = node.Claim("deleted", {"npu-1"});
    auto out = driver->Prepare({{"default", "kept", kept}, {"default", "deleted", deleted}});
    REQUIRE(out.at(kept).error.empty());
    REQUIRE(out.at(deleted).error.empty());
  }
  // A spec of ours without an entry (a prepare that crashed before its checkpoint write) and a
  // foreign spec that is not ours to touch.
  const std::string orphan = "11111111-2222-4333-8444-555555555555";
  WriteText(node.CdiPath(orphan), ReadText(node.CdiPath(kept)));
  WriteText(node.dir.path() + "/cdi/vendor.com-gpu.json", "{}");
  // The node reboots: the tmpfs CDI dir loses our specs.
  fs::remove(node.CdiPath(kept));
  fs::remove(node.CdiPath(deleted));
  node.SetBootId("3a3b3c3d-0000-4000-8000-00000000beef");
  REQUIRE_OK(node.client->Delete(kc::ResourceClaims(), "default", "deleted"));

  auto driver = node.StartedDriver();
  CHECK_FALSE(fs::exists(node.CdiPath(orphan)));
  CHECK(fs::exists(node.dir.path() + "/cdi/vendor.com-gpu.json"));
  CHECK(fs::exists(node.CdiPath(kept)));
  CHECK(driver->Snapshot().boot_id == "3a3b3c3d-0000-4000-8000-00000000beef");
  REQUIRE_OK(driver->CollectDeletedClaims());
  CHECK_FALSE(fs::exists(node.CdiPath(deleted)));
  CHECK(driver->Snapshot().claims.size() == 1);
  CHECK(driver->Snapshot().claims.contains(kept));
}

TEST_CASE("a corrupt checkpoint stops the driver instead of forgetting claims") {
  Node node;
  {
    auto driver = node.StartedDriver();
    const std::string uid = node.Claim("c", {"npu-0"});
    REQUIRE(driver->Prepare({{"default", "c", uid}}).at(uid).error.empty());
  }
  const std::string path = node.dir.path() + "/state/checkpoint.json";
  std::string text = ReadText(path);
  const size_t at = text.find("npu-0");
  REQUIRE(at != std::string::npos);
  text[at + 4] = '5';
  WriteText(path, text);
  auto driver = node.NewDriver();
  Status s = driver->Start();
  CHECK(s.code() == StatusCode::kDataLoss);
  const std::string uid = node.Claim("d", {"npu-2"});
  CHECK(driver->Prepare({{"default", "d", uid}}).at(uid).error.find("not ready") !=
        std::string::npos);
}

TEST_CASE("concurrent batches never hand a device out twice") {
  Node node;
  auto driver = node.StartedDriver();
  std::vector<std::string> uids;
  for (int i = 0; i < 16; ++i) {
    uids.push_back(node.Claim("c" + std::to_string(i), {"npu-" + std::to_string(i % 8)}));
  }
  std::vector<std::future<std::map<std::string, PrepareResult>>> running;
  for (int i = 0; i < 16; ++i) {
    running.push_back(std::async(std::launch::async, [&, i] {
      return driver->Prepare({{"default", "c" + std::to_string(i), uids[static_cast<size_t>(i)]}});
    }));
  }
  int ok = 0;
  for (auto& r : running) {
    for (const auto& [uid, result] : r.get()) ok += result.error.empty() ? 1 : 0;
  }
  CHECK(ok == 8);  // one claim per device
  CHECK(node.CdiFiles() == 8);
  CHECK(driver->Snapshot().claims.size() == 8);
}

TEST_CASE("health follows the inventory and a recovered device becomes healthy again") {
  Node node;
  HealthMonitor health("n1");
  CHECK(health.Update(*node.inventory));
  uint64_t gen = 0;
  auto all = health.Snapshot(&gen);
  REQUIRE(all.size() == 8);
  for (const DeviceHealth& h : all) CHECK(h.health == HealthState::kHealthy);
  CHECK_FALSE(health.Update(*node.inventory));  // nothing changed
  fs::remove(node.host + "/dev/davinci3");
  node.Rediscover();
  CHECK(health.Update(*node.inventory));
  uint64_t gen2 = 0;
  for (const DeviceHealth& h : health.Snapshot(&gen2)) {
    if (h.device != "npu-3") continue;
    CHECK(h.health == HealthState::kUnhealthy);
    CHECK(h.message.find("npu-3: /dev/davinci3 missing") != std::string::npos);
  }
  CHECK(gen2 > gen);
  CHECK(health.WaitForChange(gen, std::chrono::steady_clock::now()) == gen2);
  WriteText(node.host + "/dev/davinci3", "");
  node.Rediscover();
  CHECK(health.Update(*node.inventory));
  for (const DeviceHealth& h : health.Snapshot(nullptr)) CHECK(h.health == HealthState::kHealthy);
}

// ---- Driver files (driverfiles/): the vendor's user space in the spec ----

bool Mounts(const cdi::Spec& spec, const std::string& path) {
  return std::any_of(spec.edits.mounts.begin(), spec.edits.mounts.end(),
                     [&](const cdi::Mount& m) { return m.container_path == path; });
}

// The NVIDIA kernel driver's version, and the libraries of that version, on the copied host.
void InstallNvidia(const Node& node, const std::string& version) {
  const std::string lib = node.host + "/usr/lib/x86_64-linux-gnu/";
  std::ofstream(node.host + "/proc/driver/nvidia/version")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " << version << "  Release Build\n";
  std::ofstream(node.host + "/sys/module/nvidia/version") << version << "\n";
  for (const std::string name : {"libcuda", "libnvidia-ml"}) {
    std::string file = name;
    file.append(".so.").append(version);
    const std::string soname = name + ".so.1";
    WriteText(lib + file, "stand-in\n");
    fs::remove(lib + soname);
    fs::create_symlink(file, lib + soname);
  }
}

TEST_CASE("driver files: the spec carries the host driver's libraries, tools and the hook") {
  Node node("hgx-h200");
  auto driver = node.StartedDriver();
  const std::string uid = node.Claim("g1", {"gpu-0", "gpu-1"});
  const PrepareResult r = driver->Prepare({{"default", "g1", uid}}).at(uid);
  INFO(r.error);
  REQUIRE(r.error.empty());
  StatusOr<cdi::Spec> spec = cdi::FromJson(ReadText(node.CdiPath(uid)));
  REQUIRE_OK(spec);
  const std::string lib = "/usr/lib/x86_64-linux-gnu/";
  CHECK(Mounts(*spec, lib + "libcuda.so.570.158.01"));
  CHECK(Mounts(*spec, lib + "libnvidia-ml.so.570.158.01"));
  CHECK_FALSE(Mounts(*spec, lib + "libcuda.so.535.104.05"));
  CHECK(Mounts(*spec, "/usr/bin/nvidia-smi"));
  CHECK(Mounts(*spec, "/lib/firmware/nvidia/570.158.01/gsp_ga10x.bin"));
  REQUIRE(spec->edits.hooks.size() == 1);
  CHECK(spec->edits.hooks[0].path == std::string(driverfiles::kDefaultHookPath));
  // The visibility variable stays, for nodes that run NVIDIA's own hook too.
  CHECK(std::any_of(spec->edits.env.begin(), spec->edits.env.end(),
                    [](const std::string& e) { return e.starts_with("NVIDIA_VISIBLE_DEVICES="); }));

  // Off: the spec has no driver file and no hook.
  Node off("hgx-h200");
  DriverOptions o = off.Options();
  o.driver_files =
      driverfiles::Policy{driverfiles::Mode::kAuto, {{"nvidia", driverfiles::Mode::kOff}}};
  fs::create_directories(off.dir.path() + "/cdi");
  Driver plain(
      o, off.client.get(), [&off] { return off.inventory; }, [](const std::string&) {});
  REQUIRE_OK(plain.Start());
  const std::string u2 = off.Claim("g2", {"gpu-0"});
  REQUIRE(plain.Prepare({{"default", "g2", u2}}).at(u2).error.empty());
  StatusOr<cdi::Spec> bare = cdi::FromJson(ReadText(off.CdiPath(u2)));
  REQUIRE_OK(bare);
  CHECK(bare->edits.mounts.empty());
  CHECK(bare->edits.hooks.empty());
}

TEST_CASE("driver files: a partial install fails the claim naming the file, and nothing is left") {
  Node node("hgx-h200");
  fs::remove(node.host + "/usr/lib/x86_64-linux-gnu/libcuda.so.570.158.01");
  auto driver = node.StartedDriver();
  const std::string uid = node.Claim("g1", {"gpu-0"});
  const PrepareResult r = driver->Prepare({{"default", "g1", uid}}).at(uid);
  CHECK(r.error.find("ResourceClaim default/g1: nvidia driver 570.158.01: libcuda.so.570.158.01 "
                     "is missing") == 0);
  CHECK_FALSE(fs::exists(node.CdiPath(uid)));
  CHECK_FALSE(driver->Snapshot().claims.contains(uid));
  CHECK(node.CdiFiles() == 0);
}

TEST_CASE("driver files: a driver upgraded under the plugin, and earlier claims keep their files") {
  Node node("hgx-h200");
  auto driver = node.StartedDriver();
  const std::string before = node.Claim("before", {"gpu-0"});
  REQUIRE(driver->Prepare({{"default", "before", before}}).at(before).error.empty());

  InstallNvidia(node, "575.51.03");
  const std::string after = node.Claim("after", {"gpu-1"});
  const PrepareResult r = driver->Prepare({{"default", "after", after}}).at(after);
  INFO(r.error);
  REQUIRE(r.error.empty());
  StatusOr<cdi::Spec> fresh = cdi::FromJson(ReadText(node.CdiPath(after)));
  REQUIRE_OK(fresh);
  CHECK(Mounts(*fresh, "/usr/lib/x86_64-linux-gnu/libcuda.so.575.51.03"));
  CHECK_FALSE(Mounts(*fresh, "/usr/lib/x86_64-linux-gnu/libcuda.so.570.158.01"));

  // The claim prepared before keeps its spec, also when a restart rewrites it (a new boot).
  StatusOr<cdi::Spec> old = cdi::FromJson(ReadText(node.CdiPath(before)));
  REQUIRE_OK(old);
  CHECK(Mounts(*old, "/usr/lib/x86_64-linux-gnu/libcuda.so.570.158.01"));
  driver.reset();
  fs::remove(node.CdiPath(before));
  node.SetBootId("5d0e3a2b-1c4f-4e6d-8a9b-0c1d2e3f4a5b");
  auto restarted = node.StartedDriver();
  StatusOr<cdi::Spec> rewritten = cdi::FromJson(ReadText(node.CdiPath(before)));
  REQUIRE_OK(rewritten);
  CHECK(Mounts(*rewritten, "/usr/lib/x86_64-linux-gnu/libcuda.so.570.158.01"));
}

}  // namespace
}  // namespace xpu::plugin
