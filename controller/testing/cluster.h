// Test support for the controller: a kube-sim process and a client to it, and the objects the
// plugin would have written (Node, NodeInventory, plugin Lease), made directly. Used by the
// controller's tests and by bench/controller_measure.
#ifndef XPU_CONTROLLER_TESTING_CLUSTER_H_
#define XPU_CONTROLLER_TESTING_CLUSTER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "api/resource.h"
#include "base/status.h"
#include "e2e/client/kube_sim_process.h"
#include "e2e/client/wait.h"

namespace xpu::controller::testing {

// Polls a condition every 10 ms until it holds or the timeout (30 s) passes.
using e2e::Eventually;

StatusOr<std::unique_ptr<api::client::Client>> Connect(const e2e::KubeSimProcess& sim,
                                                       api::client::ClientOptions options = {});

// A kube-sim process and a client to it.
struct SimCluster {
  std::unique_ptr<e2e::KubeSimProcess> sim;
  std::unique_ptr<api::client::Client> client;
};
// Client options without the client-side rate limit (tests make their own load).
api::client::ClientOptions Unthrottled();
// Starts the kube-sim `binary` with `flags`, connects with `options` and creates `namespaces`.
StatusOr<SimCluster> StartCluster(const std::string& binary,
                                  const std::vector<std::string>& flags = {},
                                  const std::vector<std::string>& namespaces = {},
                                  api::client::ClientOptions options = {});
// StartCluster with the namespaces the controller tests use ("xpu-dra", "default") and no
// client-side rate limit.
StatusOr<SimCluster> StartControllerCluster(const std::string& binary,
                                            const std::vector<std::string>& flags = {});

// Creates the namespace (ok if it exists).
Status MakeNamespace(api::client::Client& client, const std::string& name);
// Creates a Node with these labels; returns its uid.
StatusOr<std::string> MakeNode(api::client::Client& client, const std::string& name,
                               const std::map<std::string, std::string>& labels = {});
// Creates or replaces the NodeInventory named inventory.metadata.name (status included).
Status PutInventory(api::client::Client& client, api::NodeInventory inventory);
// Creates or renews `xpu-dra-plugin-<node>` in `ns`, renewed now, with this duration.
Status RenewPluginLease(api::client::Client& client, const std::string& ns, const std::string& node,
                        int64_t duration_seconds = 15);
// A committed NodeInventory golden of a fixture host (e2e/fixtures/hosts-expected/<host>.json
// under `source_dir`), renamed to `node`.
StatusOr<api::NodeInventory> FixtureInventory(const std::string& source_dir,
                                              const std::string& host, const std::string& node);
// Every ResourceSlice of `driver`.
StatusOr<std::vector<api::resource::ResourceSlice>> ListSlices(api::client::Client& client,
                                                               const std::string& driver);

}  // namespace xpu::controller::testing

#endif  // XPU_CONTROLLER_TESTING_CLUSTER_H_
