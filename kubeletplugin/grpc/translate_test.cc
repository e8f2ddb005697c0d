#include "kubeletplugin/grpc/internal/translate.h"

#include <catch2/catch.hpp>

namespace xpu::plugin::internal {
namespace {

PreparedDevice Device(std::string share_id) {
  return PreparedDevice{.request_names = {"gpu"},
                        .pool = "node-1",
                        .device = "gpu-0",
                        .cdi_device_ids = {"k8s.xpu.dra.dev/device=uid-1-gpu-0"},
                        .share_id = std::move(share_id)};
}

TEST_CASE("translate: claims keep namespace, name and uid") {
  drav1::NodePrepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_name("pod0-gpu");
  claim->set_uid("uid-1");
  CHECK(ClaimsFromProto(request) ==
        std::vector<ClaimRef>{{.ns = "default", .name = "pod0-gpu", .uid = "uid-1"}});
}

TEST_CASE("translate: share_id goes out on v1 only and only when set") {
  std::vector<ClaimRef> asked = {{.ns = "default", .name = "a", .uid = "uid-1"}};
  std::map<std::string, PrepareResult> results = {
      {"uid-1", PrepareResult{.devices = {Device("share-7"), Device("")}, .error = ""}}};
  drav1::NodePrepareResourcesResponse v1;
  CHECK(PrepareToProto(asked, results, &v1).empty());
  const auto& devices = v1.claims().at("uid-1").devices();
  REQUIRE(devices.size() == 2);
  CHECK(devices[0].has_share_id());
  CHECK(devices[0].share_id() == "share-7");
  CHECK_FALSE(devices[1].has_share_id());
  CHECK(devices[0].request_names(0) == "gpu");
  CHECK(devices[0].cdi_device_ids(0) == "k8s.xpu.dra.dev/device=uid-1-gpu-0");

  drav1beta1::NodePrepareResourcesResponse v1beta1;
  CHECK(PrepareToProto(asked, results, &v1beta1).empty());
  CHECK(v1beta1.claims().at("uid-1").devices_size() == 2);
}

TEST_CASE("translate: every asked claim gets an entry, unasked results are dropped") {
  std::vector<ClaimRef> asked = {{.ns = "default", .name = "a", .uid = "uid-1"},
                                 {.ns = "default", .name = "b", .uid = "uid-2"},
                                 {.ns = "default", .name = "a", .uid = "uid-1"}};
  std::map<std::string, PrepareResult> results = {
      {"uid-1", PrepareResult{.devices = {Device("")}, .error = ""}}, {"uid-9", PrepareResult{}}};
  drav1::NodePrepareResourcesResponse out;
  std::vector<std::string> notes = PrepareToProto(asked, results, &out);
  CHECK(notes.size() == 2);
  REQUIRE(out.claims().size() == 2);
  CHECK(out.claims().at("uid-1").error().empty());
  CHECK_THAT(out.claims().at("uid-2").error(), Catch::Contains("no result"));
  CHECK(out.claims().at("uid-2").devices_size() == 0);

  std::map<std::string, UnprepareResult> unprepared = {{"uid-2", UnprepareResult{.error = "x"}}};
  drav1beta1::NodeUnprepareResourcesResponse unprepare_out;
  CHECK(UnprepareToProto(asked, unprepared, &unprepare_out).size() == 1);
  CHECK_THAT(unprepare_out.claims().at("uid-1").error(), Catch::Contains("no result"));
  CHECK(unprepare_out.claims().at("uid-2").error() == "x");
}

TEST_CASE("translate: a failed claim carries its error and no devices") {
  std::vector<ClaimRef> asked = {{.ns = "default", .name = "a", .uid = "uid-1"}};
  std::map<std::string, PrepareResult> results = {
      {"uid-1", PrepareResult{.devices = {Device("")}, .error = "prepare claim: boom"}}};
  drav1::NodePrepareResourcesResponse out;
  CHECK(PrepareToProto(asked, results, &out).empty());
  CHECK(out.claims().at("uid-1").error() == "prepare claim: boom");
  CHECK(out.claims().at("uid-1").devices_size() == 0);
}

// A healthy device, an unhealthy one with a message and an unknown one whose message is too long
// to send whole.
std::vector<DeviceHealth> ThreeHealthStates() {
  return {{.pool = "node-1",
           .device = "gpu-0",
           .health = HealthState::kHealthy,
           .last_updated_unix = 100,
           .message = ""},
          {.pool = "node-1",
           .device = "gpu-1",
           .health = HealthState::kUnhealthy,
           .last_updated_unix = 200,
           .message = "xid 79"},
          {.pool = "node-1",
           .device = "gpu-2",
           .health = HealthState::kUnknown,
           .last_updated_unix = 0,
           .message = std::string(5000, 'x')}};
}

TEST_CASE("translate: health states and messages") {
  const std::vector<DeviceHealth> devices = ThreeHealthStates();
  healthv1alpha1::NodeWatchResourcesResponse out;
  HealthToProto(devices, &out);
  REQUIRE(out.devices_size() == 3);
  CHECK(out.devices(0).device().pool_name() == "node-1");
  CHECK(out.devices(0).device().device_name() == "gpu-0");
  CHECK(out.devices(0).health() == healthv1alpha1::HEALTHY);
  CHECK(out.devices(0).last_updated_time() == 100);
  CHECK(out.devices(1).health() == healthv1alpha1::UNHEALTHY);
  CHECK(out.devices(1).message() == "xid 79");
  CHECK(out.devices(2).health() == healthv1alpha1::UNKNOWN);
  CHECK(out.devices(2).message().size() == kMaxHealthMessageBytes);
  CHECK(out.devices(2).message().substr(kMaxHealthMessageBytes - 3) == "...");
}

TEST_CASE("translate: health in v1 is v1alpha1's message byte for byte") {
  const std::vector<DeviceHealth> devices = ThreeHealthStates();
  healthv1::NodeWatchResourcesResponse v1;
  HealthToProto(devices, &v1);
  REQUIRE(v1.devices_size() == 3);
  CHECK(v1.devices(0).health() == healthv1::HEALTHY);
  CHECK(v1.devices(1).health() == healthv1::UNHEALTHY);
  CHECK(v1.devices(1).message() == "xid 79");
  CHECK(v1.devices(2).health() == healthv1::UNKNOWN);
  CHECK(v1.devices(2).message().size() == kMaxHealthMessageBytes);
  healthv1alpha1::NodeWatchResourcesResponse v1alpha1;
  HealthToProto(devices, &v1alpha1);
  // The same package-independent wire bytes: a kubelet reading either version decodes the same.
  std::string v1_bytes;
  std::string v1alpha1_bytes;
  REQUIRE(v1.SerializeToString(&v1_bytes));
  REQUIRE(v1alpha1.SerializeToString(&v1alpha1_bytes));
  CHECK(v1_bytes.size() > 1000);
  CHECK(v1_bytes == v1alpha1_bytes);
}

TEST_CASE("translate: a long health message is cut at a UTF-8 character boundary") {
  // "é" is two bytes; 1020 ASCII bytes then é at bytes 1020-1021 straddles the cut at 1021.
  std::string message = std::string(1020, 'a') + "\xC3\xA9" + std::string(10, 'b');
  std::string cut = TruncateHealthMessage(message);
  CHECK(cut == std::string(1020, 'a') + "...");
  CHECK(TruncateHealthMessage("short") == "short");
  std::string exact(kMaxHealthMessageBytes, 'z');
  CHECK(TruncateHealthMessage(exact) == exact);
}

}  // namespace
}  // namespace xpu::plugin::internal
