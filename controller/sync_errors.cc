#include "controller/sync_errors.h"

#include "api/client/events.h"

namespace xpu::controller {

SyncFailure ClassifySyncError(const Status& status) {
  if (status.code() == StatusCode::kCancelled) return SyncFailure::kStop;
  return api::client::IsTerminalApiError(status) ? SyncFailure::kTerminal : SyncFailure::kRetry;
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
