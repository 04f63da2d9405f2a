// libFuzzer target for request heads as the server reads them (tools/fuzz.sh builds and
// runs it with ASan and UBSan): Beast's parser with the server's limits (16 KiB heads, no
// body limit), then detail::to_request_head (the path's percent-decoding, the transfer
// coding check, Expect), then what handlers ask of a head: query parameters and the Range
// header. Whatever the bytes: no crash, no hang, and a head that converts has a path
// without the query, and a query that ends the target.
#include <cstdint>
#include <string_view>

#include "http/detail/beast_io.h"
#include "http/range.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace bhttp = silo::http::detail::bhttp;
  bhttp::request_parser<bhttp::buffer_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(silo::http::detail::kNoBodyLimit);
  parser.eager(false);
  silo::http::detail::ErrorCode ec;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  // In pieces, as bytes arrive from a socket: 7 bytes at first, then the rest.
  for (size_t piece = 7; !rest.empty() && !parser.is_header_done();) {
    const std::string_view chunk = rest.substr(0, piece);
    const size_t used = parser.put(boost::asio::buffer(chunk.data(), chunk.size()), ec);
    if (ec == bhttp::error::need_more) {
      ec = {};
      if (chunk.size() == rest.size()) break;
      piece = rest.size();  // Beast wants the whole head in one buffer, as the server's flat_buffer gives it
      continue;
    }
    if (ec) return 0;
    rest.remove_prefix(used);
  }
  if (!parser.is_header_done()) return 0;
  const silo::Result<silo::http::RequestHead> head = silo::http::detail::to_request_head(parser);
  if (!head) return 0;
  if (!head->query.empty() && !head->target.ends_with("?" + head->query)) __builtin_trap();
  for (const char* name : {"uploadId", "partNumber", "list-type", "prefix", "archpath", "X-Amz-Signature"}) {
    std::ignore = head->query_param(name);
  }
  if (const auto range = head->headers.get("Range")) std::ignore = silo::http::parse_range(*range, 1 << 20);
  return 0;
}
