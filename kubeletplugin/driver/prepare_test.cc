// The rules of preparing, as tables: no server, no disk (the host is a fixed set of paths).
#include "kubeletplugin/driver/prepare.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "api/testing/inventory_examples.h"
#include "base/testing/require_ok.h"

namespace xpu::plugin {
namespace {

namespace res = api::resource;

constexpr const char* kUid = "0b5f1c2e-7d3a-4e6b-9c8d-1a2b3c4d5e6f";
constexpr const char* kOtherUid = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b";

res::DeviceRequestAllocationResult Result(const std::string& request, const std::string& device,
                                          const std::string& driver = "xpu.dra.dev",
                                          const std::string& pool = "node-a3-1") {
  res::DeviceRequestAllocationResult r;
  r.request = request;
  r.driver = driver;
  r.pool = pool;
  r.device = device;
  return r;
}

res::DeviceAllocationConfiguration Env(const std::string& name, const std::string& value) {
  res::DeviceAllocationConfiguration c;
  c.source = "FromClaim";
  res::OpaqueDeviceConfiguration opaque;
  opaque.driver = "xpu.dra.dev";
  opaque.parameters = {
      {"apiVersion", "xpu.dra.dev/v1alpha1"}, {"kind", "DeviceConfig"}, {"env", {{name, value}}}};
  c.opaque = opaque;
  return c;
}

// The example node (two Ascend 910C dies, node-a3-1), seen through a fixed host.
struct Fixture {
  api::NodeInventory inventory = api::testing::ExampleNodeInventory();
  res::AllocationResult allocation;
  HostView host{
      [](const api::InventoryDevice& d) { return "/dev/davinci" + std::to_string(d.index); },
      cdi::FixedHostFiles({"/dev/davinci_manager", "/dev/hisi_hdc"}),
      {}};

  PrepareInput Input() const {
    PrepareInput in;
    in.driver_name = "xpu.dra.dev";
    in.node_name = "node-a3-1";
    in.cdi_kind = "k8s.xpu.dra.dev/device";
    in.ref = {"team-a", "train", kUid};
    in.allocation = &allocation;
    in.inventory = &inventory;
    return in;
  }
};

std::vector<std::string> NodePaths(const cdi::ContainerEdits& edits) {
  std::vector<std::string> paths;
  for (const cdi::DeviceNode& n : edits.device_nodes) paths.push_back(n.path);
  return paths;
}

bool HasEnv(const cdi::ContainerEdits& edits, const std::string& entry) {
  return std::find(edits.env.begin(), edits.env.end(), entry) != edits.env.end();
}

TEST_CASE("prepare: our results on this node become one spec and one checkpoint entry") {
  Fixture f;
  f.allocation.devices.results = {Result("npus", "npu-1"), Result("npus", "npu-0"),
                                  Result("other", "gpu-0", "gpu.example.com"),
                                  Result("npus", "npu-0", "xpu.dra.dev", "another-node")};
  f.allocation.devices.config = {Env("HCCL_CONNECT_TIMEOUT", "600")};
  StatusOr<PreparedClaim> p = ComputePreparedClaim(f.Input(), f.host);
  REQUIRE_OK(p);
  REQUIRE(p->spec.has_value());
  const cdi::Spec& spec = *p->spec;
  CHECK(spec.kind == "k8s.xpu.dra.dev/device");
  // The vendor's control nodes that exist on the host, and only those.
  CHECK(NodePaths(spec.edits) == std::vector<std::string>{"/dev/davinci_manager", "/dev/hisi_hdc"});
  CHECK(HasEnv(spec.edits, "ASCEND_VISIBLE_DEVICES=0,1"));
  REQUIRE(spec.devices.size() == 2);
  CHECK(spec.devices[0].name == std::string(kUid) + "-npu-1");
  CHECK(NodePaths(spec.devices[0].edits) == std::vector<std::string>{"/dev/davinci1"});
  CHECK(HasEnv(spec.devices[0].edits, "HCCL_CONNECT_TIMEOUT=600"));
  CHECK(HasEnv(spec.devices[0].edits, std::string("XPU_DRA_CLAIM_UID=") + kUid));
  CHECK(spec.devices[1].name == std::string(kUid) + "-npu-0");

  const checkpoint::Claim& record = p->record;
  CHECK(record.uid == kUid);
  CHECK(record.ns == "team-a");
  CHECK(record.name == "train");
  REQUIRE(record.devices.size() == 2);
  CHECK(record.devices[0].device == "npu-1");
  CHECK(record.devices[0].pool == "node-a3-1");
  CHECK(record.devices[0].request_names == std::vector<std::string>{"npus"});
  CHECK(record.devices[0].cdi_device_ids ==
        std::vector<std::string>{"k8s.xpu.dra.dev/device=" + std::string(kUid) + "-npu-1"});
  CHECK(record.cdi_spec.empty());  // the caller's, once written

  const PrepareResult answer = AnswerOf(record);
  REQUIRE(answer.devices.size() == 2);
  CHECK(answer.devices[1].device == "npu-0");
  CHECK(answer.error.empty());

  // The same input gives the same spec.
  StatusOr<PreparedClaim> again = ComputePreparedClaim(f.Input(), f.host);
  REQUIRE_OK(again);
  CHECK(*again->spec == spec);
}

TEST_CASE("prepare: the vendor's driver files join the spec's common edits, once per vendor") {
  Fixture f;
  int asked = 0;
  f.host.driver_files = [&asked](const std::string& vendor) -> StatusOr<cdi::ContainerEdits> {
    ++asked;
    CHECK(vendor == "huawei");
    cdi::ContainerEdits e;
    e.mounts.push_back(cdi::Mount{"/usr/local/dcmi", "/usr/local/dcmi", {"ro", "bind"}, ""});
    e.hooks.push_back(cdi::Hook{"createContainer",
                                "/opt/xpu-dra/bin/xpu-cdi-hook",
                                {"xpu-cdi-hook", "ldcache", "--folder", "/usr/local/dcmi"},
                                {"PATH=/usr/bin"},
                                30});
    e.env.emplace_back("ASCEND_DRIVER_FILES=1");
    return e;
  };
  f.allocation.devices.results = {Result("npus", "npu-1"), Result("npus", "npu-0")};
  StatusOr<PreparedClaim> p = ComputePreparedClaim(f.Input(), f.host);
  REQUIRE_OK(p);
  CHECK(asked == 1);
  const cdi::ContainerEdits& common = p->spec->edits;
  REQUIRE(common.mounts.size() == 1);
  CHECK(common.mounts[0].container_path == "/usr/local/dcmi");
  REQUIRE(common.hooks.size() == 1);
  CHECK(common.hooks[0].args[1] == "ldcache");
  CHECK(cdi::Validate(*p->spec).ok());

  // What the driver files set, opaque config cannot override either.
  f.allocation.devices.config = {Env("ASCEND_DRIVER_FILES", "0")};
  CHECK(ComputePreparedClaim(f.Input(), f.host)
            .status()
            .message()
            .find("env.ASCEND_DRIVER_FILES: set by the driver") != std::string::npos);

  // A partial install fails the claim, naming it and the missing file; nothing to write.
  f.allocation.devices.config.clear();
  f.host.driver_files = [](const std::string&) -> StatusOr<cdi::ContainerEdits> {
    return FailedPreconditionError("nvidia driver 570.158.01: libcuda.so.570.158.01 is missing");
  };
  StatusOr<PreparedClaim> partial = ComputePreparedClaim(f.Input(), f.host);
  CHECK(partial.status().code() == StatusCode::kFailedPrecondition);
  CHECK(partial.status().message() ==
        "ResourceClaim team-a/train: nvidia driver 570.158.01: libcuda.so.570.158.01 is missing");
}

TEST_CASE("prepare: a claim with nothing of ours on this node is recorded with no spec") {
  Fixture f;
  f.allocation.devices.results = {Result("a", "gpu-0", "gpu.example.com"),
                                  Result("b", "npu-0", "xpu.dra.dev", "another-node")};
  PrepareInput in = f.Input();
  in.inventory = nullptr;  // not even needed
  StatusOr<PreparedClaim> p = ComputePreparedClaim(in, f.host);
  REQUIRE_OK(p);
  CHECK_FALSE(p->spec.has_value());
  CHECK(p->record.uid == kUid);
  CHECK(p->record.devices.empty());
}

TEST_CASE("prepare: what cannot be given is refused, naming the claim and the cause") {
  struct Case {
    const char* what;
    std::function<void(Fixture&, PrepareInput&)> change;
    StatusCode code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"a device the node does not have",
       [](Fixture& f, PrepareInput&) { f.allocation.devices.results = {Result("npus", "npu-9")}; },
       StatusCode::kInvalidArgument,
       "ResourceClaim team-a/train: device npu-9 of request npus is not on node node-a3-1"},
      {"a device another claim holds",
       [](Fixture& f, PrepareInput& in) {
         f.allocation.devices.results = {Result("npus", "npu-0")};
         in.taken["npu-0"] = kOtherUid;
       },
       StatusCode::kFailedPrecondition,
       "ResourceClaim team-a/train: device npu-0 is already prepared for claim "
       "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"},
      {"the node's devices not discovered yet",
       [](Fixture& f, PrepareInput& in) {
         f.allocation.devices.results = {Result("npus", "npu-0")};
         in.inventory = nullptr;
       },
       StatusCode::kUnavailable, "the node's devices are not discovered yet; retry"},
      {"opaque config overriding the driver's variable",
       [](Fixture& f, PrepareInput&) {
         f.allocation.devices.results = {Result("npus", "npu-0")};
         f.allocation.devices.config = {Env("ASCEND_VISIBLE_DEVICES", "7")};
       },
       StatusCode::kInvalidArgument,
       "ResourceClaim team-a/train: opaque config env.ASCEND_VISIBLE_DEVICES: set by the driver, "
       "cannot be overridden"},
      {"opaque config the driver cannot read",
       [](Fixture& f, PrepareInput&) {
         f.allocation.devices.results = {Result("npus", "npu-0")};
         f.allocation.devices.config = {Env("A", "1")};
         f.allocation.devices.config[0].opaque->parameters["envv"] = nlohmann::json::object();
       },
       StatusCode::kInvalidArgument, "ResourceClaim team-a/train: "},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Fixture f;
    PrepareInput in = f.Input();
    c.change(f, in);
    StatusOr<PreparedClaim> p = ComputePreparedClaim(in, f.host);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == c.code);
    CHECK(p.status().message().starts_with(c.message));
  }
}

TEST_CASE("prepare: shared results and the claim's own devices are not taken") {
  Fixture f;
  f.allocation.devices.results = {Result("npus", "npu-0"), Result("npus", "npu-1")};
  f.allocation.devices.results[0].share_id = "5c0a9f7e-1d2b-4c3a-8e9f-0a1b2c3d4e5f";
  f.allocation.devices.results[1].admin_access = true;
  PrepareInput in = f.Input();
  in.taken = {{"npu-0", kOtherUid}, {"npu-1", kOtherUid}};
  StatusOr<PreparedClaim> p = ComputePreparedClaim(in, f.host);
  REQUIRE_OK(p);
  CHECK(p->record.devices[0].share_id == "5c0a9f7e-1d2b-4c3a-8e9f-0a1b2c3d4e5f");

  // Its own earlier record (a retry of the same claim) does not block it.
  f.allocation.devices.results = {Result("npus", "npu-0")};
  in.taken = {{"npu-0", kUid}};
  CHECK(ComputePreparedClaim(in, f.host).ok());
}

TEST_CASE("prepare: a group device stands for its members and takes them all") {
  Fixture f;
  StatusOr<std::vector<api::GroupDevice>> groups = api::GroupDevices(f.inventory);
  REQUIRE_OK(groups);
  REQUIRE_FALSE(groups->empty());
  const api::GroupDevice& group = groups->front();
  f.allocation.devices.results = {Result("pair", group.name)};
  StatusOr<PreparedClaim> p = ComputePreparedClaim(f.Input(), f.host);
  REQUIRE_OK(p);
  REQUIRE(p->spec->devices.size() == 1);
  CHECK(p->spec->devices[0].name == std::string(kUid) + "-" + group.name);
  CHECK(NodePaths(p->spec->devices[0].edits).size() == group.members.size());
  REQUIRE(p->record.devices.size() == 1);
  CHECK(p->record.devices[0].members == group.members);

  std::map<std::string, std::string> taken;
  NoteTakenDevices(p->record, &taken);
  for (const std::string& m : group.members) CHECK(taken[m] == kUid);
  CHECK_FALSE(taken.contains(group.name));

  // A member held by another claim blocks the group.
  PrepareInput in = f.Input();
  in.taken[group.members.back()] = kOtherUid;
  StatusOr<PreparedClaim> blocked = ComputePreparedClaim(in, f.host);
  CHECK(blocked.status().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("prepare: the fixed host lists directory entries by prefix, sorted") {
  const cdi::HostFiles files = cdi::FixedHostFiles(
      {"/usr/lib/x/libb.so", "/usr/lib/x/liba.so", "/usr/lib/x/sub/libc.so", "/usr/lib/y.so"});
  CHECK(files.exists("/usr/lib/y.so"));
  CHECK_FALSE(files.exists("/usr/lib/z.so"));
  CHECK(files.names("/usr/lib/x", "lib") == std::vector<std::string>{"liba.so", "libb.so"});
  CHECK(files.names("/usr/lib/x", "libb") == std::vector<std::string>{"libb.so"});
  CHECK(files.names("/nowhere", "").empty());
}

}  // namespace
}  // namespace xpu::plugin

namespace xpu::plugin {
namespace {

// Two NPUs and the example gang's device (team-a/train-llm), with the gang at hand.
struct GangFixture : Fixture {
  GangFixture() {
    allocation.devices.results = {Result("npus", "npu-0"), Result("npus", "npu-1"),
                                  Result("gang", "gang-train-llm", "xpu.dra.dev", "gangs")};
  }
  PrepareInput Input() const {
    PrepareInput in = Fixture::Input();
    in.gang = &gang;
    return in;
  }
  const api::AcceleratorGang gang = api::testing::ExampleAcceleratorGang();
};

TEST_CASE_METHOD(
    GangFixture,
    "prepare: a gang device hands the rank table, host file and ranks to the container") {
  PrepareInput in = Input();
  in.gang_dir = "/var/lib/xpu-dra/gangs";
  StatusOr<PreparedClaim> p = ComputePreparedClaim(in, host);
  REQUIRE_OK(p);
  REQUIRE(p->spec.has_value());
  REQUIRE(p->spec->devices.size() == 3);
  const cdi::Device& g = p->spec->devices[2];
  CHECK(g.name == std::string(kUid) + "-gang-train-llm");
  for (const char* entry :
       {"WORLD_SIZE=4", "RANK_SIZE=4", "NNODES=2", "NODE_RANK=0", "LOCAL_WORLD_SIZE=2",
        "MASTER_ADDR=10.0.3.1", "XPU_DRA_GANG=team-a/train-llm",
        "RANK_TABLE_FILE=/etc/xpu-dra/gang/rank_table.json",
        "XPU_DRA_HOSTFILE=/etc/xpu-dra/gang/hostfile"}) {
    INFO(entry);
    CHECK(HasEnv(g.edits, entry));
  }
  REQUIRE(g.edits.mounts.size() == 2);
  const std::string dir = std::string("/var/lib/xpu-dra/gangs/") + kUid;
  CHECK(g.edits.mounts[0].host_path == dir + "/rank_table.json");
  CHECK(g.edits.mounts[0].container_path == "/etc/xpu-dra/gang/rank_table.json");
  CHECK(std::find(g.edits.mounts[0].options.begin(), g.edits.mounts[0].options.end(), "ro") !=
        g.edits.mounts[0].options.end());
  // The files: the rank table (1.2: the ranks name a super-pod) and the host file.
  REQUIRE(p->files.size() == 2);
  const nlohmann::json table = nlohmann::json::parse(p->files.at(dir + "/rank_table.json"));
  CHECK(table["version"] == "1.2");
  CHECK(table["server_count"] == "2");
  CHECK(table["server_list"][0]["server_id"] == "10.0.3.1");
  CHECK(table["server_list"][1]["device"][1]["rank_id"] == "3");
  CHECK(p->files.at(dir + "/hostfile") == "10.0.3.1 slots=2\n10.0.3.2 slots=2\n");
  // The checkpoint records it like any device.
  REQUIRE(p->record.devices.size() == 3);
  CHECK(p->record.devices[2].pool == "gangs");
  CHECK(p->record.devices[2].device == "gang-train-llm");
}

TEST_CASE_METHOD(GangFixture,
                 "prepare: device metadata files per request, mounted where KEP-5304 says") {
  PrepareInput in = Input();
  in.metadata_dir = "/var/lib/kubelet/plugins/xpu.dra.dev/dra-device-metadata";
  StatusOr<PreparedClaim> p = ComputePreparedClaim(in, host);
  REQUIRE_OK(p);
  const std::string dir = "/var/lib/kubelet/plugins/xpu.dra.dev/dra-device-metadata/team-a_train";
  REQUIRE(p->files.contains(dir + "/npus/metadata.json"));
  REQUIRE(p->files.contains(dir + "/gang/metadata.json"));
  const nlohmann::json npus = nlohmann::json::parse(p->files.at(dir + "/npus/metadata.json"));
  CHECK(npus["apiVersion"] == "metadata.resource.k8s.io/v1alpha1");
  CHECK(npus["kind"] == "DeviceMetadata");
  CHECK(npus["metadata"] ==
        nlohmann::json{{"name", "train"}, {"namespace", "team-a"}, {"uid", kUid}});
  REQUIRE(npus["requests"].size() == 1);
  CHECK(npus["requests"][0]["name"] == "npus");
  const nlohmann::json& d0 = npus["requests"][0]["devices"][0];
  CHECK(d0["name"] == "npu-0");
  CHECK(d0["driver"] == "xpu.dra.dev");
  CHECK(d0["pool"] == "node-a3-1");
  CHECK(d0["attributes"]["vendor"] == nlohmann::json{{"string", "huawei"}});
  CHECK(d0["attributes"]["index"].contains("int"));
  const nlohmann::json g = nlohmann::json::parse(p->files.at(dir + "/gang/metadata.json"));
  const nlohmann::json& ga = g["requests"][0]["devices"][0]["attributes"];
  CHECK(ga["nodeRank"] == nlohmann::json{{"int", 0}});
  CHECK(ga["worldSize"] == nlohmann::json{{"int", 4}});
  // One CDI device per request mounts its file; the request's devices name it.
  const auto& devices = p->spec->devices;
  const auto meta = std::find_if(devices.begin(), devices.end(), [](const cdi::Device& d) {
    return d.name == std::string(kUid) + "-metadata-npus";
  });
  REQUIRE(meta != devices.end());
  REQUIRE(meta->edits.mounts.size() == 1);
  CHECK(meta->edits.mounts[0].host_path == dir + "/npus/metadata.json");
  CHECK(meta->edits.mounts[0].container_path ==
        "/var/run/dra-device-attributes/train/npus/xpu.dra.dev-metadata.json");
  const std::string id = "k8s.xpu.dra.dev/device=" + std::string(kUid) + "-metadata-npus";
  for (const auto& r : p->record.devices) {
    if (r.request_names[0] != "npus") continue;
    CHECK(std::find(r.cdi_device_ids.begin(), r.cdi_device_ids.end(), id) !=
          r.cdi_device_ids.end());
  }
  // Off by default: no files but the gang's.
  in.metadata_dir.clear();
  CHECK(ComputePreparedClaim(in, host)->files.size() == 2);
}

TEST_CASE("prepare: a gang device without its gang, or not placed here, fails the claim") {
  Fixture f;
  f.allocation.devices.results = {Result("gang", "gang-train-llm", "xpu.dra.dev", "gangs")};
  StatusOr<PreparedClaim> missing = ComputePreparedClaim(f.Input(), f.host);
  CHECK(missing.status().code() == StatusCode::kUnavailable);
  CHECK(missing.status().message().find("AcceleratorGang team-a/train-llm") != std::string::npos);

  api::AcceleratorGang gang = api::testing::ExampleAcceleratorGang();
  gang.status.nodes[0].name = "elsewhere";
  PrepareInput in = f.Input();
  in.gang = &gang;
  StatusOr<PreparedClaim> away = ComputePreparedClaim(in, f.host);
  CHECK(away.status().code() == StatusCode::kFailedPrecondition);
  CHECK(away.status().message() ==
        "ResourceClaim team-a/train: AcceleratorGang team-a/train-llm is not placed on node "
        "node-a3-1");
}

}  // namespace
}  // namespace xpu::plugin
