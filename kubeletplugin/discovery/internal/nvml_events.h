// The XID event set the NVML users share (nvml_events.cc): the discovery probe drains what
// arrives while it runs, telemetry counts every critical XID, the health watcher blocks on it.
// Internal to kubeletplugin/discovery.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_EVENTS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_EVENTS_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "kubeletplugin/discovery/internal/nvml_api.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"

namespace xpu::discovery {

// An event set registered for critical XIDs: the one drain the discovery probe (what arrives
// while it runs), the telemetry counter (every critical XID) and the health watcher (blocking
// waits) share. Devices are registered under a caller's key (an index into its own list).
// Errors here are not device errors: event watching is best-effort on top of the rest.
class XidEventSet {
 public:
  // An empty set (every Register false) when the library lacks the event calls or the set
  // cannot be made.
  explicit XidEventSet(const NvmlApi& api);
  ~XidEventSet();
  XidEventSet(const XidEventSet&) = delete;
  XidEventSet& operator=(const XidEventSet&) = delete;

  // False when the library has no events or the board does not support them (GeForce, some
  // VMs): that device is simply not watched.
  bool Register(nvml::nvmlDevice_t handle, size_t key);

  // Calls fn(key, xid) for each critical XID queued for a registered device (application XIDs
  // included: the caller decides), waiting up to `first_wait_ms` for the first. Returns the
  // answer that ended the drain: kErrorTimeout once the queue is empty.
  template <typename Fn>
  nvml::nvmlReturn_t Drain(unsigned first_wait_ms, Fn fn) {
    if (set_ == nullptr) return nvml::kErrorTimeout;
    for (unsigned n = 0; n < kMaxEvents; ++n) {
      nvml::nvmlEventData_t event{};
      const nvml::nvmlReturn_t rc = api_.event_set_wait(set_, &event, n == 0 ? first_wait_ms : 0);
      if (rc != nvml::kSuccess) return rc;
      auto it = keys_.find(event.device);
      if (it == keys_.end() || (event.eventType & nvml::kEventTypeXidCriticalError) == 0) continue;
      fn(it->second, static_cast<uint64_t>(event.eventData));
    }
    return nvml::kSuccess;  // a library that never says "timeout": the rest waits for next time
  }

 private:
  static constexpr unsigned kMaxEvents = 4096;  // per drain, in case a library never says "timeout"

  const NvmlApi& api_;
  nvml::nvmlEventSet_t set_ = nullptr;
  std::map<nvml::nvmlDevice_t, size_t> keys_;
};

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_INTERNAL_NVML_EVENTS_H_
