// What a failed sync of a work-queue key leads to.
//
// A terminal error is one the API server answers for the request itself (api/client/events.h:
// every 4xx but 409 Conflict/AlreadyExists and 429 Too Many Requests). Retrying the same request
// with backoff cannot succeed, so the key is not requeued: the error is recorded once (a Warning
// Event and xpu_dra_controller_sync_terminal_errors_total), and the key is synced again when its
// inputs change (a watch event) or at the periodic resync. Everything else (409, 429, 5xx, no
// answer, our own errors) backs off and retries; kCancelled (this replica stopped leading) does
// neither.
#ifndef XPU_CONTROLLER_SYNC_ERRORS_H_
#define XPU_CONTROLLER_SYNC_ERRORS_H_

#include <cstddef>
#include <map>
#include <string>

#include "base/mutex.h"
#include "base/status.h"

namespace xpu::controller {

enum class SyncFailure { kRetry, kTerminal, kStop };

SyncFailure ClassifySyncError(const Status& status);

// The terminal error last recorded for each key, so that each is reported once. Thread-safe.
class TerminalErrors {
 public:
  // True when `status` is new for `key` (no error recorded, or another one): report it.
  bool Record(const std::string& key, const Status& status);
  // After a successful sync: the key's next terminal error is reported again.
  void Clear(const std::string& key);
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::map<std::string, std::string> last_ GUARDED_BY(mu_);  // key -> code and message
};

}  // namespace xpu::controller

#endif  // XPU_CONTROLLER_SYNC_ERRORS_H_
