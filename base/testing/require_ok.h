// REQUIRE_OK(expr): a Catch2 REQUIRE on a Status or StatusOr<T> that shows the status' message
// when it fails; RequireValue, its form for an expression; ParsedValue, ParseErrorMessage and
// CheckParseErrors for testing parsers. For tests only.
#ifndef XPU_BASE_TESTING_REQUIRE_OK_H_
#define XPU_BASE_TESTING_REQUIRE_OK_H_

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace xpu::testing {

template <typename T>
std::string StatusText(const StatusOr<T>& s) {
  return s.status().ToString();
}
inline std::string StatusText(const Status& s) { return s.ToString(); }

// The value of `result`; the test stops, showing the status, unless it is ok.
template <typename T>
T RequireValue(StatusOr<T> result) {
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

// The value `result` parsed from `input`; the test stops, showing both, unless it is ok.
template <typename T>
T ParsedValue(StatusOr<T> result, const std::string& input) {
  INFO(input << "\n-> " << result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

// The message of `result`, the error of parsing `input`, which must be kInvalidArgument.
template <typename T>
std::string ParseErrorMessage(const StatusOr<T>& result, const std::string& input) {
  INFO(input);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kInvalidArgument);
  return result.status().message();
}

// An input a parser must refuse, and the start of the error it must give.
struct ParseErrorCase {
  std::string text;
  std::string message;
};

// `error_of(text)` (a parse error's message) starts with the case's message, for each case.
template <typename ErrorOf>
void CheckParseErrors(const ErrorOf& error_of, const std::vector<ParseErrorCase>& cases) {
  for (const ParseErrorCase& c : cases) {
    CHECK_THAT(error_of(c.text), Catch::Matchers::StartsWith(c.message));
  }
}

}  // namespace xpu::testing

#define REQUIRE_OK(expr)                       \
  do {                                         \
    const auto& result_ = (expr);              \
    INFO(::xpu::testing::StatusText(result_)); \
    REQUIRE(result_.ok());                     \
  } while (false)

#endif  // XPU_BASE_TESTING_REQUIRE_OK_H_
