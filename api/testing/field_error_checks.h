// Checks shared by the validation tests: whether a list of field errors holds one, and
// table-driven cases where each breaks one rule of a valid object. For Catch2 tests only.
#ifndef XPU_API_TESTING_FIELD_ERROR_CHECKS_H_
#define XPU_API_TESTING_FIELD_ERROR_CHECKS_H_

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "api/validation.h"

namespace xpu::api::testing {

// True when `errors` holds an error of `type` for exactly `field`.
inline bool Has(const FieldErrors& errors, const std::string& field, FieldErrorType type) {
  for (const auto& e : errors) {
    if (e.field == field && e.type == type) return true;
  }
  return false;
}

inline std::string Dump(const FieldErrors& errors) { return JoinFieldErrors(errors); }

// One broken rule: `mutate` breaks a valid object, whose errors must then hold `type` at `field`.
template <typename T>
struct ErrorCase {
  const char* rule;
  std::function<void(T&)> mutate;
  std::string field;
  FieldErrorType type;
};

// A section per case, checking the errors `errors_of` lists for the case's copy of `valid`.
template <typename T, typename ErrorsOf>
void CheckErrorCases(const T& valid, const std::vector<ErrorCase<T>>& cases, ErrorsOf errors_of) {
  for (const ErrorCase<T>& c : cases) {
    SECTION(c.rule) {
      T value = valid;
      c.mutate(value);
      const FieldErrors errors = errors_of(value);
      INFO(Dump(errors));
      CHECK(Has(errors, c.field, c.type));
    }
  }
}

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_FIELD_ERROR_CHECKS_H_
