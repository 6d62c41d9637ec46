#pragma once
// Status and Result<T>: cheap error values for expected failures (bad input, conflicts,
// not-found, refused transitions). volcache never throws across a public API; impossible
// states stop the process through VC_CHECK (api/check.h).
//
// Thread-safety: values; a Status or Result may be copied and read from any thread.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace volcache {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // malformed input: bad JSON, invalid quantity, missing field
  kNotFound,            // object not held by the cache / cluster source
  kAlreadyExists,       // e.g. assuming a task twice, creating a queue that exists
  kFailedPrecondition,  // refused transition: does not fit, no PodGroup, wrong node
  kConflict,            // optimistic-concurrency conflict reported by the API
  kResourceExhausted,   // full channel, body too large, rate limited
  kUnavailable,         // transient: connection lost, server 5xx
  kDeadlineExceeded,    // timeout
  kCancelled,           // shutdown
  kInternal,            // a bug or an unexpected server answer
};

std::string_view StatusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) { return {StatusCode::kAlreadyExists, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  static Status Conflict(std::string msg) { return {StatusCode::kConflict, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) { return {StatusCode::kDeadlineExceeded, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  // Empty for OK.
  const std::string& message() const;
  // "OK" or "<CodeName>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>" (OK stays OK).
  Status WithPrefix(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // null == OK; shared so copies are cheap
};

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result constructed from OK status");
  }

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
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace volcache

// Propagates a non-OK Status out of the current function.
#define VC_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::volcache::Status vc_status_ = (expr);  \
    if (!vc_status_.ok()) return vc_status_; \
  } while (0)
