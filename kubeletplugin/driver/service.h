// The seam between the kubelet-facing gRPC edge (kubeletplugin/grpc/) and the driver: plain
// domain types and two interfaces, no protobuf. The edge translates the kubelet's messages to
// these and back in one place; the driver (kubeletplugin/driver/) implements them; tests of the
// edge use fakes.
#ifndef XPU_KUBELETPLUGIN_DRIVER_SERVICE_H_
#define XPU_KUBELETPLUGIN_DRIVER_SERVICE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace xpu::plugin {

// A claim as the kubelet names it in NodePrepareResources / NodeUnprepareResources.
struct ClaimRef {
  std::string ns;
  std::string name;
  std::string uid;
  friend bool operator==(const ClaimRef&, const ClaimRef&) = default;
};

// One prepared device of a claim, as the kubelet wants it back.
struct PreparedDevice {
  std::vector<std::string> request_names;  // base request names (subrequest suffix stripped)
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;  // "k8s.xpu.dra.dev/device=<claim-uid>-<device>"
  std::string share_id;                     // v1 only; empty when the device is not shared
  friend bool operator==(const PreparedDevice&, const PreparedDevice&) = default;
};

struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  // non-empty: this claim failed, devices are ignored
  friend bool operator==(const PrepareResult&, const PrepareResult&) = default;
};

struct UnprepareResult {
  std::string error;
  friend bool operator==(const UnprepareResult&, const UnprepareResult&) = default;
};

// The deadline the kubelet gives each NodePrepareResources / NodeUnprepareResources call. The
// gRPC edge assumes it for a caller that sets none, so no call runs unbounded.
inline constexpr std::chrono::seconds kKubeletCallTimeout{45};

// What bounds one call: the caller's deadline (the kubelet gives each call 45 s) and whether the
// caller went away. Work is only started while the call is live; the claims it leaves answer
// with a retryable error, so the kubelet gets an answer in time and asks again for the rest.
struct CallBounds {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::time_point::max();
  std::function<bool()> cancelled;  // empty: never cancelled

  bool Cancelled() const { return cancelled && cancelled(); }
  // False once the caller went away or less than `reserve` is left before the deadline.
  bool Live(Clock::duration reserve = Clock::duration::zero(),
            Clock::time_point now = Clock::now()) const {
    if (Cancelled()) return false;
    return deadline == Clock::time_point::max() || now + reserve < deadline;
  }
};

// Prepare and unprepare a batch. Every uid of the batch is a key of the answer (a claim that
// fails has its error there); an error of the whole call is reserved for a broken plugin.
class NodeService {
 public:
  virtual ~NodeService() = default;
  virtual std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims,
                                                       const CallBounds& bounds) = 0;
  virtual std::map<std::string, UnprepareResult> Unprepare(const std::vector<ClaimRef>& claims,
                                                           const CallBounds& bounds) = 0;
};

// A NodeService that adds something around another's calls (metrics, energy accounting). The
// inner service outlives it.
class NodeServiceDecorator : public NodeService {
 protected:
  explicit NodeServiceDecorator(NodeService* inner) : inner_(inner) {}
  NodeService& inner() const { return *inner_; }

 private:
  NodeService* const inner_;
};

enum class HealthState { kUnknown = 0, kHealthy = 1, kUnhealthy = 2 };  // the wire enum's values

struct DeviceHealth {
  std::string pool;
  std::string device;
  HealthState health = HealthState::kUnknown;
  int64_t last_updated_unix = 0;  // seconds
  std::string message;            // why, for an unhealthy device; at most 1024 bytes on the wire
  friend bool operator==(const DeviceHealth&, const DeviceHealth&) = default;
};

// The health of every device of the driver on this node. The edge sends Snapshot() on each
// health stream at once, again whenever the generation changes, and at least every resend period.
class HealthSource {
 public:
  virtual ~HealthSource() = default;
  // The complete device list and its generation (increases on every change).
  virtual std::vector<DeviceHealth> Snapshot(uint64_t* generation) = 0;
  // Blocks until the generation differs from `seen` or `deadline` passes; returns the current one.
  virtual uint64_t WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline) = 0;
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_DRIVER_SERVICE_H_
