// The kubelet-facing gRPC edge of the plugin: the registration service on the kubelet's plugin
// registry socket, and DRA v1 + v1beta1 (NodePrepareResources / NodeUnprepareResources) and the
// v1 + v1alpha1 health stream (NodeWatchResources) on the plugin's DRA socket. It translates the
// wire messages to the domain types of kubeletplugin/driver/service.h and back, and calls the
// driver through NodeService / HealthSource; nothing else in the plugin sees protobuf.
//
// Start serves the DRA socket first and only then creates the registration socket, so the
// kubelet never finds a registered plugin whose endpoint is not up. Prepare and Unprepare calls
// are serialised: within the server always, and across plugin instances of a rolling update with
// an flock on <plugin_dir>/serialize.lock.
#ifndef XPU_KUBELETPLUGIN_GRPC_KUBELET_SERVER_H_
#define XPU_KUBELETPLUGIN_GRPC_KUBELET_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "kubeletplugin/driver/service.h"

namespace xpu::plugin {

struct KubeletServerOptions {
  std::string driver_name;  // required; a DNS subdomain such as "xpu.dra.dev"
  // Where the DRA socket lives; empty means /var/lib/kubelet/plugins/<driver_name>. It must be
  // exclusive to the driver and the same path inside and outside the plugin's container.
  std::string plugin_dir;
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";  // watched by the kubelet
  // Empty: one instance per node, sockets dra.sock and <driver>-reg.sock. Set (the pod UID):
  // rolling-update mode, sockets dra-<uid>.sock and <driver>-<uid>-reg.sock, and Prepare /
  // Unprepare serialised across instances with an flock on <plugin_dir>/serialize.lock.
  std::string rolling_update_uid;
  // The health stream resends the full device list at least this often (the kubelet marks a
  // device Unknown when it is not refreshed within 30 s).
  std::chrono::milliseconds health_resend{10'000};
  // Receives one line per event worth a log line; empty: lines go to stderr.
  std::function<void(const std::string&)> log;

  // InvalidArgument with the offending option, e.g. a socket path longer than 106 bytes (an
  // AF_UNIX address holds 107 and the temporary bind name is one byte longer).
  Status Validate() const;

  // The resolved paths.
  std::string PluginDir() const;
  std::string DraSocket() const;
  std::string RegistrationSocket() const;
};

// Thread-safety: Start and Stop are called from one thread; the accessors from any thread. The
// NodeService and HealthSource are called from gRPC's threads (Prepare / Unprepare never
// concurrently) and must outlive Stop().
class KubeletServer {
 public:
  explicit KubeletServer(KubeletServerOptions options);
  ~KubeletServer();  // Stop()
  KubeletServer(const KubeletServer&) = delete;
  KubeletServer& operator=(const KubeletServer&) = delete;

  // Creates the directories (mode 0750) if missing, replaces stale sockets, serves the DRA
  // socket, then the registration socket (both mode 0600). Each socket is bound under a
  // temporary name starting with '.' (ignored by the kubelet) and renamed into place, so it
  // appears already listening with its final mode. `health` may be null: then no health
  // service is served or advertised. Fails on invalid options, a socket path that exists and is
  // not a socket, or a port gRPC cannot bind; nothing is left behind on failure.
  Status Start(NodeService* service, HealthSource* health);
  // Ends health streams, deregisters (removes the registration socket), shuts both servers down
  // and removes the sockets this server created, never a socket another instance put in their
  // place since. Calls not yet running get a short grace period and are then cancelled; a
  // Prepare / Unprepare already inside the NodeService is waited for. Idempotent; Start may be
  // called again afterwards.
  void Stop();

  const std::string& dra_socket() const;
  const std::string& registration_socket() const;
  // The last NotifyRegistrationStatus said the kubelet registered this plugin.
  bool registered() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpu::plugin

#endif  // XPU_KUBELETPLUGIN_GRPC_KUBELET_SERVER_H_
