#include "api/quantity.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace xpu::api {
namespace {

using Catch::Matchers::Contains;

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
    REQUIRE(parsed.ok());
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
  for (const auto& [text, why] : cases) {
    INFO(text);
    StatusOr<int64_t> parsed = ParseQuantityBytes(text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    std::string expected = "invalid quantity \"" + text;
    expected += "\": " + why;
    CHECK_THAT(parsed.status().message(), Contains(expected));
  }
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
    REQUIRE(back.ok());
    CHECK(*back == bytes);
  }
}

}  // namespace
}  // namespace xpu::api
