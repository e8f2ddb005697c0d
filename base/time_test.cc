#include "base/time.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "base/testing/require_ok.h"

namespace xpu {
namespace {

using std::chrono::system_clock;

TEST_CASE("time formats a Kubernetes Time and MicroTime", "[time]") {
  const system_clock::time_point t =
      system_clock::time_point(std::chrono::seconds(1796034900)) + std::chrono::microseconds(123);
  CHECK(FormatTime(t) == "2026-11-30T10:35:00Z");
  CHECK(FormatMicroTime(t) == "2026-11-30T10:35:00.000123Z");
}

TEST_CASE("time parses RFC 3339 with fractions and offsets", "[time]") {
  auto at = [](const char* s) {
    auto t = ParseTime(s);
    REQUIRE_OK(t);
    return std::chrono::duration_cast<std::chrono::microseconds>(t->time_since_epoch()).count();
  };
  CHECK(at("2026-11-30T10:35:00Z") == 1796034900LL * 1'000'000);
  CHECK(at("2026-11-30T10:35:00.000123Z") == 1796034900LL * 1'000'000 + 123);
  CHECK(at("2026-11-30T10:35:00.5Z") == 1796034900LL * 1'000'000 + 500'000);
  CHECK(at("2026-11-30T10:35:00.1234567Z") == 1796034900LL * 1'000'000 + 123'456);
  CHECK(at("2026-11-30T11:35:00+01:00") == 1796034900LL * 1'000'000);
  CHECK(at("2026-11-30T09:35:00-01:00") == 1796034900LL * 1'000'000);
  const system_clock::time_point now = system_clock::now();
  auto back = ParseTime(FormatMicroTime(now));
  REQUIRE_OK(back);
  CHECK(std::chrono::duration_cast<std::chrono::microseconds>(now - *back).count() == 0);
}

TEST_CASE("time past the clock's range reads as its end", "[time]") {
  using Clock = std::chrono::system_clock;
  CHECK(*ParseTime("2999-01-01T00:00:00Z") == Clock::time_point::max());
  CHECK(*ParseTime("9999-12-31T23:59:59.999Z") == Clock::time_point::max());
  CHECK(*ParseTime("1000-01-01T00:00:00Z") == Clock::time_point::min());
  CHECK(*ParseTime("2262-01-01T00:00:00Z") < Clock::time_point::max());
  CHECK(*ParseTime("2262-01-01T00:00:00Z") > *ParseTime("2261-12-31T23:59:59Z"));
}

TEST_CASE("time rejects what is not RFC 3339, quoting it", "[time]") {
  for (const char* bad :
       {"", "2026-11-30", "2026-11-30 10:35:00Z", "2026-13-30T10:35:00Z", "2026-11-30T10:35:00",
        "2026-11-30T10:35:00.Z", "2026-11-30T10:35:00+0100", "2026-11-30T10:35:00Zjunk"}) {
    auto t = ParseTime(bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().message().find(std::string("\"") + bad + "\"") != std::string::npos);
  }
}

}  // namespace
}  // namespace xpu
