#include "controller/leader.h"

#include <thread>
#include <utility>

#include "api/core.h"
#include "base/time.h"

namespace xpu::controller {
namespace {

namespace kc = api::client;
using Clock = std::chrono::steady_clock;

// What identifies one renewal: a change of it restarts the candidate's expiry clock.
std::string RecordOf(const api::core::Lease& lease) {
  return lease.spec.holder_identity.value_or("") + "|" + lease.spec.renew_time.value_or("") + "|" +
         std::to_string(lease.spec.lease_transitions.value_or(0));
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

LeaderElector::LeaderElector(kc::Client* client, LeaderOptions options)
    : client_(client), options_(std::move(options)) {}

std::string LeaderElector::ObservedHolder() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_holder_;
}

bool LeaderElector::Held(const api::core::Lease& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  observed_holder_ = options_.identity;
  observed_record_ = RecordOf(lease);
  observed_at_ = Clock::now();
  return true;
}

StatusOr<bool> LeaderElector::TryAcquireOrRenew() {
  const auto wall_now = std::chrono::system_clock::now();
  const int64_t duration_s = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options_.lease_duration).count());
  auto current = client_->Get(kc::Leases(), options_.ns, options_.name);
  if (!current.ok() && current.status().code() == StatusCode::kNotFound) {
    api::core::Lease lease;
    lease.metadata.name = options_.name;
    lease.metadata.namespace_name = options_.ns;
    lease.spec.holder_identity = options_.identity;
    lease.spec.lease_duration_seconds = duration_s;
    lease.spec.acquire_time = FormatMicroTime(wall_now);
    lease.spec.renew_time = FormatMicroTime(wall_now);
    lease.spec.lease_transitions = 0;
    auto created = client_->Create(kc::Leases(), options_.ns, api::core::ToJson(lease));
    if (!created.ok()) {
      if (created.status().code() == StatusCode::kAlreadyExists) return false;
      return created.status();
    }
    return Held(lease);
  }
  if (!current.ok()) return current.status();
  ASSIGN_OR_RETURN(api::core::Lease lease, api::FromJson<api::core::Lease>(*current));

  const std::string holder = lease.spec.holder_identity.value_or("");
  const std::string record = RecordOf(lease);
  Clock::time_point seen_at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = Clock::now();
    }
    observed_holder_ = holder;
    seen_at = observed_at_;
  }
  const auto their_duration =
      std::chrono::seconds(lease.spec.lease_duration_seconds.value_or(duration_s));
  const bool mine = holder == options_.identity;
  const bool expired = holder.empty() || Clock::now() - seen_at > their_duration;
  if (!mine && !expired) return false;

  if (!mine) {
    lease.spec.lease_transitions = lease.spec.lease_transitions.value_or(0) + 1;
    lease.spec.acquire_time = FormatMicroTime(wall_now);
  }
  lease.spec.holder_identity = options_.identity;
  lease.spec.lease_duration_seconds = duration_s;
  lease.spec.renew_time = FormatMicroTime(wall_now);
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
  lease.spec.renew_time = FormatMicroTime(std::chrono::system_clock::now());
  return client_->Update(kc::Leases(), options_.ns, api::core::ToJson(lease)).status();
}

void LeaderElector::Run(const std::atomic<bool>& stop, const std::function<void()>& on_started,
                        const std::function<void()>& on_stopped,
                        const std::function<void(const std::string&)>& log) {
  auto say = [&](const std::string& msg) {
    if (log) log(msg);
  };
  auto sleep = [&](std::chrono::milliseconds d) {
    const auto until = Clock::now() + d;
    while (!stop && Clock::now() < until) {
      std::this_thread::sleep_for(
          std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(50)));
    }
  };
  Clock::time_point last_renew = Clock::now();
  while (!stop) {
    auto held = TryAcquireOrRenew();
    const auto now = Clock::now();
    if (held.ok() && *held) {
      last_renew = now;
      if (!leader_.exchange(true)) {
        say("became leader (lease " + options_.ns + "/" + options_.name + ")");
        if (on_started) on_started();
      }
    } else if (leader_) {
      const bool lost = held.ok();  // someone else holds it now
      if (lost || now - last_renew > options_.renew_deadline) {
        leader_ = false;
        say(lost ? "lost the lease to " + ObservedHolder()
                 : "could not renew the lease within the renew deadline: " +
                       held.status().message());
        if (on_stopped) on_stopped();
      }
    } else if (!held.ok()) {
      say("leader election: " + held.status().message());
    }
    sleep(options_.retry_period);
  }
  if (leader_.exchange(false)) {
    if (Status s = Release(); !s.ok()) say("release lease: " + s.message());
    if (on_stopped) on_stopped();
  }
}

}  // namespace xpu::controller
