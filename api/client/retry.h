// The client's pacing: a token-bucket rate limiter (QPS with a burst, as client-go's) and
// exponential backoff with full jitter that honours the server's Retry-After. Both take the
// current time from the caller so they are tested without sleeping.
#ifndef XPU_API_CLIENT_RETRY_H_
#define XPU_API_CLIENT_RETRY_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "base/mutex.h"

namespace xpu::api::client {

// The pacing's time: steady, and handed in by the caller.
using PaceTime = std::chrono::steady_clock::time_point;
using PaceDuration = std::chrono::steady_clock::duration;

// Tokens refill at `qps` per second up to `burst`. Thread-safe.
class RateLimiter {
 public:
  // qps <= 0 disables limiting.
  RateLimiter(double qps, int burst);
  // Takes one token and returns how long the caller must wait before using it (zero when one
  // was available). Reservations queue: each later caller waits behind earlier ones.
  PaceDuration Reserve(PaceTime now);
  // Reserve(now) and sleep for it.
  void Wait();

 private:
  const double qps_;
  const double burst_;
  Mutex mu_;
  double tokens_ GUARDED_BY(mu_);  // may go negative (queued reservations)
  PaceTime last_ GUARDED_BY(mu_){};
  bool started_ GUARDED_BY(mu_) = false;
};

struct BackoffPolicy {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds max{10'000};
  double multiplier = 2;
  int max_attempts = 6;                      // attempts in all, the first included
  std::chrono::seconds max_retry_after{60};  // the most a server's Retry-After can ask for
};

// Delays between attempts: a random duration in [0, min(max, initial * multiplier^n)] ("full
// jitter"), or the server's Retry-After when that is longer (capped at max_retry_after).
// Not thread-safe; one per request.
class Backoff {
 public:
  Backoff(BackoffPolicy policy, uint64_t seed);
  // The delay before the next attempt; nullopt when attempts are used up.
  std::optional<PaceDuration> Next(std::optional<std::chrono::seconds> retry_after = {});
  int attempts() const { return attempts_; }

 private:
  BackoffPolicy policy_;
  std::mt19937_64 random_;
  int attempts_ = 1;
};

// A Retry-After header value: delay-seconds, or an HTTP-date relative to `now_unix` (seconds
// since the epoch). nullopt when unparseable.
std::optional<std::chrono::seconds> ParseRetryAfter(const std::string& value, int64_t now_unix);

}  // namespace xpu::api::client

#endif  // XPU_API_CLIENT_RETRY_H_
