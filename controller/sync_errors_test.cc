#include "controller/sync_errors.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace xpu::controller {
namespace {

TEST_CASE("a failed sync is retried, given up or stopped by its error", "[sync_errors]") {
  const std::vector<std::pair<SyncFailure, std::vector<StatusCode>>> cases = {
      // The API server refused the request itself (400/422, 401, 403, 404, 410).
      {SyncFailure::kTerminal,
       {StatusCode::kInvalidArgument, StatusCode::kUnauthenticated, StatusCode::kPermissionDenied,
        StatusCode::kNotFound, StatusCode::kOutOfRange}},
      // 409 Conflict / AlreadyExists, 429 and 5xx, no answer, anything else: back off, retry.
      {SyncFailure::kRetry,
       {StatusCode::kAborted, StatusCode::kAlreadyExists, StatusCode::kUnavailable,
        StatusCode::kUnknown, StatusCode::kDeadlineExceeded, StatusCode::kInternal,
        StatusCode::kDataLoss}},
      // Not the leader any more: neither.
      {SyncFailure::kStop, {StatusCode::kCancelled}},
  };
  for (const auto& [want, codes] : cases) {
    for (const StatusCode code : codes) {
      INFO(StatusCodeName(code));
      CHECK(ClassifySyncError(Status(code, "x")) == want);
    }
  }
}

TEST_CASE("a terminal error is reported once per key until it changes or clears", "[sync_errors]") {
  TerminalErrors errors;
  const Status invalid(StatusCode::kInvalidArgument, "slice n1-abc: spec.devices: Too many");
  CHECK(errors.Record("pool/n1", invalid));
  CHECK_FALSE(errors.Record("pool/n1", invalid));  // the resync fails the same way: quiet
  CHECK(errors.Record("pool/n2", invalid));        // another key is its own report
  CHECK(errors.size() == 2);

  SECTION("another error on the same key is reported") {
    CHECK(errors.Record("pool/n1", Status(StatusCode::kPermissionDenied, "forbidden")));
    CHECK(errors.Record("pool/n1", Status(StatusCode::kInvalidArgument, "another field")));
  }
  SECTION("after a success the same error is reported again") {
    errors.Clear("pool/n1");
    CHECK(errors.size() == 1);
    CHECK(errors.Record("pool/n1", invalid));
  }
}

}  // namespace
}  // namespace xpu::controller
