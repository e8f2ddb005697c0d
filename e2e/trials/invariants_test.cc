#include "e2e/trials/invariants.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
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
  const xpu::testing::TempDir temp;
  const std::string& dir = temp.path();
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

// A gang "train/g" (uid kUid) of two nodes with two devices each, placed on n1 and n2.
json PlacedGang() {
  json gang = {{"metadata", {{"namespace", "train"}, {"name", "g"}, {"uid", kUid}}},
               {"spec", {{"nodes", 2}, {"devicesPerNode", 2}}},
               {"status",
                {{"phase", "Placed"},
                 {"nodes",
                  {{{"name", "n1"}, {"rank", 0}, {"devices", {"gpu-0", "gpu-1"}}},
                   {{"name", "n2"}, {"rank", 1}, {"devices", {"gpu-0", "gpu-1"}}}}},
                 {"rankTable", json::array()}}}};
  int rank = 0;
  for (const char* node : {"n1", "n2"}) {
    for (const char* device : {"gpu-0", "gpu-1"}) {
      gang["status"]["rankTable"].push_back({{"rank", rank++}, {"node", node}, {"device", device}});
    }
  }
  return gang;
}

// Node pools n1..n3 with two devices each, n1 and n2 carrying the gang's uid, and its gang slice.
GangWorld PlacedWorld() {
  GangWorld world;
  world.gangs = {PlacedGang()};
  for (const char* node : {"n1", "n2", "n3"}) {
    json slice = Slice(std::string(node) + "-a", node, "uid", 1, 1, {"gpu-0", "gpu-1"});
    if (std::string(node) != "n3") {
      for (json& d : slice["spec"]["devices"]) d["attributes"]["gang"] = {{"string", kUid}};
    }
    world.slices.push_back(slice);
  }
  json gang_slice = Slice("xpu-dra-gang.train.g", "gangs", "", 5, 1, {"gang-g"});
  gang_slice["spec"].erase("nodeName");
  gang_slice["spec"]["nodeSelector"] = {
      {"nodeSelectorTerms",
       {{{"matchExpressions",
          {{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {"n1", "n2"}}}}}}}}};
  gang_slice["spec"]["devices"][0]["attributes"] = {{"gang", {{"string", kUid}}},
                                                    {"gangNodes", {{"int", 2}}}};
  world.slices.push_back(gang_slice);
  world.claims = {"train/g-gang"};
  world.templates = {"train/g-member"};
  return world;
}

TEST_CASE("gangs are whole or absent", "[trials]") {
  const std::set<std::string> live = {"n1", "n2", "n3"};
  GangWorld world = PlacedWorld();
  REQUIRE(GangDifferences(world, live).empty());
  // The members' gang attribute is the gang check's, not a slice difference.
  const json golden = {{"items", {Slice("x", "host", "0", 1, 1, {"gpu-0", "gpu-1"})}}};
  const std::map<std::string, ExpectedPool> pools = {{"n1", {"uid", GoldenSlices(golden)}},
                                                     {"n2", {"uid", GoldenSlices(golden)}},
                                                     {"n3", {"uid", GoldenSlices(golden)}}};
  CHECK(SliceDifferences(pools, world.slices).empty());

  SECTION("absent: pending, no slice, no attribute (its claim and template may stay)") {
    world.gangs[0]["status"] = {{"phase", "Pending"}};
    world.slices.pop_back();
    for (json& s : world.slices) {
      for (json& d : s["spec"]["devices"]) d.erase("attributes");
    }
    CHECK(GangDifferences(world, live).empty());
  }
  SECTION("a partial reservation") {
    world.gangs[0]["status"]["nodes"].erase(1);
    const auto v = GangDifferences(world, live);
    CHECK(Names(v, "gang train/g: Placed on 1 nodes, spec.nodes is 2"));
    CHECK(Names(v, "the rank table has 4 entries for 2 held devices"));
    world.gangs[0]["status"] = {{"phase", "Pending"}, {"nodes", {{{"name", "n1"}}}}};
    CHECK(Names(GangReservationDifferences(world.gangs),
                "phase \"Pending\" but it holds 1 nodes and 0 ranks"));
  }
  SECTION("failed: its last placement kept, whole, holding no node") {
    world.gangs[0]["status"]["phase"] = "Failed";
    json other = PlacedGang();
    other["metadata"]["name"] = "h";
    other["metadata"]["uid"] = kOther;
    world.gangs.push_back(other);
    CHECK(GangReservationDifferences(world.gangs).empty());
    world.gangs[0]["status"]["nodes"].erase(1);
    CHECK(Names(GangReservationDifferences(world.gangs),
                "gang train/g (Failed, its last placement): Placed on 1 nodes, spec.nodes is 2"));
  }
  SECTION("a node's devices, node ranks, a rank twice") {
    world.gangs[0]["status"]["nodes"][1]["devices"] = {"gpu-0", "gpu-0"};
    world.gangs[0]["status"]["nodes"][1]["rank"] = 0;
    world.gangs[0]["status"]["rankTable"][3]["rank"] = 0;
    const auto v = GangReservationDifferences(world.gangs);
    CHECK(Names(v, "node n2 holds devices [gpu-0,gpu-0], want 2 distinct"));
    CHECK(Names(v, "node ranks are not 0..1 each once"));
    CHECK(Names(v, "or its ranks are not 0..N-1 each once"));
  }
  SECTION("two gangs on one node") {
    json other = PlacedGang();
    other["metadata"]["name"] = "h";
    other["metadata"]["uid"] = kOther;
    world.gangs.push_back(other);
    CHECK(Names(GangReservationDifferences(world.gangs), "node n1 is held by gangs train/g and"));
  }
  SECTION("placed, but a member not live, a member without the attribute") {
    world.slices[1]["spec"]["devices"][1]["attributes"].erase("gang");
    const auto v = GangDifferences(world, {"n1", "n3"});
    CHECK(Names(v, "Placed on node n2, which has no Node or inventory"));
    CHECK(GangDifferences(world, live) ==
          std::vector<std::string>{"gang train/g: device gpu-1 of member node n2 has gang \"\", "
                                   "want " +
                                   kUid});
  }
  SECTION("placed, but its slice, claim or template missing, or the slice wrong") {
    world.claims.clear();
    world.templates.clear();
    json& gang_slice = world.slices.back();
    gang_slice["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = {
        "n1", "n3"};
    gang_slice["spec"]["devices"][0]["attributes"]["gangNodes"]["int"] = 3;
    auto v = GangDifferences(world, live);
    CHECK(Names(v, "its shared claim g-gang is missing"));
    CHECK(Names(v, "its template g-member is missing"));
    CHECK(Names(v, "its gang slice selects [n1,n3], the status holds [n1,n2]"));
    CHECK(Names(v, "are not the one device gang-g with gang " + kUid + " and gangNodes 2"));
    world.slices.pop_back();
    CHECK(Names(GangDifferences(world, live), "its gang slice xpu-dra-gang.train.g is missing"));
  }
  SECTION("gone, but its slice or a device's attribute stays") {
    world.gangs.clear();
    const auto v = GangDifferences(world, live);
    CHECK(Names(v, "gang slice xpu-dra-gang.train.g of no Placed gang"));
    CHECK(Names(v, "device gpu-0 of node n1 has gang " + kUid + ", which does not hold the node"));
  }
}

TEST_CASE("a gang is judged once its status observes its generation", "[trials]") {
  json gang = PlacedGang();
  gang["metadata"]["generation"] = 2;
  gang["status"]["observedGeneration"] = 2;
  CHECK(UnjudgedGangs({gang}).empty());
  gang["status"]["observedGeneration"] = 1;
  CHECK(UnjudgedGangs({gang}) ==
        std::vector<std::string>{"gang train/g: generation 2 not yet observed by its status (1)"});
  gang.erase("status");
  CHECK(UnjudgedGangs({gang}) ==
        std::vector<std::string>{"gang train/g: generation 2 not yet observed by its status "
                                 "(none)"});
}

TEST_CASE("the slice writes a pool needs", "[trials]") {
  const json golden = {{"items", {Slice("x", "host", "0", 1, 1, {"gpu-0", "gpu-1"})}}};
  const ExpectedPool want = {"uid-1", GoldenSlices(golden)};
  const json right = Slice("n1-a", "n1", "uid-1", 3, 1, {"gpu-0", "gpu-1"});
  const json stale = Slice("n1-a", "n1", "uid-1", 2, 1, {"gpu-0"});
  const auto writes = [](const SliceWrites& w) {
    return std::vector<int64_t>{w.create, w.update, w.remove, w.total()};
  };
  CHECK(writes(WritesNeeded("n1", &want, {right})) == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(writes(WritesNeeded("n1", &want, {})) == std::vector<int64_t>{1, 0, 0, 1});
  CHECK(writes(WritesNeeded("n1", &want, {stale})) == std::vector<int64_t>{0, 1, 0, 1});
  CHECK(writes(WritesNeeded("n1", &want, {stale, right})) == std::vector<int64_t>{0, 1, 1, 2});
  CHECK(writes(WritesNeeded("n1", nullptr, {stale, right})) == std::vector<int64_t>{0, 0, 2, 2});
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
