#include "controller/leader.h"

#include <algorithm>
#include <utility>

#include "api/core.h"
#include "base/time.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;

// What identifies one renewal: a change of it restarts the candidate's expiry clock.
std::string RecordOf(const api::core::Lease& lease) {
  return lease.spec.holder_identity.value_or("") + "|" + lease.spec.renew_time.value_or("") + "|" +
         std::to_string(lease.spec.lease_transitions.value_or(0));
}

int64_t DurationSeconds(const LeaderOptions& options) {
  return std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options.lease_duration).count());
}

}  // namespace

Status LeaderOptions::Validate() const {
  if (identity.empty()) return InvalidArgumentError("leader election: identity is empty");
  if (ns.empty() || name.empty()) {
    return InvalidArgumentError("leader election: lease namespace and name are required");
  }
  if (!(retry_period < renew_deadline && renew_deadline < lease_duration)) {
    return InvalidArgumentError(
        "leader election: need retry period < renew deadline < lease duration");
  }
  return OkStatus();
}

LeaseStep DecideLease(const std::optional<api::core::Lease>& lease, const LeaderOptions& options,
                      Clock::SteadyTime now, LeaseObservation* seen) {
  if (!lease) return LeaseStep::kCreate;
  const std::string record = RecordOf(*lease);
  if (record != seen->record) {
    seen->record = record;
    seen->seen_at = now;
  }
  seen->holder = lease->spec.holder_identity.value_or("");
  if (seen->holder == options.identity) return LeaseStep::kRenew;
  const auto their_duration =
      std::chrono::seconds(lease->spec.lease_duration_seconds.value_or(DurationSeconds(options)));
  if (seen->holder.empty() || now - seen->seen_at > their_duration) return LeaseStep::kTakeOver;
  return LeaseStep::kStandBy;
}

api::core::Lease LeaseToWrite(LeaseStep step, const std::optional<api::core::Lease>& current,
                              const LeaderOptions& options, Clock::WallTime wall_now) {
  const std::string now = FormatMicroTime(wall_now);
  api::core::Lease lease;
  if (step == LeaseStep::kCreate || !current) {
    lease.metadata.name = options.name;
    lease.metadata.namespace_name = options.ns;
    lease.spec.acquire_time = now;
    lease.spec.lease_transitions = 0;
  } else {
    lease = *current;
    if (step == LeaseStep::kTakeOver) {
      lease.spec.lease_transitions = lease.spec.lease_transitions.value_or(0) + 1;
      lease.spec.acquire_time = now;
    }
  }
  lease.spec.holder_identity = options.identity;
  lease.spec.lease_duration_seconds = DurationSeconds(options);
  lease.spec.renew_time = now;
  return lease;
}

LeaderTransition NextTransition(bool leading, const StatusOr<bool>& held, Clock::SteadyTime now,
                                Clock::SteadyTime last_renew,
                                std::chrono::milliseconds renew_deadline) {
  if (held.ok() && *held) return leading ? LeaderTransition::kNone : LeaderTransition::kStarted;
  if (!leading) return LeaderTransition::kNone;
  if (held.ok()) return LeaderTransition::kLost;  // someone else holds it now
  return now - last_renew > renew_deadline ? LeaderTransition::kDeadlineMissed
                                           : LeaderTransition::kNone;
}

LeaderElector::LeaderElector(kc::Client* client, LeaderOptions options, Clock* clock)
    : client_(client),
      options_(std::move(options)),
      clock_(clock != nullptr ? clock : &RealClock()) {}

std::string LeaderElector::ObservedHolder() const {
  MutexLock lock(mu_);
  return seen_.holder;
}

int64_t LeaderElector::ObservedRenewals() const {
  MutexLock lock(mu_);
  return renewals_;
}

bool LeaderElector::Held(const api::core::Lease& lease) {
  MutexLock lock(mu_);
  seen_.holder = options_.identity;
  seen_.record = RecordOf(lease);
  seen_.seen_at = clock_->Now();
  return true;
}

StatusOr<bool> LeaderElector::TryAcquireOrRenew() {
  std::optional<api::core::Lease> current;
  auto got = client_->Get(kc::Leases(), options_.ns, options_.name);
  if (got.ok()) {
    ASSIGN_OR_RETURN(current, api::FromJson<api::core::Lease>(*got));
  } else if (got.status().code() != StatusCode::kNotFound) {
    return got.status();
  }
  LeaseStep step;
  {
    MutexLock lock(mu_);
    const std::string before = seen_.record;
    step = DecideLease(current, options_, clock_->Now(), &seen_);
    if (seen_.record != before) ++renewals_;
  }
  if (step == LeaseStep::kStandBy) return false;

  const api::core::Lease lease = LeaseToWrite(step, current, options_, clock_->WallNow());
  if (step == LeaseStep::kCreate) {
    auto created = client_->Create(kc::Leases(), options_.ns, api::core::ToJson(lease));
    if (!created.ok()) {
      if (created.status().code() == StatusCode::kAlreadyExists) return false;
      return created.status();
    }
    return Held(lease);
  }
  auto updated = client_->Update(kc::Leases(), options_.ns, api::core::ToJson(lease));
  if (!updated.ok()) {
    if (updated.status().code() == StatusCode::kAborted) return false;  // someone else won
    return updated.status();
  }
  return Held(lease);
}

Status LeaderElector::Release() {
  auto current = client_->Get(kc::Leases(), options_.ns, options_.name);
  if (!current.ok()) return current.status();
  ASSIGN_OR_RETURN(api::core::Lease lease, api::FromJson<api::core::Lease>(*current));
  if (lease.spec.holder_identity.value_or("") != options_.identity) return OkStatus();
  lease.spec.holder_identity = "";
  lease.spec.lease_duration_seconds = 1;
  lease.spec.renew_time = FormatMicroTime(clock_->WallNow());
  return client_->Update(kc::Leases(), options_.ns, api::core::ToJson(lease)).status();
}

void LeaderElector::Run(const StopFlag& stop, const std::function<void()>& on_started,
                        const std::function<void()>& on_stopped,
                        const std::function<void(const std::string&)>& log) {
  auto say = [&](const std::string& msg) {
    if (log) log(msg);
  };
  Clock::SteadyTime last_renew = clock_->Now();
  while (!stop.IsSet()) {
    const StatusOr<bool> held = TryAcquireOrRenew();
    const Clock::SteadyTime now = clock_->Now();
    if (held.ok() && *held) last_renew = now;
    switch (NextTransition(leader_, held, now, last_renew, options_.renew_deadline)) {
      case LeaderTransition::kStarted:
        leader_ = true;
        say("became leader (lease " + options_.ns + "/" + options_.name + ")");
        if (on_started) on_started();
        break;
      case LeaderTransition::kLost:
        leader_ = false;
        say("lost the lease to " + ObservedHolder());
        if (on_stopped) on_stopped();
        break;
      case LeaderTransition::kDeadlineMissed:
        leader_ = false;
        say("could not renew the lease within the renew deadline: " + held.status().message());
        if (on_stopped) on_stopped();
        break;
      case LeaderTransition::kNone:
        if (!held.ok() && !leader_) say("leader election: " + held.status().message());
        break;
    }
    clock_->Sleep(options_.retry_period, stop);
  }
  if (leader_.exchange(false)) {
    if (Status s = Release(); !s.ok()) say("release lease: " + s.message());
    if (on_stopped) on_stopped();
  }
}

}  // namespace xpu::controller
