#include "controller/sync_errors.h"

namespace xpu::controller {

SyncFailure ClassifySyncError(const Status& status) {
  switch (status.code()) {
    case StatusCode::kCancelled:
      return SyncFailure::kStop;
    case StatusCode::kInvalidArgument:   // 400, 422
    case StatusCode::kUnauthenticated:   // 401
    case StatusCode::kPermissionDenied:  // 403
    case StatusCode::kNotFound:          // 404
    case StatusCode::kOutOfRange:        // 410
      return SyncFailure::kTerminal;
    default:
      return SyncFailure::kRetry;
  }
}

bool TerminalErrors::Record(const std::string& key, const Status& status) {
  std::string what = std::string(StatusCodeName(status.code())) + ": " + status.message();
  MutexLock lock(mu_);
  auto [it, inserted] = last_.try_emplace(key, what);
  if (inserted) return true;
  if (it->second == what) return false;
  it->second = std::move(what);
  return true;
}

void TerminalErrors::Clear(const std::string& key) {
  MutexLock lock(mu_);
  last_.erase(key);
}

size_t TerminalErrors::size() const {
  MutexLock lock(mu_);
  return last_.size();
}

}  // namespace xpu::controller
