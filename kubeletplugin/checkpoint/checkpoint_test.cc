#include "kubeletplugin/checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"

namespace xpu::checkpoint {
namespace {

namespace fs = std::filesystem;

Checkpoint Sample() {
  Checkpoint cp;
  cp.boot_id = "5c3d7e1a-2b4f-4c6d-8e9f-0a1b2c3d4e5f";
  Claim c;
  c.uid = "3f6c0a4e-0000-4000-8000-000000000001";
  c.ns = "default";
  c.name = "pod0-npu-x7k2p";
  c.devices.push_back({{"npu"}, "node-1", "npu-0", {"k8s.xpu.dra.dev/device=3f6c-npu-0"}, "", {}});
  c.devices.push_back({{}, "node-1", "npu-x2-0", {}, "share-1", {"npu-1", "npu-2"}});
  c.cdi_spec = "{\n  \"cdiVersion\": \"0.5.0\",\n  \"kind\": \"k8s.xpu.dra.dev/device\"\n}\n";
  cp.claims[c.uid] = c;
  Claim p;
  p.uid = "00000000-0000-4000-8000-000000000002";
  p.ns = "team-a";
  p.name = "job";
  cp.claims[p.uid] = p;
  return cp;
}

using testing::TempDir;
using xpu::testing::ReadText;
using xpu::testing::WriteText;

unsigned Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("Crc32c matches the Castagnoli check values") {
  CHECK(Crc32c("") == 0U);
  CHECK(Crc32c("123456789") == 0xe3069283U);
  CHECK(Crc32c(std::string(32, '\0')) == 0x8a9136aaU);  // RFC 3720 B.4
  CHECK(Crc32c(std::string(32, '\xff')) == 0x62a8ab43U);
}

TEST_CASE("Encode and Decode round trip") {
  const Checkpoint cp = Sample();
  const std::string text = Encode(cp);
  StatusOr<Checkpoint> back = Decode(text, "test");
  INFO(back.status().ToString());
  REQUIRE_OK(back);
  CHECK(*back == cp);
  CHECK(Encode(*back) == text);  // canonical

  StatusOr<Checkpoint> empty = Decode(Encode(Checkpoint{}), "test");
  REQUIRE_OK(empty);
  CHECK(*empty == Checkpoint{});
}

TEST_CASE("partition records round trip, are left out while none, and a bad one is data loss") {
  CHECK_FALSE(nlohmann::json::parse(Encode(Sample()))["data"].contains("partitions"));
  Checkpoint cp = Sample();
  auto record = [](std::string uid, std::string device, std::string kind, std::string profile,
                   int64_t placement, int64_t instance, int64_t id, std::string_view state,
                   std::vector<int64_t> ids_before) {
    Partition p;
    p.claim_uid = std::move(uid);
    p.device = std::move(device);
    p.parent = p.device.substr(0, p.device.find('-', p.device.find('-') + 1));
    p.kind = std::move(kind);
    p.profile = std::move(profile);
    p.placement = placement;
    p.instance = instance;
    p.id = id;
    p.state = std::string(state);
    p.ids_before = std::move(ids_before);
    return p;
  };
  cp.partitions.push_back(record("3f6c0a4e-0000-4000-8000-000000000001", "npu-1-vir05-1c-16g-2",
                                 "vnpu", "vir05_1c_16g", -1, 2, 118, kPartitionCreated, {}));
  cp.partitions.push_back(record("00000000-0000-4000-8000-000000000002", "gpu-0-1g-18gb-6", "mig",
                                 "1g.18gb", 6, 0, -1, kPartitionCreating, {}));
  // A vHCU intent: DMI will pick the id; those already on the device are kept to tell it apart.
  cp.partitions.push_back(record("00000000-0000-4000-8000-000000000003", "dcu-2-20cu-16gb-2",
                                 "vhcu", "20cu.16gb", -1, 2, -1, kPartitionCreating, {0, 1}));
  CHECK(cp.partitions[2].parent == "dcu-2");
  StatusOr<Checkpoint> back = Decode(Encode(cp), "test");
  REQUIRE_OK(back);
  CHECK(*back == cp);
  const nlohmann::json written = nlohmann::json::parse(Encode(cp))["data"]["partitions"];
  CHECK_FALSE(written[0].contains("idsBefore"));  // written only while there are some
  CHECK(written[2]["idsBefore"] == nlohmann::json::array({0, 1}));
  auto spoiled = [&](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json data = nlohmann::json::parse(Encode(cp))["data"];
    spoil(data);
    const std::string canonical = data.dump();
    nlohmann::json doc = {{"version", 1}, {"checksum", ""}, {"data", data}};
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", Crc32c(canonical));
    doc["checksum"] = hex;
    return Decode(doc.dump(), "test").status();
  };
  Status s = spoiled([](nlohmann::json& d) { d["partitions"][1]["state"] = "Maybe"; });
  CHECK(s.code() == StatusCode::kDataLoss);
  CHECK_THAT(s.message(), Catch::Contains("data.partitions[1].state: unknown state \"Maybe\""));
  s = spoiled([](nlohmann::json& d) { d["partitions"][1]["device"] = "npu-1-vir05-1c-16g-2"; });
  CHECK_THAT(s.message(), Catch::Contains("data.partitions[1].device: duplicate"));
  s = spoiled([](nlohmann::json& d) { d["partitions"][0].erase("id"); });
  CHECK(s.code() == StatusCode::kDataLoss);
}

TEST_CASE("Encode writes version, checksum and data in that order") {
  const std::string text = Encode(Sample());
  CHECK(text.starts_with("{\"version\":1,\"checksum\":\""));
  const nlohmann::json j = nlohmann::json::parse(text);
  CHECK(j["checksum"].get<std::string>().size() == 8);
  CHECK(j["data"]["claims"].size() == 2);
}

TEST_CASE("Decode ignores member order and spacing of the data") {
  // Same data, keys reordered and indented: the checksum is of the canonical form.
  const nlohmann::json j = nlohmann::json::parse(Encode(Sample()));
  nlohmann::ordered_json reordered;
  reordered["data"] = j["data"];
  reordered["checksum"] = j["checksum"];
  reordered["version"] = j["version"];
  StatusOr<Checkpoint> back = Decode(reordered.dump(4), "test");
  INFO(back.status().ToString());
  REQUIRE_OK(back);
  CHECK(*back == Sample());
}

TEST_CASE("Decode detects every single-byte corruption of the data") {
  const std::string text = Encode(Sample());
  const size_t data_at = text.find("\"data\":") + 7;
  int detected = 0;
  int tried = 0;
  for (size_t i = data_at; i < text.size() - 2; ++i) {
    std::string bad = text;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    ++tried;
    StatusOr<Checkpoint> cp = Decode(bad, "/x/checkpoint.json");
    if (!cp.ok()) {
      CHECK(cp.status().code() == StatusCode::kDataLoss);
      CHECK(cp.status().message().starts_with("read checkpoint /x/checkpoint.json: "));
      ++detected;
    }
  }
  CHECK(detected == tried);
}

TEST_CASE("Decode reports a checksum mismatch") {
  std::string text = Encode(Sample());
  const size_t at = text.find("node-1");
  text[at] = 'm';
  StatusOr<Checkpoint> cp = Decode(text, "cp");
  REQUIRE_FALSE(cp.ok());
  CHECK(cp.status().code() == StatusCode::kDataLoss);
  CHECK(cp.status().message().find("checksum mismatch") != std::string::npos);
}

TEST_CASE("Decode reports a truncated file") {
  const std::string text = Encode(Sample());
  for (const size_t keep : {size_t{0}, size_t{1}, text.size() / 2, text.size() - 3}) {
    INFO(keep);
    StatusOr<Checkpoint> cp = Decode(text.substr(0, keep), "cp");
    REQUIRE_FALSE(cp.ok());
    CHECK(cp.status().code() == StatusCode::kDataLoss);
    CHECK(cp.status().message().find("invalid JSON") != std::string::npos);
  }
}

TEST_CASE("Decode reports an unknown version before anything else") {
  nlohmann::json j = nlohmann::json::parse(Encode(Sample()));
  j["version"] = 2;
  j["checksum"] = "zzzz";
  StatusOr<Checkpoint> cp = Decode(j.dump(), "cp");
  REQUIRE_FALSE(cp.ok());
  CHECK(cp.status().code() == StatusCode::kDataLoss);
  CHECK(cp.status().message().find("unknown version 2") != std::string::npos);
  j["version"] = "1";
  CHECK(Decode(j.dump(), "cp").status().message().find("version: expected an integer") !=
        std::string::npos);
}

// A document with `data` and a correct checksum, so that the data checks are reached.
std::string WithData(const nlohmann::json& data) {
  const std::string dump = data.dump();
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", Crc32c(dump));
  return "{\"version\":1,\"checksum\":\"" + std::string(hex) + "\",\"data\":" + dump + "}";
}

TEST_CASE("every entry is written Prepared, an older plugin's Preparing entry reads as prepared") {
  const nlohmann::json data = nlohmann::json::parse(Encode(Sample()))["data"];
  for (const auto& claim : data["claims"]) CHECK(claim["state"] == "Prepared");
  nlohmann::json old = data;
  old["claims"][1]["state"] = "Preparing";
  StatusOr<Checkpoint> cp = Decode(WithData(old), "cp");
  REQUIRE_OK(cp);
  CHECK(*cp == Sample());
}

TEST_CASE("Decode names a missing or wrong field") {
  const nlohmann::json good = nlohmann::json::parse(Encode(Sample()))["data"];
  REQUIRE_OK(Decode(WithData(good), "cp"));
  const auto fails = [](const std::string& text, const std::string& needle) {
    StatusOr<Checkpoint> cp = Decode(text, "cp");
    REQUIRE_FALSE(cp.ok());
    CHECK(cp.status().code() == StatusCode::kDataLoss);
    INFO(cp.status().message());
    CHECK(cp.status().message().find(needle) != std::string::npos);
  };
  {
    nlohmann::json j = nlohmann::json::parse(Encode(Sample()));
    j.erase("checksum");
    fails(j.dump(), "missing field \"checksum\"");
    j = nlohmann::json::parse(Encode(Sample()));
    j.erase("data");
    fails(j.dump(), "missing field \"data\"");
    j = nlohmann::json::parse(Encode(Sample()));
    j.erase("version");
    fails(j.dump(), "missing field \"version\"");
    j = nlohmann::json::parse(Encode(Sample()));
    j["extra"] = 1;
    fails(j.dump(), "unknown field \"extra\"");
  }
  {
    auto d = good;
    d.erase("bootId");
    fails(WithData(d), "data.bootId: missing required field");
  }
  {
    auto d = good;
    d["claims"][0].erase("state");
    fails(WithData(d), "data.claims[0].state: missing required field");
  }
  {
    auto d = good;
    d["claims"][1]["state"] = "Done";
    fails(WithData(d), "data.claims[1].state: unknown state");
  }
  {
    auto d = good;
    d["claims"][1]["devices"][0]["pool"] = 3;
    fails(WithData(d), "data.claims[1].devices[0].pool: expected a string");
  }
  {
    auto d = good;
    d["claims"][1]["devices"][1]["x"] = 3;
    fails(WithData(d), "data.claims[1].devices[1].x: unknown field; expected one of requestNames");
  }
  {
    auto d = good;
    d["claims"][1] = d["claims"][0];
    fails(WithData(d), "duplicate");
  }
  fails("[1]", "expected a JSON object");
}

TEST_CASE("CheckpointStore Load of a missing file is an empty checkpoint") {
  TempDir dir;
  CheckpointStore store(dir.path() + "/state/checkpoint.json");
  StatusOr<Checkpoint> cp = store.Load();
  REQUIRE_OK(cp);
  CHECK(*cp == Checkpoint{});
  CHECK_FALSE(fs::exists(dir.path() + "/state"));  // Load creates nothing
}

TEST_CASE("CheckpointStore Save creates the directory 0700 and the file 0600, Load reads it") {
  TempDir dir;
  const std::string state = dir.path() + "/var/lib/xpu-dra";
  CheckpointStore store(state + "/checkpoint.json");
  REQUIRE_OK(store.Save(Sample()));
  CHECK(store.writes() == 1);
  CHECK(Mode(state) == 0700);
  CHECK(Mode(store.path()) == 0600);
  CHECK_FALSE(fs::exists(store.path() + ".tmp"));
  StatusOr<Checkpoint> cp = store.Load();
  INFO(cp.status().ToString());
  REQUIRE_OK(cp);
  CHECK(*cp == Sample());

  // A second save replaces the file; a leftover temp file from a crash does not matter.
  WriteText(store.path() + ".tmp", "garbage");
  ::chmod((store.path() + ".tmp").c_str(), 0666);
  Checkpoint next = Sample();
  next.claims.erase(next.claims.begin());
  REQUIRE_OK(store.Save(next));
  CHECK(store.writes() == 2);
  CHECK(Mode(store.path()) == 0600);
  CHECK(*store.Load() == next);
  CHECK(ReadText(store.path()) == Encode(next));
  CHECK_FALSE(fs::exists(store.path() + ".tmp"));
}

TEST_CASE("CheckpointStore Load reports a corrupt file as data loss naming the path") {
  TempDir dir;
  CheckpointStore store(dir.path() + "/checkpoint.json");
  REQUIRE_OK(store.Save(Sample()));
  std::string text = ReadText(store.path());
  text[text.size() / 2] = static_cast<char>(text[text.size() / 2] ^ 0x20);
  WriteText(store.path(), text);
  StatusOr<Checkpoint> cp = store.Load();
  REQUIRE_FALSE(cp.ok());
  CHECK(cp.status().code() == StatusCode::kDataLoss);
  CHECK(cp.status().message().starts_with("read checkpoint " + store.path() + ": "));

  WriteText(store.path(), text.substr(0, text.size() / 3));  // truncated
  CHECK(store.Load().status().code() == StatusCode::kDataLoss);
}

TEST_CASE("CheckpointStore Load of an unreadable path is an error, not an empty checkpoint") {
  TempDir dir;
  const std::string path = dir.path() + "/checkpoint.json";
  fs::create_directory(path);  // a directory: open succeeds, read fails with EISDIR
  CheckpointStore store(path);
  StatusOr<Checkpoint> cp = store.Load();
  REQUIRE_FALSE(cp.ok());
  CHECK(cp.status().code() != StatusCode::kDataLoss);
  CHECK(cp.status().message().starts_with("read checkpoint " + path));
  // Saving over it fails too and says where.
  const Status saved = store.Save(Sample());
  REQUIRE_FALSE(saved.ok());
  CHECK(saved.message().starts_with("write checkpoint " + path));
  CHECK(store.writes() == 0);
}

}  // namespace
}  // namespace xpu::checkpoint
