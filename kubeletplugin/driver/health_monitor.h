// Device health of this node for the kubelet's health stream (HealthSource, service.h), from the
// inventory that discovery produces: the plugin calls Update() after each discovery (and after
// each overlay change, such as a fatal XID); a change bumps the generation and wakes the watchers
// (the gRPC health stream in kubeletplugin/grpc/).
#ifndef XPU_KUBELETPLUGIN_DRIVER_HEALTH_MONITOR_H_
#define XPU_KUBELETPLUGIN_DRIVER_HEALTH_MONITOR_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/mutex.h"
#include "kubeletplugin/driver/service.h"

namespace xpu::plugin {

// Thread-safe: Update on the discovering thread, Snapshot and WaitForChange on the streams'.
class HealthMonitor : public HealthSource {
 public:
  // `pool`: the pool of this node's devices (the node name).
  explicit HealthMonitor(std::string pool);

  // Replaces the health with the inventory's devices: a device is Healthy, Unhealthy or Unknown
  // as discovery reported it, and an unhealthy one says why (the inventory's False conditions
  // name it: "npu-3: ..."). True when any device's health changed (or devices came or went).
  bool Update(const api::NodeInventory& inventory,
              std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

  // Every device's health, by name; `generation` (if given) gets the current generation.
  std::vector<DeviceHealth> Snapshot(uint64_t* generation) override;
  // Waits until the generation is not `seen`, or `deadline`; returns the generation.
  uint64_t WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline) override;

 private:
  const std::string pool_;
  Mutex mu_;
  CondVar changed_;
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  std::map<std::string, DeviceHealth> health_ GUARDED_BY(mu_);  // by device name
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_HEALTH_MONITOR_H_
