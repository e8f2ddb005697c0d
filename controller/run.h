// xpu-dra-controller: options, flags and the wiring of the binary. Run loads the config (a bad
// file stops start-up, naming the field), detects the served Kubernetes version (slice shapes
// and limits, and the publishing mode of a config that sets none: EffectiveMode), serves
// /metrics, /healthz and /readyz, runs leader election (when enabled) and the controller core,
// and reloads the config file when it changes: a bad new file leaves the previous config in
// force and is reported in the log, the metrics and an Event.
#ifndef XPU_CONTROLLER_RUN_H_
#define XPU_CONTROLLER_RUN_H_

#include <chrono>
#include <iosfwd>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/stop.h"

namespace xpu::controller {

struct ControllerOptions {
  std::string kubeconfig;  // empty: in-cluster service account, else $KUBECONFIG
  std::string driver_name = "xpu.dra.dev";
  std::string ns = "xpu-dra";
  std::string config_path;  // empty: built-in defaults
  // A directory of node-group profiles (*.yaml, *.yml, *.json; controller/node_groups.h) for
  // /autoscaler/pending and the template drift check; empty: none.
  std::string node_groups_dir;
  double qps = 50;
  int burst = 100;
  bool leader_elect = true;
  std::string identity;                // default: hostname_pid
  std::string metrics_addr = ":9401";  // empty: no endpoint
  // "1.34" to "1.37": slice shapes, and the publishing mode of a config without one (groups
  // from 1.36); empty: from the server's /version.
  std::string kubernetes_version;
  int workers = 4;
  std::chrono::milliseconds config_poll{2'000};
  std::chrono::milliseconds claim_debounce{1'000};
  std::chrono::milliseconds lease_duration{12'000};  // leader election
  std::chrono::milliseconds renew_deadline{8'000};
  std::chrono::milliseconds retry_period{2'000};
  std::string log_level = "info";

  Status Validate() const;
};

// Parses argv (without the program name). Sets *help for --help.
StatusOr<ControllerOptions> ParseFlags(const std::vector<std::string>& args, bool* help);
std::string Usage();

// Runs until `stop`; returns the exit code (0 clean stop, 1 environment error, 2 bad config).
int Run(const ControllerOptions& options, const StopFlag& stop, std::ostream& log);

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_RUN_H_
