// REQUIRE_OK(expr): a Catch2 REQUIRE on a Status or StatusOr<T> that shows the status' message
// when it fails. For tests only.
#ifndef XPU_BASE_TESTING_REQUIRE_OK_H_
#define XPU_BASE_TESTING_REQUIRE_OK_H_

#include <catch2/catch.hpp>
#include <string>

#include "base/status.h"

namespace xpu::testing {

template <typename T>
std::string StatusText(const StatusOr<T>& s) {
  return s.status().ToString();
}
inline std::string StatusText(const Status& s) { return s.ToString(); }

}  // namespace xpu::testing

#define REQUIRE_OK(expr)                       \
  do {                                         \
    const auto& result_ = (expr);              \
    INFO(::xpu::testing::StatusText(result_)); \
    REQUIRE(result_.ok());                     \
  } while (false)

#endif  // XPU_BASE_TESTING_REQUIRE_OK_H_
