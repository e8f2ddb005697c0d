// The parts of xpu-dra-plugin and its loops, which Run (plugin.h) wires together: discovery and
// the latest inventory (with the XID faults, the node checklist and the partition pins laid over
// it), the driver, the inventory publisher, the metrics endpoint, the kubelet's sockets, and the
// loops that keep them current, each a method that runs on the clock it is given:
//
//   NodePlugin plugin(options, stop, log);
//   if (int code = plugin.Start(); code != 0) return code;
//   std::thread health([&] { plugin.HealthLoop(RealClock()); });   // and the other loops
//   plugin.PublishLoop();                                           // until `stop`
//   plugin.Finish();                                                // the loops return
//   health.join();
//   plugin.Stop();
//
// A loop returns once `stop` is set or Finish() is called; it naps on its clock, so a test drives
// it on a FakeClock (base/clock.h), whose Sleep moves time at once.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_NODE_PLUGIN_H_
#define XPU_KUBELETPLUGIN_PLUGIN_NODE_PLUGIN_H_

#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/clock.h"
#include "base/heap.h"
#include "base/log.h"
#include "base/metrics/metrics.h"
#include "base/status.h"
#include "base/stop.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/discovery/xid_events.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/health_monitor.h"
#include "kubeletplugin/plugin/claim_energy.h"
#include "kubeletplugin/plugin/claim_status_writer.h"
#include "kubeletplugin/plugin/device_metrics.h"
#include "kubeletplugin/plugin/metrics.h"
#include "kubeletplugin/plugin/plugin.h"
#include "kubeletplugin/plugin/xid_health.h"
#include "kubeletplugin/publisher/publisher.h"

namespace xpu::api::client {
class Client;
}  // namespace xpu::api::client
namespace xpu::metrics {
class HttpServer;
}  // namespace xpu::metrics

namespace xpu::plugin {

class KubeletServer;

class NodePlugin {
 public:
  // Makes the parts that need neither the API server nor the host. `options` are valid
  // (PluginOptions::Validate); `stop` and `log` outlive the plugin. `clock` times the XID
  // recoveries' settle period, the publisher's timers and the conditions' timestamps.
  NodePlugin(PluginOptions options, const StopFlag& stop, std::ostream& log,
             Clock& clock = RealClock());
  ~NodePlugin();
  NodePlugin(const NodePlugin&) = delete;
  NodePlugin& operator=(const NodePlugin&) = delete;

  // Connects to the API server, discovers, starts the driver (its checkpoint reconciled before
  // anything is served), the metrics endpoint and the kubelet's sockets (DRA, then
  // registration). 0, or the exit code for Run: 1 no API server, endpoint or socket; 2 invalid
  // options; 3 a checkpoint that must be repaired.
  int Start();

  // The loops need a successful Start (the telemetry loop does not).
  //
  // Health: discovers every --health-interval (and when device nodes change under <host-root>/dev),
  // collects claims deleted from the API every --claim-gc (at once first), keeps the registered
  // gauge, and trims the heap after the start and after each burst of kubelet calls (heap.h).
  // Naps of 100 ms.
  void HealthLoop(Clock& clock);
  // Device telemetry for /metrics every --telemetry-interval (at once first; none when zero),
  // and at least once a second while a claim is held, each sample fed to the claims' energy
  // accounts; its errors are logged when they change. Apart from the health loop, so that a slow
  // vendor library delays neither.
  void TelemetryLoop(Clock& clock);
  // Energy per claim into the claims' status.devices, when due (claim_energy.h: every
  // --claim-status-interval while held, and the final write queued by unprepare, which so never
  // waits on the API). On Finish, the final writes due are tried once more. Naps of 200 ms.
  void ClaimStatusLoop(Clock& clock);
  // XIDs: NVML's event set waited on continuously, so that a fatal XID makes its GPU unhealthy at
  // once, and faulted GPUs checked every --health-interval until they recover; a change is
  // published at once.
  void XidLoop(Clock& clock);
  // The node checklist (xpuctl doctor), at once and then every --node-checklist-interval (unless
  // --node-checklist=false): its condition published with the inventory when it changes (its
  // lastTransitionTime moves only with its status), its failures and warnings logged when they
  // change.
  void ChecklistLoop(Clock& clock);
  // The inventory and the Lease (InventoryPublisher::Run), on the calling thread until `stop`.
  void PublishLoop();
  // Makes the loops return (promptly: none naps longer than a second).
  void Finish();
  // Stops the kubelet's sockets and the endpoint, once the loops have returned (after a
  // successful Start).
  void Stop();

  // The /metrics text: the plugin's metrics, then the device telemetry of the last sample.
  std::string RenderMetrics();

 private:
  class ChecklistHolder;
  class InventoryHolder;
  class DevWatcher;
  struct XidWatch;

  // Start's steps, in this order, each 0 or the exit code.
  int Connect();
  int DiscoverFirst();
  int StartDriver();
  void AddPartitionBackends();
  int StartPublisher();
  int Serve();

  // One discovery: kept, overlaid and published to the health stream.
  StatusOr<api::NodeInventory> DiscoverNow();
  // The health stream brought up to date with `published`; a change wakes the publisher.
  void UpdateHealth(const api::NodeInventory& published);
  // One run of the node checklist; `logged` holds the last run's logged lines.
  void RunChecklist(Clock& clock, std::vector<std::string>* logged);
  // Energy per claim: the accounts of the claims in the checkpoint (a restart), the service
  // that starts and ends them, one status write.
  void StartEnergy();
  void WriteClaimStatus(const ClaimEnergy& account);
  // The overlay on every inventory: partition pins, fallback, the checklist, the XID faults.
  void OverlayOn(api::NodeInventory* inventory);
  // The XID loop's steps: the event source (re)opened when due; the events of one wait and the
  // checks of faulted GPUs applied. True when what the inventory shows changed.
  void OpenXidSource(Clock& clock, XidWatch* watch);
  bool OnXidEvents(const api::NodeInventory* inventory,
                   const std::vector<discovery::XidEvent>& events);
  bool CheckFaulted(const api::NodeInventory* inventory, const XidWatch& watch);
  bool Stopping() const { return stop_.IsSet() || done_.IsSet(); }

  const PluginOptions options_;
  const StopFlag& stop_;
  Clock& clock_;
  Logger log_;
  metrics::Registry registry_;
  PluginMetrics m_;
  std::unique_ptr<api::client::Client> client_;
  // The claims' energy writes (ClaimStatusLoop): a client of their own, with its own rate
  // limit, so that background writes never hold a kubelet call's claim GET in the limiter.
  std::unique_ptr<api::client::Client> status_client_;
  // No --vendor-lib-dir: the libraries the host's driver installed, under the host root.
  const std::vector<std::string> vendor_lib_dirs_;
  discovery::DiscoveryOptions discover_;
  // The node checklist's condition, once its run finished; rides on every later inventory.
  const std::unique_ptr<ChecklistHolder> checklist_;
  // Fatal XIDs seen between probes, and their verified recoveries (XidLoop).
  XidHealth xid_health_;
  // The driver, once made, pins the instance numbers of the partitions it recorded.
  std::atomic<const Driver*> pins_{nullptr};
  // The fallback layout, read once: made at start, named in every published inventory.
  std::vector<PartitionLayoutEntry> layout_;
  const std::unique_ptr<InventoryHolder> inventory_;
  HealthMonitor health_;
  std::atomic<bool> wake_{false};  // the publisher's: publish now
  DriverOptions driver_options_;
  std::unique_ptr<Driver> driver_;
  // Energy per claim: the accounts, started and ended by energy_service_ around the driver.
  ClaimEnergyLedger energy_;
  std::unique_ptr<EnergyAccountingService> energy_service_;
  std::unique_ptr<ClaimStatusApi> status_api_;
  std::unique_ptr<ClaimStatusWriter> status_writer_;
  // The kubelet's calls free what they allocated; the pages go back once a burst is over.
  HeapTrimmer trimmer_;
  std::unique_ptr<InstrumentedService> service_;
  std::unique_ptr<InventoryPublisher> publisher_;
  std::atomic<bool> serving_{false};
  // Sampled by TelemetryLoop; the scrape appends the last rendering.
  DeviceTelemetrySampler telemetry_;
  std::unique_ptr<metrics::HttpServer> http_;
  std::unique_ptr<KubeletServer> server_;
  std::string dev_;  // <host-root>/dev
  std::unique_ptr<DevWatcher> watcher_;
  StopFlag done_;
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_NODE_PLUGIN_H_
