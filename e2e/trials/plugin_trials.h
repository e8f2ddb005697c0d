// Crash trials of the kubelet plugin: the real xpu-dra-plugin on a fixture host against kube-sim,
// a kubelet stand-in sending batches of NodePrepareResources and NodeUnprepareResources and
// retrying what fails until it succeeds (as the kubelet does), and a killer that SIGKILLs the
// plugin at random moments, restarts it and waits for it to register again. After each recovery
// the checkpoint and CDI specs on disk are checked against what the kubelet holds prepared
// (invariants.h), and the time from the kill to every retried call answered is held to a bound.
#ifndef XPU_E2E_TRIALS_PLUGIN_TRIALS_H_
#define XPU_E2E_TRIALS_PLUGIN_TRIALS_H_

#include <chrono>
#include <string>

#include "base/status.h"
#include "e2e/trials/trial_report.h"

namespace xpu::e2e::trials {

struct PluginTrialOptions {
  // Kills land up to 100 ms into the kubelet loops' work; recovery (kill -> registered again and
  // every interrupted or refused call retried with success) within 10 s.
  KillPlan plan = {1000, 1, "", std::chrono::milliseconds(100), std::chrono::milliseconds(10'000),
                   0.1};
  std::string plugin_binary;          // xpu-dra-plugin
  std::string host = "atlas800t-a3";  // a fixture host of e2e/fixtures/hosts (16 devices)
  int kubelets = 2;                   // concurrent kubelet loops, each with its own claims
  Status Validate() const;
};

// Runs the trials. A broken invariant is a DataLoss error naming the kill, what broke and where
// the logs are; a failure of the rig itself another error.
StatusOr<TrialStats> RunPluginTrials(const PluginTrialOptions& options);

}  // namespace xpu::e2e::trials

#endif  // XPU_E2E_TRIALS_PLUGIN_TRIALS_H_
