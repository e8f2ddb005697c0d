// NVIDIA XID events watched continuously (docs/reference/hardware.md §2.6). Discovery's probe only
// sees the XIDs that arrive while it runs (NVML keeps no history); the plugin's health watcher
// keeps NVML initialised, waits on an event set for critical XIDs and marks a device unhealthy the
// moment one arrives. The same drain code serves the probe, the telemetry counter and this watcher
// (nvml.cc), so the three never disagree on which events count.
#ifndef XPU_KUBELETPLUGIN_DISCOVERY_XID_EVENTS_H_
#define XPU_KUBELETPLUGIN_DISCOVERY_XID_EVENTS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {

// XIDs that NVIDIA's device plugin treats as application errors, not device faults
// (13, 31, 43, 45, 68, 109): a bad kernel or a killed context says nothing about the GPU.
bool IsApplicationXid(uint64_t xid);
// A short description of the well-known fatal XIDs ("GPU has fallen off the bus" for 79), for
// messages; "" for the others.
std::string_view XidDescription(uint64_t xid);

struct XidEvent {
  std::string pci_address;  // the GPU's, sysfs form "0000:13:00.0"
  uint64_t xid = 0;
};

// One NVML kept initialised with an event set registered for every GPU's critical XIDs.
// Thread-compatible: one watcher thread calls everything.
class XidEventSource {
 public:
  virtual ~XidEventSource() = default;
  // How opening went; `loaded` false means Wait() returns nothing at once.
  virtual const LibraryStatus& status() const = 0;
  // The GPUs whose events are watched (registration is not supported on every board).
  virtual size_t watched() const = 0;
  // Waits up to `timeout` for the first event, then takes whatever else is queued: the fatal
  // XIDs (application XIDs are left out). Empty on a timeout. An error when the wait itself
  // failed (the events taken before it are lost with it, which a fatal XID's GPU shows anyway):
  // such a library may answer at once, so the caller naps before asking again.
  virtual StatusOr<std::vector<XidEvent>> Wait(std::chrono::milliseconds timeout) = 0;
  // Whether the GPU at `pci_address` is usable again: found on the bus by a fresh handle lookup
  // (a GPU that fell off the bus answers GPU_IS_LOST there), and its UUID and memory information
  // answer. kUnavailable naming the failing call otherwise. A GPU found again is registered for
  // events again if its handle changed.
  virtual Status Check(const std::string& pci_address) = 0;
};

// Loads libnvidia-ml.so.1 from `lib_dirs` (then the default path), initialises it and registers
// every GPU for critical XID events. Never null; see status().
std::unique_ptr<XidEventSource> OpenNvmlXidEvents(const std::vector<std::string>& lib_dirs);

}  // namespace xpu::discovery

#endif  // XPU_KUBELETPLUGIN_DISCOVERY_XID_EVENTS_H_
