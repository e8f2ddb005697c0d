#include "api/core.h"

#include <catch2/catch.hpp>

#include "base/testing/require_ok.h"

namespace xpu::api::core {
namespace {

using nlohmann::json;

// A Node as a 1.34 API server returns it, trimmed, with fields this code does not model.
const char* kNode = R"({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "n1", "uid": "8f0c", "resourceVersion": "42",
               "labels": {"kubernetes.io/hostname": "n1"}},
  "spec": {"providerID": "aws:///us-east-1a/i-0abc", "podCIDR": "10.244.1.0/24",
           "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule",
                       "timeAdded": "2026-11-30T10:00:00Z"}]},
  "status": {
    "capacity": {"cpu": "96", "memory": "2113459156Ki", "pods": "110"},
    "allocatable": {"cpu": "95500m", "memory": "2112000000Ki"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady",
       "lastHeartbeatTime": "2026-11-30T10:05:00Z", "lastTransitionTime": "2026-11-30T10:00:00Z"}],
    "nodeInfo": {"machineID": "m1", "bootID": "b7e2a0de-1", "kernelVersion": "6.1.0",
                 "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7",
                 "kubeletVersion": "v1.34.2", "operatingSystem": "linux",
                 "architecture": "amd64", "systemUUID": "ec2a"},
    "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}
})";

TEST_CASE("Node decodes the parts the driver uses and keeps the rest", "[core]") {
  const json in = json::parse(kNode);
  const auto node = FromJson<Node>(in);
  INFO(node.status().ToString());
  REQUIRE_OK(node);
  CHECK(node->metadata.name == "n1");
  CHECK(node->spec.provider_id == "aws:///us-east-1a/i-0abc");
  REQUIRE(node->spec.taints.size() == 1);
  CHECK(node->spec.taints[0].effect == "NoSchedule");
  CHECK(node->spec.taints[0].time_added == "2026-11-30T10:00:00Z");
  CHECK(node->status.node_info.boot_id == "b7e2a0de-1");
  CHECK(node->status.node_info.kubelet_version == "v1.34.2");
  CHECK(node->status.allocatable.at("cpu") == "95500m");
  CHECK(node->ReadyStatus() == "True");
  // Unknown members at every level survive the round trip.
  CHECK(ToJson(*node) == in);
}

TEST_CASE("Node decoding errors name the field", "[core]") {
  json bad = json::parse(kNode);
  bad["spec"]["taints"][0].erase("effect");
  CHECK(FromJson<Node>(bad).status().message() == "spec.taints[0].effect: missing required field");
  json bad_boot = json::parse(kNode);
  bad_boot["status"]["nodeInfo"]["bootID"] = 7;
  CHECK(FromJson<Node>(bad_boot).status().message().rfind(
            "status.nodeInfo.bootID: expected a string", 0) == 0);
  CHECK_FALSE(FromJson<Node>(json{{"apiVersion", "v1"}, {"kind", "Pod"}}).ok());
  CHECK(Node{}.ReadyStatus().empty());
}

TEST_CASE("Lease round-trips, with optional fields left out when unset", "[core]") {
  const json in = {{"apiVersion", "coordination.k8s.io/v1"},
                   {"kind", "Lease"},
                   {"metadata", {{"name", "xpu-dra-n1"}, {"namespace", "xpu-dra"}}},
                   {"spec",
                    {{"holderIdentity", "n1"},
                     {"leaseDurationSeconds", 15},
                     {"renewTime", "2026-11-30T10:05:00.123456Z"},
                     {"leaseTransitions", 2},
                     {"futureField", "kept"}}}};
  const auto lease = FromJson<Lease>(in);
  REQUIRE_OK(lease);
  CHECK(lease->spec.holder_identity == "n1");
  CHECK(lease->spec.lease_duration_seconds == 15);
  CHECK_FALSE(lease->spec.acquire_time.has_value());
  CHECK(ToJson(*lease) == in);

  Lease fresh;
  fresh.metadata.name = "l";
  CHECK(ToJson(fresh)["spec"] == json::object());
  json wrong = in;
  wrong["spec"]["leaseDurationSeconds"] = "15";
  CHECK(FromJson<Lease>(wrong).status().message().rfind(
            "spec.leaseDurationSeconds: expected an integer", 0) == 0);
}

}  // namespace
}  // namespace xpu::api::core
