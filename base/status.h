// Recoverable errors as values, in the style of absl::Status, for every layer but the runner.
//
// A Status says what went wrong and where; context is prepended on the way up, so the message
// a user finally reads is a chain, outermost first:
//
//   Status s = store.Ingest(path);
//   if (!s.ok()) return s.WithContext(fmt::format("run {}", run_id));
//   // -> "run 3f2a...: metrics.jsonl line 12: not valid JSON"
//
//   StatusOr<Spec> spec = ParseSpec(text);
//   if (!spec.ok()) return spec.status();
//   Use(*spec);
//
// The CLI maps a Status to its exit code with ExitCodeFor(): bad input (kInvalidArgument,
// kNotFound, kFailedPrecondition) exits 2, everything else that failed exits 1.
#ifndef BATCHLAB_BASE_STATUS_H_
#define BATCHLAB_BASE_STATUS_H_

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace batchlab {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the user's input is wrong: a spec, a flag, a --where clause
  kNotFound,            // a named thing (file, sweep, run, dataset) does not exist
  kFailedPrecondition,  // the world is not in a state that allows this (newer db schema, ...)
  kAlreadyExists,
  kCancelled,
  kDeadlineExceeded,
  kUnavailable,  // transient: retry may succeed (database busy, child could not start)
  kInternal,     // a bug or an unexpected failure of a dependency
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message"; an OK status stays OK.
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return Status(code_, std::string(context) + ": " + message_);
  }

  // Explicitly discards an error that the caller has decided not to act on.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status AlreadyExistsError(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
inline Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
inline Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

// The process exit code the CLI uses for a final status: 0 ok, 2 bad input, 1 other failure.
inline int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAlreadyExists: return 2;
    default: return 1;
  }
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace batchlab

#define BATCHLAB_STATUS_CONCAT_INNER_(a, b) a##b
#define BATCHLAB_STATUS_CONCAT_(a, b) BATCHLAB_STATUS_CONCAT_INNER_(a, b)

// Returns the error from the enclosing function if `expr` (a Status) is not OK.
#define BATCHLAB_RETURN_IF_ERROR(expr)                 \
  do {                                                 \
    ::batchlab::Status batchlab_status_ = (expr);      \
    if (!batchlab_status_.ok()) return batchlab_status_; \
  } while (0)

// `lhs` = the value of `expr` (a StatusOr), or returns its error from the enclosing function.
#define BATCHLAB_ASSIGN_OR_RETURN(lhs, expr) \
  BATCHLAB_ASSIGN_OR_RETURN_IMPL_(BATCHLAB_STATUS_CONCAT_(batchlab_or_, __LINE__), lhs, expr)
#define BATCHLAB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

#endif  // BATCHLAB_BASE_STATUS_H_
