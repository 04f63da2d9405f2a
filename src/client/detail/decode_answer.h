#pragma once

// Private to client/: runs a wire/ decoder over the body of an answer, so that an error
// names the request as well as the document and field the decoder names.
#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "client/client.h"

namespace silo::client::detail {

// `decode` (a wire::parse_..._json) applied to the body of the answer to `what`
// ("GET /v1/jobs"); its error annotated "<what>: answer".
template <typename Decode>
auto decode_answer(const Response& response, std::string_view what, Decode decode)
    -> decltype(decode(std::string_view(response.body))) {
  auto doc = decode(std::string_view(response.body));
  if (!doc) {
    Status status = std::move(doc).error();
    status.annotate("{}: answer", what);
    return status;
  }
  return doc;
}

}  // namespace silo::client::detail
