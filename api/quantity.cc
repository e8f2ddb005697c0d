#include "api/quantity.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace xpu::api {
namespace {

using Int128 = __int128;
using Format = Quantity::Format;

constexpr int kMinScale = -9;  // nano
constexpr int kMaxScale = 18;  // exa
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

struct Suffix {
  std::string_view name;
  Format format;
  // A power of 10 for decimalSI, a power of 1024 for binarySI.
  int exponent;
};

constexpr std::array<Suffix, 15> kSuffixes = {{
    {"n", Format::kDecimalSI, -9},
    {"u", Format::kDecimalSI, -6},
    {"m", Format::kDecimalSI, -3},
    {"k", Format::kDecimalSI, 3},
    {"M", Format::kDecimalSI, 6},
    {"G", Format::kDecimalSI, 9},
    {"T", Format::kDecimalSI, 12},
    {"P", Format::kDecimalSI, 15},
    {"E", Format::kDecimalSI, 18},
    {"Ki", Format::kBinarySI, 1},
    {"Mi", Format::kBinarySI, 2},
    {"Gi", Format::kBinarySI, 3},
    {"Ti", Format::kBinarySI, 4},
    {"Pi", Format::kBinarySI, 5},
    {"Ei", Format::kBinarySI, 6},
}};

const Suffix* FindSuffix(std::string_view name) {
  const auto* it = std::find_if(kSuffixes.begin(), kSuffixes.end(),
                                [name](const Suffix& s) { return s.name == name; });
  return it == kSuffixes.end() ? nullptr : it;
}

// The suffix for a power of 10 (decimalSI) or 1024 (binarySI); "" for 0 or when there is none.
std::string_view SuffixName(Format format, int exponent) {
  const auto* it = std::find_if(kSuffixes.begin(), kSuffixes.end(), [&](const Suffix& s) {
    return s.format == format && s.exponent == exponent;
  });
  return it == kSuffixes.end() ? std::string_view() : it->name;
}

size_t CountDigits(std::string_view text, size_t pos) {
  size_t n = 0;
  while (pos + n < text.size() && IsAsciiDigit(text[pos + n])) ++n;
  return n;
}

Int128 Pow10(int n) {
  Int128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

int DigitCount(uint64_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

std::string Int128ToString(Int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : v;
  std::string out;
  while (u != 0) {
    out.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (negative) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

int64_t Saturate(Int128 v) {
  if (v > kInt64Max) return kInt64Max;
  if (v < kInt64Min) return kInt64Min;
  return static_cast<int64_t>(v);
}

// Multiplies the decimal digit string `digits` (most significant first) by 1024, in place.
void MultiplyBy1024(std::string& digits) {
  unsigned carry = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    const unsigned d = static_cast<unsigned>(*it - '0') * 1024 + carry;
    *it = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  std::string head;
  while (carry != 0) {
    head.push_back(static_cast<char>('0' + carry % 10));
    carry /= 10;
  }
  std::reverse(head.begin(), head.end());
  digits.insert(0, head);
}

// Adds one to the decimal digit string `digits`, in place.
void Increment(std::string& digits) {
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (*it != '9') {
      ++*it;
      return;
    }
    *it = '0';
  }
  digits.insert(digits.begin(), '1');
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  auto invalid = [text](std::string_view why) {
    return InvalidArgumentError("invalid quantity \"" + std::string(text) +
                                "\": " + std::string(why));
  };
  size_t pos = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) ++pos;
  const size_t int_digits = CountDigits(text, pos);
  std::string digits(text.substr(pos, int_digits));
  pos += int_digits;
  size_t frac_digits = 0;
  if (pos < text.size() && text[pos] == '.') {
    frac_digits = CountDigits(text, pos + 1);
    digits.append(text.substr(pos + 1, frac_digits));
    pos += 1 + frac_digits;
  }
  if (digits.empty()) {
    return invalid("expected a number with an optional suffix, e.g. 64Gi, 500m or 1e3");
  }

  const std::string_view suffix = text.substr(pos);
  Format format = Format::kDecimalSI;
  int64_t scale = -static_cast<int64_t>(frac_digits);
  int binary_exponent = 0;
  if (const Suffix* s = FindSuffix(suffix); s != nullptr) {
    format = s->format;
    if (format == Format::kBinarySI) {
      binary_exponent = s->exponent;
    } else {
      scale += s->exponent;
    }
  } else if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    // A decimal exponent: [eE][+-]?digits, within the int32 range.
    std::string_view exp = suffix.substr(1);
    const bool exp_negative = exp[0] == '-';
    if (exp[0] == '-' || exp[0] == '+') exp.remove_prefix(1);
    if (exp.empty() || CountDigits(exp, 0) != exp.size()) {
      return invalid("malformed exponent \"" + std::string(suffix) +
                     "\"; expected e or E and an integer, e.g. e3 or e-3");
    }
    int64_t e = 0;
    for (char c : exp) {
      e = e * 10 + (c - '0');
      if (e > std::numeric_limits<int32_t>::max()) return invalid("exponent out of range");
    }
    format = Format::kDecimalExponent;
    scale += exp_negative ? -e : e;
  } else if (!suffix.empty()) {
    return invalid("unknown suffix \"" + std::string(suffix) +
                   "\"; expected one of Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an "
                   "exponent such as e3");
  }

  for (int i = 0; i < binary_exponent; ++i) MultiplyBy1024(digits);
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) return Quantity(0, 0, format);
  while (digits.back() == '0') {
    digits.pop_back();
    ++scale;
  }
  // Round away from zero to a whole number of nano units; the dropped digits end in a non-zero
  // one, so any drop rounds up.
  if (scale < kMinScale) {
    const int64_t drop = kMinScale - scale;
    if (drop >= static_cast<int64_t>(digits.size())) {
      digits = "1";
    } else {
      digits.resize(digits.size() - static_cast<size_t>(drop));
      Increment(digits);
    }
    scale = kMinScale;
    while (digits.back() == '0') {
      digits.pop_back();
      ++scale;
    }
  }

  constexpr std::string_view kOutOfRange =
      "out of range; at most 19 significant digits at nano precision, below about 9.2e36";
  if (digits.size() > 19) return invalid(kOutOfRange);
  uint64_t magnitude = 0;
  for (char c : digits) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  if (magnitude > static_cast<uint64_t>(kInt64Max)) return invalid(kOutOfRange);
  if (scale > kMaxScale &&
      (scale - kMaxScale > 18 ||
       static_cast<Int128>(magnitude) * Pow10(static_cast<int>(scale - kMaxScale)) > kInt64Max)) {
    return invalid(kOutOfRange);
  }
  const auto mantissa = static_cast<int64_t>(magnitude);
  // Binary values below one have no binary spelling; Kubernetes records them as decimalSI.
  if (format == Format::kBinarySI && scale < 0 && DigitCount(magnitude) <= -scale) {
    format = Format::kDecimalSI;
  }
  return Quantity(negative ? -mantissa : mantissa, static_cast<int>(scale), format);
}

Quantity Quantity::FromInt64(int64_t value, Format format) {
  int scale = 0;
  while (value != 0 && value % 10 == 0) {
    value /= 10;
    ++scale;
  }
  return Quantity(value, value == 0 ? 0 : scale, format);
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  Quantity q = FromInt64(milli, format);
  if (q.mantissa_ == 0) return q;
  q.scale_ -= 3;
  if (format == Format::kBinarySI && q.scale_ < 0 &&
      DigitCount(static_cast<uint64_t>(std::abs(q.mantissa_))) <= -q.scale_) {
    q.format_ = Format::kDecimalSI;
  }
  return q;
}

std::string Quantity::String() const {
  if (mantissa_ == 0) return "0";
  Format format = format_;
  if (format == Format::kBinarySI) {
    // Whole numbers of at least 1024 in magnitude get a binary suffix; the rest are decimalSI.
    if (scale_ >= 0) {
      Int128 value = static_cast<Int128>(mantissa_) * Pow10(scale_);
      if (value <= -1024 || value >= 1024) {
        int exponent = 0;
        while (exponent < 6 && value % 1024 == 0) {
          value /= 1024;
          ++exponent;
        }
        return Int128ToString(value) + std::string(SuffixName(Format::kBinarySI, exponent));
      }
    }
    format = Format::kDecimalSI;
  }
  // The largest exponent that is a multiple of 3 and not above scale_ (capped at 18 for
  // decimalSI, which has no larger suffix).
  int exponent = scale_ >= 0 ? scale_ - scale_ % 3 : -((-scale_ + 2) / 3 * 3);
  if (format == Format::kDecimalSI) exponent = std::min(exponent, kMaxScale);
  std::string number = Int128ToString(static_cast<Int128>(mantissa_) * Pow10(scale_ - exponent));
  if (exponent == 0) return number;
  if (format == Format::kDecimalExponent) return number + "e" + std::to_string(exponent);
  return number + std::string(SuffixName(Format::kDecimalSI, exponent));
}

namespace {

// mantissa * 10^(scale + shift), rounded away from zero to an integer, saturated to int64.
int64_t ScaledAwayFromZero(int64_t mantissa, int scale, int shift) {
  const int s = scale + shift;
  if (s >= 0) {
    if (s > 19) return mantissa > 0 ? kInt64Max : kInt64Min;
    return Saturate(static_cast<Int128>(mantissa) * Pow10(s));
  }
  const Int128 divisor = Pow10(-s);
  Int128 q = mantissa / divisor;
  if (mantissa % divisor != 0) q += mantissa > 0 ? 1 : -1;
  return Saturate(q);
}

}  // namespace

int64_t Quantity::Value() const { return ScaledAwayFromZero(mantissa_, scale_, 0); }

int64_t Quantity::MilliValue() const { return ScaledAwayFromZero(mantissa_, scale_, 3); }

std::optional<int64_t> Quantity::AsInt64() const {
  if (scale_ < 0 || scale_ > 18) return std::nullopt;
  const Int128 value = static_cast<Int128>(mantissa_) * Pow10(scale_);
  if (value > kInt64Max || value < kInt64Min) return std::nullopt;
  return static_cast<int64_t>(value);
}

int Quantity::Cmp(const Quantity& other) const {
  if (Sign() != other.Sign()) return Sign() < other.Sign() ? -1 : 1;
  if (Sign() == 0) return 0;
  // Same sign: order the magnitudes by their number of integer digits first, then digit by digit
  // after aligning the scales (which then differ by at most 18).
  const auto mag_a = static_cast<uint64_t>(std::abs(mantissa_));
  const auto mag_b = static_cast<uint64_t>(std::abs(other.mantissa_));
  const int len_a = DigitCount(mag_a) + scale_;
  const int len_b = DigitCount(mag_b) + other.scale_;
  int cmp = 0;
  if (len_a != len_b) {
    cmp = len_a < len_b ? -1 : 1;
  } else {
    const int low = std::min(scale_, other.scale_);
    const Int128 a = static_cast<Int128>(mag_a) * Pow10(scale_ - low);
    const Int128 b = static_cast<Int128>(mag_b) * Pow10(other.scale_ - low);
    cmp = (a > b) - (a < b);
  }
  return Sign() > 0 ? cmp : -cmp;
}

nlohmann::json QuantityToJson(const Quantity& q) { return q.String(); }

StatusOr<Quantity> QuantityFromJson(const nlohmann::json& json) {
  if (json.is_string()) return Quantity::Parse(json.get_ref<const std::string&>());
  if (json.is_number_unsigned()) return Quantity::Parse(std::to_string(json.get<uint64_t>()));
  if (json.is_number_integer()) return Quantity::Parse(std::to_string(json.get<int64_t>()));
  if (json.is_null()) return Quantity();
  return InvalidArgumentError(
      std::string("expected a quantity string such as \"64Gi\" or an integer, got ") +
      json.type_name() + " " + json.dump());
}

StatusOr<int64_t> ParseQuantityBytes(std::string_view text) {
  auto invalid = [text](std::string_view why) {
    return InvalidArgumentError("invalid quantity \"" + std::string(text) +
                                "\": " + std::string(why));
  };
  const size_t digits = CountDigits(text, 0);
  if (digits == 0) {
    if (text.starts_with('-')) return invalid("must not be negative");
    return invalid("expected a whole number of bytes with an optional suffix, e.g. 64Gi or 80G");
  }
  const std::string_view suffix = text.substr(digits);
  if (suffix.starts_with('.')) return invalid("fractions are not supported; use a smaller unit");
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E') &&
      (IsAsciiDigit(suffix[1]) || suffix[1] == '+' || suffix[1] == '-')) {
    return invalid("exponents are not supported; use a suffix such as G or Gi");
  }
  if (!suffix.empty()) {
    const Suffix* s = FindSuffix(suffix);
    if (s == nullptr || (s->format == Format::kDecimalSI && s->exponent < 0)) {
      return invalid("unknown suffix \"" + std::string(suffix) +
                     "\"; use Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P or E");
    }
  }
  StatusOr<Quantity> q = Quantity::Parse(text);
  std::optional<int64_t> bytes = q.ok() ? q->AsInt64() : std::nullopt;
  if (!bytes) return invalid("too large; at most 2^63-1 bytes");
  return *bytes;
}

std::string FormatQuantityBytes(int64_t bytes) {
  if (bytes <= 0) return std::to_string(bytes);
  const std::string binary = Quantity::FromInt64(bytes, Format::kBinarySI).String();
  const std::string decimal = Quantity::FromInt64(bytes, Format::kDecimalSI).String();
  // Both are digits then a suffix; the shorter digit run is the smaller number.
  auto number = [](const std::string& s) {
    return std::string_view{s}.substr(0, CountDigits(s, 0));
  };
  const std::string_view b = number(binary);
  const std::string_view d = number(decimal);
  const bool binary_wins = b.size() != d.size() ? b.size() < d.size() : b <= d;
  return binary_wins ? binary : decimal;
}

}  // namespace xpu::api
