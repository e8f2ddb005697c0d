// The plugin's side of the API: it writes the node's NodeInventory (cluster-scoped, name = node
// name, owner = the Node) and keeps the plugin Lease (`xpu-dra-plugin-<node>` in the driver's
// namespace) renewed, so the controller knows what the node has and that its plugin is live.
//
// The inventory is written only when it changed (status compared without condition timestamps,
// which are carried over from the stored object while a condition's status stays the same). A
// Node that does not exist yet is not an error of the plugin: PublishOnce says kNotFound and Run
// waits and retries, as a DaemonSet pod can start before its Node object is visible.
//
// An inventory the API server refuses for itself (a terminal answer, api/client/events.h: 400,
// 401, 403, 410, 422) is not sent again until discovery finds something different: the refusal
// is logged and counted once and recorded as a Warning Event on the plugin's Lease, and each
// later rediscovery that finds the same facts answers the same error without a request.
#ifndef XPU_KUBELETPLUGIN_PUBLISHER_PUBLISHER_H_
#define XPU_KUBELETPLUGIN_PUBLISHER_PUBLISHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api/client/client.h"
#include "api/client/events.h"
#include "api/client/objects.h"
#include "api/core.h"
#include "api/node_inventory.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/stop.h"

namespace xpu::plugin {

struct PublisherOptions {
  std::string node_name;
  std::string ns = "xpu-dra";   // where the Lease lives
  std::string holder_identity;  // the Lease holder; default: the node name
  std::chrono::milliseconds lease_renew{5000};
  std::chrono::seconds lease_duration{15};
  std::chrono::milliseconds rediscover{60'000};
  std::chrono::milliseconds node_retry{2000};  // after an error worth retrying
  Clock* clock = &RealClock();                 // Run's timers and naps; tests pass a FakeClock

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
  uint64_t errors = 0;           // failed renewals and publishes, each time
  uint64_t terminal_errors = 0;  // inventories the API server refused, each once
};

// What the publish loop does after an attempt that ended with `result` (pure).
struct PublishStep {
  std::chrono::milliseconds wait;  // until the next attempt, unless woken first
  bool terminal = false;           // refused for itself: not sent again until it changes
};
PublishStep NextPublishStep(const Status& result, const PublisherOptions& options);

// What the publisher reads and writes, per kind (tests hand it fakes).
struct PublisherApi {
  std::shared_ptr<api::client::ObjectReader<api::core::Node>> nodes;
  std::shared_ptr<api::client::Objects<api::NodeInventory>> inventories;
  std::shared_ptr<api::client::Objects<api::core::Lease>> leases;
  std::shared_ptr<api::client::EventRecorder> events;
};
// The real API through `client` (which must outlive what it returns).
PublisherApi PublisherApiOver(api::client::Client* client);

class InventoryPublisher {
 public:
  using DiscoverFn = std::function<StatusOr<api::NodeInventory>()>;

  // `client` must outlive the publisher.
  InventoryPublisher(api::client::Client* client, PublisherOptions options, DiscoverFn discover);
  InventoryPublisher(PublisherApi api, PublisherOptions options, DiscoverFn discover);

  // Discovers and writes the inventory if it changed: true when it wrote. kNotFound when the
  // Node does not exist; API errors as the client reports them (a 409 is retried once after a
  // re-read). An inventory equal to one the server refused with a terminal error is not sent:
  // that error again.
  StatusOr<bool> PublishOnce();
  // Creates or renews the Lease.
  Status RenewLease();
  // Renews the Lease every lease_renew and publishes every rediscover (and at once), until
  // `stop`, on options.clock; errors are counted, logged to `log` and retried as NextPublishStep
  // says (a terminal one is logged once, with a Warning Event). `wake` (may be null) is polled so
  // a caller can ask for an early rediscovery (a device change it saw).
  void Run(const StopFlag& stop, std::atomic<bool>* wake = nullptr,
           const std::function<void(const std::string&)>& log = nullptr);

  PublisherStats stats() const;

 private:
  StatusOr<std::string> NodeUid();
  StatusOr<bool> Write(const api::NodeInventory& inventory, const std::string& uid);
  // Logs, counts and (when new and terminal) records an Event for a failed attempt.
  void Report(const Status& status, bool terminal,
              const std::function<void(const std::string&)>& log);

  const PublisherApi api_;
  const PublisherOptions options_;
  const DiscoverFn discover_;
  mutable Mutex mu_;
  PublisherStats stats_ GUARDED_BY(mu_);
  // The last inventory refused with a terminal error (its JSON), and the error.
  std::string refused_ GUARDED_BY(mu_);
  Status refused_status_ GUARDED_BY(mu_);
  std::string last_reported_;  // Run's thread only: the terminal error last reported
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PUBLISHER_PUBLISHER_H_
