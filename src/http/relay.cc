#include "http/relay.h"

#include <algorithm>
#include <memory>

#include "base/log.h"
#include "http/reply.h"

namespace silo::http {
namespace {

constexpr size_t kRelayBufferBytes = 256 * 1024;

}  // namespace

http::Awaitable<Status> relay(http::Exchange& exchange, http::Client& client, const http::Endpoint& to,
                              const http::Headers& extra) {
  const http::RequestHead& in = exchange.request();
  http::ClientRequest request;
  request.method = in.method;
  request.target = in.target;
  for (const auto& [name, value] : in.headers.fields()) {
    if (!is_hop_by_hop(name)) request.headers.add(name, value);
  }
  for (const auto& [name, value] : extra.fields()) request.headers.set(name, value);
  if (auto host = in.headers.get("Host")) request.host = std::string(*host);
  std::optional<uint64_t> length = in.content_length;
  if (!length && !in.is_chunked) length = 0;

  CO_ASSIGN_OR_RETURN(auto call, co_await client.start(to, std::move(request), length));
  Status sent;
  if (!length || *length > 0) {
    // Sized to the body and not zero-filled: a zeroed 256 KiB per GET was 18 % of a
    // proxy's CPU on 100 KiB objects.
    const size_t size = static_cast<size_t>(std::min<uint64_t>(length.value_or(kRelayBufferBytes), kRelayBufferBytes));
    std::unique_ptr<char[]> buffer(new char[size]);
    while (sent.is_ok()) {
      CO_ASSIGN_OR_RETURN(const size_t n, co_await exchange.body().read({buffer.get(), size}));
      if (n == 0) break;
      sent = co_await call->write({buffer.get(), n});
    }
  }
  // The upstream may refuse a request before its body (507, 404) and close: its answer is
  // the one to relay, not the broken pipe.
  Result<http::ClientResponse> answered = Status::internal("unset");
  if (sent.is_ok()) {
    answered = co_await call->finish();
  } else {
    answered = co_await call->finish_early();
    if (!answered) co_return sent;
  }
  CO_ASSIGN_OR_RETURN(http::ClientResponse response, std::move(answered));

  http::ResponseHead head;
  head.status = response.status;
  for (const auto& [name, value] : response.headers.fields()) {
    if (!is_hop_by_hop(name)) head.headers.add(name, value);
  }
  http::ResponseWriter& out = exchange.response();
  CO_RETURN_IF_ERROR(co_await out.begin(std::move(head), response.content_length));
  if (in.method == http::Method::kHead) co_return Status::ok();
  // Large bodies go socket to socket with splice(2). A failure halfway leaves the
  // response short, which makes the server close the client's connection: the client
  // sees the cut, and there is no status left to send.
  const Status relayed = co_await call->relay_body(out);
  if (!relayed.is_ok()) SILO_LOG_DEBUG("relay of {} cut short: {}", in.target, relayed);
  co_return Status::ok();
}

}  // namespace silo::http
