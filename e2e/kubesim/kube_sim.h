// kube-sim: a local Kubernetes API server over real HTTPS for end-to-end tests and the demo.
// Options and flags, the kubeconfig it writes, and Run (server.cc), which serves until SIGTERM or
// SIGINT.
#ifndef XPU_E2E_KUBESIM_KUBE_SIM_H_
#define XPU_E2E_KUBESIM_KUBE_SIM_H_

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "base/status.h"
#include "e2e/kubesim/api_handler.h"
#include "e2e/kubesim/feature_gates.h"

namespace xpu::kubesim {

struct Options {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  std::string kubeconfig_out;          // written (0600, atomically) once listening
  std::string token;                   // bearer token; empty = random
  int64_t history = 1000;              // watch event history
  uint64_t seed = 0;                   // uids, generated names and faults; 0 = random
  FaultSettings faults = {.codes = {409, 429, 500}};
  std::string kube_version = "1.35";  // "1.34" or "1.35": validation limits and /version
  // When set, a second kubeconfig (0600, atomically) authenticating with a client certificate
  // (CN xpu-dra-test, O system:masters) issued by kube-sim's CA instead of the token.
  std::string client_kubeconfig_out;
  // resource.k8s.io versions served, preferred first (objects are stored once, as v1): e.g.
  // {"v1beta1"} acts as a 1.32 cluster, {"v1beta2", "v1beta1"} as 1.33.
  std::vector<std::string> resource_versions = {"v1", "v1beta2", "v1beta1"};
  // API server feature gates (--feature-gates Gate=bool,...): writes drop the fields of disabled
  // ones. All enabled by default; a real 1.34/1.35 cluster has them off (see feature_gates.h).
  FeatureGates feature_gates;

  Status Validate() const;
};

// Parses argv (without the program name). Sets *help for --help.
StatusOr<Options> ParseFlags(const std::vector<std::string>& args, bool* help);
std::string Usage();

// A kubeconfig for `server` trusting the CA whose PEM is base64-encoded in `ca_pem_base64`,
// authenticating with the bearer `token`.
std::string KubeconfigYaml(const std::string& server, const std::string& ca_pem_base64,
                           const std::string& token);
// The same with a client certificate and key (PEM, base64-encoded) instead of a token.
std::string ClientCertKubeconfigYaml(const std::string& server, const std::string& ca_pem_base64,
                                     const std::string& cert_pem_base64,
                                     const std::string& key_pem_base64);
// Writes `contents` to a temporary file beside `path` with mode 0600, then renames it over `path`.
Status WriteFileAtomically(const std::string& path, const std::string& contents);

// Serves until SIGTERM/SIGINT; prints "kube-sim: listening on https://HOST:PORT" to `out` once
// the socket listens. Returns the process exit code.
int Run(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_KUBE_SIM_H_
