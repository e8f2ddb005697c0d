// The binaries' log: one line per event, `time=<MicroTime> level=<level> msg="..."` (quotes and
// backslashes escaped, newlines folded), at or above a chosen level. Thread-safe. Callers keep
// secrets (tokens, keys) out of messages.
#ifndef XPU_BASE_LOG_H_
#define XPU_BASE_LOG_H_

#include <ostream>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "base/status.h"

namespace xpu {

class Logger {
 public:
  // `level`: "error", "warning", "info" or "debug" (anything else acts as debug).
  Logger(std::ostream& out, std::string_view level);

  // Whether "error", "warning", "info", "debug" is a level name.
  static bool IsLevel(std::string_view level);
  // OK for a level name, else the error of the binaries' --log-level flag naming it.
  static Status CheckLevelFlag(std::string_view level);

  void Log(std::string_view level, std::string_view msg);
  void Error(std::string_view msg) { Log("error", msg); }
  void Warning(std::string_view msg) { Log("warning", msg); }
  void Info(std::string_view msg) { Log("info", msg); }
  void Debug(std::string_view msg) { Log("debug", msg); }

 private:
  static int Rank(std::string_view level);

  std::ostream& out_ GUARDED_BY(mu_);  // one line at a time
  const int level_;
  Mutex mu_;
};

}  // namespace xpu

#endif  // XPU_BASE_LOG_H_
