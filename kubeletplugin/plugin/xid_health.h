// Device health from NVIDIA XID events, between discovery probes: the plugin's XID watcher
// (plugin.cc) feeds fatal XIDs and usability checks in, and every inventory the plugin publishes
// gets the result laid over discovery's own answer.
//
// A fatal XID makes its device Unhealthy at once. It becomes Healthy again only after a verified
// recovery: a usability check passes (NVML finds the GPU on the bus and its UUID and memory
// answer) and neither a fatal XID nor a failing check came for the settle period
// (--health-recovery-settle). Until then discovery's own "healthy" is overruled: a GPU that fell
// off the bus and came back a second ago is not handed to the next pod. Discovery can still make
// a device Unhealthy on its own (the overlay never makes one healthier than discovery says).
//
// The state machine is pure apart from its clock (base/clock.h), so it is tested on a FakeClock.
#ifndef XPU_KUBELETPLUGIN_PLUGIN_XID_HEALTH_H_
#define XPU_KUBELETPLUGIN_PLUGIN_XID_HEALTH_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/node_inventory.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"

namespace xpu::plugin {

// One device's last fault episode.
struct XidFault {
  uint64_t xid = 0;      // the last fatal XID
  Clock::WallTime at{};  // when the episode began (the first fatal XID since it was healthy)
  bool recovered = false;
  Clock::WallTime recovered_at{};
  std::string check_error =
      {};  // the last usability check's failure; "" when it passed or none ran
  // The last fatal XID or failing check: the settle period counts from here.
  Clock::SteadyTime quiet_since{};
};

// Thread-safe: the watcher thread feeds it, the discovery callers read it.
class XidHealth {
 public:
  XidHealth(const Clock& clock, std::chrono::nanoseconds settle);

  // A fatal XID on `device` (the inventory's name): unhealthy from now, and the settle period
  // starts again. True when what the inventory shows changed (a new episode or another XID).
  bool OnXid(const std::string& device, uint64_t xid) EXCLUDES(mu_);
  // What a check changed in what the inventory shows.
  enum class Checked { kUnchanged, kChanged, kRecovered };
  // The outcome of a usability check of a faulted device. A failure restarts the settle period;
  // a pass once the period is over recovers the device. kChanged when only the check's answer
  // changed. Unknown or recovered devices: kUnchanged.
  Checked OnCheck(const std::string& device, const Status& usable) EXCLUDES(mu_);

  // The devices waiting for recovery: the ones to check.
  std::vector<std::string> Faulted() const EXCLUDES(mu_);
  // Every device that had a fatal XID since the plugin started, recovered ones included.
  std::map<std::string, XidFault> Faults() const EXCLUDES(mu_);
  std::chrono::nanoseconds settle() const { return settle_; }

 private:
  const Clock& clock_;
  const std::chrono::nanoseconds settle_;
  mutable Mutex mu_;
  std::map<std::string, XidFault> faults_ GUARDED_BY(mu_);
};

// Lays `faults` over a discovered inventory: a device waiting for recovery is Unhealthy (health
// source "nvml"), the node's health and Ready count follow, and an `XidErrors` condition records
// every fault — status False (reason FatalXid) while a device waits, its message naming each
// device first ("gpu-3: XID 79 (GPU has fallen off the bus) at ...", which is what the kubelet
// health stream shows for it); True (reason Recovered) once all recovered. `now` is the
// condition's lastTransitionTime. Devices the inventory does not have are left out; no faults,
// no condition.
void ApplyXidFaults(const std::map<std::string, XidFault>& faults, std::chrono::nanoseconds settle,
                    const std::string& now, api::NodeInventory* inventory);

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_PLUGIN_XID_HEALTH_H_
