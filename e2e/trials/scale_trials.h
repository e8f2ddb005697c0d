// Crash trials of the controller at scale: kube-sim with a fleet of simulated nodes (5,000 by
// default; each a Node, the hgx-h200 fixture host's NodeInventory and a live plugin Lease, made
// as bench/controller_run.h's StartSimFleet makes them) and the real xpu-dra-controller, SIGKILLed
// mid-publish: the first kill during the first publish, when a random share of the pools has
// been created; each later one after a random share of the nodes (10 % to all) switched between
// the hgx-h200 and pcie-2numa-8gpu inventories (their slices differ; hgx-h200-unhealthy's equal
// hgx-h200's), when a random number of the slice writes that follow has been made. At each kill the
// slices are read (the controller is dead, nothing moves) and the writes they need counted
// (invariants.h, WritesNeeded: pools missing or stale). A new controller is started; the fleet must
// converge (every pool exactly its golden, e2e/fixtures/slices-expected, once per node, no orphan)
// within the bound, and the slice writes the new controller made (its
// xpu_dra_controller_slice_writes_total) are set against the writes needed. Run by hand
// (scripts/crash-trials --scale-nodes N), not by CI.
#ifndef XPU_E2E_TRIALS_SCALE_TRIALS_H_
#define XPU_E2E_TRIALS_SCALE_TRIALS_H_

#include <chrono>
#include <string>

#include "base/status.h"
#include "e2e/trials/trial_report.h"

namespace xpu::e2e::trials {

struct ScaleTrialOptions {
  std::string controller_binary;  // xpu-dra-controller
  std::string kube_sim_binary;    // kube-sim
  int nodes = 5000;
  int qps = 500;  // the controller's --qps and --burst
  // Kill -> converged within 5 min (a full publish of 5,000 pools at QPS 500 takes about 10 s).
  KillPlan plan = {20, 1, "", std::chrono::milliseconds(0), std::chrono::milliseconds(300'000), 0};
  Status Validate() const;
};

// Runs the trials; prints a line per kill (stdout). A fleet that does not converge, or writes
// made other than the writes needed, is a DataLoss error naming the kill and the logs (after
// every kill has run, for the writes); a failure of the rig itself another error.
StatusOr<TrialStats> RunScaleTrials(const ScaleTrialOptions& options);

}  // namespace xpu::e2e::trials

#endif  // XPU_E2E_TRIALS_SCALE_TRIALS_H_
