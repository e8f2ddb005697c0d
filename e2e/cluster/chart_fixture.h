// What the chart tests share (chart_*_test.cc, one executable, chart_test): the Helm chart
// deploy/helm/xpu-dra against the real Kubernetes control plane (scripts/cluster) and the pinned
// helm (scripts/build-upstream). One control plane for the whole process (ctest: upstream-chart).
//
// XPU_UPSTREAM_VERSION picks the release, as for upstream_test.
// For tests only: the helpers stop the test case (REQUIRE) when what they need fails.
#ifndef XPU_E2E_CLUSTER_CHART_FIXTURE_H_
#define XPU_E2E_CLUSTER_CHART_FIXTURE_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "e2e/cluster/cluster.h"

namespace xpu::e2e::chart {

inline constexpr const char* kNs = "xpu-dra";  // the chart's namespace in these tests
inline constexpr const char* kControllerSa = "xpu-dra-controller";
inline constexpr const char* kPluginSa = "xpu-dra-plugin";

// The chart's folder in the checkout.
std::string Chart();

// ---- The control plane and the tools ----------------------------------------------------------

// The process-wide upstream control plane, started on first use. groups mode needs
// DRAPartitionableDevices, alpha (off) before 1.36: turned on there, as a cluster that uses
// groups mode must.
Cluster& Upstream();

// The folder "chart-<name>" under the control plane's directory, made.
std::string WorkDir(const std::string& name);

struct Ran {
  int code = -1;
  std::string output;  // stdout and stderr
};

// Runs `binary` with `args` to its end.
Ran Run(const std::string& binary, const std::vector<std::string>& args);

// The pinned helm.
std::string Helm();

// The contents of the file at `path`.
std::string ReadFile(const std::string& path);

// `helm template xpu-dra <chart> --namespace xpu-dra` with `--set` values; the path of the
// rendering (helm's stdout only).
std::string Render(const std::string& name, const std::vector<std::string>& sets);

// ---- YAML documents as JSON -------------------------------------------------------------------

// The YAML documents (maps) of the file at `path` as JSON, with YAML 1.2 core schema for plain
// scalars (quoted ones are strings), enough for manifests.
std::vector<nlohmann::json> Documents(const std::string& path);

// The document of `kind` named `name`; fails the test case when there is none.
const nlohmann::json& Find(const std::vector<nlohmann::json>& docs, const std::string& kind,
                           const std::string& name);

// ---- The chart in the cluster, and identities -------------------------------------------------

// The defaults' rendering applied server-side (once per process), its CRDs established.
void EnsureChartApplied();

// A service-account identity as a Pod of the chart holds it: a placeholder Pod with the chart's
// serviceAccountName (on `node` when given: spec.nodeName, as a scheduled DaemonSet Pod), and a
// token from the TokenRequest API bound to that Pod, in a kubeconfig of its own.
struct Identity {
  std::string user;  // system:serviceaccount:<ns>:<sa>
  std::string kubeconfig;
  std::unique_ptr<api::client::Client> client;
};

Identity MakeIdentity(const std::string& pod_name, const std::string& sa, const std::string& node);

}  // namespace xpu::e2e::chart

#endif  // XPU_E2E_CLUSTER_CHART_FIXTURE_H_
