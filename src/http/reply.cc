#include "http/reply.h"

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
