// Status and Result<T>: how every neardup call reports an error the caller can handle.
//
// The library never aborts on bad input: a function that can fail returns a Status (or a Result<T>,
// which holds either a value or a non-OK Status). Messages name where the problem is (file, line,
// byte offset) so a program can print them as they are.
#ifndef NEARDUP_STATUS_H_
#define NEARDUP_STATUS_H_

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace neardup {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,     // bad input or option: invalid UTF-8, malformed JSON, unknown mode...
    kNotFound,            // a file or key that should exist does not
    kCorruption,          // stored data failed a magic, version or checksum check
    kIOError,             // the operating system refused a read or write
    kResourceExhausted,   // a configured limit was exceeded (document size, memory budget)
    kFailedPrecondition,  // the call is not valid in the object's current state
    kCancelled,           // the operation was interrupted (e.g. by a signal)
    kNotSupported,        // this object does not offer the call (e.g. saving a disk-resident index)
    kUnavailable,         // a server could not be reached or did not answer in time (retry later)
    kPermissionDenied,    // a server refused the credentials given (e.g. a wrong Redis password)
    kInternal,            // a bug in neardup
  };

  // An OK status.
  Status() = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string message) {
    return Status(Code::kInvalidArgument, std::move(message));
  }
  static Status NotFound(std::string message) {
    return Status(Code::kNotFound, std::move(message));
  }
  static Status Corruption(std::string message) {
    return Status(Code::kCorruption, std::move(message));
  }
  static Status IOError(std::string message) { return Status(Code::kIOError, std::move(message)); }
  static Status ResourceExhausted(std::string message) {
    return Status(Code::kResourceExhausted, std::move(message));
  }
  static Status FailedPrecondition(std::string message) {
    return Status(Code::kFailedPrecondition, std::move(message));
  }
  static Status Cancelled(std::string message) {
    return Status(Code::kCancelled, std::move(message));
  }
  static Status NotSupported(std::string message) {
    return Status(Code::kNotSupported, std::move(message));
  }
  static Status Unavailable(std::string message) {
    return Status(Code::kUnavailable, std::move(message));
  }
  static Status PermissionDenied(std::string message) {
    return Status(Code::kPermissionDenied, std::move(message));
  }
  static Status Internal(std::string message) {
    return Status(Code::kInternal, std::move(message));
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "OK", or the code's name followed by ": " and the message.
  std::string ToString() const;

  // A copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value of type T or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(state_).ok()) {
      state_ = Status::Internal("Result constructed from an OK status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }

  // The error; OK when the result holds a value.
  Status status() const { return ok() ? Status::OK() : std::get<Status>(state_); }

  // The value. Must only be called when ok().
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace neardup

// Returns early from the enclosing function when `expr` (a Status) is not OK.
#define NEARDUP_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::neardup::Status neardup_status_ = (expr);        \
    if (!neardup_status_.ok()) return neardup_status_; \
  } while (0)

#endif  // NEARDUP_STATUS_H_
