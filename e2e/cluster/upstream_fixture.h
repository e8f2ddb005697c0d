// What the upstream tests share (upstream_*_test.cc, one executable, upstream_test): the driver
// against the real Kubernetes control plane (scripts/cluster: etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager built from pinned sources). One control plane serves
// every test case of a process; ctest runs one process per tag ([admission], [allocation],
// [fallback], [liveness], [e2e], [gang]).
//
// XPU_UPSTREAM_VERSION picks the release (default: the newest pinned). Results that
// docs/performance.md reports (the allocator's agreement with the solver) go to
// $XPU_UPSTREAM_REPORT_DIR (default the working directory) as upstream-agreement-<version>.json.
// For tests only: the helpers stop the test case (REQUIRE) when what they need fails.
#ifndef XPU_E2E_CLUSTER_UPSTREAM_FIXTURE_H_
#define XPU_E2E_CLUSTER_UPSTREAM_FIXTURE_H_

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/client/client.h"
#include "e2e/client/child_process.h"
#include "e2e/cluster/cluster.h"
#include "e2e/cluster/harness.h"
#include "topology/model.h"

namespace xpu::e2e::upstream {

// Why a test of partitions cannot run on this cluster (1.34's shapes cannot carry partition
// counters), or nullopt when it can: `if (auto why = NoPartitionCounters()) XPU_SKIP(*why);`.
std::optional<std::string> NoPartitionCounters();

// The process-wide upstream control plane, started on first use (with the alpha gates the
// tests need before 1.36, or XPU_UPSTREAM_FEATURE_GATES).
Cluster& Upstream();

// The work directory of a test's harness, under the control plane's directory.
std::string WorkDir(const std::string& name);

// The JSON document in the file at `path`.
nlohmann::json ReadJson(const std::string& path);

// The port a process logged its metrics server on ("(port N"); 0 until it has.
int MetricsPort(const ChildProcess& process);
// The value of one series of a /metrics page; -1 when absent.
double Metric(int port, const std::string& series);

// The devices of claim ns/name once the scheduler allocated it (empty, failing, if not in 120 s).
std::vector<std::string> AllocationOnceMade(api::client::Client& client, const std::string& ns,
                                            const std::string& name);

// The tests here were written for attributes mode, which from 1.36 is no longer the default of
// a config that names none (groups is): a config without a mode gets attributes. The default by
// release is tested in controller/publish_mode_test.cc and by the demo and runtime tiers.
std::string WithAttributesMode(const std::string& config_yaml);

// One fixture host per node, our plugin on each, the controller in one mode.
struct Fleet {
  std::unique_ptr<DriverHarness> harness;
  std::map<std::string, std::string> host_of;  // node -> fixture host
};

// The fleet of a test: nodes named "<prefix>-<host>", their plugins run with `plugin_flags`.
Fleet StartFleet(const std::string& prefix, const std::vector<std::string>& hosts,
                 const std::string& config_yaml = "",
                 const std::vector<std::string>& plugin_flags = {});

// The node's topology as its NodeInventory describes it.
topology::Node TopologyOf(api::client::Client& client, const std::string& node);
// A published device's vendor attribute ("" when none).
std::string VendorOf(const nlohmann::json& device);

// Creates claim + pod `name` in `ns`, waits for the scheduler's allocation; the allocated
// "pool/device" names (empty when not allocated in time). With `unschedulable`, stops early when
// the scheduler refuses the pod for 12 s, and says so.
std::vector<std::string> Allocate(api::client::Client& client, const std::string& ns,
                                  const std::string& name, const nlohmann::json& claim,
                                  const std::string& node, bool* unschedulable = nullptr,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Deletes pods (at once) and their claims of the same names.
void Release(const std::string& ns, const std::vector<std::string>& names,
             api::client::Client& client);

// "device" of "pool/device".
std::string DeviceOf(const std::string& pool_device);

// A node agent (xpu-node-agent) for `node`, started.
std::unique_ptr<ChildProcess> StartAgent(DriverHarness& harness, const std::string& node);

// Whether pod ns/name is in `phase`.
bool PodPhaseIs(api::client::Client& client, const std::string& ns, const std::string& name,
                const std::string& phase);

// The scaleUpDomain constraint of the examples: every device of the request in one domain.
nlohmann::json SameDomain();

// The controller counts a fallback for the dropped `field`, and publishes the `devices` devices of
// `node` without `member`.
void CheckFallback(DriverHarness& harness, const std::string& field, const std::string& node,
                   size_t devices, const std::string& member);

// groups mode: a request for `size` devices is one group device.
nlohmann::json GroupClaim(const std::string& ns, const std::string& name, const std::string& klass,
                          int size);

// `claim` (one request, ClaimObject) narrowed by a CEL selector over the driver's attributes.
nlohmann::json WithSelector(nlohmann::json claim, const std::string& expression);

}  // namespace xpu::e2e::upstream

#endif  // XPU_E2E_CLUSTER_UPSTREAM_FIXTURE_H_
