// Status and StatusOr<T>: the one error type used across xpu-dra component boundaries.
//
// Codes follow gRPC's canonical codes. Messages read "verb object: cause" in lower case
// (e.g. "read topology nodes/a.json: devices[2].index: expected an integer"). No exception
// crosses a component: code that calls throwing libraries catches at the call and returns a
// Status. Both types are cheap value types and thread-compatible.
#ifndef XPU_BASE_STATUS_H_
#define XPU_BASE_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace xpu {

enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// Lower-case name of a code, e.g. "invalid argument".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;
  // "ok" or "<code name>: <message>".
  std::string ToString() const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status FailedPreconditionError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status OutOfRangeError(std::string message);

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : rep_(value) {}        // NOLINT(google-explicit-constructor)
  StatusOr(T&& value) : rep_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  // `status` must not be OK; an OK status becomes an internal error.
  StatusOr(Status status)  // NOLINT(google-explicit-constructor)
      : rep_(status.ok() ? InternalError("StatusOr built from an ok status") : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(rep_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(rep_); }

  // Precondition: ok().
  const T& value() const& { return std::get<T>(rep_); }
  T& value() & { return std::get<T>(rep_); }
  T&& value() && { return std::get<T>(std::move(rep_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<Status, T> rep_;
};

}  // namespace xpu

#define XPU_STATUS_CONCAT_INNER_(a, b) a##b
#define XPU_STATUS_CONCAT_(a, b) XPU_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::xpu::Status xpu_status_ = (expr);        \
    if (!xpu_status_.ok()) return xpu_status_; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  XPU_ASSIGN_OR_RETURN_IMPL_(XPU_STATUS_CONCAT_(xpu_statusor_, __LINE__), lhs, expr)
// `tmp` and `lhs` name and declare variables, which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define XPU_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

#endif  // XPU_BASE_STATUS_H_
