#include "base/status.h"

#include <catch2/catch.hpp>

namespace xpu {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(*out, Half(half));
  return OkStatus();
}

TEST_CASE("status carries code, message and context") {
  CHECK(OkStatus().ok());
  CHECK(OkStatus().ToString() == "ok");
  const Status s = NotFoundError("claim abc");
  CHECK_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.ToString() == "not found: claim abc");
  CHECK(s.WithContext("prepare").message() == "prepare: claim abc");
  CHECK(OkStatus().WithContext("x").ok());
  CHECK(Status(StatusCode::kOk, "ignored").message().empty());
}

TEST_CASE("StatusOr and the helper macros") {
  int out = 0;
  CHECK(Quarter(8, &out).ok());
  CHECK(out == 2);
  const Status bad = Quarter(6, &out);
  CHECK(bad.message() == "odd 3");
  CHECK(Half(3).status().code() == StatusCode::kInvalidArgument);
  const StatusOr<int> from_ok = Status();
  CHECK(from_ok.status().code() == StatusCode::kInternal);
}

}  // namespace
}  // namespace xpu
