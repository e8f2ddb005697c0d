#include "e2e/kubesim/kube_sim.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "base/testing/require_ok.h"
#include "e2e/kubesim/tls.h"

namespace xpu::kubesim {
namespace {

StatusOr<Options> Parse(const std::vector<std::string>& args) {
  bool help = false;
  return ParseFlags(args, &help);
}

TEST_CASE("the flags other tools rely on keep parsing") {
  auto o = Parse({"--listen", "127.0.0.1:0", "--kubeconfig-out", "/tmp/k", "--token", "T", "--seed",
                  "5", "--fault-rate", "0.25", "--fault-codes", "429,503", "--history", "7"});
  REQUIRE_OK(o);
  CHECK(o->token == "T");
  CHECK(o->seed == 5);
  CHECK(o->faults.codes == std::vector<int>{429, 503});
  CHECK(o->history == 7);
  CHECK(o->kube_version == "1.35");
}

TEST_CASE("fault, version and client-certificate flags") {
  auto o =
      Parse({"--drop-rate=0.1", "--watch-close-after", "3", "--watch-close-after-ms", "250",
             "--latency-ms", "20", "--kube-version", "v1.34", "--client-kubeconfig-out", "/tmp/c"});
  REQUIRE_OK(o);
  CHECK(o->faults.drop_rate == 0.1);
  CHECK(o->faults.watch_close_after == 3);
  CHECK(o->faults.watch_close_after_ms == 250);
  CHECK(o->faults.latency_ms == 20);
  CHECK(o->kube_version == "1.34");
  CHECK(o->client_kubeconfig_out == "/tmp/c");

  CHECK(!Parse({"--drop-rate", "1.5"}).ok());
  CHECK(!Parse({"--latency-ms", "-1"}).ok());
  CHECK(!Parse({"--kube-version", "1.33"}).ok());
  CHECK(!Parse({"--watch-close-after", "x"}).ok());
  for (const char* flag : {"--drop-rate", "--watch-close-after", "--latency-ms", "--kube-version",
                           "--client-kubeconfig-out"}) {
    CHECK(Usage().find(flag) != std::string::npos);
  }
}

TEST_CASE("the client-certificate kubeconfig carries the cert and key, no token") {
  const std::string yaml =
      ClientCertKubeconfigYaml("https://127.0.0.1:1", "Q0E=", "Q0VSVA==", "S0VZ");
  CHECK(yaml.find("certificate-authority-data: Q0E=") != std::string::npos);
  CHECK(yaml.find("client-certificate-data: Q0VSVA==") != std::string::npos);
  CHECK(yaml.find("client-key-data: S0VZ") != std::string::npos);
  CHECK(yaml.find("token") == std::string::npos);
}

TEST_CASE("client certificates are issued by the generated CA") {
  auto material = GenerateTlsMaterial();
  REQUIRE_OK(material);
  CHECK(material->ca_key_pem.find("PRIVATE KEY") != std::string::npos);
  auto client = IssueClientCertificate(*material, "xpu-dra-test", "system:masters");
  REQUIRE_OK(client);
  CHECK(client->cert_pem.rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
  CHECK(client->key_pem.find("PRIVATE KEY") != std::string::npos);
  CHECK(!IssueClientCertificate(TlsMaterial{}, "x", "").ok());
}

TEST_CASE("the feature-gates flag sets gates, unknown gates and non-bool values are errors") {
  auto defaults = Parse({});
  REQUIRE_OK(defaults);
  CHECK(defaults->feature_gates == FeatureGates{});
  CHECK(defaults->feature_gates.dra_device_taints);
  CHECK(defaults->feature_gates.dra_device_binding_conditions);

  auto o = Parse({"--feature-gates", "DRADeviceTaints=false, DRAPartitionableDevices=False",
                  "--feature-gates=DRAConsumableCapacity=0,DRADeviceBindingConditions=true,"});
  REQUIRE_OK(o);
  CHECK_FALSE(o->feature_gates.dra_device_taints);
  CHECK_FALSE(o->feature_gates.dra_partitionable_devices);
  CHECK_FALSE(o->feature_gates.dra_consumable_capacity);
  CHECK(o->feature_gates.dra_device_binding_conditions);

  auto unknown = Parse({"--feature-gates", "DRADeviceTaints=false,DRANope=true"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("--feature-gates") != std::string::npos);
  CHECK(unknown.status().message().find("DRANope") != std::string::npos);
  auto not_bool = Parse({"--feature-gates", "DRADeviceTaints=maybe"});
  REQUIRE_FALSE(not_bool.ok());
  CHECK(not_bool.status().message().find("DRADeviceTaints") != std::string::npos);
  CHECK(not_bool.status().message().find("maybe") != std::string::npos);
  auto no_value = Parse({"--feature-gates", "DRAConsumableCapacity"});
  REQUIRE_FALSE(no_value.ok());
  CHECK(no_value.status().message().find("DRAConsumableCapacity") != std::string::npos);
  CHECK_FALSE(Parse({"--feature-gates"}).ok());
  CHECK(Usage().find("--feature-gates") != std::string::npos);
  CHECK(Usage().find("DRADeviceBindingConditions") != std::string::npos);

  // The parser leaves the gates as they were on an error.
  FeatureGates gates;
  CHECK_FALSE(ParseFeatureGates("DRADeviceTaints=false,Bad=true", &gates).ok());
  CHECK(gates.dra_device_taints);
}

}  // namespace
}  // namespace xpu::kubesim
