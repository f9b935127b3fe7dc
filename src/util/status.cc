#include "neardup/status.h"

namespace neardup {
namespace {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "Invalid argument";
    case Status::Code::kNotFound:
      return "Not found";
    case Status::Code::kCorruption:
      return "Corruption";
    case Status::Code::kIOError:
      return "IO error";
    case Status::Code::kResourceExhausted:
      return "Limit exceeded";
    case Status::Code::kFailedPrecondition:
      return "Failed precondition";
    case Status::Code::kCancelled:
      return "Cancelled";
    case Status::Code::kNotSupported:
      return "Not supported";
    case Status::Code::kUnavailable:
      return "Unavailable";
    case Status::Code::kPermissionDenied:
      return "Permission denied";
    case Status::Code::kInternal:
      return "Internal error";
  }
  return "Unknown";
}

}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

}  // namespace neardup
