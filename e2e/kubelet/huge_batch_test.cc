// The kubelet's deadline under a huge batch: the real xpu-dra-plugin, against kube-sim, asked over
// its DRA socket to prepare 10,000 claims that do not exist and one that does. The answer must
// come well within the kubelet's 45 s, name every claim, and prepare the real one; with the
// kubelet stand-in (the kubelet's deadline) and with a bare client that sets no deadline at all.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "base/testing/require_ok.h"
#include "e2e/client/child_process.h"
#include "e2e/client/claims.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/client/wait.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "proto/dra_v1.grpc.pb.h"

namespace xpu::e2e {
namespace {

namespace fs = std::filesystem;
namespace kc = api::client;
using Clock = std::chrono::steady_clock;
namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;

constexpr int kMissing = 10'000;
// "Well within" the kubelet's 45 s: the whole batch, on a loaded 2-core machine.
constexpr auto kWellWithin = std::chrono::seconds(15);

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// kube-sim with Node n1 and an allocated claim default/real, and the plugin on a copy of the
// atlas800t-a2 host, registered.
struct HugeBatchRig {
  HugeBatchRig() {
    auto started = StartSimWithClient(XPU_KUBE_SIM_BINARY, {"xpu-dra", "default"}, {"n1"});
    REQUIRE_OK(started);
    sim = std::move(started->sim);
    client = std::move(started->client);
    ClaimSpec spec;
    spec.name = "real";
    spec.devices = {"npu-0"};
    spec.pool = "n1";
    StatusOr<std::string> uid = CreateClaim(*client, spec);
    REQUIRE_OK(uid);
    real = {"default", "real", *uid};

    root = fs::path(sim->dir()) / "node";
    fs::create_directories(root);
    fs::copy(std::string(XPU_SOURCE_DIR) + "/e2e/fixtures/hosts/atlas800t-a2", root / "host",
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    for (const char* d : {"registry", "plugins", "cdi", "state"}) fs::create_directories(root / d);
    auto p = ChildProcess::Start(
        XPU_PLUGIN_BINARY,
        {"--kubeconfig", sim->kubeconfig(), "--node-name", "n1", "--host-root", Path("host"),
         "--plugin-registry-dir", Path("registry"), "--plugin-dir", Path("plugins"), "--cdi-dir",
         Path("cdi"), "--state-dir", Path("state"), "--metrics-addr", ""},
        Path("plugin.log"));
    REQUIRE_OK(p);
    plugin = std::move(p).value();
    KubeletStandIn kubelet;
    const bool up =
        Eventually([&] { return kubelet.GetInfo(Path("registry/xpu.dra.dev-reg.sock")).ok(); });
    INFO(plugin->Log());
    REQUIRE(up);
  }

  std::string Path(const std::string& rel) const { return (root / rel).string(); }
  std::string DraSocket() const { return Path("plugins/dra.sock"); }
  bool HasSpec() const {
    return fs::exists(Path("cdi/k8s.xpu.dra.dev-device_" + real.uid + ".json"));
  }

  // kMissing claims that do not exist, in "default" or (`spread`) each in a namespace of its own,
  // and the real one in the middle.
  std::vector<KubeletClaim> Batch(bool spread) const {
    std::vector<KubeletClaim> out;
    for (int i = 0; i < kMissing; ++i) {
      const std::string serial = std::to_string(i);
      out.push_back({spread ? "ns-" + serial : "default", "missing-" + serial,
                     "5e1f0000-0000-4000-8000-" + std::string(12 - serial.size(), '0') + serial});
      if (i == kMissing / 2) out.push_back(real);
    }
    return out;
  }

  std::unique_ptr<KubeSimProcess> sim;
  std::unique_ptr<kc::Client> client;
  fs::path root;
  KubeletClaim real;
  std::unique_ptr<ChildProcess> plugin;
};

TEST_CASE("plugin: 10,000 missing claims and a real one, with the kubelet's deadline",
          "[plugin][e2e][huge-batch]") {
  HugeBatchRig rig;
  const std::vector<KubeletClaim> batch = rig.Batch(false);
  const Clock::time_point start = Clock::now();
  auto out = KubeletStandIn().Prepare(rig.DraSocket(), "v1", batch);
  const Clock::duration took = Clock::now() - start;
  INFO("answered in " << Seconds(took) << " s");
  INFO(out.status().ToString());
  REQUIRE_OK(out);
  CHECK(took < kWellWithin);
  // Every uid of the batch is a key of the answer; the real claim is prepared.
  REQUIRE(out->size() == batch.size());
  INFO(out->at(rig.real.uid).error);
  REQUIRE(out->at(rig.real.uid).error.empty());
  REQUIRE(out->at(rig.real.uid).devices.size() == 1);
  CHECK(out->at(rig.real.uid).devices[0].device_name == "npu-0");
  CHECK(rig.HasSpec());
  // A missing claim's error names it.
  CHECK(out->at(batch[7].uid).error ==
        "ResourceClaim default/missing-7: not found (not in the list of namespace default)");
  WARN("10,000 missing claims + 1 real, one namespace, kubelet deadline: " << Seconds(took)
                                                                           << " s");
}

TEST_CASE("plugin: 10,000 missing claims in as many namespaces, from a caller without a deadline",
          "[plugin][e2e][huge-batch]") {
  HugeBatchRig rig;
  const std::vector<KubeletClaim> batch = rig.Batch(true);
  auto stub = v1::DRAPlugin::NewStub(
      ::grpc::CreateChannel("unix://" + rig.DraSocket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;  // no deadline: the plugin assumes the kubelet's 45 s
  v1::NodePrepareResourcesRequest request;
  for (const KubeletClaim& c : batch) {
    v1::Claim* claim = request.add_claims();
    claim->set_namespace_(c.ns);
    claim->set_name(c.name);
    claim->set_uid(c.uid);
  }
  v1::NodePrepareResourcesResponse response;
  const Clock::time_point start = Clock::now();
  const ::grpc::Status status = stub->NodePrepareResources(&context, request, &response);
  const Clock::duration took = Clock::now() - start;
  INFO("answered in " << Seconds(took) << " s: " << status.error_message());
  REQUIRE(status.ok());
  CHECK(took < kWellWithin);
  REQUIRE(response.claims().size() == batch.size());
  const v1::NodePrepareResourceResponse& real = response.claims().at(rig.real.uid);
  INFO(real.error());
  REQUIRE(real.error().empty());
  REQUIRE(real.devices().size() == 1);
  CHECK(real.devices(0).device_name() == "npu-0");
  CHECK(rig.HasSpec());
  CHECK(response.claims().at(batch[7].uid).error() ==
        "ResourceClaim ns-7/missing-7: not found (not in the list of all namespaces)");
  WARN("10,000 missing claims in 10,000 namespaces + 1 real, no deadline: " << Seconds(took)
                                                                            << " s");
}

}  // namespace
}  // namespace xpu::e2e
