#include "api/quantity.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace xpu::api {
namespace {

struct Suffix {
  std::string_view name;
  int64_t factor;
};

// Binary first, so that FormatQuantityBytes prefers it when both leave the same number.
constexpr std::array<Suffix, 12> kSuffixes = {{
    {"Ki", int64_t{1} << 10},
    {"Mi", int64_t{1} << 20},
    {"Gi", int64_t{1} << 30},
    {"Ti", int64_t{1} << 40},
    {"Pi", int64_t{1} << 50},
    {"Ei", int64_t{1} << 60},
    {"k", 1'000},
    {"M", 1'000'000},
    {"G", 1'000'000'000},
    {"T", 1'000'000'000'000},
    {"P", 1'000'000'000'000'000},
    {"E", 1'000'000'000'000'000'000},
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

StatusOr<int64_t> ParseQuantityBytes(std::string_view text) {
  auto invalid = [text](std::string_view why) {
    return InvalidArgumentError("invalid quantity \"" + std::string(text) +
                                "\": " + std::string(why));
  };
  size_t digits = 0;
  while (digits < text.size() && IsDigit(text[digits])) ++digits;
  if (digits == 0) {
    if (text.starts_with('-')) return invalid("must not be negative");
    return invalid("expected a whole number of bytes with an optional suffix, e.g. 64Gi or 80G");
  }
  const std::string_view suffix = text.substr(digits);
  if (suffix.starts_with('.')) return invalid("fractions are not supported; use a smaller unit");
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E') &&
      (IsDigit(suffix[1]) || suffix[1] == '+' || suffix[1] == '-')) {
    return invalid("exponents are not supported; use a suffix such as G or Gi");
  }
  int64_t factor = 1;
  if (!suffix.empty()) {
    const auto* it = std::find_if(kSuffixes.begin(), kSuffixes.end(),
                                  [suffix](const Suffix& s) { return s.name == suffix; });
    if (it == kSuffixes.end()) {
      return invalid("unknown suffix \"" + std::string(suffix) +
                     "\"; use Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P or E");
    }
    factor = it->factor;
  }
  int64_t value = 0;
  int64_t bytes = 0;
  const std::errc ec = std::from_chars(text.data(), text.data() + digits, value).ec;
  if (ec != std::errc() || __builtin_mul_overflow(value, factor, &bytes)) {
    return invalid("too large; at most 2^63-1 bytes");
  }
  return bytes;
}

std::string FormatQuantityBytes(int64_t bytes) {
  int64_t best = bytes;
  std::string_view best_suffix;
  for (const Suffix& s : kSuffixes) {
    if (bytes > 0 && bytes % s.factor == 0 && bytes / s.factor < best) {
      best = bytes / s.factor;
      best_suffix = s.name;
    }
  }
  return std::to_string(best) + std::string(best_suffix);
}

}  // namespace xpu::api
