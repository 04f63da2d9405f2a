#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace silo::s3 {

// A request as SigV4 sees it; views into the caller's data.
struct SigningInput {
  std::string_view method;     // "GET"
  std::string_view raw_path;   // as on the request line, still percent-encoded, no query
  std::string_view raw_query;  // after '?', still encoded, may be empty
  const std::vector<std::pair<std::string, std::string>>* headers = nullptr;  // any case
};

enum class AuthKind { kNone, kHeader, kPresigned, kSigV2 };
AuthKind auth_kind(const SigningInput& input);

enum class PayloadKind {
  kSignedHash,               // x-amz-content-sha256 is the body's hash: check it
  kUnsigned,                 // UNSIGNED-PAYLOAD (and every presigned request)
  kStreamingSigned,          // STREAMING-AWS4-HMAC-SHA256-PAYLOAD
  kStreamingSignedTrailer,   // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  kStreamingUnsignedTrailer  // STREAMING-UNSIGNED-PAYLOAD-TRAILER
};

struct Authenticated {
  std::string access_key;
  bool is_presigned = false;
  PayloadKind payload = PayloadKind::kUnsigned;
  std::string payload_sha256_hex;  // kSignedHash: what the body must hash to
  // What the streaming kinds need to check chunk signatures (ChunkedDecoder).
  std::string signing_key;     // raw 32 bytes
  std::string amz_date;        // "20130524T000000Z"
  std::string scope;           // "20130524/us-east-1/s3/aws4_request"
  std::string seed_signature;  // hex
};

using SecretLookup = std::function<std::optional<std::string>(std::string_view access_key)>;

// Verifies an Authorization-header or presigned (query) SigV4 request against the
// server clock `now_unix_seconds`. Errors carry the S3 code as reason:
// AuthorizationHeaderMalformed, AuthorizationQueryParametersError, InvalidAccessKeyId,
// SignatureDoesNotMatch, RequestTimeTooSkewed, AccessDenied (expired, unsigned, SigV2),
// InvalidRequest (x-amz-content-sha256 missing), InvalidArgument (x-amz-content-sha256
// unknown, or both an Authorization header and query authentication).
// Accepts any region; the service must be "s3". Header auth: the request time (x-amz-date,
// else Date) may be at most 15 minutes from now. Presigned: valid from X-Amz-Date until
// X-Amz-Date + X-Amz-Expires inclusive. Clients differ in what they escape, so the
// signature may be over the canonical URI and query (percent-decoded, then text::percent_encode'd;
// a raw '+' in the query is a literal '+') or over the path and the query pairs exactly
// as sent (sorted). Signatures are compared in constant time.
Result<Authenticated> verify(const SigningInput& input, const SecretLookup& secret_of,
                             int64_t now_unix_seconds);


// The SigV4 signing key: HMAC chain over date (YYYYMMDD), region, service, "aws4_request".
std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service);

// Client side (tests, the CLI, backends).
struct SigningKey {
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  std::string service = "s3";
};
// The headers to add to a request (Authorization, x-amz-date, x-amz-content-sha256); every
// header of input.headers is signed, and `host` must be among them. Authorization,
// x-amz-date and x-amz-content-sha256 in input.headers are ignored: the caller sends the
// returned values instead.
std::vector<std::pair<std::string, std::string>> sign(const SigningInput& input,
                                                      const SigningKey& key,
                                                      int64_t now_unix_seconds,
                                                      std::string_view payload_sha256_hex);
// The whole query string of a presigned URL for `input` (its existing query kept).
std::string presign_query(const SigningInput& input, const SigningKey& key,
                          int64_t now_unix_seconds, int64_t expires_seconds);

}  // namespace silo::s3
