#include "e2e/kubesim/kube_sim.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

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
  REQUIRE(o.ok());
  CHECK(o->token == "T");
  CHECK(o->seed == 5);
  CHECK(o->fault_codes == std::vector<int>{429, 503});
  CHECK(o->history == 7);
  CHECK(o->kube_version == "1.35");
}

TEST_CASE("fault, version and client-certificate flags") {
  auto o =
      Parse({"--drop-rate=0.1", "--watch-close-after", "3", "--watch-close-after-ms", "250",
             "--latency-ms", "20", "--kube-version", "v1.34", "--client-kubeconfig-out", "/tmp/c"});
  REQUIRE(o.ok());
  CHECK(o->drop_rate == 0.1);
  CHECK(o->watch_close_after == 3);
  CHECK(o->watch_close_after_ms == 250);
  CHECK(o->latency_ms == 20);
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
  REQUIRE(material.ok());
  CHECK(material->ca_key_pem.find("PRIVATE KEY") != std::string::npos);
  auto client = IssueClientCertificate(*material, "xpu-dra-test", "system:masters");
  REQUIRE(client.ok());
  CHECK(client->cert_pem.rfind("-----BEGIN CERTIFICATE-----", 0) == 0);
  CHECK(client->key_pem.find("PRIVATE KEY") != std::string::npos);
  CHECK(!IssueClientCertificate(TlsMaterial{}, "x", "").ok());
}

}  // namespace
}  // namespace xpu::kubesim
