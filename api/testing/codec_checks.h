// Checks shared by the codec tests: round trips through FromJson<T> / ToJson, and table-driven
// error tests, where each case edits a copy of a valid value (an object or its JSON) and the call
// under test must then fail with an invalid-argument error whose message starts as the case says.
// For Catch2 tests only.
#ifndef XPU_API_TESTING_CODEC_CHECKS_H_
#define XPU_API_TESTING_CODEC_CHECKS_H_

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/meta.h"
#include "base/status.h"
#include "base/testing/require_ok.h"

namespace xpu::api::testing {

// Reads `doc` as a T and checks that it writes back the same JSON; returns the value.
template <typename T>
T CheckJsonRoundTrip(const nlohmann::json& doc) {
  StatusOr<T> value = FromJson<T>(doc);
  INFO(value.status().ToString());
  REQUIRE_OK(value);
  CHECK(ToJson(*value) == doc);
  return *std::move(value);
}

// Writes `value` and checks that the JSON reads back as an equal value; returns the JSON.
template <typename T>
nlohmann::json CheckObjectRoundTrip(const T& value) {
  nlohmann::json doc = ToJson(value);
  CHECK(CheckJsonRoundTrip<T>(doc) == value);
  return doc;
}

template <typename T>
struct EditCase {
  std::function<void(T&)> edit;
  std::string message;  // the start of the expected message
};

inline Status StatusOf(const Status& status) { return status; }
template <typename T>
Status StatusOf(const StatusOr<T>& result) {
  return result.status();
}

// `call` takes a const T& and returns a Status or a StatusOr.
template <typename T, typename Call>
void CheckEditsFail(const T& valid, const std::vector<EditCase<T>>& cases, Call call) {
  for (const EditCase<T>& c : cases) {
    T value = valid;
    c.edit(value);
    INFO(c.message);
    const Status status = StatusOf(call(value));
    REQUIRE_FALSE(status.ok());
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Matchers::StartsWith(c.message));
  }
}

}  // namespace xpu::api::testing

#endif  // XPU_API_TESTING_CODEC_CHECKS_H_
