// Leader election's decisions on a fake clock, without a server and without sleeping.
#include <catch2/catch.hpp>

#include "base/clock.h"
#include "base/time.h"
#include "controller/leader.h"

namespace xpu::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LeaderOptions Options(const std::string& identity) {
  LeaderOptions o;
  o.identity = identity;  // lease 12 s, renew deadline 8 s, retry 2 s
  return o;
}

// The Lease `holder` wrote at `wall`, as LeaseToWrite writes it.
api::core::Lease HeldBy(const std::string& holder, Clock::WallTime wall) {
  return LeaseToWrite(LeaseStep::kCreate, std::nullopt, Options(holder), wall);
}

TEST_CASE("no Lease: create one, holding it from now", "[leader]") {
  FakeClock clock;
  LeaseObservation seen;
  const LeaderOptions me = Options("a");
  REQUIRE(DecideLease(std::nullopt, me, clock.Now(), &seen) == LeaseStep::kCreate);
  const api::core::Lease lease =
      LeaseToWrite(LeaseStep::kCreate, std::nullopt, me, clock.WallNow());
  CHECK(lease.metadata.name == "xpu-dra-controller");
  CHECK(lease.metadata.namespace_name == "xpu-dra");
  CHECK(lease.spec.holder_identity == "a");
  CHECK(lease.spec.lease_duration_seconds == 12);
  CHECK(lease.spec.lease_transitions == 0);
  CHECK(lease.spec.acquire_time == FormatMicroTime(clock.WallNow()));
  CHECK(lease.spec.renew_time == lease.spec.acquire_time);
}

TEST_CASE("a standby that keeps seeing renewals never takes over", "[leader]") {
  FakeClock clock;
  LeaseObservation seen;
  const LeaderOptions me = Options("b");
  api::core::Lease lease = HeldBy("a", clock.WallNow());
  // Ten lease durations of the holder renewing every retry period.
  for (int i = 0; i < 60; ++i) {
    INFO("try " << i);
    REQUIRE(DecideLease(lease, me, clock.Now(), &seen) == LeaseStep::kStandBy);
    CHECK(seen.holder == "a");
    clock.Advance(seconds(2));
    lease = LeaseToWrite(LeaseStep::kRenew, lease, Options("a"), clock.WallNow());
  }
}

TEST_CASE("a Lease not renewed for a whole duration on our clock is taken over", "[leader]") {
  FakeClock clock;
  LeaseObservation seen;
  const LeaderOptions me = Options("b");
  // Written long ago by the holder's clock: skew does not matter, only what we saw and when.
  const api::core::Lease lease = HeldBy("a", clock.WallNow() - std::chrono::hours(5));
  REQUIRE(DecideLease(lease, me, clock.Now(), &seen) == LeaseStep::kStandBy);
  clock.Advance(seconds(12));
  CHECK(DecideLease(lease, me, clock.Now(), &seen) == LeaseStep::kStandBy);  // not yet past
  clock.Advance(milliseconds(1));
  REQUIRE(DecideLease(lease, me, clock.Now(), &seen) == LeaseStep::kTakeOver);

  const api::core::Lease taken = LeaseToWrite(LeaseStep::kTakeOver, lease, me, clock.WallNow());
  CHECK(taken.spec.holder_identity == "b");
  CHECK(taken.spec.lease_transitions == 1);
  CHECK(taken.spec.acquire_time == FormatMicroTime(clock.WallNow()));
  CHECK(taken.spec.renew_time == taken.spec.acquire_time);
  CHECK(taken.metadata == lease.metadata);  // resourceVersion kept: the update is conditional
}

TEST_CASE("the holder's own lease duration counts, not ours", "[leader]") {
  FakeClock clock;
  LeaseObservation seen;
  api::core::Lease lease = HeldBy("a", clock.WallNow());
  lease.spec.lease_duration_seconds = 60;
  REQUIRE(DecideLease(lease, Options("b"), clock.Now(), &seen) == LeaseStep::kStandBy);
  clock.Advance(seconds(59));
  CHECK(DecideLease(lease, Options("b"), clock.Now(), &seen) == LeaseStep::kStandBy);
  clock.Advance(seconds(2));
  CHECK(DecideLease(lease, Options("b"), clock.Now(), &seen) == LeaseStep::kTakeOver);
}

TEST_CASE("a released Lease is taken over at once, ours is renewed", "[leader]") {
  FakeClock clock;
  LeaseObservation seen;
  api::core::Lease released = HeldBy("a", clock.WallNow());
  released.spec.holder_identity = "";
  CHECK(DecideLease(released, Options("b"), clock.Now(), &seen) == LeaseStep::kTakeOver);

  api::core::Lease mine = HeldBy("b", clock.WallNow());
  mine.spec.lease_transitions = 4;
  clock.Advance(std::chrono::hours(1));  // even when long unrenewed
  REQUIRE(DecideLease(mine, Options("b"), clock.Now(), &seen) == LeaseStep::kRenew);
  const api::core::Lease renewed =
      LeaseToWrite(LeaseStep::kRenew, mine, Options("b"), clock.WallNow());
  CHECK(renewed.spec.lease_transitions == 4);
  CHECK(renewed.spec.acquire_time == mine.spec.acquire_time);
  CHECK(renewed.spec.renew_time == FormatMicroTime(clock.WallNow()));
}

TEST_CASE("the run loop starts, loses, and misses the renew deadline", "[leader]") {
  FakeClock clock;
  const Clock::SteadyTime renewed = clock.Now();
  const milliseconds deadline(8'000);
  const StatusOr<bool> held = true;
  const StatusOr<bool> other = false;
  const StatusOr<bool> failed = UnavailableError("connection refused");

  CHECK(NextTransition(false, held, clock.Now(), renewed, deadline) == LeaderTransition::kStarted);
  CHECK(NextTransition(true, held, clock.Now(), renewed, deadline) == LeaderTransition::kNone);
  CHECK(NextTransition(true, other, clock.Now(), renewed, deadline) == LeaderTransition::kLost);
  CHECK(NextTransition(false, other, clock.Now(), renewed, deadline) == LeaderTransition::kNone);
  CHECK(NextTransition(false, failed, clock.Now(), renewed, deadline) == LeaderTransition::kNone);

  // A leader whose renewals fail keeps leading until the renew deadline has passed.
  clock.Advance(deadline);
  CHECK(NextTransition(true, failed, clock.Now(), renewed, deadline) == LeaderTransition::kNone);
  clock.Advance(milliseconds(1));
  CHECK(NextTransition(true, failed, clock.Now(), renewed, deadline) ==
        LeaderTransition::kDeadlineMissed);
}

}  // namespace
}  // namespace xpu::controller
