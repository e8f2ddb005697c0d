#include "base/time.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

namespace xpu {
namespace {

std::string Format(std::chrono::system_clock::time_point t, bool micro) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  int64_t secs = us.count() / 1'000'000;
  int64_t frac = us.count() % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    --secs;
  }
  const auto tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  if (micro) {
    std::snprintf(buf + n, sizeof(buf) - n, ".%06dZ", static_cast<int>(frac));
  } else {
    std::snprintf(buf + n, sizeof(buf) - n, "Z");
  }
  return buf;
}

bool Digits(std::string_view s, size_t pos, size_t count, int* out) {
  if (pos + count > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string FormatTime(std::chrono::system_clock::time_point t) { return Format(t, false); }
std::string FormatMicroTime(std::chrono::system_clock::time_point t) { return Format(t, true); }

StatusOr<std::chrono::system_clock::time_point> ParseTime(std::string_view text) {
  auto bad = [&] {
    return InvalidArgumentError("parse time \"" + std::string(text) + "\": not RFC 3339");
  };
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(text, 0, 4, &year) || text.size() < 20 || text[4] != '-' ||
      !Digits(text, 5, 2, &month) || text[7] != '-' || !Digits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !Digits(text, 11, 2, &hour) || text[13] != ':' ||
      !Digits(text, 14, 2, &minute) || text[16] != ':' || !Digits(text, 17, 2, &second)) {
    return bad();
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad();
  }
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) micros = micros * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return bad();
    for (int i = digits; i < 6; ++i) micros *= 10;
  }
  int64_t offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z') && pos + 1 == text.size()) {
    offset = 0;
  } else if (pos + 6 == text.size() && (text[pos] == '+' || text[pos] == '-') &&
             text[pos + 3] == ':') {
    int oh = 0, om = 0;
    if (!Digits(text, pos + 1, 2, &oh) || !Digits(text, pos + 4, 2, &om)) return bad();
    offset = (text[pos] == '+' ? 1 : -1) * (int64_t{oh} * 3600 + int64_t{om} * 60);
  } else {
    return bad();
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const int64_t secs = static_cast<int64_t>(timegm(&tm)) - offset;
  // system_clock counts nanoseconds in 64 bits: about 1677 to 2262. Past either end the time reads
  // as that end (a year-2999 expiry is "never").
  using Wall = std::chrono::system_clock;
  constexpr int64_t kMaxSeconds =
      std::chrono::duration_cast<std::chrono::seconds>(Wall::time_point::max().time_since_epoch())
          .count() -
      1;
  if (secs >= kMaxSeconds) return Wall::time_point::max();
  if (secs <= -kMaxSeconds) return Wall::time_point::min();
  return Wall::time_point(std::chrono::duration_cast<Wall::duration>(
      std::chrono::microseconds(secs * 1'000'000 + micros)));
}

}  // namespace xpu
