#include "controller/run.h"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <thread>

#include "api/client/client.h"
#include "api/validation.h"
#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/flags.h"
#include "base/log.h"
#include "base/metrics/http_server.h"
#include "base/metrics/metrics.h"
#include "controller/config.h"
#include "controller/controller.h"
#include "controller/leader.h"
#include "controller/metrics.h"
#include "controller/node_groups.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;

std::string DefaultIdentity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "controller") + "_" + std::to_string(getpid());
}

// The server's minor version, and the slice shapes to publish for it (1.35 and later share one).
// The minor also decides the publishing mode of a config that sets none (EffectiveMode).
struct ServerVersion {
  api::KubeVersion shapes = api::KubeVersion::k1_35;
  int minor = 35;
};

// The flag, else the server's /version.
StatusOr<ServerVersion> DetectVersion(kc::Client& client, const std::string& flag) {
  if (!flag.empty()) {
    ASSIGN_OR_RETURN(const int minor, ParseKubeMinor(flag, "--kubernetes-version"));
    return ServerVersion{KubeShapes(minor), minor};
  }
  ASSIGN_OR_RETURN(nlohmann::json version, client.GetPath("/version"));
  std::string minor = version.value("minor", "");
  while (!minor.empty() && (minor.back() < '0' || minor.back() > '9')) minor.pop_back();
  int n = 0;
  for (char c : minor) {
    if (c < '0' || c > '9') return InvalidArgumentError("read /version: minor \"" + minor + "\"");
    n = n * 10 + (c - '0');
  }
  return ServerVersion{KubeShapes(n), n};
}

// "mode attributes (publishing.mode)", "mode groups (publishing.mode unset: the default for
// server minor 36)": the mode in force and why, for the log.
std::string ModeInForce(const Config& config, int minor) {
  const std::string name(PublishModeName(EffectiveMode(config, minor)));
  if (config.mode) return "mode " + name + " (publishing.mode)";
  return "mode " + name + " (publishing.mode unset: the default for server minor " +
         std::to_string(minor) + ")";
}

// The leader election part of the options.
LeaderOptions LeaderOptionsOf(const ControllerOptions& o) {
  return {.ns = o.ns,
          .identity = o.identity,
          .lease_duration = o.lease_duration,
          .renew_deadline = o.renew_deadline,
          .retry_period = o.retry_period};
}

}  // namespace

Status ControllerOptions::Validate() const {
  RETURN_IF_ERROR(api::ValidateDnsSubdomain(driver_name, "--driver-name"));
  RETURN_IF_ERROR(api::ValidateDnsLabel(ns, "--namespace"));
  RETURN_IF_ERROR(CheckApiRate(qps, burst));
  if (workers < 1 || workers > 64) return InvalidArgumentError("--workers: 1 to 64");
  if (!kubernetes_version.empty()) {
    RETURN_IF_ERROR(ParseKubeMinor(kubernetes_version, "--kubernetes-version").status());
  }
  RETURN_IF_ERROR(Logger::CheckLevelFlag(log_level));
  LeaderOptions leader = LeaderOptionsOf(*this);
  if (leader.identity.empty()) leader.identity = "x";  // ParseFlags fills in the default
  return leader.Validate();
}

namespace {

std::vector<Flag> ControllerFlags(ControllerOptions* o) {
  return {
      KubeconfigFlag(&o->kubeconfig),
      DriverNameFlag(&o->driver_name),
      {"--namespace", "NS", "plugin Leases, the leader Lease and Events (default xpu-dra)",
       StringFlag(&o->ns)},
      {"--config", "FILE",
       "capability classes, support matrix, publishing mode (YAML or\n"
       "JSON; reloaded on change; default: built-in defaults)",
       StringFlag(&o->config_path)},
      {"--node-groups", "DIR", "node-group profiles: /autoscaler/pending, template drift",
       StringFlag(&o->node_groups_dir)},
      QpsFlag(&o->qps),
      BurstFlag(&o->burst),
      {"--leader-elect", "BOOL", "elect one leader among replicas (default true)",
       BoolFlag(&o->leader_elect)},
      {"--identity", "NAME",
       "this replica's leader-election identity (default\n"
       "hostname_pid)",
       StringFlag(&o->identity)},
      {"--metrics-addr", "ADDR", "/metrics, /healthz, /readyz (default :9401; \"\" disables)",
       StringFlag(&o->metrics_addr)},
      {"--kubernetes-version", "V",
       "1.34 to 1.38: slice shapes (1.36 and later\n"
       "publish like 1.35) and the publishing mode of a config\n"
       "without one (groups from 1.36, else attributes); default:\n"
       "the server's /version",
       StringFlag(&o->kubernetes_version)},
      {"--workers", "N", "pools synced in parallel (default 4)", IntFlag(&o->workers, 1, 64)},
      {"--config-poll", "DURATION", "how often the config file is checked (default 2s)",
       DurationFlag(&o->config_poll)},
      {"--claim-debounce", "DURATION",
       "wait after an allocation change before reordering\n"
       "(default 1s)",
       DurationFlag(&o->claim_debounce)},
      {"--lease-duration", "DURATION", "leader Lease duration (default 12s)",
       DurationFlag(&o->lease_duration)},
      {"--renew-deadline", "DURATION",
       "the leader steps down after failing to renew this long\n"
       "(default 8s)",
       DurationFlag(&o->renew_deadline)},
      {"--retry-period", "DURATION", "leader election retry and renewal period (default 2s)",
       DurationFlag(&o->retry_period)},
      LogLevelFlag(&o->log_level),
  };
}

}  // namespace

std::string Usage() {
  ControllerOptions unused;
  return "usage: xpu-dra-controller [flags]\n"
         "The xpu-dra controller: publishes the ResourceSlices of every node whose plugin is\n"
         "live, applies health and support-matrix taints, and keeps the DeviceClasses of the\n"
         "config in the cluster. Run two replicas with --leader-elect.\n" +
         FlagTableUsage(ControllerFlags(&unused), 24);
}

StatusOr<ControllerOptions> ParseFlags(const std::vector<std::string>& args, bool* help) {
  ControllerOptions o;
  ASSIGN_OR_RETURN(*help, ParseFlagTable(args, ControllerFlags(&o)));
  if (o.identity.empty()) o.identity = DefaultIdentity();
  return o;
}

namespace {

// The config of --config, else the built-in one; `text` gets the file's text, to see when it
// changes. Errors are LoadConfigFile's, as xpuctl reads the file (same size limit and errors).
StatusOr<Config> StartConfig(const ControllerOptions& options, Logger& log, std::string* text) {
  if (options.config_path.empty()) {
    Config config = DefaultConfig();
    log.Info("no --config: built-in defaults (mode by Kubernetes version, " +
             std::to_string(config.capability_classes.size()) + " capability classes)");
    return config;
  }
  ASSIGN_OR_RETURN(Config config, LoadConfigFile(options.config_path));
  // Read again for the comparison: a change in between makes the first poll reload.
  if (auto read = ReadWholeFile(options.config_path); read.ok()) *text = *read;
  log.Info("config " + options.config_path + ": " +
           std::to_string(config.capability_classes.size()) + " capability classes, " +
           std::to_string(config.support_matrix.size()) + " support rules, mode " +
           (config.mode ? std::string(PublishModeName(*config.mode)) : "by Kubernetes version"));
  return config;
}

// Config reload until `stop`: polls the file; a bad new file keeps the previous config. A good
// one is given to the controller with the mode in force for server minor `minor`.
void ReloadOnChange(const ControllerOptions& options, int minor, std::string config_text,
                    Controller& controller, ControllerMetrics& m, Logger& log,
                    const StopFlag& stop) {
  if (options.config_path.empty()) {  // nothing to watch: wait for the stop
    while (!stop.IsSet()) RealClock().Sleep(std::chrono::hours(1), stop);
    return;
  }
  // Due() is called on every wake-up, so the ticker moves on and Left() is 0 only when a check
  // is due: a ticker left behind would make this a busy loop.
  Ticker poll(RealClock(), options.config_poll);
  while (!stop.IsSet()) {
    RealClock().Sleep(poll.Left(), stop);
    if (!poll.Due()) continue;
    auto text = ReadWholeFile(options.config_path);
    if (!text.ok() || *text == config_text) continue;
    config_text = *text;
    auto parsed = LoadConfigFile(options.config_path);
    if (!parsed.ok()) {
      const std::string msg =
          "config rejected, the previous one stays in force: " + parsed.status().message();
      log.Error(msg);
      m.config_reloads.Inc({"error"});
      m.config_valid.Set(0);
      controller.RecordEvent({.reason = "InvalidConfig", .message = msg});
      continue;
    }
    log.Info("config " + options.config_path + " reloaded, " + ModeInForce(*parsed, minor));
    m.config_reloads.Inc({"ok"});
    m.config_valid.Set(1);
    controller.SetConfig(WithEffectiveMode(std::move(parsed).value(), minor));
  }
}

}  // namespace

int Run(const ControllerOptions& options, const StopFlag& stop, std::ostream& log_out) {
  Logger log(log_out, options.log_level);
  metrics::Registry registry;
  ControllerMetrics m(registry);

  // The config first: a bad file stops start-up before anything is written.
  std::string config_text;
  StatusOr<Config> started = StartConfig(options, log, &config_text);
  if (!started.ok()) {
    log.Error(started.status().message());
    return 2;
  }
  const Config& config = *started;
  m.config_valid.Set(1);
  // Node-group profiles: like the config, a bad one stops start-up.
  StatusOr<std::vector<NodeGroupProfile>> node_groups = std::vector<NodeGroupProfile>{};
  if (!options.node_groups_dir.empty()) {
    node_groups = LoadNodeGroupProfiles(options.node_groups_dir);
  }
  if (!node_groups.ok()) {
    log.Error(node_groups.status().message());
    return 2;
  }
  if (!options.node_groups_dir.empty()) {
    log.Info("node groups " + options.node_groups_dir + ": " + std::to_string(node_groups->size()) +
             " profiles");
  }

  auto cluster = kc::ResolveClusterConfig(options.kubeconfig);
  if (!cluster.ok()) {
    log.Error(cluster.status().message());
    return 1;
  }
  log.Info("API server " + cluster->Describe());
  kc::ClientOptions client_options;
  client_options.qps = options.qps;
  client_options.burst = options.burst;
  client_options.observe = [&m](std::string_view verb, int code) {
    m.api_requests.Inc({std::string(verb), std::to_string(code)});
  };
  auto client = kc::Client::Create(*cluster, client_options);
  if (!client.ok()) {
    log.Error(client.status().message());
    return 1;
  }
  auto version = DetectVersion(**client, options.kubernetes_version);
  while (!version.ok() && !stop.IsSet()) {
    log.Error("kubernetes version: " + version.status().message() + "; retrying");
    RealClock().Sleep(std::chrono::seconds(1), stop);
    version = DetectVersion(**client, options.kubernetes_version);
  }
  if (stop.IsSet()) return 0;
  log.Info("publishing slices for Kubernetes " +
           std::string(api::KubeVersionName(version->shapes)) + " (server minor " +
           std::to_string(version->minor) + "), " + ModeInForce(config, version->minor));

  CoreOptions core;
  core.driver = options.driver_name;
  core.ns = options.ns;
  core.version = version->shapes;
  core.partition_type = version->minor >= 37;
  core.workers = options.workers;
  core.claim_debounce = options.claim_debounce;
  core.identity = options.identity;
  core.node_groups = *std::move(node_groups);
  // The controller is given the mode in force, so that everything it builds (slices, gangs,
  // renders, templates) agrees on it.
  Controller controller(client->get(), core, WithEffectiveMode(config, version->minor), &m, &log);

  LeaderElector elector(client->get(), LeaderOptionsOf(options));
  if (options.leader_elect) controller.SetCanWrite([&elector] { return elector.IsLeader(); });

  metrics::HttpServerOptions endpoint;
  endpoint.address = options.metrics_addr;
  endpoint.metrics = [&registry] { return registry.Render(); };
  endpoint.json["/autoscaler/pending"] = [&controller] { return controller.PendingJson(); };
  endpoint.readyz = [&controller]() -> Status {
    if (!controller.synced()) return UnavailableError("informers have not listed yet");
    return OkStatus();
  };
  auto http = metrics::StartHttpServer(std::move(endpoint), log);
  if (!http.ok()) {
    log.Error(http.status().message());
    return 1;
  }

  if (Status s = controller.Start(); !s.ok()) log.Warning(s.message());
  std::thread election;
  if (options.leader_elect) {
    election = std::thread([&] {
      elector.Run(
          stop,
          [&] {
            m.leader.Set(1);
            controller.ResyncAll();
          },
          [&] { m.leader.Set(0); }, [&log](const std::string& msg) { log.Info(msg); });
    });
  } else {
    m.leader.Set(1);
    controller.ResyncAll();
  }

  ReloadOnChange(options, version->minor, std::move(config_text), controller, m, log, stop);
  if (election.joinable()) election.join();
  controller.Stop();
  log.Info("stopped");
  return 0;
}

}  // namespace xpu::controller
