// Kubernetes timestamps: Time ("2026-11-30T10:05:00Z") and MicroTime
// ("2026-11-30T10:05:00.123456Z"), both RFC 3339 in UTC, and their parsing. Pure functions.
#ifndef XPU_BASE_TIME_H_
#define XPU_BASE_TIME_H_

#include <chrono>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu {

// "2026-11-30T10:05:00Z", whole seconds (truncated).
std::string FormatTime(std::chrono::system_clock::time_point t);
// "2026-11-30T10:05:00.123456Z".
std::string FormatMicroTime(std::chrono::system_clock::time_point t);
// RFC 3339: "YYYY-MM-DDTHH:MM:SS", optional fraction (any number of digits, kept to the
// microsecond), then "Z" or "+hh:mm" / "-hh:mm". kInvalidArgument quoting the text otherwise.
// Times past the clock's range (about 1677 to 2262) read as its first or last time_point.
StatusOr<std::chrono::system_clock::time_point> ParseTime(std::string_view text);

}  // namespace xpu

#endif  // XPU_BASE_TIME_H_
