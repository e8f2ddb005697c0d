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
#ifndef XPU_CONTROLLER_LEADER_H_
#define XPU_CONTROLLER_LEADER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "api/client/client.h"
#include "api/core.h"
#include "base/status.h"

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

class LeaderElector {
 public:
  // `client` must outlive the elector. Callbacks run on Run's thread.
  LeaderElector(api::client::Client* client, LeaderOptions options);

  // Tries to acquire, then renews, until `stop`; calls on_started when it becomes leader and
  // on_stopped when it stops being leader (lost lease, failed renewals or stop). Releases the
  // Lease on stop when it holds it. May become leader again after losing.
  void Run(const std::atomic<bool>& stop, const std::function<void()>& on_started,
           const std::function<void()>& on_stopped,
           const std::function<void(const std::string&)>& log = nullptr);

  bool IsLeader() const { return leader_.load(); }
  // The holder seen last ("" when none).
  std::string ObservedHolder() const;

 private:
  // One attempt: true when we hold the Lease after it.
  StatusOr<bool> TryAcquireOrRenew();
  // Records `lease`, just written with us as holder, as the last one seen; returns true.
  bool Held(const api::core::Lease& lease);
  Status Release();

  api::client::Client* const client_;
  const LeaderOptions options_;
  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;
  std::string observed_holder_;                          // GUARDED_BY(mu_)
  std::string observed_record_;                          // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point observed_at_{};  // GUARDED_BY(mu_)
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_LEADER_H_
