// Every metric of xpu-dra-controller, in one place (served on --metrics-addr at /metrics).
//
//   xpu_dra_controller_slices_published               ResourceSlices of the driver in the cluster
//   xpu_dra_controller_pools_published                nodes whose whole pool this controller wrote
//   xpu_dra_controller_slice_writes_total{verb,result} create/update/delete of slices;
//                                                     result ok, conflict, not_found, exists,
//                                                     error (pool_sync.h WriteResult)
//   xpu_dra_controller_class_writes_total{verb,result} the same for DeviceClasses
//   xpu_dra_controller_reconcile_seconds{kind,result} one sync of a pool or of the classes
//   xpu_dra_controller_queue_depth                    keys ready in the work queue
//   xpu_dra_controller_queue_delayed                  keys waiting for a retry or a timer
//   xpu_dra_controller_nodes{state}                   live (fresh plugin Lease) / stale nodes
//   xpu_dra_controller_devices_tainted{taint}         published devices carrying each taint
//   xpu_dra_controller_leader                         1 while this replica is the leader
//   xpu_dra_controller_config_reloads_total{result}   config file loads; result ok or error
//   xpu_dra_controller_config_valid                   0 while the file in place is rejected
//   xpu_dra_controller_fallbacks_total{field}         fields the server dropped (taints, counters)
//   xpu_dra_controller_api_requests_total{verb,code}  Kubernetes API attempts (code 0: no answer)
//   xpu_dra_controller_gangs{phase}                   AcceleratorGangs by phase
//   xpu_dra_controller_node_group_drift{group}        live nodes of a node group whose slices
//                                                     differ from the group's template
//   xpu_dra_controller_gang_writes_total{result}      writes for gangs (status, slice, claim,
//                                                     template), by the sync's result
#ifndef XPU_CONTROLLER_METRICS_H_
#define XPU_CONTROLLER_METRICS_H_

#include "base/metrics/metrics.h"

namespace xpu::controller {

struct ControllerMetrics {
  explicit ControllerMetrics(metrics::Registry& registry);

  metrics::Gauge& slices_published;
  metrics::Gauge& pools_published;
  metrics::Counter& slice_writes;
  metrics::Counter& class_writes;
  metrics::Histogram& reconcile_seconds;
  metrics::Gauge& queue_depth;
  metrics::Gauge& queue_delayed;
  metrics::Gauge& nodes;
  metrics::Gauge& devices_tainted;
  metrics::Gauge& leader;
  metrics::Counter& config_reloads;
  metrics::Gauge& config_valid;
  metrics::Counter& fallbacks;
  metrics::Counter& api_requests;
  metrics::Counter& terminal_errors;
  metrics::Gauge& gangs;
  metrics::Gauge& node_group_drift;
  metrics::Counter& gang_writes;
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_METRICS_H_
