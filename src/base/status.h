#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace silo {

// Abseil's canonical codes, so retry meaning is the same everywhere (STYLE.md 2.4).
enum class Code {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
};

std::string_view code_name(Code code);

// The outcome of an operation: a code and a message. Cheap to copy when ok.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

#define SILO_STATUS_FACTORY(fn, code)                                          \
  template <typename... Args>                                                  \
  static Status fn(fmt::format_string<Args...> format, Args&&... args) {       \
    return Status(code, fmt::format(format, std::forward<Args>(args)...));     \
  }
  SILO_STATUS_FACTORY(cancelled, Code::kCancelled)
  SILO_STATUS_FACTORY(unknown, Code::kUnknown)
  SILO_STATUS_FACTORY(invalid_argument, Code::kInvalidArgument)
  SILO_STATUS_FACTORY(deadline_exceeded, Code::kDeadlineExceeded)
  SILO_STATUS_FACTORY(not_found, Code::kNotFound)
  SILO_STATUS_FACTORY(already_exists, Code::kAlreadyExists)
  SILO_STATUS_FACTORY(permission_denied, Code::kPermissionDenied)
  SILO_STATUS_FACTORY(resource_exhausted, Code::kResourceExhausted)
  SILO_STATUS_FACTORY(failed_precondition, Code::kFailedPrecondition)
  SILO_STATUS_FACTORY(aborted, Code::kAborted)
  SILO_STATUS_FACTORY(out_of_range, Code::kOutOfRange)
  SILO_STATUS_FACTORY(unimplemented, Code::kUnimplemented)
  SILO_STATUS_FACTORY(internal, Code::kInternal)
  SILO_STATUS_FACTORY(unavailable, Code::kUnavailable)
  SILO_STATUS_FACTORY(data_loss, Code::kDataLoss)
  SILO_STATUS_FACTORY(unauthenticated, Code::kUnauthenticated)
#undef SILO_STATUS_FACTORY

  // An I/O error from errno, mapped to the code its retry meaning calls for.
  static Status from_errno(int err, std::string_view context);

  bool is_ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // A machine-readable reason that refines the code for API layers that need more than
  // it says (S3 names: "NoSuchUpload", "PreconditionFailed", "InvalidPart"...). Empty
  // when the code alone is enough. Kept through annotate().
  const std::string& reason() const { return reason_; }
  Status& with_reason(std::string reason) & {
    reason_ = std::move(reason);
    return *this;
  }
  Status&& with_reason(std::string reason) && {
    reason_ = std::move(reason);
    return std::move(*this);
  }

  // Prefixes the message with context; a layer adds its context once.
  template <typename... Args>
  Status& annotate(fmt::format_string<Args...> format, Args&&... args) {
    if (!is_ok()) message_ = fmt::format(format, std::forward<Args>(args)...) + ": " + message_;
    return *this;
  }

  std::string to_string() const;
  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::string reason_;
};

inline std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.to_string(); }

}  // namespace silo

template <>
struct fmt::formatter<silo::Status> : fmt::formatter<std::string> {
  auto format(const silo::Status& s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.to_string(), ctx);
  }
};
