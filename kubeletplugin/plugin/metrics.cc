#include "kubeletplugin/plugin/metrics.h"

#include <functional>

namespace xpu::plugin {

PluginMetrics::PluginMetrics(metrics::Registry& r)
    : prepare_claims(r.AddCounter("xpu_dra_plugin_prepare_claims_total",
                                  "Claims answered by NodePrepareResources.", {"result"})),
      prepare_seconds(r.AddHistogram("xpu_dra_plugin_prepare_seconds",
                                     "Duration of one NodePrepareResources call.", {"result"},
                                     metrics::LatencyBuckets())),
      unprepare_claims(r.AddCounter("xpu_dra_plugin_unprepare_claims_total",
                                    "Claims answered by NodeUnprepareResources.", {"result"})),
      unprepare_seconds(r.AddHistogram("xpu_dra_plugin_unprepare_seconds",
                                       "Duration of one NodeUnprepareResources call.", {"result"},
                                       metrics::LatencyBuckets())),
      prepared_claims(
          r.AddGauge("xpu_dra_plugin_prepared_claims", "Claims recorded in the checkpoint.")),
      prepared_devices(r.AddGauge("xpu_dra_plugin_prepared_devices",
                                  "Devices of the claims recorded in the checkpoint.")),
      checkpoint_writes(
          r.AddCounter("xpu_dra_plugin_checkpoint_writes_total", "Checkpoint files written.")),
      partitions(r.AddCounter("xpu_dra_plugin_partitions_total",
                              "Partitions created and destroyed, and vendor calls that failed.",
                              {"event"})),
      discovery_seconds(r.AddHistogram("xpu_dra_plugin_discovery_seconds",
                                       "Duration of one hardware discovery.", {},
                                       metrics::LatencyBuckets())),
      discovery_errors(r.AddCounter("xpu_dra_plugin_discovery_errors_total",
                                    "Hardware discoveries that failed.")),
      telemetry_seconds(r.AddHistogram("xpu_dra_plugin_telemetry_sample_seconds",
                                       "Duration of one device telemetry sample (every device).",
                                       {}, metrics::LatencyBuckets())),
      checklist_seconds(r.AddHistogram("xpu_dra_plugin_node_checklist_seconds",
                                       "Duration of one run of the node checklist.", {},
                                       metrics::LatencyBuckets())),
      device_health(r.AddGauge("xpu_dra_plugin_device_health",
                               "1 for the current health state of each device.",
                               {"device", "state"})),
      api_requests(r.AddCounter("xpu_dra_plugin_api_requests_total",
                                "Kubernetes API request attempts by verb and HTTP status code "
                                "(0: no answer).",
                                {"verb", "code"})),
      registered(r.AddGauge("xpu_dra_plugin_registered",
                            "1 once the kubelet confirmed the plugin's registration.")),
      publish_errors(r.AddCounter("xpu_dra_plugin_publish_errors_total",
                                  "Failed Lease renewals and inventory publishes (kind=error, each "
                                  "time), and inventories the API server refused (kind=terminal, "
                                  "each once).",
                                  {"kind"})),
      xid_watched(r.AddGauge("xpu_dra_plugin_xid_watched_devices",
                             "NVIDIA GPUs whose critical XID events the health watcher waits on.")),
      xid_fatal(r.AddCounter("xpu_dra_plugin_xid_fatal_events_total",
                             "Fatal XID events seen by the health watcher, by XID.", {"xid"})),
      device_recoveries(r.AddCounter("xpu_dra_plugin_device_recoveries_total",
                                     "Devices made healthy again after a verified recovery from "
                                     "a fatal XID.")),
      fallbacks(r.AddCounter("xpu_dra_plugin_fallbacks_total",
                             "Writes of a field the API server refused or dropped, after which "
                             "the plugin does without it (status.devices: energy per claim in "
                             "the metrics only).",
                             {"field", "reason"})),
      claim_status_writes(r.AddCounter("xpu_dra_plugin_claim_status_writes_total",
                                       "Writes of energy per claim into ResourceClaim "
                                       "status.devices, by result (ok, retry, fallback).",
                                       {"result"})),
      claim_energy_joules(r.AddGauge("xpu_dra_claim_energy_joules",
                                     "Energy of a claim's device since prepare.",
                                     {"namespace", "claim", "device"})),
      claim_average_watts(r.AddGauge("xpu_dra_claim_power_average_watts",
                                     "Average power of a claim's device: joules / seconds held.",
                                     {"namespace", "claim", "device"})),
      claim_peak_watts(r.AddGauge("xpu_dra_claim_power_peak_watts",
                                  "The largest power read of a claim's device while held.",
                                  {"namespace", "claim", "device"})),
      claim_held_seconds(r.AddGauge("xpu_dra_claim_held_seconds",
                                    "Seconds a claim's device was held (prepare to unprepare).",
                                    {"namespace", "claim", "device"})) {}

void PluginMetrics::Collect(const DriverStats& stats) {
  prepared_claims.Set(static_cast<double>(stats.prepared_claims));
  prepared_devices.Set(static_cast<double>(stats.prepared_devices));
  MutexLock lock(mu_);
  if (stats.checkpoint_writes > checkpoint_writes_seen_) {
    checkpoint_writes.Inc({},
                          static_cast<double>(stats.checkpoint_writes - checkpoint_writes_seen_));
    checkpoint_writes_seen_ = stats.checkpoint_writes;
  }
  auto advance = [this](const char* event, uint64_t now, uint64_t& seen) REQUIRES(mu_) {
    if (now > seen) partitions.Inc({event}, static_cast<double>(now - seen));
    seen = now;
  };
  advance("created", stats.partitions_created, partitions_created_seen_);
  advance("destroyed", stats.partitions_destroyed, partitions_destroyed_seen_);
  advance("error", stats.partition_errors, partition_errors_seen_);
}

void PluginMetrics::Collect(const PublisherStats& stats) {
  MutexLock lock(mu_);
  if (stats.errors > publish_errors_seen_) {
    publish_errors.Inc({"error"}, static_cast<double>(stats.errors - publish_errors_seen_));
    publish_errors_seen_ = stats.errors;
  }
  if (stats.terminal_errors > terminal_errors_seen_) {
    publish_errors.Inc({"terminal"},
                       static_cast<double>(stats.terminal_errors - terminal_errors_seen_));
    terminal_errors_seen_ = stats.terminal_errors;
  }
}

void PluginMetrics::SetHealth(const std::vector<DeviceHealth>& health) {
  device_health.Clear();
  for (const DeviceHealth& h : health) {
    const char* state = h.health == HealthState::kHealthy     ? "healthy"
                        : h.health == HealthState::kUnhealthy ? "unhealthy"
                                                              : "unknown";
    device_health.Set({h.device, state}, 1);
  }
}

void PluginMetrics::SetClaimEnergy(const std::vector<ClaimEnergy>& accounts) {
  for (metrics::Gauge* g :
       {&claim_energy_joules, &claim_average_watts, &claim_peak_watts, &claim_held_seconds}) {
    g->Clear();
  }
  for (const ClaimEnergy& a : accounts) {
    for (const DeviceEnergy& d : a.devices) {
      const std::vector<std::string> labels = {a.ns, a.name, d.device};
      claim_energy_joules.Set(labels, d.joules);
      claim_average_watts.Set(labels, d.average_watts);
      claim_peak_watts.Set(labels, d.peak_watts);
      claim_held_seconds.Set(labels, d.seconds_held);
    }
  }
}

namespace {

// Tells the heap trimmer that a kubelet call runs, for its scope.
class TrimAfter {
 public:
  explicit TrimAfter(HeapTrimmer* trimmer) : trimmer_(trimmer) {
    if (trimmer_ != nullptr) trimmer_->CallStarted();
  }
  ~TrimAfter() {
    if (trimmer_ != nullptr) trimmer_->CallEnded();
  }
  TrimAfter(const TrimAfter&) = delete;
  TrimAfter& operator=(const TrimAfter&) = delete;

 private:
  HeapTrimmer* const trimmer_;
};

// Times one call (labelled "error" when any claim failed) and counts its claims by result.
template <typename Result>
std::map<std::string, Result> Measured(metrics::Histogram& seconds, metrics::Counter& claims,
                                       const std::function<std::map<std::string, Result>()>& call) {
  metrics::ScopeTimer timer(seconds, {"ok"});
  auto out = call();
  for (const auto& [uid, r] : out) {
    claims.Inc({r.error.empty() ? "ok" : "error"});
    if (!r.error.empty()) timer.SetLabels({"error"});
  }
  return out;
}

}  // namespace

std::map<std::string, PrepareResult> InstrumentedService::Prepare(
    const std::vector<ClaimRef>& claims, const CallBounds& bounds) {
  const TrimAfter call(trimmer_);
  return Measured<PrepareResult>(metrics_->prepare_seconds, metrics_->prepare_claims,
                                 [&] { return inner().Prepare(claims, bounds); });
}

std::map<std::string, UnprepareResult> InstrumentedService::Unprepare(
    const std::vector<ClaimRef>& claims, const CallBounds& bounds) {
  const TrimAfter call(trimmer_);
  return Measured<UnprepareResult>(metrics_->unprepare_seconds, metrics_->unprepare_claims,
                                   [&] { return inner().Unprepare(claims, bounds); });
}

}  // namespace xpu::plugin
