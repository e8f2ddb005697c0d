#include "controller/metrics.h"

namespace xpu::controller {

ControllerMetrics::ControllerMetrics(metrics::Registry& r)
    : slices_published(r.AddGauge("xpu_dra_controller_slices_published",
                                  "ResourceSlices of the driver in the cluster.")),
      pools_published(r.AddGauge(
          "xpu_dra_controller_pools_published",
          "Nodes whose pool this controller has written whole (every slice of it), for the "
          "node's current inventory or an earlier one.")),
      slice_writes(r.AddCounter("xpu_dra_controller_slice_writes_total",
                                "ResourceSlice writes by verb and result.", {"verb", "result"})),
      class_writes(r.AddCounter("xpu_dra_controller_class_writes_total",
                                "DeviceClass writes by verb and result.", {"verb", "result"})),
      reconcile_seconds(r.AddHistogram("xpu_dra_controller_reconcile_seconds",
                                       "Duration of one sync of a pool or of the DeviceClasses.",
                                       {"kind", "result"}, metrics::LatencyBuckets())),
      queue_depth(r.AddGauge("xpu_dra_controller_queue_depth", "Keys ready in the work queue.")),
      queue_delayed(r.AddGauge("xpu_dra_controller_queue_delayed",
                               "Keys waiting in the work queue for a retry or a timer.")),
      nodes(r.AddGauge("xpu_dra_controller_nodes",
                       "Nodes with an inventory, by plugin liveness (live or stale).", {"state"})),
      devices_tainted(r.AddGauge("xpu_dra_controller_devices_tainted",
                                 "Published devices carrying each taint.", {"taint"})),
      leader(r.AddGauge("xpu_dra_controller_leader", "1 while this replica is the leader.")),
      config_reloads(r.AddCounter("xpu_dra_controller_config_reloads_total",
                                  "Config file loads by result.", {"result"})),
      config_valid(r.AddGauge("xpu_dra_controller_config_valid",
                              "1 when the config in force is the file in place, 0 while that "
                              "file is rejected.")),
      fallbacks(r.AddCounter("xpu_dra_controller_fallbacks_total",
                             "Fields the API server dropped (a feature gate is off), after which "
                             "the controller publishes without them.",
                             {"field"})),
      api_requests(r.AddCounter("xpu_dra_controller_api_requests_total",
                                "Kubernetes API request attempts by verb and HTTP status code "
                                "(0: no answer).",
                                {"verb", "code"})),
      terminal_errors(r.AddCounter("xpu_dra_controller_sync_terminal_errors_total",
                                   "Syncs that failed with an error retrying cannot fix (a 4xx "
                                   "other than 409 and 429), counted once per key and error; the "
                                   "key is not requeued.",
                                   {"kind", "code"})),
      gangs(r.AddGauge("xpu_dra_controller_gangs", "AcceleratorGangs by phase.", {"phase"})),
      node_group_drift(r.AddGauge("xpu_dra_controller_node_group_drift",
                                  "Live nodes whose slices differ from their group's template.",
                                  {"group"})),
      gang_writes(r.AddCounter("xpu_dra_controller_gang_writes_total",
                               "Writes made for AcceleratorGangs (status, slice, claim, template), "
                               "by the result of their sync.",
                               {"result"})) {}

}  // namespace xpu::controller
