#include "api/client/retry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <thread>

namespace xpu::api::client {

RateLimiter::RateLimiter(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)) {}

PaceDuration RateLimiter::Reserve(PaceTime now) {
  if (qps_ <= 0) return PaceDuration::zero();
  MutexLock lock(mu_);
  if (!started_) {
    started_ = true;
    last_ = now;
  }
  if (now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return PaceDuration::zero();
  return std::chrono::duration_cast<PaceDuration>(std::chrono::duration<double>(-tokens_ / qps_));
}

void RateLimiter::Wait() {
  const auto delay = Reserve(std::chrono::steady_clock::now());
  if (delay > PaceDuration::zero()) std::this_thread::sleep_for(delay);
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), random_(seed) {}

std::optional<PaceDuration> Backoff::Next(std::optional<std::chrono::seconds> retry_after) {
  if (attempts_ >= policy_.max_attempts) return std::nullopt;
  const double cap_ms = std::min(
      static_cast<double>(policy_.max.count()),
      static_cast<double>(policy_.initial.count()) * std::pow(policy_.multiplier, attempts_ - 1));
  ++attempts_;
  std::uniform_real_distribution<double> jitter(0, cap_ms);
  auto delay = std::chrono::duration_cast<PaceDuration>(
      std::chrono::duration<double, std::milli>(jitter(random_)));
  if (retry_after) {
    const auto server = std::min<PaceDuration>(*retry_after, policy_.max_retry_after);
    delay = std::max(delay, server);
  }
  return delay;
}

std::optional<std::chrono::seconds> ParseRetryAfter(const std::string& value, int64_t now_unix) {
  std::string v = value;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())) != 0) v.pop_back();
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front())) != 0) v.erase(0, 1);
  if (v.empty()) return std::nullopt;
  if (std::all_of(v.begin(), v.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    if (v.size() > 9) return std::nullopt;
    return std::chrono::seconds(std::stol(v));
  }
  // IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  if (strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return std::nullopt;
  const int64_t at = timegm(&tm);
  return std::chrono::seconds(std::max<int64_t>(0, at - now_unix));
}

}  // namespace xpu::api::client
