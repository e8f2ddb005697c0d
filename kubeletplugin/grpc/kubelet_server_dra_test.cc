// The calls on the DRA socket, from the kubelet stand-in and raw gRPC clients: prepare and
// unprepare over v1 and v1beta1, their errors and deadlines; the v1 and v1alpha1 health streams.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "e2e/client/wait.h"
#include "e2e/kubelet/kubelet_stand_in.h"
#include "kubeletplugin/grpc/internal/translate.h"
#include "kubeletplugin/grpc/kubelet_server.h"
#include "kubeletplugin/grpc/testing/kubelet_server_fixture.h"
#include "proto/dra_v1.grpc.pb.h"
#include "proto/health_v1.grpc.pb.h"

namespace xpu::plugin {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
namespace drav1 = internal::drav1;
namespace healthv1 = internal::healthv1;

using testing::Claims;
using testing::kWaitPeriod;
using testing::kWaitTimeout;
using testing::LogLines;
using testing::Options;
using testing::ServerTest;
using testing::ServingWithHealth;

TEST_CASE_METHOD(ServerTest, "kubelet server: prepare and unprepare over v1 carry share_id") {
  service.share_id = "share-1";
  service.fail_uid = "uid-2";
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;

  auto prepared = kubelet.Prepare(server.dra_socket(), "v1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(prepared);
  REQUIRE(prepared->size() == 2);
  const e2e::KubeletPrepareResult& ok = prepared->at("uid-1");
  CHECK(ok.error.empty());
  REQUIRE(ok.devices.size() == 1);
  CHECK(ok.devices[0] == e2e::KubeletDevice{.request_names = {"gpu"},
                                            .pool_name = "node-1",
                                            .device_name = "gpu-0",
                                            .cdi_device_ids = {"k8s.xpu.dra.dev/device=uid-1"},
                                            .share_id = "share-1"});
  CHECK(prepared->at("uid-2").error == "prepare claim claim-uid-2: boom");
  CHECK(prepared->at("uid-2").devices.empty());
  REQUIRE(service.prepared.size() == 1);
  CHECK(service.prepared[0] ==
        std::vector<ClaimRef>{{.ns = "default", .name = "claim-uid-1", .uid = "uid-1"},
                              {.ns = "default", .name = "claim-uid-2", .uid = "uid-2"}});

  auto unprepared = kubelet.Unprepare(server.dra_socket(), "v1", Claims({"uid-1"}));
  REQUIRE_OK(unprepared);
  CHECK(*unprepared == std::map<std::string, std::string>{{"uid-1", ""}});
  REQUIRE(service.unprepared.size() == 1);
  CHECK(service.unprepared[0][0].uid == "uid-1");

  SECTION("no share_id when the device is not shared") {
    service.share_id.clear();
    auto again = kubelet.Prepare(server.dra_socket(), "v1", Claims({"uid-3"}));
    REQUIRE_OK(again);
    REQUIRE(again->at("uid-3").devices.size() == 1);
    CHECK_FALSE(again->at("uid-3").devices[0].share_id.has_value());
  }
}

TEST_CASE_METHOD(ServerTest, "kubelet server: prepare and unprepare over v1beta1") {
  service.share_id = "share-1";  // v1beta1 has no field for it
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;

  auto prepared = kubelet.Prepare(server.dra_socket(), "v1beta1", Claims({"uid-1"}));
  REQUIRE_OK(prepared);
  REQUIRE(prepared->at("uid-1").devices.size() == 1);
  const e2e::KubeletDevice& device = prepared->at("uid-1").devices[0];
  CHECK(device.pool_name == "node-1");
  CHECK(device.device_name == "gpu-0");
  CHECK(device.request_names == std::vector<std::string>{"gpu"});
  CHECK(device.cdi_device_ids == std::vector<std::string>{"k8s.xpu.dra.dev/device=uid-1"});
  CHECK_FALSE(device.share_id.has_value());

  auto unprepared = kubelet.Unprepare(server.dra_socket(), "v1beta1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(unprepared);
  CHECK(*unprepared == std::map<std::string, std::string>{{"uid-1", ""}, {"uid-2", ""}});
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: a claim the driver left out of its answer gets an error entry") {
  service.forget_uid = "uid-2";
  LogLines log;
  KubeletServer server(Options(dir, &log));
  REQUIRE_OK(server.Start(&service, nullptr));
  e2e::KubeletStandIn kubelet;

  auto prepared = kubelet.Prepare(server.dra_socket(), "v1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(prepared);
  REQUIRE(prepared->size() == 2);  // not the unasked uid the driver added
  CHECK(prepared->at("uid-1").error.empty());
  CHECK_THAT(prepared->at("uid-2").error, Catch::Contains("no result"));
  CHECK(log.Contains("ERROR prepare claim default/claim-uid-2 (uid-2)"));

  auto unprepared = kubelet.Unprepare(server.dra_socket(), "v1beta1", Claims({"uid-1", "uid-2"}));
  REQUIRE_OK(unprepared);
  REQUIRE(unprepared->size() == 2);
  CHECK(unprepared->at("uid-1").empty());
  CHECK_THAT(unprepared->at("uid-2"), Catch::Contains("no result"));
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: a driver that throws fails the call, not the plugin") {
  service.throw_in_prepare = true;
  LogLines log;
  KubeletServer server(Options(dir, &log));
  REQUIRE_OK(server.Start(&service, nullptr));
  auto prepared = e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"}));
  CHECK(prepared.status().code() == StatusCode::kInternal);
  CHECK_THAT(prepared.status().message(), Catch::Contains("driver bug"));
  CHECK(log.Contains("ERROR prepare: the driver threw: driver bug"));
  service.throw_in_prepare = false;
  CHECK(e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"})).ok());
}

TEST_CASE_METHOD(
    ServerTest,
    "kubelet server: a call whose caller gave up stops, and the next call is answered") {
  service.hang_uid = "uid-hang";
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));

  // A caller that gives up after 200 ms, while the driver still works on its batch.
  auto stub = drav1::DRAPlugin::NewStub(
      ::grpc::CreateChannel("unix://" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  drav1::NodePrepareResourcesRequest request;
  drav1::Claim* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_name("hang");
  claim->set_uid("uid-hang");
  drav1::NodePrepareResourcesResponse response;
  CHECK(stub->NodePrepareResources(&context, request, &response).error_code() ==
        ::grpc::StatusCode::DEADLINE_EXCEEDED);

  // The abandoned call noticed, stopped and freed the lock: the next one (with the kubelet's
  // 45 s deadline) gets its answer; without that it would wait for the abandoned one's minute.
  auto next = e2e::KubeletStandIn().Prepare(server.dra_socket(), "v1", Claims({"uid-1"}));
  INFO(next.status().ToString());
  REQUIRE_OK(next);
  CHECK(next->at("uid-1").error.empty());
  CHECK(service.saw_caller_leave);
}

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: a call without a deadline is bounded by the kubelet's 45 s") {
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  auto stub = drav1::DRAPlugin::NewStub(
      ::grpc::CreateChannel("unix://" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  drav1::NodePrepareResourcesRequest request;
  drav1::Claim* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_name("a");
  claim->set_uid("uid-1");
  {
    ::grpc::ClientContext context;  // no deadline
    drav1::NodePrepareResourcesResponse response;
    const Clock::time_point sent = Clock::now();
    REQUIRE(stub->NodePrepareResources(&context, request, &response).ok());
    const Clock::time_point answered = Clock::now();
    REQUIRE(service.deadlines.size() == 1);
    CHECK(service.deadlines[0] >= sent + kKubeletCallTimeout - milliseconds(1000));
    CHECK(service.deadlines[0] <= answered + kKubeletCallTimeout);
  }
  {
    // A caller's own deadline, nearer or further, is kept.
    ::grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
    drav1::NodePrepareResourcesResponse response;
    const Clock::time_point sent = Clock::now();
    REQUIRE(stub->NodePrepareResources(&context, request, &response).ok());
    REQUIRE(service.deadlines.size() == 2);
    CHECK(service.deadlines[1] >= sent + std::chrono::minutes(3) - milliseconds(1000));
  }
}

// A server whose full-list resend is 5 minutes away: a second message on a stream is a change's.
struct ServingHealthChanges : ServingWithHealth {
  ServingHealthChanges() : ServingWithHealth(std::chrono::minutes(5)) {}
  // The change the tests make: gpu-0 unhealthy with XID 79, at 2000.
  void BreakGpu0() {
    health.Set({{.pool = "node-1",
                 .device = "gpu-0",
                 .health = HealthState::kUnhealthy,
                 .last_updated_unix = 2000,
                 .message = "xid 79"}});
  }
};

TEST_CASE_METHOD(ServerTest,
                 "kubelet server: without a health source no health service is advertised") {
  KubeletServer server(Options(dir));
  REQUIRE_OK(server.Start(&service, nullptr));
  StatusOr<e2e::PluginInfo> info = e2e::KubeletStandIn().GetInfo(server.registration_socket());
  REQUIRE_OK(info);
  CHECK(info->supported_versions == std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"});
  Status end;
  e2e::KubeletStandIn().WatchHealth(server.dra_socket(), milliseconds(2000), nullptr, &end);
  CHECK(end.code() == StatusCode::kUnimplemented);
  // Nor v1.
  auto stub = healthv1::DRAResourceHealth::NewStub(
      ::grpc::CreateChannel("unix:" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(2000));
  auto reader = stub->NodeWatchResources(&context, healthv1::NodeWatchResourcesRequest());
  healthv1::NodeWatchResourcesResponse response;
  CHECK_FALSE(reader->Read(&response));
  CHECK(reader->Finish().error_code() == ::grpc::StatusCode::UNIMPLEMENTED);
}

// The v1 health service, which kubelets from 1.37 prefer (v1alpha1 goes in 1.40), read with a v1
// client while a v1alpha1 client reads the same source.
TEST_CASE_METHOD(
    ServingHealthChanges,
    "kubelet server: the v1 health stream sends the snapshot and a change, as v1alpha1 "
    "does") {
  auto stub = healthv1::DRAResourceHealth::NewStub(
      ::grpc::CreateChannel("unix:" + server.dra_socket(), ::grpc::InsecureChannelCredentials()));
  ::grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(10'000));
  auto reader = stub->NodeWatchResources(&context, healthv1::NodeWatchResourcesRequest());

  healthv1::NodeWatchResourcesResponse first;
  REQUIRE(reader->Read(&first));
  REQUIRE(first.devices_size() == 2);
  CHECK(first.devices(0).device().pool_name() == "node-1");
  CHECK(first.devices(0).device().device_name() == "gpu-0");
  CHECK(first.devices(1).device().device_name() == "gpu-1");
  CHECK(first.devices(0).health() == healthv1::HEALTHY);
  CHECK(first.devices(0).last_updated_time() == 1000);

  BreakGpu0();
  healthv1::NodeWatchResourcesResponse second;
  REQUIRE(reader->Read(&second));
  REQUIRE(second.devices_size() == 1);
  CHECK(second.devices(0).health() == healthv1::UNHEALTHY);
  CHECK(second.devices(0).message() == "xid 79");
  CHECK(second.devices(0).last_updated_time() == 2000);

  // A v1alpha1 client at the same time sees the same state.
  std::vector<e2e::KubeletHealthMessage> alpha =
      e2e::KubeletStandIn().WatchHealth(server.dra_socket(), milliseconds(5000),
                                        [](const e2e::KubeletHealthMessage&) { return false; });
  REQUIRE(alpha.size() == 1);
  REQUIRE(alpha[0].devices.size() == 1);
  CHECK(alpha[0].devices[0].health == e2e::KubeletHealth::kUnhealthy);
  CHECK(alpha[0].devices[0].message == "xid 79");

  context.TryCancel();
  CHECK(reader->Finish().error_code() == ::grpc::StatusCode::CANCELLED);
  // The client left: the server's streams stop waiting on the health source.
  CHECK(e2e::Eventually([&] { return Clock::now() - health.last_wait() > milliseconds(500); },
                        kWaitTimeout, kWaitPeriod));
}

TEST_CASE_METHOD(
    ServingHealthChanges,
    "kubelet server: the health stream sends the snapshot at once and a change promptly") {
  Clock::time_point opened = Clock::now();
  Clock::time_point changed;
  std::vector<e2e::KubeletHealthMessage> messages = e2e::KubeletStandIn().WatchHealth(
      server.dra_socket(), milliseconds(10'000), [&](const e2e::KubeletHealthMessage& m) {
        if (changed != Clock::time_point()) return false;
        CHECK(m.received - opened < milliseconds(1000));
        changed = Clock::now();
        BreakGpu0();
        return true;
      });
  REQUIRE(messages.size() == 2);
  REQUIRE(messages[0].devices.size() == 2);
  CHECK(messages[0].devices[0].pool_name == "node-1");
  CHECK(messages[0].devices[0].device_name == "gpu-0");
  CHECK(messages[0].devices[0].health == e2e::KubeletHealth::kHealthy);
  CHECK(messages[0].devices[0].last_updated_time == 1000);
  CHECK(messages[1].received - changed < milliseconds(1000));
  REQUIRE(messages[1].devices.size() == 1);
  CHECK(messages[1].devices[0].health == e2e::KubeletHealth::kUnhealthy);
  CHECK(messages[1].devices[0].message == "xid 79");
  CHECK(messages[1].devices[0].last_updated_time == 2000);

  // The client left: the server's stream stops waiting on the health source.
  CHECK(e2e::Eventually([&] { return Clock::now() - health.last_wait() > milliseconds(500); },
                        kWaitTimeout, kWaitPeriod));
}

// A server resending the full health list every 200 ms.
struct ServingHealthResends : ServingWithHealth {
  ServingHealthResends() : ServingWithHealth(milliseconds(200)) {}
};

TEST_CASE_METHOD(ServingHealthResends,
                 "kubelet server: the health stream resends the full list periodically") {
  std::vector<e2e::KubeletHealthMessage> messages = e2e::KubeletStandIn().WatchHealth(
      server.dra_socket(), milliseconds(10'000),
      [count = 0](const e2e::KubeletHealthMessage&) mutable { return ++count < 3; });
  REQUIRE(messages.size() == 3);
  for (size_t i = 1; i < messages.size(); ++i) {
    CHECK(messages[i].devices.size() == 2);
    CHECK(messages[i].received - messages[i - 1].received >= milliseconds(150));
    CHECK(messages[i].received - messages[i - 1].received < milliseconds(2000));
  }
}

}  // namespace
}  // namespace xpu::plugin
