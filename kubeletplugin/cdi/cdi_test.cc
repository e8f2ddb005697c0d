#include "kubeletplugin/cdi/cdi.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/testing/require_ok.h"
#include "base/testing/temp_dir.h"
#include "base/testing/text_file.h"

namespace xpu::cdi {
namespace {

namespace fs = std::filesystem;

const std::string kKind = "k8s.xpu.dra.dev/device";
const std::string kUid = "3f6c0a4e-0000-4000-8000-000000000001";

// A spec that passes Validate and needs 0.5.0 (its device name starts with a digit).
Spec GoodSpec() {
  Spec spec;
  spec.kind = kKind;
  Device d;
  d.name = kUid + "-npu-0";
  d.edits.device_nodes.push_back({"/dev/davinci0", "", "rw"});
  d.edits.env.emplace_back("XPU_DEVICE=npu-0");
  spec.devices.push_back(d);
  spec.edits.device_nodes.push_back({"/dev/davinci_manager", "", ""});
  spec.edits.env.emplace_back("ASCEND_VISIBLE_DEVICES=0");
  spec.edits.mounts.push_back({"/opt/x", "/opt/x", {"ro", "bind"}, ""});
  return spec;
}

using testing::TempDir;
using xpu::testing::WriteText;

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("MinimumVersion is 0.3.0 for a plain spec with a letter-first device name") {
  Spec spec = GoodSpec();
  spec.devices[0].name = "npu-0";
  CHECK(MinimumVersion(spec) == "0.3.0");
}

TEST_CASE("MinimumVersion needs 0.4.0 for a mount type") {
  Spec spec = GoodSpec();
  spec.devices[0].name = "npu-0";
  spec.edits.mounts[0].type = "bind";
  CHECK(MinimumVersion(spec) == "0.4.0");
  spec.edits.mounts[0].type.clear();
  spec.devices[0].edits.mounts.push_back({"/a", "/b", {}, "tmpfs"});
  CHECK(MinimumVersion(spec) == "0.4.0");
}

TEST_CASE("MinimumVersion needs 0.5.0 for a hostPath or a digit-first device name") {
  Spec spec = GoodSpec();
  CHECK(MinimumVersion(spec) == "0.5.0");  // the claim uid starts with a digit
  spec.devices[0].name = "npu-0";
  CHECK(MinimumVersion(spec) == "0.3.0");
  spec.devices[0].edits.device_nodes[0].host_path = "/dev/davinci4";
  CHECK(MinimumVersion(spec) == "0.5.0");
  spec.devices[0].edits.device_nodes[0].host_path.clear();
  spec.edits.device_nodes[0].host_path = "/dev/other";
  CHECK(MinimumVersion(spec) == "0.5.0");
}

TEST_CASE("MinimumVersion needs 0.6.0 only for a dot in the class, not in the vendor") {
  Spec spec = GoodSpec();
  spec.devices[0].name = "npu-0";
  spec.kind = "k8s.xpu.dra.dev/device";
  CHECK(MinimumVersion(spec) == "0.3.0");
  spec.kind = "k8s.xpu.dra.dev/device.npu";
  CHECK(MinimumVersion(spec) == "0.6.0");
  spec.edits.mounts[0].type = "bind";  // the highest need wins
  CHECK(MinimumVersion(spec) == "0.6.0");
}

TEST_CASE("Validate accepts the good spec") { CHECK(Validate(GoodSpec()).ok()); }

struct BadCase {
  std::string what;
  std::function<void(Spec&)> breaks;
  std::string field;  // the message starts with it
};

TEST_CASE("Validate rejects each broken rule and names the field") {
  const std::vector<BadCase> cases = {
      {"no slash in kind", [](Spec& s) { s.kind = "k8s.xpu.dra.dev"; }, "kind"},
      {"empty vendor", [](Spec& s) { s.kind = "/device"; }, "kind"},
      {"empty class", [](Spec& s) { s.kind = "k8s.xpu.dra.dev/"; }, "kind"},
      {"vendor starts with a digit", [](Spec& s) { s.kind = "8s.xpu/device"; }, "kind"},
      {"vendor ends with a dot", [](Spec& s) { s.kind = "k8s.xpu./device"; }, "kind"},
      {"class with a bad character", [](Spec& s) { s.kind = "k8s.xpu/dev+ice"; }, "kind"},
      {"class ends with a dash", [](Spec& s) { s.kind = "k8s.xpu/device-"; }, "kind"},
      {"two slashes", [](Spec& s) { s.kind = "k8s.xpu/device/x"; }, "kind"},
      {"class longer than 63", [](Spec& s) { s.kind = "k8s.xpu/d" + std::string(63, 'x'); },
       "kind"},
      {"no devices", [](Spec& s) { s.devices.clear(); }, "devices:"},
      {"empty device name", [](Spec& s) { s.devices[0].name.clear(); }, "devices[0].name"},
      {"device name starts with a dash", [](Spec& s) { s.devices[0].name = "-a"; },
       "devices[0].name"},
      {"device name ends with a colon", [](Spec& s) { s.devices[0].name = "a:"; },
       "devices[0].name"},
      {"device name with a slash", [](Spec& s) { s.devices[0].name = "a/b"; }, "devices[0].name"},
      {"duplicate device names", [](Spec& s) { s.devices.push_back(s.devices[0]); },
       "devices[1].name"},
      {"device without edits", [](Spec& s) { s.devices[0].edits = {}; },
       "devices[0].containerEdits"},
      {"env without =", [](Spec& s) { s.devices[0].edits.env[0] = "NOVALUE"; },
       "devices[0].containerEdits.env[0]"},
      {"env with = first", [](Spec& s) { s.edits.env[0] = "=x"; }, "containerEdits.env[0]"},
      {"relative device path", [](Spec& s) { s.devices[0].edits.device_nodes[0].path = "dev/x"; },
       "devices[0].containerEdits.deviceNodes[0].path"},
      {"empty device path", [](Spec& s) { s.edits.device_nodes[0].path.clear(); },
       "containerEdits.deviceNodes[0].path"},
      {"relative hostPath", [](Spec& s) { s.edits.device_nodes[0].host_path = "dev/y"; },
       "containerEdits.deviceNodes[0].hostPath"},
      {"bad permissions", [](Spec& s) { s.devices[0].edits.device_nodes[0].permissions = "rx"; },
       "devices[0].containerEdits.deviceNodes[0].permissions"},
      {"repeated permission", [](Spec& s) { s.edits.device_nodes[0].permissions = "rr"; },
       "containerEdits.deviceNodes[0].permissions"},
      {"relative mount hostPath", [](Spec& s) { s.edits.mounts[0].host_path = "opt/x"; },
       "containerEdits.mounts[0].hostPath"},
      {"empty mount containerPath", [](Spec& s) { s.edits.mounts[0].container_path.clear(); },
       "containerEdits.mounts[0].containerPath"},
      {"empty mount option", [](Spec& s) { s.edits.mounts[0].options.emplace_back(); },
       "containerEdits.mounts[0].options[2]"},
  };
  for (const BadCase& c : cases) {
    INFO(c.what);
    Spec spec = GoodSpec();
    c.breaks(spec);
    const Status status = Validate(spec);
    REQUIRE_FALSE(status.ok());
    CHECK(status.code() == StatusCode::kInvalidArgument);
    INFO(status.message());
    CHECK(status.message().starts_with(c.field));
  }
}

TEST_CASE("Validate accepts rwm subsets, none, and dots and underscores in names") {
  Spec spec = GoodSpec();
  for (const std::string p : {"", "r", "rw", "mwr", "none"}) {
    spec.devices[0].edits.device_nodes[0].permissions = p;
    CHECK(Validate(spec).ok());
  }
  spec.kind = "a/b";
  spec.devices[0].name = "9";
  CHECK(Validate(spec).ok());
  spec.kind = "vendor_x.io/cl_a.ss";
  spec.devices[0].name = "a.b_c:d-e";
  CHECK(Validate(spec).ok());
}

TEST_CASE("ToJson writes the minimum version, a fixed key order and no empty members") {
  Spec spec = GoodSpec();
  spec.devices[0].edits.env.clear();
  spec.edits = {};
  const std::string json = ToJson(spec);
  CHECK(json ==
        "{\n"
        "  \"cdiVersion\": \"0.5.0\",\n"
        "  \"kind\": \"k8s.xpu.dra.dev/device\",\n"
        "  \"devices\": [\n"
        "    {\n"
        "      \"name\": \"3f6c0a4e-0000-4000-8000-000000000001-npu-0\",\n"
        "      \"containerEdits\": {\n"
        "        \"deviceNodes\": [\n"
        "          {\n"
        "            \"path\": \"/dev/davinci0\",\n"
        "            \"permissions\": \"rw\"\n"
        "          }\n"
        "        ]\n"
        "      }\n"
        "    }\n"
        "  ]\n"
        "}\n");
}

TEST_CASE("ToJson orders every member as the CDI spec lists it") {
  Spec spec = GoodSpec();
  spec.edits.mounts[0].type = "bind";
  spec.edits.device_nodes[0].host_path = "/dev/h";
  const std::string json = ToJson(spec);
  const auto before = [&](const std::string& a, const std::string& b) {
    INFO(a + " before " + b);
    CHECK(json.find(a) < json.find(b));
  };
  before("\"cdiVersion\"", "\"kind\"");
  before("\"kind\"", "\"devices\"");
  before("\"name\"", "\"containerEdits\"");
  before("\"env\"", "\"deviceNodes\"");
  before("\"deviceNodes\"", "\"mounts\"");
  before("\"path\": \"/dev/davinci_manager\"", "\"hostPath\": \"/dev/h\"");
  before("\"hostPath\": \"/opt/x\"", "\"containerPath\"");
  before("\"containerPath\"", "\"options\"");
  before("\"options\"", "\"type\"");
  CHECK(nlohmann::json::parse(json)["cdiVersion"] == "0.5.0");
}

TEST_CASE("Validate: hooks name an OCI hook point, an absolute path and a positive timeout") {
  const auto with = [](Hook h) {
    Spec s = GoodSpec();
    s.edits.hooks.push_back(std::move(h));
    return Validate(s);
  };
  CHECK(with(Hook{"createContainer", "/bin/hook", {}, {"A=1"}, 5}).ok());
  CHECK(with(Hook{"onStart", "/bin/hook", {}, {}, {}}).message() ==
        "containerEdits.hooks[0].hookName: \"onStart\" is not an OCI hook point");
  CHECK(with(Hook{"prestart", "bin/hook", {}, {}, {}})
            .message()
            .find("containerEdits.hooks[0].path") != std::string::npos);
  CHECK(with(Hook{"prestart", "/bin/hook", {}, {"NOVALUE"}, {}})
            .message()
            .find("containerEdits.hooks[0].env[0]") != std::string::npos);
  CHECK(with(Hook{"prestart", "/bin/hook", {}, {}, 0})
            .message()
            .find("containerEdits.hooks[0].timeout") != std::string::npos);
}

TEST_CASE("ToJson and FromJson round trip") {
  Spec spec = GoodSpec();
  spec.devices.push_back({"b-1", {{"A=1", "B=x=y"}, {{"/dev/x", "/dev/y", "r"}}, {}, {}}});
  spec.edits.mounts[0].type = "bind";
  spec.edits.hooks.push_back(Hook{"createContainer",
                                  "/opt/xpu-dra/bin/xpu-cdi-hook",
                                  {"xpu-cdi-hook", "ldcache", "--folder", "/usr/lib64"},
                                  {"PATH=/usr/bin"},
                                  30});
  StatusOr<Spec> back = FromJson(ToJson(spec));
  INFO(back.status().ToString());
  REQUIRE_OK(back);
  CHECK(*back == spec);
}

TEST_CASE("FromJson accepts the minimal spec of the CDI reference and null members") {
  const std::string text =
      R"({"cdiVersion": "0.3.0", "kind": "k8s.gpu.example.com/gpu", "containerEdits": null,
   "devices": [{"name": "gpu-0", "containerEdits": {"env": ["A=1"],
     "deviceNodes": [{"path": "/dev/accel0", "permissions": "rw"}],
     "mounts": [{"hostPath": "/usr/lib/v", "containerPath": "/usr/lib/v", "options": ["ro"]}]}}]})";
  StatusOr<Spec> spec = FromJson(text);
  INFO(spec.status().ToString());
  REQUIRE_OK(spec);
  CHECK(spec->devices.at(0).edits.device_nodes.at(0).path == "/dev/accel0");
  CHECK(spec->devices.at(0).edits.mounts.at(0).options == std::vector<std::string>{"ro"});
}

TEST_CASE("FromJson reads a null member as absent, as the CDI library does") {
  nlohmann::json j = nlohmann::json::parse(ToJson(GoodSpec()));
  j["devices"][0]["containerEdits"]["mounts"] = nullptr;
  j["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"] = nullptr;
  StatusOr<Spec> spec = FromJson(j.dump());
  INFO(spec.status().ToString());
  REQUIRE_OK(spec);
  CHECK(spec->devices[0].edits.mounts.empty());
  CHECK(spec->devices[0].edits.device_nodes[0].host_path.empty());
  j["devices"][0]["name"] = nullptr;  // required: absent is missing
  CHECK(FromJson(j.dump()).status().message().find("devices[0].name: missing") !=
        std::string::npos);
}

TEST_CASE("FromJson is strict") {
  const std::string good = ToJson(GoodSpec());
  REQUIRE_OK(FromJson(good));
  const auto fails = [](const nlohmann::json& j, const std::string& needle) {
    StatusOr<Spec> spec = FromJson(j.dump());
    REQUIRE_FALSE(spec.ok());
    INFO(spec.status().message());
    CHECK(spec.status().message().find(needle) != std::string::npos);
  };
  const nlohmann::json base = nlohmann::json::parse(good);
  {
    auto j = base;
    j["extra"] = 1;
    fails(j, "extra: unknown field");
  }
  {
    auto j = base;
    j["annotations"] = {{"a", "b"}};  // known to CDI, not to this model
    fails(j, "annotations: unknown field");
  }
  {
    auto j = base;
    j["devices"][0]["containerEdits"]["deviceNodes"][0]["major"] = 195;
    fails(j, "devices[0].containerEdits.deviceNodes[0].major: unknown field");
  }
  {
    auto j = base;
    j["containerEdits"]["mounts"][0]["propagation"] = "x";
    fails(j, "containerEdits.mounts[0].propagation: unknown field");
  }
  {
    auto j = base;
    j["devices"][0]["extra"] = true;
    fails(j, "devices[0].extra: unknown field");
  }
  {
    auto j = base;
    j.erase("cdiVersion");
    fails(j, "cdiVersion: missing");
  }
  {
    auto j = base;
    j["cdiVersion"] = "0.2.0";
    fails(j, "unknown version");
  }
  {
    auto j = base;
    j["cdiVersion"] = "0.4.0";  // the digit-first device name needs 0.5.0
    fails(j, "below \"0.5.0\"");
  }
  {
    auto j = base;
    j["kind"] = 3;
    fails(j, "kind: expected a string");
  }
  {
    auto j = base;
    j["devices"] = nlohmann::json::object();
    fails(j, "devices: expected an array");
  }
  {
    auto j = base;
    j["devices"][0]["containerEdits"]["env"] = {"A=1", 2};
    fails(j, "devices[0].containerEdits.env[1]: expected a string");
  }
  {
    auto j = base;
    j["devices"][0]["containerEdits"]["env"] = {"=1"};
    fails(j, "devices[0].containerEdits.env[0]");
  }
  fails(nlohmann::json::array(), "expected a JSON object");
  StatusOr<Spec> bad = FromJson("{\"cdiVersion\": ");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("invalid JSON") != std::string::npos);
}

TEST_CASE("QualifiedName and KindForDriver") {
  CHECK(KindForDriver("xpu.dra.dev") == kKind);
  CHECK(QualifiedName(kKind, kUid + "-npu-0") ==
        "k8s.xpu.dra.dev/device=3f6c0a4e-0000-4000-8000-000000000001-npu-0");
}

TEST_CASE("IsValidClaimUid takes the canonical UUID text form only") {
  CHECK(IsValidClaimUid(kUid));
  CHECK(IsValidClaimUid("3F6C0A4E-ABCD-4000-8000-00000000000F"));
  CHECK_FALSE(IsValidClaimUid(""));
  CHECK_FALSE(IsValidClaimUid("3f6c0a4e00004000800000000000000001"));
  CHECK_FALSE(IsValidClaimUid("3f6c0a4e-0000-4000-8000-00000000000"));
  CHECK_FALSE(IsValidClaimUid("3f6c0a4e-0000-4000-8000-0000000000012"));
  CHECK_FALSE(IsValidClaimUid("3f6c0a4g-0000-4000-8000-000000000001"));
  CHECK_FALSE(IsValidClaimUid("../../../../etc/passwd-0000-00000000"));
  CHECK_FALSE(IsValidClaimUid("3f6c0a4e-0000-4000-8000/00000000001"));
}

TEST_CASE("SpecStore names files after the kind and the claim uid") {
  SpecStore store("/var/run/cdi", kKind);
  CHECK(store.PathFor(kUid) ==
        "/var/run/cdi/k8s.xpu.dra.dev-device_3f6c0a4e-0000-4000-8000-000000000001.json");
}

TEST_CASE("SpecStore writes atomically with mode 0644, reads, lists and removes") {
  TempDir dir;
  SpecStore store(dir.path(), kKind);
  const Spec spec = GoodSpec();
  const StatusOr<std::string> written = store.Write(kUid, spec);
  REQUIRE_OK(written);
  const std::string path = store.PathFor(kUid);
  CHECK(Names(dir.path()) == std::vector<std::string>{fs::path(path).filename().string()});
  // The text it returns is the file's, for the checkpoint to record.
  CHECK(*written == *ReadWholeFile(path));
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);

  StatusOr<Spec> read = store.Read(kUid);
  INFO(read.status().ToString());
  REQUIRE_OK(read);
  CHECK(*read == spec);

  // A rewrite replaces the file; no temp file stays behind.
  Spec changed = spec;
  changed.edits.env.emplace_back("MORE=1");
  REQUIRE_OK(store.Write(kUid, changed));
  CHECK(*store.Read(kUid) == changed);
  CHECK(Names(dir.path()).size() == 1);

  const std::string uid2 = "00000000-0000-4000-8000-0000000000aa";
  REQUIRE_OK(store.Write(uid2, spec));
  StatusOr<std::vector<std::string>> claims = store.ListClaims();
  REQUIRE_OK(claims);
  CHECK(*claims == std::vector<std::string>{uid2, kUid});

  REQUIRE_OK(store.Remove(kUid));
  CHECK(store.Remove(kUid).ok());  // idempotent
  CHECK(*store.ListClaims() == std::vector<std::string>{uid2});
  StatusOr<Spec> gone = store.Read(kUid);
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.status().code() == StatusCode::kNotFound);
}

TEST_CASE("SpecStore ListClaims skips other files and removes its own stale temp files") {
  TempDir dir;
  SpecStore store(dir.path(), kKind);
  const std::string prefix = dir.path() + "/k8s.xpu.dra.dev-device_";
  WriteText(prefix + kUid + ".json.tmp", "{half");
  WriteText(prefix + "00000000-0000-4000-8000-0000000000bb.json", ToJson(GoodSpec()));
  WriteText(prefix + "not-a-uid.json", "{}");
  WriteText(prefix + "not-a-uid.json.tmp", "{}");
  WriteText(dir.path() + "/k8s.other.dev-device_" + kUid + ".json", "{}");
  WriteText(dir.path() + "/k8s.other.dev-device_" + kUid + ".json.tmp", "{}");
  WriteText(dir.path() + "/vendor.yaml", "---");
  StatusOr<std::vector<std::string>> claims = store.ListClaims();
  REQUIRE_OK(claims);
  CHECK(*claims == std::vector<std::string>{"00000000-0000-4000-8000-0000000000bb"});
  const std::vector<std::string> names = Names(dir.path());
  CHECK(std::find(names.begin(), names.end(), "k8s.xpu.dra.dev-device_" + kUid + ".json.tmp") ==
        names.end());
  CHECK(names.size() == 6);  // everything else is left alone
}

TEST_CASE("SpecStore ListClaims of a missing directory is empty") {
  SpecStore store("/nonexistent/cdi-dir-of-a-test", kKind);
  StatusOr<std::vector<std::string>> claims = store.ListClaims();
  REQUIRE_OK(claims);
  CHECK(claims->empty());
}

TEST_CASE("SpecStore rejects a bad claim uid before touching any file") {
  TempDir dir;
  const std::string sub = dir.path() + "/cdi";
  SpecStore store(sub, kKind);
  for (const std::string uid : {"", "../x", "3f6c0a4e-0000-4000-8000-00000000000/", "a.json"}) {
    INFO(uid);
    const Status w = store.Write(uid, GoodSpec()).status();
    CHECK(w.code() == StatusCode::kInvalidArgument);
    CHECK(w.message().find("not a valid claim uid") != std::string::npos);
    CHECK(store.Remove(uid).code() == StatusCode::kInvalidArgument);
    CHECK(store.Read(uid).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK_FALSE(fs::exists(sub));  // not even the directory was created
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("SpecStore rejects an invalid spec or another kind without writing") {
  TempDir dir;
  SpecStore store(dir.path(), kKind);
  Spec bad = GoodSpec();
  bad.devices[0].edits = {};
  const Status s1 = store.Write(kUid, bad).status();
  CHECK(s1.code() == StatusCode::kInvalidArgument);
  CHECK(s1.message().find("devices[0].containerEdits") != std::string::npos);
  Spec other = GoodSpec();
  other.kind = "k8s.other.dev/device";
  CHECK(store.Write(kUid, other).status().code() == StatusCode::kInvalidArgument);
  CHECK(fs::is_empty(dir.path()));
}

TEST_CASE("SpecStore Read reports a corrupt file") {
  TempDir dir;
  SpecStore store(dir.path(), kKind);
  WriteText(store.PathFor(kUid), "{\"cdiVersion\": \"0.3.0\"");
  StatusOr<Spec> spec = store.Read(kUid);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.status().message().find("read cdi spec for claim") != std::string::npos);
}

}  // namespace
}  // namespace xpu::cdi
