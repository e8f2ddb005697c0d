#include "base/status.h"

#include "base/enum_names.h"

namespace xpu {
namespace {

constexpr std::string_view kStatusCodeNames[] = {
    "ok",
    "cancelled",
    "unknown",
    "invalid argument",
    "deadline exceeded",
    "not found",
    "already exists",
    "permission denied",
    "resource exhausted",
    "failed precondition",
    "aborted",
    "out of range",
    "unimplemented",
    "internal",
    "unavailable",
    "data loss",
    "unauthenticated",
};
static_assert(NamesCover(kStatusCodeNames, StatusCode::kUnauthenticated));

}  // namespace

std::string_view StatusCodeName(StatusCode code) {
  return NameAt(kStatusCodeNames, code).value_or("unknown");
}

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
  if (code_ == StatusCode::kOk) message_.clear();
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status InvalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
Status NotFoundError(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
Status FailedPreconditionError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}
Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}
Status UnavailableError(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
Status DataLossError(std::string message) {
  return Status(StatusCode::kDataLoss, std::move(message));
}
Status OutOfRangeError(std::string message) {
  return Status(StatusCode::kOutOfRange, std::move(message));
}

}  // namespace xpu
