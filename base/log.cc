#include "base/log.h"

#include <chrono>

#include "base/time.h"

namespace xpu {

Logger::Logger(std::ostream& out, std::string_view level) : out_(out), level_(Rank(level)) {}

int Logger::Rank(std::string_view level) {
  return level == "error" ? 0 : level == "warning" ? 1 : level == "info" ? 2 : 3;
}

bool Logger::IsLevel(std::string_view level) {
  return level == "error" || level == "warning" || level == "info" || level == "debug";
}

Status Logger::CheckLevelFlag(std::string_view level) {
  if (IsLevel(level)) return OkStatus();
  return InvalidArgumentError("--log-level: \"" + std::string(level) +
                              "\" is not error, warning, info or debug");
}

void Logger::Log(std::string_view level, std::string_view msg) {
  if (Rank(level) > level_) return;
  std::string quoted;
  quoted.reserve(msg.size());
  for (char c : msg) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c == '\n' ? ' ' : c;
  }
  const std::string now = FormatMicroTime(std::chrono::system_clock::now());
  MutexLock lock(mu_);
  out_ << "time=" << now << " level=" << level << " msg=\"" << quoted << "\"" << std::endl;
}

}  // namespace xpu
