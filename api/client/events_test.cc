#include "api/client/events.h"

#include <catch2/catch.hpp>

#include "base/testing/require_ok.h"
#include "base/time.h"

namespace xpu::api::client {
namespace {

TEST_CASE("terminal API errors are the 4xx answers but 409 and 429") {
  for (StatusCode code :
       {StatusCode::kInvalidArgument, StatusCode::kUnauthenticated, StatusCode::kPermissionDenied,
        StatusCode::kNotFound, StatusCode::kOutOfRange}) {
    INFO(StatusCodeName(code));
    CHECK(IsTerminalApiError(Status(code, "x")));
  }
  for (StatusCode code :
       {StatusCode::kOk, StatusCode::kAborted, StatusCode::kAlreadyExists, StatusCode::kUnavailable,
        StatusCode::kDeadlineExceeded, StatusCode::kInternal, StatusCode::kFailedPrecondition,
        StatusCode::kCancelled, StatusCode::kDataLoss}) {
    INFO(StatusCodeName(code));
    CHECK_FALSE(IsTerminalApiError(Status(code, "x")));
  }
}

TEST_CASE("an event about a namespaced object lives beside it, named after it") {
  EventInfo info;
  info.about = {"coordination.k8s.io/v1", "Lease", "xpu-dra", "xpu-dra-plugin-n1", "uid-1"};
  info.reason = "InventoryRejected";
  info.message = std::string(3000, 'm');
  info.component = "xpu-dra-plugin";
  info.instance = "n1";
  info.host = "n1";
  const auto t = ParseTime("2026-12-02T08:00:00Z");
  REQUIRE_OK(t);
  const nlohmann::json e = MakeEvent(info, *t);
  CHECK(e["apiVersion"] == "v1");
  CHECK(e["kind"] == "Event");
  CHECK(e["metadata"] ==
        nlohmann::json{{"generateName", "xpu-dra-plugin-n1."}, {"namespace", "xpu-dra"}});
  CHECK(e["involvedObject"] == nlohmann::json{{"apiVersion", "coordination.k8s.io/v1"},
                                              {"kind", "Lease"},
                                              {"namespace", "xpu-dra"},
                                              {"name", "xpu-dra-plugin-n1"},
                                              {"uid", "uid-1"}});
  CHECK(e["type"] == "Warning");
  CHECK(e["reason"] == "InventoryRejected");
  CHECK(e["message"].get<std::string>().size() == 1024);
  CHECK(e["source"] == nlohmann::json{{"component", "xpu-dra-plugin"}, {"host", "n1"}});
  CHECK(e["reportingComponent"] == "xpu-dra-plugin");
  CHECK(e["reportingInstance"] == "n1");
  CHECK(e["firstTimestamp"] == "2026-12-02T08:00:00Z");
  CHECK(e["lastTimestamp"] == "2026-12-02T08:00:00Z");
  CHECK(e["count"] == 1);
}

TEST_CASE("an event about a cluster-scoped object goes to the default namespace") {
  EventInfo info;
  info.about = {"v1", "Node", "", "n1", ""};
  info.type = "Normal";
  info.reason = "Published";
  info.component = "xpu-dra-controller";
  CHECK(EventNamespace(info.about) == "default");
  const nlohmann::json e = MakeEvent(info, std::chrono::system_clock::time_point());
  CHECK(e["metadata"]["namespace"] == "default");
  CHECK(e["involvedObject"] ==
        nlohmann::json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "n1"}});
  CHECK(e["source"] == nlohmann::json{{"component", "xpu-dra-controller"}});
  CHECK(e["type"] == "Normal");
}

}  // namespace
}  // namespace xpu::api::client
