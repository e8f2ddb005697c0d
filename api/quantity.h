// Kubernetes quantities ("64Gi", "500m", "1e3"), with the semantics of Kubernetes'
// resource.Quantity (k8s.io/apimachinery/pkg/api/resource), and the byte-only subset a node
// description uses.
//
// Grammar (as Kubernetes documents it):
//   <quantity>     ::= <signedNumber><suffix>
//   <signedNumber> ::= [+|-]<number>;  <number> ::= <digits> | <digits>.<digits> | <digits>. |
//                      .<digits>
//   <suffix>       ::= <binarySI> | <decimalSI> | <decimalExponent>
//   <binarySI>     ::= Ki | Mi | Gi | Ti | Pi | Ei                (powers of 1024)
//   <decimalSI>    ::= n | u | m | "" | k | M | G | T | P | E    (powers of 1000)
//   <decimalExponent> ::= e<signedInteger> | E<signedInteger>     ("E" alone is exa)
// No white space anywhere. A quantity remembers the format of its suffix, and String() writes the
// canonical spelling in that format, as Kubernetes does:
//   - values are held exactly, rounded away from zero to a whole number of nano units (1n);
//   - decimal formats use the largest exponent that is a multiple of 3 and keeps the number an
//     integer: "1000" -> "1k", "0.5" -> "500m", "1e3" -> "1e3", "12000e3" -> "12e6";
//   - binary uses the largest power of 1024 that keeps the number an integer: "1024Mi" -> "1Gi",
//     "1.5Gi" -> "1536Mi"; binary values below 1024 in magnitude, or not a whole number, are
//     written in decimalSI: "0.5Ki" -> "512", "1.1Gi" -> "1181116006400m";
//   - zero is "0" in every format, and a leading '+' is dropped.
//
// Deliberate differences from Kubernetes (which holds large values as big decimals):
//   - a value must be mantissa * 10^scale with |mantissa| <= 2^63-1 and -9 <= scale <= 18 (so at
//     most 19 significant digits at nano precision, and below about 9.2e36); anything else is
//     rejected as out of range. Kubernetes caps binary values at 2^63-1 instead ("8Ei" becomes
//     9223372036854775807); here "8Ei" is an error.
//   - a number needs at least one digit: "Gi", "-" and "." are rejected (Kubernetes reads some
//     such inputs as zero).
//   - decimalSI values of 1e21 and more are written with the largest suffix, "1000E".
//
// Quantity is an immutable value type; thread-compatible.
#ifndef XPU_API_QUANTITY_H_
#define XPU_API_QUANTITY_H_

#include <compare>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xpu::api {

class Quantity {
 public:
  // The suffix family a quantity was written in; String() keeps it.
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  // Zero, decimalSI.
  Quantity() = default;

  // `text` as a quantity; an invalid-argument error naming `text` and the problem otherwise
  // ("invalid quantity \"1Gb\": unknown suffix \"Gb\"; ...").
  static StatusOr<Quantity> Parse(std::string_view text);
  // The integer `value` in `format`. Precondition: value != INT64_MIN.
  static Quantity FromInt64(int64_t value, Format format = Format::kDecimalSI);
  // `milli` thousandths in `format` ("1500m" for 1500). Precondition: milli != INT64_MIN.
  static Quantity FromMilli(int64_t milli, Format format = Format::kDecimalSI);

  Format format() const { return format_; }
  bool IsZero() const { return mantissa_ == 0; }
  // -1, 0 or 1.
  int Sign() const { return (mantissa_ > 0) - (mantissa_ < 0); }

  // The canonical spelling (see the file comment); Parse(String()) gives an equal quantity with
  // the same String().
  std::string String() const;

  // The value rounded away from zero to an integer, saturated to the int64 range.
  int64_t Value() const;
  // The value in thousandths, rounded away from zero, saturated to the int64 range.
  int64_t MilliValue() const;
  // The value when it is an integer that fits in int64; nullopt otherwise.
  std::optional<int64_t> AsInt64() const;

  // Compares values; the format does not matter ("1Gi" equals "1073741824"). -1, 0 or 1.
  int Cmp(const Quantity& other) const;
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.Cmp(b) == 0; }
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.Cmp(b) <=> 0;
  }

 private:
  Quantity(int64_t mantissa, int scale, Format format)
      : mantissa_(mantissa), scale_(scale), format_(format) {}

  // value = mantissa_ * 10^scale_, with no trailing zeros in mantissa_ (0 has scale 0).
  int64_t mantissa_ = 0;
  int scale_ = 0;
  Format format_ = Format::kDecimalSI;
};

// The wire form: a JSON string with the canonical spelling.
nlohmann::json QuantityToJson(const Quantity& q);
// A JSON string parsed with Quantity::Parse, or a JSON integer (as Kubernetes also accepts); null
// reads as zero, as in Kubernetes. Other JSON types, and floating-point numbers (whose spelling
// is lost), are an invalid-argument error.
StatusOr<Quantity> QuantityFromJson(const nlohmann::json& json);

// The number of bytes `text` stands for; an invalid-argument error naming `text` and the problem
// when it is malformed or does not fit in an int64_t. This is the subset a node description
// needs: a non-negative integer with an optional binary (Ki Mi Gi Ti Pi Ei) or decimal
// (k M G T P E) suffix. Fractions ("1.5Gi"), exponents ("1e9"), signs and milli units are
// rejected with a message saying so.
StatusOr<int64_t> ParseQuantityBytes(std::string_view text);

// The exact spelling of `bytes` with the suffix that leaves the smallest number: "32Gi", "80G",
// "1536Mi", "1k", "1023" (binary wins a tie). Round-trips through ParseQuantityBytes for
// bytes >= 0; negative values are written as plain integers.
std::string FormatQuantityBytes(int64_t bytes);

}  // namespace xpu::api

#endif  // XPU_API_QUANTITY_H_
