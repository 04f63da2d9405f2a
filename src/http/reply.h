#pragma once

#include <string>

#include "base/status.h"
#include "http/server.h"

namespace silo::http {

// Headers of intra-cluster requests.
inline constexpr const char* kForwardedHeader = "X-Silo-Forwarded";  // value: sender node id
inline constexpr const char* kNodeMapVersionHeader = "X-Silo-Node-Map-Version";
inline constexpr const char* kBucketMapVersionHeader = "X-Silo-Bucket-Map-Version";
// On a forwarded GET or HEAD: serve this node's own copy, owner or not (a rebalance reads
// an object not moved yet from where it still is). A miss answers 503: it moved meanwhile.
inline constexpr const char* kLocalOnlyHeader = "X-Silo-Local-Only";

// The HTTP status a Status code maps to on the native API.
int http_status(Code code);
// The code an HTTP error status stands for (the inverse of http_status(), for answers
// whose body names none).
Code code_of_http_status(int status);
// An error answer of the native API (`status` >= 400, `body` {"error": {"code",
// "message", "reason"}}) as a Status: the code and reason the body names, else the HTTP
// status's; the message after `what` ("GET b/o: HTTP 404: ...").
Status status_of_answer(int status, std::string_view body, std::string_view what);
// Sends `status` as {"error": {"code", "message"}} with its HTTP status. Send failures
// (the client went away) are ignored: there is no one left to tell.
http::Awaitable<void> send_error(http::Exchange& exchange, const Status& status);
http::Awaitable<void> send_json(http::Exchange& exchange, int http_status, std::string body);

// True for headers that describe one connection, not the message (RFC 9110 7.6.1), plus
// those the sender recomputes (Host, Content-Length): a relay must not copy them.
bool is_hop_by_hop(std::string_view header_name);

}  // namespace silo::http
