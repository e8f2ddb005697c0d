#include "kubeletplugin/plugin/plugin.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <ostream>
#include <thread>

#include "api/client/client.h"
#include "api/validation.h"
#include "base/flags.h"
#include "kubeletplugin/discovery/discovery.h"
#include "kubeletplugin/publisher/publisher.h"

namespace xpu::plugin {
namespace {

// Watches <host-root>/dev for device nodes coming and going; sets *wake on a change.
class DevWatcher {
 public:
  DevWatcher(const std::string& dev_dir, std::atomic<bool>* wake) : wake_(wake) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0) {
      watch_ = inotify_add_watch(fd_, dev_dir.c_str(),
                                 IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB);
    }
  }
  ~DevWatcher() {
    if (fd_ >= 0) ::close(fd_);
  }
  DevWatcher(const DevWatcher&) = delete;
  DevWatcher& operator=(const DevWatcher&) = delete;
  bool ok() const { return fd_ >= 0 && watch_ >= 0; }
  // Drains pending events; true when there were any.
  bool Poll() {
    if (!ok()) return false;
    alignas(inotify_event) char buf[4096];
    bool any = false;
    while (::read(fd_, buf, sizeof(buf)) > 0) any = true;
    if (any) wake_->store(true);
    return any;
  }

 private:
  int fd_ = -1;
  int watch_ = -1;
  std::atomic<bool>* wake_;
};

}  // namespace

Status PluginOptions::Validate() const {
  if (node_name.empty()) {
    return InvalidArgumentError("--node-name (or NODE_NAME) is required");
  }
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(node_name, "--node-name"));
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(driver_name, "--driver-name"));
  RETURN_IF_ERROR(api::ValidateDnsLabel(ns, "--namespace"));
  if (host_root.empty()) return InvalidArgumentError("--host-root: must not be empty");
  if (std::chrono::duration_cast<std::chrono::milliseconds>(lease_duration) <= lease_renew) {
    return InvalidArgumentError("--lease-renew must be shorter than --lease-duration");
  }
  return OkStatus();
}

std::string Usage() {
  return "usage: xpu-dra-plugin [flags]\n"
         "The xpu-dra node plugin: discovers the node's accelerators, publishes its\n"
         "NodeInventory (xpu.dra.dev/v1alpha1) and renews the plugin Lease.\n"
         "  --node-name NAME        this node (default: $NODE_NAME)\n"
         "  --kubeconfig FILE       API access (default: in-cluster service account, then\n"
         "                          $KUBECONFIG)\n"
         "  --driver-name NAME      DRA driver name (default xpu.dra.dev)\n"
         "  --host-root DIR         where the host's /sys, /dev, /proc and /etc are (default /)\n"
         "  --vendor-lib-dir DIR    searched first for libnvidia-ml.so.1 and libdcmi.so\n"
         "                          (repeatable)\n"
         "  --namespace NS          the driver's namespace, for the Lease (default xpu-dra)\n"
         "  --rediscover DURATION   rediscovery period (default 60s; also on /dev changes)\n"
         "  --lease-renew DURATION  Lease renewal period (default 5s)\n"
         "  --lease-duration SECS   Lease duration (default 15)\n"
         "  --help                  print this help\n";
}

StatusOr<PluginOptions> ParseFlags(const std::vector<std::string>& args,
                                   const std::string& node_name_env, bool* help) {
  PluginOptions o;
  o.node_name = node_name_env;
  FlagReader flags(args);
  while (flags.Next()) {
    if (flags.Is("--node-name")) {
      ASSIGN_OR_RETURN(o.node_name, flags.Value());
    } else if (flags.Is("--kubeconfig")) {
      ASSIGN_OR_RETURN(o.kubeconfig, flags.Value());
    } else if (flags.Is("--driver-name")) {
      ASSIGN_OR_RETURN(o.driver_name, flags.Value());
    } else if (flags.Is("--host-root")) {
      ASSIGN_OR_RETURN(o.host_root, flags.Value());
    } else if (flags.Is("--vendor-lib-dir")) {
      ASSIGN_OR_RETURN(auto dir, flags.Value());
      o.vendor_lib_dirs.push_back(dir);
    } else if (flags.Is("--namespace")) {
      ASSIGN_OR_RETURN(o.ns, flags.Value());
    } else if (flags.Is("--rediscover")) {
      ASSIGN_OR_RETURN(o.rediscover, flags.Duration());
    } else if (flags.Is("--lease-renew")) {
      ASSIGN_OR_RETURN(o.lease_renew, flags.Duration());
    } else if (flags.Is("--lease-duration")) {
      ASSIGN_OR_RETURN(const auto d, flags.Duration());
      o.lease_duration = std::chrono::duration_cast<std::chrono::seconds>(d);
    } else {
      return flags.Unknown();
    }
  }
  *help = flags.help();
  return o;
}

int Run(const PluginOptions& options, const std::atomic<bool>& stop, std::ostream& log) {
  std::mutex log_mu;
  auto say = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log << "xpu-dra-plugin: " << line << std::endl;
  };
  auto config = api::client::ResolveClusterConfig(options.kubeconfig);
  if (!config.ok()) {
    say(config.status().message());
    return 1;
  }
  say("node " + options.node_name + ", API server " + config->Describe());
  auto client = api::client::Client::Create(*config);
  if (!client.ok()) {
    say(client.status().message());
    return 1;
  }
  discovery::DiscoveryOptions discover;
  discover.host_root = options.host_root;
  discover.vendor_lib_dirs = options.vendor_lib_dirs;
  discover.node_name = options.node_name;
  if (Status s = discover.Validate(); !s.ok()) {
    say(s.message());
    return 2;
  }
  PublisherOptions publish;
  publish.node_name = options.node_name;
  publish.ns = options.ns;
  publish.lease_renew = options.lease_renew;
  publish.lease_duration = options.lease_duration;
  publish.rediscover = options.rediscover;
  if (Status s = publish.Validate(); !s.ok()) {
    say(s.message());
    return 2;
  }
  InventoryPublisher publisher(client->get(), publish,
                               [&] { return discovery::Discover(discover); });
  std::atomic<bool> wake{false};
  std::string dev = options.host_root;
  if (dev.empty() || dev.back() != '/') dev += "/";
  dev += "dev";
  DevWatcher watcher(dev, &wake);
  if (!watcher.ok()) {
    say("watch " + dev + ": " + std::strerror(errno) + "; periodic rediscovery only");
  }
  std::atomic<bool> done{false};
  std::thread dev_thread([&] {
    while (!stop.load() && !done.load()) {
      if (watcher.Poll()) say("device nodes changed under " + dev + ": rediscovering");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  publisher.Run(stop, &wake, [&](const std::string& line) { say(line); });
  done = true;
  dev_thread.join();
  say("stopped after " + std::to_string(publisher.stats().inventory_writes) + " inventory writes");
  return 0;
}

}  // namespace xpu::plugin
