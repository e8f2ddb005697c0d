// The plugin's side of the API: it writes the node's NodeInventory (cluster-scoped, name = node
// name, owner = the Node) and keeps the plugin Lease (`xpu-dra-plugin-<node>` in the driver's
// namespace) renewed, so the controller knows what the node has and that its plugin is live.
//
// The inventory is written only when it changed (status compared without condition timestamps,
// which are carried over from the stored object while a condition's status stays the same). A
// Node that does not exist yet is not an error of the plugin: PublishOnce says kNotFound and Run
// waits and retries, as a DaemonSet pod can start before its Node object is visible.
#ifndef XPU_KUBELETPLUGIN_PUBLISHER_PUBLISHER_H_
#define XPU_KUBELETPLUGIN_PUBLISHER_PUBLISHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "api/client/client.h"
#include "api/node_inventory.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::plugin {

struct PublisherOptions {
  std::string node_name;
  std::string ns = "xpu-dra";   // where the Lease lives
  std::string holder_identity;  // the Lease holder; default: the node name
  std::chrono::milliseconds lease_renew{5000};
  std::chrono::seconds lease_duration{15};
  std::chrono::milliseconds rediscover{60'000};
  std::chrono::milliseconds node_retry{2000};  // while the Node does not exist

  Status Validate() const;
};

// "xpu-dra-plugin-<node>".
std::string LeaseName(const std::string& node_name);
// A MicroTime ("2026-11-30T10:05:00.123456Z") for `t`.
std::string MicroTime(std::chrono::system_clock::time_point t);

struct PublisherStats {
  uint64_t discoveries = 0;
  uint64_t inventory_writes = 0;  // creates and status updates
  uint64_t unchanged = 0;         // discoveries that needed no write
  uint64_t lease_renewals = 0;
  uint64_t errors = 0;
};

class InventoryPublisher {
 public:
  using DiscoverFn = std::function<StatusOr<api::NodeInventory>()>;

  // `client` must outlive the publisher.
  InventoryPublisher(api::client::Client* client, PublisherOptions options, DiscoverFn discover);

  // Discovers and writes the inventory if it changed: true when it wrote. kNotFound when the
  // Node does not exist; API errors as the client reports them (a 409 is retried once after a
  // re-read).
  StatusOr<bool> PublishOnce();
  // Creates or renews the Lease.
  Status RenewLease();
  // Renews the Lease every lease_renew and publishes every rediscover (and at once), until
  // `stop`; errors are counted, logged to `log` and retried. `wake` (may be null) is polled so a
  // caller can ask for an early rediscovery (a device change it saw).
  void Run(const std::atomic<bool>& stop, std::atomic<bool>* wake = nullptr,
           const std::function<void(const std::string&)>& log = nullptr);

  PublisherStats stats() const;

 private:
  StatusOr<std::string> NodeUid();

  api::client::Client* const client_;
  const PublisherOptions options_;
  const DiscoverFn discover_;
  mutable Mutex mu_;
  PublisherStats stats_ GUARDED_BY(mu_);
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PUBLISHER_PUBLISHER_H_
