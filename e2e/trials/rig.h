// Small pieces both kinds of trials use: time since a moment, a Node made directly (kube-sim
// serves no /status for Nodes, and the driver needs only that the Node exists), the end of a log.
#ifndef XPU_E2E_TRIALS_RIG_H_
#define XPU_E2E_TRIALS_RIG_H_

#include <chrono>
#include <functional>
#include <random>
#include <string>

#include "api/client/client.h"
#include "base/status.h"
#include "e2e/trials/trial_report.h"

namespace xpu::e2e::trials {

using Clock = std::chrono::steady_clock;

inline double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Creates the Node `name` (label kubernetes.io/hostname); returns its uid.
StatusOr<std::string> CreateNode(api::client::Client& client, const std::string& name);

// The restarts after a kill, the same for both kinds of trials: each kill counted; after a share
// of them (plan.recovery_kill_share) the new instance killed again up to `startup_window` into
// its start; a progress line on stderr every tenth of the plan.
class Restarts {
 public:
  Restarts(const KillPlan& plan, TrialStats* stats, std::mt19937_64* rng,
           std::chrono::milliseconds startup_window);
  bool done() const { return stats_->kills >= plan_.kills; }
  // Right after a kill at `killed`: counts it and restarts; sometimes kills again while the new
  // instance starts and restarts once more. Returns the moment of the last kill.
  StatusOr<Clock::time_point> AfterKill(Clock::time_point killed,
                                        const std::function<Status()>& restart,
                                        const std::function<void()>& kill);
  // After a recovery: the progress line when another tenth is done.
  void Progress(Clock::time_point start);

 private:
  const KillPlan& plan_;
  TrialStats* stats_;
  std::mt19937_64* rng_;
  std::uniform_int_distribution<int64_t> startup_delay_;
  std::bernoulli_distribution in_recovery_;
  int reported_ = 0;
};

// The last `lines` lines of `text`.
std::string Tail(const std::string& text, size_t lines);

}  // namespace xpu::e2e::trials

#endif  // XPU_E2E_TRIALS_RIG_H_
