#include "e2e/trials/invariants.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "base/testing/require_ok.h"
#include "e2e/trials/trial_report.h"

namespace xpu::e2e::trials {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kUid = "11111111-1111-4111-8111-111111111111";
const std::string kOther = "22222222-2222-4222-8222-222222222222";

// Whether one of `violations` contains `text`.
bool Names(const std::vector<std::string>& violations, const std::string& text) {
  for (const std::string& v : violations) {
    if (v.find(text) != std::string::npos) return true;
  }
  return false;
}

json Spec(const std::string& uid, const std::vector<std::string>& devices) {
  json out = {
      {"cdiVersion", "0.5.0"}, {"kind", "k8s.xpu.dra.dev/device"}, {"devices", json::array()}};
  for (const std::string& d : devices) {
    out["devices"].push_back({{"name", std::string(uid).append("-").append(d)}});
  }
  return out;
}

// What the plugin records for a prepared claim of node n1.
json Entry(const std::string& uid, const std::vector<std::string>& devices) {
  json out = {
      {"uid", uid},          {"namespace", "default"},   {"name", "c"},
      {"state", "Prepared"}, {"devices", json::array()}, {"cdiSpec", Spec(uid, devices).dump()}};
  for (const std::string& d : devices) {
    out["devices"].push_back(
        {{"device", d}, {"pool", "n1"}, {"cdiDeviceIds", {CdiDeviceId("xpu.dra.dev", uid, d)}}});
  }
  return out;
}

struct Fixture {
  std::vector<TrialClaim> claims = {{"default", "a", kUid, "n1", {"npu-0", "npu-1"}},
                                    {"default", "b", kOther, "n1", {"npu-2"}}};
  PluginDisk disk;
  Fixture() {
    disk.checkpoint[kUid] = Entry(kUid, {"npu-0", "npu-1"});
    disk.specs[kUid] = Spec(kUid, {"npu-0", "npu-1"});
  }
  std::vector<std::string> Check(const std::set<std::string>& prepared) const {
    return CheckPluginDisk(claims, prepared, disk, "n1", "xpu.dra.dev");
  }
};

TEST_CASE("the plugin's disk against what the kubelet holds prepared", "[trials]") {
  Fixture f;
  CHECK(f.Check({kUid}).empty());
  CHECK(Names(f.Check({kUid, kOther}), "claim b (" + kOther + ") lost"));
  CHECK(Names(f.Check({}), "the kubelet last unprepared it"));

  SECTION("a spec without an entry, and the reverse") {
    f.disk.specs[kOther] = Spec(kOther, {"npu-2"});
    CHECK(Names(f.Check({kUid}), "without a checkpoint entry"));
    f.disk.specs.erase(kUid);
    CHECK(Names(f.Check({kUid}), "in the checkpoint without its CDI spec file"));
  }
  SECTION("a spec that is not the recorded one") {
    f.disk.specs[kUid] = Spec(kUid, {"npu-0"});
    const auto v = f.Check({kUid});
    CHECK(Names(v, "differs from the one the checkpoint recorded"));
    CHECK(Names(v, "CDI spec devices"));
  }
  SECTION("a device held twice, other devices than allocated") {
    f.disk.checkpoint[kOther] = Entry(kOther, {"npu-1"});
    f.disk.specs[kOther] = Spec(kOther, {"npu-1"});
    const auto v = f.Check({kUid, kOther});
    CHECK(Names(v, "device npu-1 is held by claims"));
    CHECK(Names(v, "checkpoint devices [npu-1], allocated [npu-2]"));
  }
  SECTION("a claim of another node is recorded with nothing to prepare") {
    f.claims[1].pool = "n2";
    f.disk.checkpoint[kOther] = Entry(kOther, {});
    f.disk.checkpoint[kOther]["cdiSpec"] = "";
    CHECK(f.Check({kUid, kOther}).empty());
  }
  SECTION("a state other than Prepared, a stray file") {
    f.disk.checkpoint[kUid]["state"] = "Preparing";
    f.disk.stray.push_back("k8s.xpu.dra.dev-device_" + kUid + ".json.tmp");
    const auto v = f.Check({kUid});
    CHECK(Names(v, "state \"Preparing\""));
    CHECK(Names(v, "stray file in the CDI dir"));
  }
}

TEST_CASE("ReadPluginDisk reads the checkpoint and our CDI specs", "[trials]") {
  std::string dir = (fs::temp_directory_path() / "trials-test-XXXXXX").string();
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  fs::create_directories(dir + "/cdi");
  fs::create_directories(dir + "/state");
  auto empty = ReadPluginDisk(dir + "/state", dir + "/cdi", "xpu.dra.dev");
  REQUIRE_OK(empty);
  CHECK(empty->checkpoint.empty());

  const json checkpoint = {{"version", 1},
                           {"checksum", "00000000"},
                           {"data", {{"bootId", ""}, {"claims", {Entry(kUid, {"npu-0"})}}}}};
  std::ofstream(dir + "/state/checkpoint.json") << checkpoint.dump();
  const std::string prefix = dir + "/cdi/k8s.xpu.dra.dev-device_";
  std::ofstream(prefix + kUid + ".json") << Spec(kUid, {"npu-0"}).dump();
  std::ofstream(prefix + kOther + ".json.tmp") << "{";
  std::ofstream(dir + "/cdi/other-vendor.json") << "{}";  // not ours
  auto disk = ReadPluginDisk(dir + "/state", dir + "/cdi", "xpu.dra.dev");
  REQUIRE_OK(disk);
  CHECK(disk->checkpoint.size() == 1);
  CHECK(disk->specs.size() == 1);
  CHECK(disk->stray == std::vector<std::string>{"k8s.xpu.dra.dev-device_" + kOther + ".json.tmp"});
  CHECK(CheckPluginDisk({{"default", "c", kUid, "n1", {"npu-0"}}}, {kUid}, *disk, "n1",
                        "xpu.dra.dev")
            .size() == 1);  // the stray file

  std::ofstream(dir + "/state/checkpoint.json") << R"({"version":2,"data":{}})";
  CHECK(ReadPluginDisk(dir + "/state", dir + "/cdi", "xpu.dra.dev").status().code() ==
        StatusCode::kDataLoss);
  fs::remove_all(dir);
}

TEST_CASE("a prepare answer is the claim's allocation", "[trials]") {
  const TrialClaim claim = {"default", "a", kUid, "n1", {"npu-3"}};
  KubeletDevice d;
  d.request_names = {"npus"};
  d.pool_name = "n1";
  d.device_name = "npu-3";
  d.cdi_device_ids = {"k8s.xpu.dra.dev/device=" + kUid + "-npu-3"};
  CHECK(CheckAnswer(claim, {d}, "n1", "xpu.dra.dev").empty());
  CHECK(Names(CheckAnswer(claim, {}, "n1", "xpu.dra.dev"), "devices [], allocated [npu-3]"));
  d.cdi_device_ids = {"k8s.xpu.dra.dev/device=" + kOther + "-npu-3"};
  CHECK(Names(CheckAnswer(claim, {d}, "n1", "xpu.dra.dev"), "answered as pool n1"));
  const TrialClaim elsewhere = {"default", "b", kOther, "n2", {"npu-3"}};
  CHECK(CheckAnswer(elsewhere, {}, "n1", "xpu.dra.dev").empty());
}

json Slice(const std::string& name, const std::string& pool, const std::string& owner,
           int64_t generation, int64_t count, const std::vector<std::string>& devices) {
  json s = {
      {"metadata",
       {{"name", name}, {"ownerReferences", {{{"kind", "Node"}, {"name", pool}, {"uid", owner}}}}}},
      {"spec",
       {{"driver", "xpu.dra.dev"},
        {"nodeName", pool},
        {"pool", {{"name", pool}, {"generation", generation}, {"resourceSliceCount", count}}},
        {"devices", json::array()}}}};
  for (const std::string& d : devices) s["spec"]["devices"].push_back({{"name", d}});
  return s;
}

TEST_CASE("slices against the pools the inventories ask for", "[trials]") {
  const json golden = {{"items", {Slice("x", "host", "0", 1, 1, {"gpu-0", "gpu-1"})}}};
  std::map<std::string, ExpectedPool> want = {{"n1", {"uid-1", GoldenSlices(golden)}}};
  std::vector<json> slices = {Slice("n1-a", "n1", "uid-1", 3, 1, {"gpu-0", "gpu-1"})};
  CHECK(SliceDifferences(want, slices).empty());
  CHECK(PoolGenerations(slices) == std::map<std::string, int64_t>{{"n1", 3}});

  // A taint's timeAdded is the server's, not a difference.
  slices[0]["spec"]["devices"][0]["taints"] = {
      {{"key", "k"}, {"timeAdded", "2026-01-01T00:00:00Z"}}};
  want["n1"].slices[0][0]["taints"] = {{{"key", "k"}}};
  CHECK(SliceDifferences(want, slices).empty());

  SECTION("a duplicate") {
    slices.push_back(Slice("n1-b", "n1", "uid-1", 3, 1, {"gpu-0", "gpu-1"}));
    const auto v = SliceDifferences(want, slices);
    CHECK(Names(v, "device gpu-0 in slices"));
    CHECK(Names(v, "2 slices at the pool's generation, want 1"));
    CHECK(Names(v, "says resourceSliceCount 1, the generation has 2"));
  }
  SECTION("an obsolete slice") {
    slices.push_back(Slice("n1-old", "n1", "uid-1", 2, 1, {"gpu-0"}));
    CHECK(Names(SliceDifferences(want, slices), "obsolete slice n1-old at generation 2 < 3"));
  }
  SECTION("an orphan, a missing pool") {
    slices.push_back(Slice("n9-a", "n9", "uid-9", 1, 1, {"gpu-0"}));
    want["n2"] = {"uid-2", GoldenSlices(golden)};
    const auto v = SliceDifferences(want, slices);
    CHECK(Names(v, "orphan slice n9-a of pool n9"));
    CHECK(Names(v, "pool n2 is not published"));
  }
  SECTION("an old owner, other devices") {
    want["n1"].node_uid = "uid-new";
    slices[0]["spec"]["devices"][1]["name"] = "gpu-7";
    const auto v = SliceDifferences(want, slices);
    CHECK(Names(v, "is not owned by Node n1 (uid-new)"));
    CHECK(Names(v, "devices differ from the inventory's from #1 (gpu-1)"));
  }
}

TEST_CASE("the kill plan, the summary line", "[trials]") {
  KillPlan plan;
  CHECK(plan.Validate("--plugin").message() == "--plugin: no work dir");
  plan.work_dir = "/tmp/x";
  CHECK(plan.Validate("--plugin").ok());
  plan.kills = -1;
  CHECK(plan.Validate("--controller").message() == "--controller: must not be negative");

  CHECK(Quantile({}, 0.5) == 0);
  CHECK(Quantile({3, 1, 2}, 0.5) == 2);
  CHECK(Quantile({3, 1, 2}, 1) == 3);
  TrialStats s;
  s.part = "plugin";
  s.kills = 3;
  s.kills_mid_work = 2;
  s.checks = 3;
  s.recovery_ms = {100, 200, 300};
  s.bound = std::chrono::milliseconds(10'000);
  s.counters = {{"kubelet calls", 40}};
  s.seconds = 1.5;
  CHECK(Summary(s) ==
        "plugin: 3 kills (2 mid-work, 0 in recovery), 3 invariant checks held; recovery p50 "
        "0.20 s, p99 0.30 s, max 0.30 s (bound 10.0 s); kubelet calls 40; 1.50 s");
  s.serving_ms = {50};
  CHECK(Summary(s).find("(bound 10.0 s); serving again p50 0.05 s, p99 0.05 s, max 0.05 s;") !=
        std::string::npos);
}

}  // namespace
}  // namespace xpu::e2e::trials
