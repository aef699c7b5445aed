// Status and Result<T>: errors as values, for the core library and the backends.
//
// A Status is either ok or a code with a message. A Result<T> is either a value or
// a non-ok Status. Both are cheap on success (no allocation) and [[nodiscard]], so
// an error is never dropped silently. Multiple threads may call const methods on the
// same object without synchronization.
//
// IDFORGE_RETURN_IF_ERROR and IDFORGE_ASSIGN_OR_RETURN (at the end of this file) write
// the plain "return the error to the caller" path in one line.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace idforge {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is wrong; retrying the same call fails again
  kOutOfRange,         // a value does not fit (a field, a layout's time range)
  kNotFound,           // a named thing (tag, slot, file) does not exist
  kAlreadyExists,      // create of something that exists
  kUnavailable,        // try again later: fenced, store down, clock too far behind
  kClockBackwards,     // the clock moved back and the policy refuses to issue
  kResourceExhausted,  // no capacity left (sequence, slots, drift budget)
  kDeadlineExceeded,   // waited for the allowed time and gave up
  kLeaseLost,          // the coordinator no longer gives us our worker lease: stop issuing
  kIoError,            // the operating system or a backend failed
  kInternal,           // a bug: an invariant that should hold did not
};

// The stable lower-case name of a code ("invalid_argument"), used in JSON errors.
std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status ClockBackwards(std::string m) {
    return {StatusCode::kClockBackwards, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status LeaseLost(std::string m) { return {StatusCode::kLeaseLost, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: layout field 'worker' is 0 bits wide" (or "ok").
  std::string to_string() const;

  // Marks an error as deliberately ignored; the only way to drop a Status.
  void ignore_error() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(v_).ok() && "a Result is built from an error Status only");
  }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // The error, or an ok Status when a value is held.
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

  // Precondition: ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const { return ok() ? std::get<0>(v_) : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace idforge

namespace idforge::internal {
// The Status of a Status or of a Result<T>, for IDFORGE_RETURN_IF_ERROR.
inline Status status_of(Status status) { return status; }
template <typename T>
Status status_of(const Result<T>& result) {
  return result.status();
}
}  // namespace idforge::internal

// Error-path macros. Both work in a function that returns Status or any Result<U> (a
// Result<U> is built from the error Status).
//
// IDFORGE_RETURN_IF_ERROR(expr): `expr` is a Status or a Result<T>; if it is an error,
// returns its Status from the enclosing function. A Result's value is discarded. It is
// one statement, safe after an unbraced `if`.
//
//   IDFORGE_RETURN_IF_ERROR(check_slot(slot));
//
// IDFORGE_ASSIGN_OR_RETURN(lhs, expr): `expr` is a Result<T>; if it is an error, returns
// its Status; else moves (never copies) the value into `lhs`, which is a declaration
// (`auto x`, `std::unique_ptr<Foo> x`) or an existing variable (`x`, `*out`). It expands
// to several statements and declares a temporary named after the line: use it at most
// once a line, and inside braces, not as the body of an unbraced `if` or loop. A type in
// `lhs` must not contain an unparenthesized comma (use `auto` or an alias).
//
//   IDFORGE_ASSIGN_OR_RETURN(auto conn, pool.acquire());
//   IDFORGE_ASSIGN_OR_RETURN(lease, registry->acquire(options));
#define IDFORGE_RETURN_IF_ERROR(...) \
  IDFORGE_RETURN_IF_ERROR_IMPL_(IDFORGE_STATUS_CONCAT_(idforge_status_, __LINE__), __VA_ARGS__)

#define IDFORGE_ASSIGN_OR_RETURN(lhs, ...)                                               \
  IDFORGE_ASSIGN_OR_RETURN_IMPL_(IDFORGE_STATUS_CONCAT_(idforge_result_, __LINE__), lhs, \
                                 __VA_ARGS__)

// Implementation details of the macros above.
#define IDFORGE_STATUS_CONCAT_INNER_(a, b) a##b
#define IDFORGE_STATUS_CONCAT_(a, b) IDFORGE_STATUS_CONCAT_INNER_(a, b)
// The name is made unique per line so that a lambda inside the expression may use the
// macro again (-Wshadow).
#define IDFORGE_RETURN_IF_ERROR_IMPL_(status, ...)                          \
  do {                                                                      \
    ::idforge::Status status = ::idforge::internal::status_of(__VA_ARGS__); \
    if (!status.ok()) return status;                                        \
  } while (0)
#define IDFORGE_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                           \
  if (!result.ok()) return result.status();              \
  lhs = std::move(result).value()
