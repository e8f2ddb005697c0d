// What every kind of crash trials is asked (how many kills, the seed, the bound) and the figures
// of a run, with their one-line summary.
#ifndef XPU_E2E_TRIALS_TRIAL_REPORT_H_
#define XPU_E2E_TRIALS_TRIAL_REPORT_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xpu::e2e::trials {

struct KillPlan {
  int kills = 0;
  uint64_t seed = 1;     // every random choice of the trials
  std::string work_dir;  // state and logs (created)
  // A kill lands a random time (uniform, from 0) up to this long into a trial's work.
  std::chrono::milliseconds max_kill_delay{100};
  // Kill -> converged, the invariant then checked; longer is a violation.
  std::chrono::milliseconds bound{10'000};
  double recovery_kill_share = 0.1;  // kills followed by a kill of the next instance as it starts
  // `flag` names the kill count in the error ("--plugin").
  Status Validate(const std::string& flag) const;
};

struct TrialStats {
  std::string part;           // "plugin" or "controller"
  int kills = 0;              // SIGKILLs sent
  int kills_mid_work = 0;     // that landed with work in flight (a call, an unfinished publish)
  int kills_in_recovery = 0;  // that landed while the last instance was starting
  int checks = 0;             // invariant checks passed (one after each recovery)
  std::vector<double> recovery_ms = {};  // kill -> converged, one per recovery
  std::vector<double> serving_ms = {};   // kill -> the new instance serving (where it says so)
  std::chrono::milliseconds bound{0};
  double seconds = 0;  // wall time of the whole part
  // Counters of the part, in print order ("calls", "retried calls", "mutations", ...).
  std::vector<std::pair<std::string, int64_t>> counters = {};
};

// The q-quantile (0..1) by nearest rank; 0 for no values.
double Quantile(std::vector<double> values, double q);

// "plugin: 50 kills (41 mid-call, 5 in recovery), 50 checks held; recovery p50 0.12 s, p99 ...,
// max ... (bound 10 s); calls 812, ...; 21.3 s".
std::string Summary(const TrialStats& stats);

}  // namespace xpu::e2e::trials

#endif  // XPU_E2E_TRIALS_TRIAL_REPORT_H_
