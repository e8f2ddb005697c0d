// Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it:
// the leader renews the Lease every retry period; a candidate takes the Lease over once it has
// seen no renewal for a whole lease duration, measured on its own clock from when it last saw
// the Lease change (so clock skew between replicas does not matter); a leader that cannot renew
// within the renew deadline steps down and stops writing before anyone else may take over
// (renew deadline < lease duration). On a clean stop the leader releases the Lease (empty
// holder, duration 1 s) so a standby takes over at its next try.
//
// Defaults: lease 12 s, renew deadline 8 s, retry 2 s: a standby takes over within ~14 s of a
// leader that dies without releasing, and within one retry period of one that stops cleanly.
// Thread-safe: IsLeader() is an atomic read for the write paths.
//
// Compute, then act: DecideLease and LeaseToWrite decide every write from the Lease read and
// the time, and NextTransition decides the run loop's state changes; LeaderElector does the
// reads, writes and waits, on an injectable Clock.
#ifndef XPU_CONTROLLER_LEADER_H_
#define XPU_CONTROLLER_LEADER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "api/client/client.h"
#include "api/core.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/status.h"
#include "base/stop.h"

namespace xpu::controller {

struct LeaderOptions {
  std::string ns = "xpu-dra";
  std::string name = "xpu-dra-controller";
  std::string identity;  // unique per replica (hostname + pid)
  std::chrono::milliseconds lease_duration{12'000};
  std::chrono::milliseconds renew_deadline{8'000};
  std::chrono::milliseconds retry_period{2'000};

  Status Validate() const;  // identity set; retry < renew deadline < lease duration
};

// What a replica remembers of the Lease between tries: its holder, the last renewal it saw and
// when it saw it, on its own monotonic clock.
struct LeaseObservation {
  std::string holder;
  std::string record;  // holder, renewTime and transitions: a change is a renewal
  Clock::SteadyTime seen_at{};
};

// What a replica does with the Lease it has just read.
enum class LeaseStep {
  kCreate,    // there is none: create it, holding it
  kStandBy,   // another replica holds it and renewed it within its lease duration
  kRenew,     // we hold it
  kTakeOver,  // released (no holder), or not renewed for a whole lease duration on our clock
};

// Decides from `lease` (nullopt: none exists) at `now`, and records what was seen in `seen`
// (a new renewal restarts the expiry clock). The holder's own lease duration counts, ours
// (`options.lease_duration`) when it has none.
LeaseStep DecideLease(const std::optional<api::core::Lease>& lease, const LeaderOptions& options,
                      Clock::SteadyTime now, LeaseObservation* seen);

// The Lease to write for kCreate, kRenew or kTakeOver (`current`: the one read; ignored for
// kCreate): us as holder, renewed at `wall_now`; a takeover counts a transition and sets the
// acquire time.
api::core::Lease LeaseToWrite(LeaseStep step, const std::optional<api::core::Lease>& current,
                              const LeaderOptions& options, Clock::WallTime wall_now);

// The run loop's state change after one try.
enum class LeaderTransition {
  kNone,
  kStarted,         // we hold the Lease and were not leading
  kLost,            // we were leading and someone else holds it now
  kDeadlineMissed,  // we were leading and could not renew within the renew deadline
};

// `held`: the try's result (true: we hold the Lease; false: someone else does; an error: the
// try failed). `last_renew`: when we last held it.
LeaderTransition NextTransition(bool leading, const StatusOr<bool>& held, Clock::SteadyTime now,
                                Clock::SteadyTime last_renew,
                                std::chrono::milliseconds renew_deadline);

class LeaderElector {
 public:
  // `client` and `clock` (default RealClock()) must outlive the elector. Callbacks run on Run's
  // thread.
  LeaderElector(api::client::Client* client, LeaderOptions options, Clock* clock = nullptr);

  // Tries to acquire, then renews, until `stop`; calls on_started when it becomes leader and
  // on_stopped when it stops being leader (lost lease, failed renewals or stop). Releases the
  // Lease on stop when it holds it. May become leader again after losing.
  void Run(const StopFlag& stop, const std::function<void()>& on_started,
           const std::function<void()>& on_stopped,
           const std::function<void(const std::string&)>& log = nullptr);

  bool IsLeader() const { return leader_.load(); }
  // The holder seen last ("" when none).
  std::string ObservedHolder() const;
  // How many renewals (changes of the Lease's holder, renewTime or transitions) it has seen.
  int64_t ObservedRenewals() const;

 private:
  // One attempt: true when we hold the Lease after it.
  StatusOr<bool> TryAcquireOrRenew();
  // Records `lease`, just written with us as holder, as the last one seen; returns true.
  bool Held(const api::core::Lease& lease);
  Status Release();

  api::client::Client* const client_;
  const LeaderOptions options_;
  Clock* const clock_;
  std::atomic<bool> leader_{false};
  mutable Mutex mu_;
  LeaseObservation seen_ GUARDED_BY(mu_);
  int64_t renewals_ GUARDED_BY(mu_) = 0;
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_LEADER_H_
