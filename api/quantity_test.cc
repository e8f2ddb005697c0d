#include "api/quantity.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/testing/require_ok.h"

namespace xpu::api {
namespace {

using Catch::Matchers::Contains;
using Format = Quantity::Format;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Quantity MustParse(const std::string& text) {
  StatusOr<Quantity> q = Quantity::Parse(text);
  INFO(text << ": " << q.status().ToString());
  REQUIRE_OK(q);
  return *q;
}

// Checks that reading `text` failed with an invalid-argument error naming it and why.
void CheckInvalid(const Status& status, const std::string& text, const std::string& why) {
  INFO(text);
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(), Contains("invalid quantity \"" + text + "\": " + why));
}

TEST_CASE("Quantity::Parse and String give the canonical Kubernetes spelling") {
  struct Case {
    std::string text;
    std::string canonical;
    Format format;
  };
  const std::vector<Case> cases = {
      {"64Gi", "64Gi", Format::kBinarySI},
      {"500m", "500m", Format::kDecimalSI},
      {"1e3", "1e3", Format::kDecimalExponent},
      {"0.5", "500m", Format::kDecimalSI},
      {"1.5Gi", "1536Mi", Format::kBinarySI},
      {"1024Mi", "1Gi", Format::kBinarySI},
      {"1000m", "1", Format::kDecimalSI},
      {"1000", "1k", Format::kDecimalSI},
      {"1024", "1024", Format::kDecimalSI},
      {"100M", "100M", Format::kDecimalSI},
      {"12e6", "12e6", Format::kDecimalExponent},
      {"12000e3", "12e6", Format::kDecimalExponent},
      {"0", "0", Format::kDecimalSI},
      {"-0", "0", Format::kDecimalSI},
      {"0Gi", "0", Format::kBinarySI},
      {"000123", "123", Format::kDecimalSI},
      {"1.000", "1", Format::kDecimalSI},
      {"-1Gi", "-1Gi", Format::kBinarySI},
      {"-1.5Gi", "-1536Mi", Format::kBinarySI},
      {"+1", "1", Format::kDecimalSI},
      {".5", "500m", Format::kDecimalSI},
      {"5.", "5", Format::kDecimalSI},
      {"-.5", "-500m", Format::kDecimalSI},
      {"1.5", "1500m", Format::kDecimalSI},
      {"1200m", "1200m", Format::kDecimalSI},
      {"0.1m", "100u", Format::kDecimalSI},
      {"1n", "1n", Format::kDecimalSI},
      {"1u", "1u", Format::kDecimalSI},
      {"1000u", "1m", Format::kDecimalSI},
      {"123456789n", "123456789n", Format::kDecimalSI},
      {"1k", "1k", Format::kDecimalSI},
      {"1E", "1E", Format::kDecimalSI},
      {"1000E", "1000E", Format::kDecimalSI},
      {"10000E", "10000E", Format::kDecimalSI},
      {"1E3", "1e3", Format::kDecimalExponent},
      {"1e+3", "1e3", Format::kDecimalExponent},
      {"1e0", "1", Format::kDecimalExponent},
      {"1e-3", "1e-3", Format::kDecimalExponent},
      {"100e-3", "100e-3", Format::kDecimalExponent},
      {"1.5e3", "1500", Format::kDecimalExponent},
      {"1e21", "1e21", Format::kDecimalExponent},
      {"1e36", "1e36", Format::kDecimalExponent},
      {"1Ki", "1Ki", Format::kBinarySI},
      {"1000Ki", "1000Ki", Format::kBinarySI},
      {"1023Ki", "1023Ki", Format::kBinarySI},
      {"2048Ki", "2Mi", Format::kBinarySI},
      {"0.5Gi", "512Mi", Format::kBinarySI},
      {"10Mi", "10Mi", Format::kBinarySI},
      {"7Ei", "7Ei", Format::kBinarySI},
      {"1.5Ki", "1536", Format::kBinarySI},
      // Binary values below 1024 or not whole are written in decimalSI.
      {"0.5Ki", "512", Format::kBinarySI},
      {"1.1Gi", "1181116006400m", Format::kBinarySI},
      {"0.001Ki", "1024m", Format::kBinarySI},
      {"0.0001Ki", "102400u", Format::kDecimalSI},
      // Rounded away from zero to a whole number of nano units.
      {"0.0000000001", "1n", Format::kDecimalSI},
      {"-0.0000000001", "-1n", Format::kDecimalSI},
      {"1.0000000001", "1000000001n", Format::kDecimalSI},
      {"0.9999999999", "1", Format::kDecimalSI},
      {"0.12345678901", "123456790n", Format::kDecimalSI},
      {"1.0000000000000000001", "1000000001n", Format::kDecimalSI},
      {"0.0000000001Ki", "103n", Format::kDecimalSI},
      {"1e-10", "1e-9", Format::kDecimalExponent},
      {"1e-2147483647", "1e-9", Format::kDecimalExponent},
      {"9223372036854775807", "9223372036854775807", Format::kDecimalSI},
      {"12345678901234567890", "12345678901234567890", Format::kDecimalSI},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const Quantity q = MustParse(c.text);
    CHECK(q.String() == c.canonical);
    CHECK(q.format() == c.format);
    // The canonical spelling reads back as the same value and spelling.
    const Quantity back = MustParse(q.String());
    CHECK(back == q);
    CHECK(back.String() == c.canonical);
  }
}

TEST_CASE("Quantity canonical spellings read back unchanged across scales and suffixes") {
  const std::vector<std::string> numbers = {
      "1", "-7", "25", "999", "1024", "-1536", "1000001", "123456789", "9223372036854775807"};
  const std::vector<std::string> suffixes = {"",   "n",  "u",   "m",   "k",  "M",   "G",
                                             "T",  "P",  "E",   "Ki",  "Mi", "Gi",  "Ti",
                                             "Pi", "Ei", "e-9", "e-4", "e5", "e18", "e21"};
  int checked = 0;
  for (const std::string& number : numbers) {
    for (const std::string& suffix : suffixes) {
      for (const std::string& text :
           {number + suffix, "0.0" + number.substr(number[0] == '-') + suffix}) {
        StatusOr<Quantity> q = Quantity::Parse(text);
        if (!q.ok()) continue;  // out of range
        INFO(text << " -> " << q->String());
        const Quantity back = MustParse(q->String());
        CHECK(back == *q);
        CHECK(back.String() == q->String());
        ++checked;
      }
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("a binary value with no whole power of 1024 is written bare, and reads back decimal") {
  // As Kubernetes does (found by the quantity fuzzer, whose invariant assumed a fixed point).
  StatusOr<Quantity> binary = Quantity::Parse("62.5Ki");
  REQUIRE_OK(binary);
  CHECK(binary->String() == "64000");
  StatusOr<Quantity> again = Quantity::Parse(binary->String());
  REQUIRE_OK(again);
  CHECK(*again == *binary);
  CHECK(again->format() == Quantity::Format::kDecimalSI);
  CHECK(again->String() == "64k");
}

TEST_CASE("Quantity::Parse rejects malformed and out-of-range text, naming it") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "expected a number with an optional suffix"},
      {"Gi", "expected a number"},
      {" 1", "expected a number"},
      {"--1", "expected a number"},
      {"-", "expected a number"},
      {".", "expected a number"},
      {"+-1", "expected a number"},
      {"1 ", "unknown suffix \" \""},
      {"1.5.5", "unknown suffix \".5\""},
      {"1Gb", "unknown suffix \"Gb\""},
      {"1e", "unknown suffix \"e\""},
      {"1K", "unknown suffix \"K\""},
      {"1ki", "unknown suffix \"ki\""},
      {"1i", "unknown suffix \"i\""},
      {"1Ki3", "unknown suffix \"Ki3\""},
      {"1mi", "unknown suffix \"mi\""},
      {"1e+", "malformed exponent \"e+\""},
      {"1e3.5", "malformed exponent \"e3.5\""},
      {"1e1x", "malformed exponent \"e1x\""},
      {"1e99999999999", "exponent out of range"},
      {"8Ei", "out of range"},
      {"9Ei", "out of range"},
      {"9223372036854775808", "out of range"},
      {"-9223372036854775808", "out of range"},
      {"12345678901234567891", "out of range"},
      {"1e37", "out of range"},
      {"10000000000000000000E", "out of range"},
      {"12345678901.123456789", "out of range"},
  };
  for (const auto& [text, why] : cases) CheckInvalid(Quantity::Parse(text).status(), text, why);
}

TEST_CASE("Quantity::Value and MilliValue round away from zero and saturate") {
  struct Case {
    std::string text;
    int64_t value;
    int64_t milli;
  };
  const std::vector<Case> cases = {
      {"0", 0, 0},
      {"1.5", 2, 1500},
      {"-1.5", -2, -1500},
      {"500m", 1, 500},
      {"-500m", -1, -500},
      {"1n", 1, 1},
      {"1.0001m", 1, 2},
      {"64Gi", int64_t{64} << 30, (int64_t{64} << 30) * 1000},
      {"1e3", 1000, 1'000'000},
      {"9223372036854775807", kMax, kMax},
      {"10E", kMax, kMax},
      {"1e36", kMax, kMax},
      {"-1e36", kMin, kMin},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const Quantity q = MustParse(c.text);
    CHECK(q.Value() == c.value);
    CHECK(q.MilliValue() == c.milli);
  }
}

TEST_CASE("Quantity::AsInt64 holds whole values that fit") {
  CHECK(MustParse("1Gi").AsInt64() == std::optional<int64_t>(int64_t{1} << 30));
  CHECK(MustParse("-3k").AsInt64() == std::optional<int64_t>(-3000));
  CHECK(MustParse("0").AsInt64() == std::optional<int64_t>(0));
  CHECK(MustParse("9E").AsInt64() == std::optional<int64_t>(9'000'000'000'000'000'000));
  CHECK_FALSE(MustParse("0.5").AsInt64().has_value());
  CHECK_FALSE(MustParse("10E").AsInt64().has_value());
  CHECK_FALSE(MustParse("1e30").AsInt64().has_value());
}

TEST_CASE("Quantity compares values regardless of format") {
  // Pairs of equal values, and pairs whose first value is the smaller.
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  const Pairs equal = {{"1Gi", "1073741824"}, {"1k", "1000"},     {"1e3", "1k"},
                       {"500m", "0.5"},       {"0", "-0"},        {"0", "0Gi"},
                       {"1000E", "1e21"},     {"1.5Gi", "1536Mi"}};
  const Pairs ordered = {{"1k", "1Ki"},
                         {"-1", "1n"},
                         {"999", "1e3"},
                         {"1E", "1Ei"},
                         {"-2", "-1"},
                         {"-1Gi", "-1G"},
                         {"9223372036854775807", "1e36"},
                         {"99999999n", "100m"},
                         {"0", "1n"},
                         {"-1n", "0"},
                         {"123m", "1230000u"}};
  auto check = [](const std::string& a_text, const std::string& b_text, int cmp) {
    INFO(a_text << " vs " << b_text);
    const Quantity a = MustParse(a_text);
    const Quantity b = MustParse(b_text);
    CHECK(a.Cmp(b) == cmp);
    CHECK(b.Cmp(a) == -cmp);
    CHECK((a == b) == (cmp == 0));
    CHECK((a < b) == (cmp < 0));
  };
  for (const auto& [a, b] : equal) check(a, b, 0);
  for (const auto& [a, b] : ordered) check(a, b, -1);
}

TEST_CASE("Quantity::FromInt64 and FromMilli canonicalise in the given format") {
  CHECK(Quantity().String() == "0");
  CHECK(Quantity().IsZero());
  CHECK(Quantity::FromInt64(0).String() == "0");
  CHECK(Quantity::FromInt64(1000).String() == "1k");
  CHECK(Quantity::FromInt64(-5).String() == "-5");
  CHECK(Quantity::FromInt64(1024, Format::kBinarySI).String() == "1Ki");
  CHECK(Quantity::FromInt64(3000, Format::kDecimalExponent).String() == "3e3");
  CHECK(Quantity::FromInt64(kMax).String() == "9223372036854775807");
  CHECK(Quantity::FromMilli(1500).String() == "1500m");
  CHECK(Quantity::FromMilli(2000).String() == "2");
  CHECK(Quantity::FromMilli(-250).String() == "-250m");
  CHECK(Quantity::FromMilli(500, Format::kBinarySI).format() == Format::kDecimalSI);
  CHECK(Quantity::FromMilli(1500).MilliValue() == 1500);
  CHECK(Quantity::FromInt64(-7).Sign() == -1);
}

TEST_CASE("Quantity JSON is a string, integers and null are accepted on input") {
  CHECK(QuantityToJson(MustParse("1.5Gi")) == nlohmann::json("1536Mi"));
  CHECK(QuantityToJson(Quantity()) == nlohmann::json("0"));

  const std::vector<std::pair<nlohmann::json, std::string>> ok = {
      {"64Gi", "64Gi"},
      {"0.5", "500m"},
      {5, "5"},
      {-2000, "-2k"},
      {uint64_t{10'000'000'000'000'000'000U}, "10E"},
      {nullptr, "0"},
  };
  for (const auto& [value, canonical] : ok) {
    INFO(value.dump());
    StatusOr<Quantity> q = QuantityFromJson(value);
    REQUIRE_OK(q);
    CHECK(q->String() == canonical);
  }

  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {"1Gb", "invalid quantity \"1Gb\": unknown suffix"},
      {1.5, "expected a quantity string such as \"64Gi\" or an integer, got number 1.5"},
      {true, "got boolean true"},
      {nlohmann::json::object(), "got object {}"},
      {uint64_t{18'446'744'073'709'551'615U}, "out of range"},
  };
  for (const auto& [value, why] : bad) {
    INFO(value.dump());
    StatusOr<Quantity> q = QuantityFromJson(value);
    REQUIRE_FALSE(q.ok());
    CHECK(q.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(q.status().message(), Contains(why));
  }
}

TEST_CASE("ParseQuantityBytes reads plain, binary and decimal quantities") {
  const std::vector<std::pair<std::string, int64_t>> cases = {
      {"0", 0},
      {"1024", 1024},
      {"1Ki", 1024},
      {"64Gi", int64_t{64} << 30},
      {"1536Mi", int64_t{1536} << 20},
      {"3Ti", int64_t{3} << 40},
      {"2Pi", int64_t{2} << 50},
      {"7Ei", int64_t{7} << 60},
      {"1k", 1000},
      {"80G", 80'000'000'000},
      {"141G", 141'000'000'000},
      {"5M", 5'000'000},
      {"2T", 2'000'000'000'000},
      {"9P", 9'000'000'000'000'000},
      {"9E", 9'000'000'000'000'000'000},
      {"9223372036854775807", INT64_MAX},
  };
  for (const auto& [text, bytes] : cases) {
    INFO(text);
    StatusOr<int64_t> parsed = ParseQuantityBytes(text);
    REQUIRE_OK(parsed);
    CHECK(*parsed == bytes);
  }
}

TEST_CASE("ParseQuantityBytes rejects what is not a whole number of bytes") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "expected a whole number of bytes"},
      {"Gi", "expected a whole number of bytes"},
      {" 1Gi", "expected a whole number of bytes"},
      {"+1", "expected a whole number of bytes"},
      {"-1", "must not be negative"},
      {"-1Gi", "must not be negative"},
      {"1.5Gi", "fractions are not supported"},
      {"1.", "fractions are not supported"},
      {"1e9", "exponents are not supported"},
      {"1E3", "exponents are not supported"},
      {"1e+3", "exponents are not supported"},
      {"100m", "unknown suffix \"m\""},
      {"1gi", "unknown suffix \"gi\""},
      {"1K", "unknown suffix \"K\""},
      {"1Gi ", "unknown suffix \"Gi \""},
      {"8Ei", "too large"},
      {"10E", "too large"},
      {"9223372036854775808", "too large"},
      {"99999999999999999999999Ki", "too large"},
  };
  for (const auto& [text, why] : cases) CheckInvalid(ParseQuantityBytes(text).status(), text, why);
}

TEST_CASE("FormatQuantityBytes picks the suffix leaving the smallest exact number") {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "0"},
      {1, "1"},
      {1023, "1023"},
      {1000, "1k"},
      {1024, "1Ki"},
      {int64_t{32} << 30, "32Gi"},
      {int64_t{1536} << 20, "1536Mi"},
      {80'000'000'000, "80G"},
      {141'000'000'000, "141G"},
      {2'048'000, "2000Ki"},
      {int64_t{1} << 60, "1Ei"},
      {INT64_MAX, "9223372036854775807"},
  };
  for (const auto& [bytes, text] : cases) {
    INFO(bytes);
    CHECK(FormatQuantityBytes(bytes) == text);
    StatusOr<int64_t> back = ParseQuantityBytes(text);
    REQUIRE_OK(back);
    CHECK(*back == bytes);
  }
}

}  // namespace
}  // namespace xpu::api
