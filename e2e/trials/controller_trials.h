// Crash trials of the controller: the real xpu-dra-controller against kube-sim with injected API
// faults, publishing the ResourceSlices of several nodes whose Node, NodeInventory (a fixture
// host's) and plugin Lease the trials write directly. Between kills the trials change the nodes
// (another host's inventory, an inventory or a Node deleted or made again) and the gangs (up to
// three AcceleratorGangs of one or two nodes made or deleted), so publishing and placing are under
// way when the controller is SIGKILLed at a random moment. At each kill every gang's reservation
// (its status) must be whole or empty. After each restart, with the faults still on, the slices
// must converge within a bound to exactly what the inventories ask for
// (e2e/fixtures/slices-expected, the controller's own goldens): no duplicate or obsolete slice, no
// orphan of a deleted Node or inventory, the owner the Node's current uid, and a pool's generation
// never going back; and every gang must be whole (its status, its gang slice, claim and template,
// the attribute on its members' devices) or absent (invariants.h, GangDifferences).
#ifndef XPU_E2E_TRIALS_CONTROLLER_TRIALS_H_
#define XPU_E2E_TRIALS_CONTROLLER_TRIALS_H_

#include <chrono>
#include <string>

#include "e2e/trials/trial_report.h"  // KillPlan, TrialStats, Status

namespace xpu::e2e::trials {

struct ControllerTrialOptions {
  std::string controller_binary;  // xpu-dra-controller
  int nodes = 6;
  double fault_rate = 0.1;  // of kube-sim's non-watch requests: 409, 429, 500, 503
  // Kills land up to 200 ms after the trial's first node change; the slices converge within 30 s.
  KillPlan plan = {200, 1, "", std::chrono::milliseconds(200), std::chrono::milliseconds(30'000),
                   0.15};
  Status Validate() const;
};

// Runs the trials. A broken invariant is a DataLoss error naming the kill, what differs and
// where the logs are; a failure of the rig itself another error.
StatusOr<TrialStats> RunControllerTrials(const ControllerTrialOptions& options);

}  // namespace xpu::e2e::trials

#endif  // XPU_E2E_TRIALS_CONTROLLER_TRIALS_H_
