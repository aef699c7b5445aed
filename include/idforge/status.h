// Status and Result<T>: errors as values, for the core library and the backends.
//
// A Status is either ok or a code with a message. A Result<T> is either a value or
// a non-ok Status. Both are cheap on success (no allocation) and [[nodiscard]], so
// an error is never dropped silently. Multiple threads may call const methods on the
// same object without synchronization.
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

// Returns the Status of `expr` from the enclosing function if it is an error.
#define IDFORGE_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::idforge::Status idforge_status_ = (expr);        \
    if (!idforge_status_.ok()) return idforge_status_; \
  } while (0)
