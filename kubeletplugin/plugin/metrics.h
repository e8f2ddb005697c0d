// Every metric of xpu-dra-plugin, in one place (served on --metrics-addr at /metrics).
//
//   xpu_dra_plugin_prepare_claims_total{result}       claims answered by NodePrepareResources
//   xpu_dra_plugin_prepare_seconds{result}            one NodePrepareResources call
//   xpu_dra_plugin_unprepare_claims_total{result}     claims answered by NodeUnprepareResources
//   xpu_dra_plugin_unprepare_seconds{result}          one NodeUnprepareResources call
//   xpu_dra_plugin_prepared_claims                    claims in the checkpoint
//   xpu_dra_plugin_prepared_devices                   devices of those claims
//   xpu_dra_plugin_checkpoint_writes_total            checkpoint files written
//   xpu_dra_plugin_partitions_total{event}            partitions created, destroyed, or a vendor
//                                                     create/destroy that failed ("error")
//   xpu_dra_plugin_discovery_seconds                  one hardware discovery
//   xpu_dra_plugin_discovery_errors_total             discoveries that failed
//   xpu_dra_plugin_telemetry_sample_seconds           one device telemetry sample (all devices)
//   xpu_dra_plugin_node_checklist_seconds             one run of the node checklist
//   xpu_dra_plugin_device_health{device,state}        1 for the device's current state
//   xpu_dra_plugin_api_requests_total{verb,code}      Kubernetes API attempts (code 0: no answer)
//   xpu_dra_plugin_registered                         1 once the kubelet confirmed registration
//   xpu_dra_plugin_publish_errors_total{kind}         failed Lease renewals and inventory
//   publishes:
//                                                     kind "error" for each failure, "terminal"
//                                                     once per inventory the API server refused
//   xpu_dra_plugin_xid_watched_devices                NVIDIA GPUs the XID watcher waits on
//   xpu_dra_plugin_xid_fatal_events_total{xid}        fatal XIDs the watcher saw
//   xpu_dra_plugin_device_recoveries_total            verified recoveries (device healthy again)
//   xpu_dra_plugin_fallbacks_total{field,reason}      writes the API server refused or dropped,
//                                                     after which the plugin does without the
//                                                     field: status.devices (energy per claim):
//                                                     dropped, forbidden, not_found, invalid
//   xpu_dra_plugin_claim_status_writes_total{result}  energy writes into claims' status.devices
//
// Energy per claim (claim_energy.h), labels namespace, claim, device; for the claims held and
// those unprepared in the last 5 minutes, whether or not status.devices carries them:
//
//   xpu_dra_claim_energy_joules              energy since prepare (since a restart: "since")
//   xpu_dra_claim_power_average_watts        joules / seconds held
//   xpu_dra_claim_power_peak_watts           the largest power read while held
//   xpu_dra_claim_held_seconds               prepare to unprepare, or to now
//
// `result` is "ok" or "error" (a call is "error" when any of its claims failed).
//
// Device telemetry (device_metrics.h); labels node, device, vendor, model, uuid on every series.
// The DCGM / npu-exporter name each one corresponds to:
//
//   xpu_dra_device_temperature_celsius       DCGM_FI_DEV_GPU_TEMP / npu_chip_info_temperature
//   xpu_dra_device_power_watts               DCGM_FI_DEV_POWER_USAGE / npu_chip_info_power
//   xpu_dra_device_energy_joules_total       DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION / 1000 (mJ
//                                            there) / none
//   xpu_dra_device_utilization_ratio         0..1: DCGM_FI_DEV_GPU_UTIL / 100,
//                                            npu_chip_info_utilization / 100
//   xpu_dra_device_memory_used_bytes         DCGM_FI_DEV_FB_USED (MiB there) /
//                                            npu_chip_info_hbm_used_memory (MB there)
//   xpu_dra_device_memory_total_bytes        FB_USED + FB_FREE + FB_RESERVED /
//                                            npu_chip_info_hbm_total_memory
//   xpu_dra_device_ecc_errors_total{kind}    corrected: DCGM_FI_DEV_ECC_SBE_VOL_TOTAL /
//                                            npu_chip_info_single_bit_error_cnt; uncorrected:
//                                            ..._DBE_VOL_TOTAL / ..._double_bit_error_cnt
//   xpu_dra_device_xid_errors_total          XID events seen (DCGM_FI_DEV_XID_ERRORS: the last)
//   xpu_dra_device_link_up{link}             nvlink<N>, hccs, roce: 1 up, 0 down
//   xpu_dra_device_link_errors_total{link,kind}  HCCS macro errors: hccs1..7, crc / retry
//                                            (npu_chip_info_link_status for roce)
#ifndef XPU_KUBELETPLUGIN_PLUGIN_METRICS_H_
#define XPU_KUBELETPLUGIN_PLUGIN_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/heap.h"
#include "base/metrics/metrics.h"
#include "base/mutex.h"
#include "kubeletplugin/driver/driver.h"
#include "kubeletplugin/driver/service.h"
#include "kubeletplugin/plugin/claim_energy.h"
#include "kubeletplugin/publisher/publisher.h"

namespace xpu::plugin {

struct PluginMetrics {
  explicit PluginMetrics(metrics::Registry& registry);

  metrics::Counter& prepare_claims;
  metrics::Histogram& prepare_seconds;
  metrics::Counter& unprepare_claims;
  metrics::Histogram& unprepare_seconds;
  metrics::Gauge& prepared_claims;
  metrics::Gauge& prepared_devices;
  metrics::Counter& checkpoint_writes;
  metrics::Counter& partitions;
  metrics::Histogram& discovery_seconds;
  metrics::Counter& discovery_errors;
  metrics::Histogram& telemetry_seconds;
  metrics::Histogram& checklist_seconds;
  metrics::Gauge& device_health;
  metrics::Counter& api_requests;
  metrics::Gauge& registered;
  metrics::Counter& publish_errors;
  metrics::Gauge& xid_watched;
  metrics::Counter& xid_fatal;
  metrics::Counter& device_recoveries;
  metrics::Counter& fallbacks;
  metrics::Counter& claim_status_writes;
  metrics::Gauge& claim_energy_joules;
  metrics::Gauge& claim_average_watts;
  metrics::Gauge& claim_peak_watts;
  metrics::Gauge& claim_held_seconds;

  // Brings the gauges and the checkpoint counter up to date with the driver's counts.
  void Collect(const DriverStats& stats);
  // Brings the publish error counters up to date with the publisher's counts.
  void Collect(const PublisherStats& stats);
  // Replaces the device health series with `health`.
  void SetHealth(const std::vector<DeviceHealth>& health);
  // Replaces the energy-per-claim series with `accounts`.
  void SetClaimEnergy(const std::vector<ClaimEnergy>& accounts);

 private:
  Mutex mu_;
  uint64_t checkpoint_writes_seen_ GUARDED_BY(mu_) = 0;
  uint64_t partitions_created_seen_ GUARDED_BY(mu_) = 0;
  uint64_t partitions_destroyed_seen_ GUARDED_BY(mu_) = 0;
  uint64_t partition_errors_seen_ GUARDED_BY(mu_) = 0;
  uint64_t publish_errors_seen_ GUARDED_BY(mu_) = 0;
  uint64_t terminal_errors_seen_ GUARDED_BY(mu_) = 0;
};

// A NodeService that times and counts the calls of another one, and tells `trimmer` (when given)
// when each starts and ends.
class InstrumentedService : public NodeServiceDecorator {
 public:
  InstrumentedService(NodeService* inner, PluginMetrics* metrics, HeapTrimmer* trimmer = nullptr)
      : NodeServiceDecorator(inner), metrics_(metrics), trimmer_(trimmer) {}
  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims,
                                               const CallBounds& bounds) override;
  std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims,
                                                   const CallBounds& bounds) override;

 private:
  PluginMetrics* const metrics_;
  HeapTrimmer* const trimmer_;
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_METRICS_H_
