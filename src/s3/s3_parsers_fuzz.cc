// libFuzzer target for the S3 front-end's parsers of outside bytes (tools/fuzz.sh builds
// and runs it with ASan and UBSan). The first byte picks the parser, the rest is its
// input: SigV4/SigV2 verification of a request made of the bytes (headers and presigned
// queries), the aws-chunked decoder fed in uneven pieces, the XML documents, the tagging
// header, routing of a path and query, and x-amz-copy-source. Whatever the bytes, each
// ends without a crash, a hang or a sanitizer report, and bounded outputs stay bounded.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "s3/chunked.h"
#include "s3/cors.h"
#include "s3/names.h"
#include "s3/route.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace {

using silo::s3::ChunkedDecoder;

// "METHOD PATH?QUERY\nName: value\n..." -> a SigningInput verified with one known user.
void verify_request(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> headers;
  const size_t eol = text.find('\n');
  const std::string_view line = text.substr(0, eol);
  const size_t space = line.find(' ');
  const std::string_view method = line.substr(0, space);
  std::string_view target = space == std::string_view::npos ? "" : line.substr(space + 1);
  const size_t q = target.find('?');
  silo::s3::SigningInput input;
  input.method = method;
  input.raw_path = target.substr(0, q);
  input.raw_query = q == std::string_view::npos ? "" : target.substr(q + 1);
  std::string_view rest = eol == std::string_view::npos ? "" : text.substr(eol + 1);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view h = rest.substr(0, end);
    const size_t colon = h.find(':');
    if (colon != std::string_view::npos) headers.emplace_back(h.substr(0, colon), h.substr(colon + 1));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  input.headers = &headers;
  std::ignore = silo::s3::auth_kind(input);
  const auto secret_of = [](std::string_view key) -> std::optional<std::string> {
    if (key == "AKIDEXAMPLE") return std::string("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    return std::nullopt;
  };
  std::ignore = silo::s3::verify(input, secret_of, 1369353600);  // 2013-05-24, AWS's examples
}

void decode_chunked(std::string_view body, bool trailer) {
  ChunkedDecoder decoder(std::nullopt, trailer);
  std::vector<char> out(4096);
  size_t piece = 1;
  while (!body.empty() && !decoder.is_done()) {
    const size_t n = std::min(body.size(), piece);
    auto step = decoder.decode({body.data(), n}, out);
    if (!step) return;
    if (step->consumed > n || step->produced > out.size()) __builtin_trap();
    if (step->consumed == 0 && step->produced == 0 && !decoder.is_done()) {
      piece = piece * 2 + 1;  // it wants more at once
      if (piece > body.size() + 1) return;
      continue;
    }
    body.remove_prefix(step->consumed);
    piece = piece % 7 + 1;
  }
  std::ignore = decoder.finish();
}

void route(std::string_view text) {
  const size_t q = text.find('?');
  const auto query = silo::s3::parse_query(q == std::string_view::npos ? "" : text.substr(q + 1));
  if (!query) return;
  for (const std::string_view method : {"GET", "PUT", "POST", "DELETE", "HEAD"}) {
    silo::s3::RouteInput in;
    in.method = method;
    in.path = text.substr(0, q);
    in.query = &*query;
    in.host = "bucket.s3.example.com";
    const std::vector<std::string> domains = {"s3.example.com"};
    in.domains = &domains;
    std::ignore = silo::s3::route(in);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 12) {
    case 0: verify_request(bytes); break;
    case 1: decode_chunked(bytes, false); break;
    case 2: decode_chunked(bytes, true); break;
    case 3: std::ignore = silo::s3::parse_delete(bytes); break;
    case 4: std::ignore = silo::s3::parse_complete_multipart(bytes); break;
    case 5: std::ignore = silo::s3::parse_tagging(bytes); break;
    case 6: std::ignore = silo::s3::parse_tagging_header(bytes); break;
    case 7: std::ignore = silo::s3::parse_cors(bytes); break;
    case 8: std::ignore = silo::s3::parse_versioning(bytes); break;
    case 9: std::ignore = silo::s3::parse_create_bucket(bytes); break;
    case 10: route(bytes); break;
    case 11: std::ignore = silo::s3::parse_copy_source(bytes); break;
  }
  return 0;
}
