#include "api/client/retry.h"

#include <catch2/catch.hpp>
#include <chrono>

namespace xpu::api::client {
namespace {

using std::chrono::milliseconds;

TEST_CASE("RateLimiter lets a burst through, then paces at qps", "[retry]") {
  RateLimiter limiter(10, 3);
  const auto t0 = PaceTime() + std::chrono::hours(1);
  CHECK(limiter.Reserve(t0) == PaceDuration::zero());
  CHECK(limiter.Reserve(t0) == PaceDuration::zero());
  CHECK(limiter.Reserve(t0) == PaceDuration::zero());
  // The fourth waits one token (100 ms at 10 qps), the fifth queues behind it.
  CHECK(std::chrono::duration_cast<milliseconds>(limiter.Reserve(t0)).count() == 100);
  CHECK(std::chrono::duration_cast<milliseconds>(limiter.Reserve(t0)).count() == 200);
  // A second later the bucket has refilled what was borrowed and a little more.
  CHECK(limiter.Reserve(t0 + std::chrono::seconds(1)) == PaceDuration::zero());
}

TEST_CASE("RateLimiter never holds more than the burst", "[retry]") {
  RateLimiter limiter(1, 2);
  const auto t0 = PaceTime() + std::chrono::hours(1);
  CHECK(limiter.Reserve(t0) == PaceDuration::zero());
  const auto later = t0 + std::chrono::hours(1);
  CHECK(limiter.Reserve(later) == PaceDuration::zero());
  CHECK(limiter.Reserve(later) == PaceDuration::zero());
  CHECK(limiter.Reserve(later) > PaceDuration::zero());
}

TEST_CASE("RateLimiter with qps 0 never waits", "[retry]") {
  RateLimiter limiter(0, 1);
  for (int i = 0; i < 100; ++i) {
    CHECK(limiter.Reserve(std::chrono::steady_clock::now()) == PaceDuration::zero());
  }
}

TEST_CASE("Backoff grows within its cap, with jitter, and stops after max_attempts", "[retry]") {
  BackoffPolicy policy{milliseconds(100), milliseconds(1000), 2, 5};
  Backoff backoff(policy, 42);
  const int caps[] = {100, 200, 400, 800};
  for (int cap : caps) {
    const auto d = backoff.Next();
    REQUIRE(d.has_value());
    CHECK(*d >= PaceDuration::zero());
    CHECK(*d <= milliseconds(cap));
  }
  CHECK_FALSE(backoff.Next().has_value());
  CHECK(backoff.attempts() == 5);
}

TEST_CASE("Backoff jitter differs between seeds and repeats for one seed", "[retry]") {
  BackoffPolicy policy{milliseconds(1000), milliseconds(1000), 2, 10};
  Backoff a(policy, 1);
  Backoff b(policy, 1);
  Backoff c(policy, 2);
  const auto x = *a.Next();
  CHECK(x == *b.Next());
  CHECK(x != *c.Next());
}

TEST_CASE("Backoff honours a longer Retry-After, capped", "[retry]") {
  BackoffPolicy policy{milliseconds(10), milliseconds(1000), 2, 10, std::chrono::seconds(30)};
  Backoff backoff(policy, 7);
  CHECK(*backoff.Next(std::chrono::seconds(2)) == std::chrono::seconds(2));
  // A server asking for an hour is capped at max_retry_after.
  CHECK(*backoff.Next(std::chrono::seconds(3600)) == std::chrono::seconds(30));
}

TEST_CASE("ParseRetryAfter reads seconds and HTTP dates", "[retry]") {
  CHECK(ParseRetryAfter("1", 0) == std::chrono::seconds(1));
  CHECK(ParseRetryAfter(" 120 ", 0) == std::chrono::seconds(120));
  // 784111777 is Sun, 06 Nov 1994 08:49:37 GMT.
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 5) == std::chrono::seconds(5));
  CHECK(ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 5) == std::chrono::seconds(0));
  CHECK_FALSE(ParseRetryAfter("", 0).has_value());
  CHECK_FALSE(ParseRetryAfter("soon", 0).has_value());
  CHECK_FALSE(ParseRetryAfter("-3", 0).has_value());
  CHECK_FALSE(ParseRetryAfter("99999999999", 0).has_value());
}

}  // namespace
}  // namespace xpu::api::client
