// A stand-in for the kubelet's side of the DRA plugin protocols, for tests: it registers a plugin
// the way the kubelet's plugin watcher does, calls NodePrepareResources / NodeUnprepareResources
// over v1 or v1beta1 with the kubelet's deadline, and reads the health stream. It speaks the wire
// (proto/) and returns plain structs, so tests need no protobuf.
#ifndef XPU_E2E_KUBELET_KUBELET_STAND_IN_H_
#define XPU_E2E_KUBELET_KUBELET_STAND_IN_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace xpu::e2e {

struct PluginInfo {
  std::string type;
  std::string name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
};

struct KubeletClaim {
  std::string ns;
  std::string name;
  std::string uid;
};

struct KubeletDevice {
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
  std::optional<std::string> share_id;  // v1 only; unset when the plugin did not send it
  friend bool operator==(const KubeletDevice&, const KubeletDevice&) = default;
};

struct KubeletPrepareResult {
  std::vector<KubeletDevice> devices;
  std::string error;
};

enum class KubeletHealth { kUnknown = 0, kHealthy = 1, kUnhealthy = 2 };

struct KubeletDeviceHealth {
  std::string pool_name;
  std::string device_name;
  KubeletHealth health = KubeletHealth::kUnknown;
  int64_t last_updated_time = 0;
  std::string message;
};

// One message of the health stream and when it arrived.
struct KubeletHealthMessage {
  std::vector<KubeletDeviceHealth> devices;
  std::chrono::steady_clock::time_point received;
};

// By default each call dials the socket afresh and the stand-in holds no state; with
// Connections::kKeep the DRA calls reuse one connection per socket, as the kubelet does (for
// measuring a plugin's own latency). Thread-safe.
class KubeletStandIn {
 public:
  enum class Connections { kFresh, kKeep };
  explicit KubeletStandIn(Connections connections = Connections::kFresh);

  // The kubelet's deadlines.
  static constexpr std::chrono::milliseconds kGetInfoTimeout{1000};
  static constexpr std::chrono::milliseconds kNotifyTimeout{5000};
  static constexpr std::chrono::milliseconds kCallTimeout{45'000};

  // GetInfo with the kubelet's 1 s deadline, then what the kubelet checks before it registers a
  // DRA plugin (type "DRAPlugin", a name, a supported DRA version), then
  // NotifyRegistrationStatus: true on success, false with the reason otherwise (and the reason is
  // returned as an error).
  StatusOr<PluginInfo> Register(const std::string& registration_socket);
  StatusOr<PluginInfo> GetInfo(const std::string& registration_socket);
  Status NotifyRegistrationStatus(const std::string& registration_socket, bool registered,
                                  const std::string& error);

  // `api` is "v1" or "v1beta1". Returns the answer keyed by claim uid; a gRPC error as a Status.
  StatusOr<std::map<std::string, KubeletPrepareResult>> Prepare(
      const std::string& dra_socket, const std::string& api,
      const std::vector<KubeletClaim>& claims);
  // The per-claim errors ("" for success), keyed by claim uid.
  StatusOr<std::map<std::string, std::string>> Unprepare(const std::string& dra_socket,
                                                         const std::string& api,
                                                         const std::vector<KubeletClaim>& claims);

  // Reads the v1alpha1 health stream for up to `duration`, or until `on_message` (optional)
  // returns false, and returns the messages read. `end` (optional) receives how the stream ended:
  // OK when the duration passed or `on_message` stopped it, else the status the plugin or the
  // transport ended it with.
  std::vector<KubeletHealthMessage> WatchHealth(
      const std::string& dra_socket, std::chrono::milliseconds duration,
      const std::function<bool(const KubeletHealthMessage&)>& on_message = nullptr,
      Status* end = nullptr);

 private:
  struct Channels;
  // The channel of a DRA socket: a new one, or the kept one.
  std::shared_ptr<::grpc::Channel> DraChannel(const std::string& socket);

  std::shared_ptr<Channels> channels_;  // null: Connections::kFresh
};

}  // namespace xpu::e2e

#endif  // XPU_E2E_KUBELET_KUBELET_STAND_IN_H_
