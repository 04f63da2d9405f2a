#include "http/reply.h"

#include <fmt/format.h>
#include <strings.h>

#include "wire/json.h"

namespace silo::http {

int http_status(Code code) {
  switch (code) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument: return 400;
    case Code::kUnauthenticated: return 401;
    case Code::kPermissionDenied: return 403;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition:
    case Code::kAborted: return 409;
    case Code::kOutOfRange: return 416;
    case Code::kCancelled: return 499;
    case Code::kUnimplemented: return 501;
    case Code::kUnavailable: return 503;
    case Code::kDeadlineExceeded: return 504;
    case Code::kResourceExhausted: return 507;
    case Code::kDataLoss:
    case Code::kInternal:
    case Code::kUnknown: return 500;
  }
  return 500;
}

Code code_of_http_status(int status) {
  switch (status) {
    case 400: return Code::kInvalidArgument;
    case 401: return Code::kUnauthenticated;
    case 403: return Code::kPermissionDenied;
    case 404: return Code::kNotFound;
    case 408: return Code::kDeadlineExceeded;
    case 409: return Code::kAlreadyExists;
    case 412: return Code::kFailedPrecondition;
    case 416: return Code::kOutOfRange;
    case 429: return Code::kResourceExhausted;
    case 499: return Code::kCancelled;
    case 501: return Code::kUnimplemented;
    case 502:
    case 503: return Code::kUnavailable;
    case 504: return Code::kDeadlineExceeded;
    case 507: return Code::kResourceExhausted;
    default: break;
  }
  if (status >= 400 && status < 500) return Code::kInvalidArgument;
  return status >= 500 ? Code::kInternal : Code::kUnknown;
}

Status status_of_answer(int status, std::string_view body, std::string_view what) {
  constexpr size_t kMaxMessageSnippet = 300;
  Code code = code_of_http_status(status);
  std::string message;
  std::string reason;
  if (auto error = wire::parse_error_json(body)) {
    if (error->code && *error->code != Code::kOk) code = *error->code;
    message = std::move(error->message);
    reason = std::move(error->reason);
  } else {
    message = std::string(body.substr(0, kMaxMessageSnippet));
  }
  Status out(code, fmt::format("{}: HTTP {}: {}", what, status, message));
  if (!reason.empty()) out.with_reason(std::move(reason));
  return out;
}

http::Awaitable<void> send_json(http::Exchange& exchange, int status, std::string body) {
  http::ResponseHead head;
  head.status = status;
  head.headers.set("Content-Type", "application/json");
  std::ignore = co_await exchange.response().send(std::move(head), std::move(body));  // client gone
}

http::Awaitable<void> send_error(http::Exchange& exchange, const Status& status) {
  if (exchange.response().has_begun()) co_return;  // too late: the server closes the connection
  co_await send_json(exchange, http_status(status.code()), wire::error_json(status));
}

bool is_hop_by_hop(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
      "transfer-encoding", "upgrade", "host", "content-length", "expect", "proxy-connection"};
  for (auto n : kNames) {
    if (n.size() == name.size() && ::strncasecmp(n.data(), name.data(), n.size()) == 0) return true;
  }
  return false;
}

}  // namespace silo::http
