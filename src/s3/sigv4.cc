#include "s3/sigv4.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/base64.h"
#include "base/text.h"
#include "s3/checksum.h"
#include "s3/http_time.h"

namespace silo::s3 {
namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";
constexpr int64_t kMaxSkewSeconds = 15 * 60;

// A query part percent-decoded, or as sent when it is not valid percent-encoding.
std::string decoded_or_raw(std::string_view part) {
  auto decoded = text::percent_decode(part);
  return decoded ? std::move(decoded).value() : std::string(part);
}
constexpr int64_t kMaxPresignedExpiry = 7 * 24 * 3600;

using Headers = std::vector<std::pair<std::string, std::string>>;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const Headers& headers_of(const SigningInput& input) {
  static const Headers kNoHeaders;
  return input.headers != nullptr ? *input.headers : kNoHeaders;
}

std::optional<std::string_view> header(const Headers& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (iequals(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

struct QueryPair {
  std::string key;
  std::string value;
};

// Decoded query pairs in order; a bad escape keeps the raw text (the signature then fails).
std::vector<QueryPair> query_pairs(std::string_view raw) {
  std::vector<QueryPair> out;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view part = raw.substr(start, end - start);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      const std::string_view k = part.substr(0, eq);
      const std::string_view v =
          eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
      out.push_back(
          {decoded_or_raw(k), decoded_or_raw(v)});
    }
    start = end + 1;
  }
  return out;
}

std::optional<std::string> query_value(const std::vector<QueryPair>& pairs, std::string_view key) {
  for (const auto& p : pairs) {
    if (p.key == key) return p.value;
  }
  return std::nullopt;
}

std::string canonical_query(const std::vector<QueryPair>& pairs, bool skip_signature) {
  std::vector<std::pair<std::string, std::string>> encoded;
  for (const auto& p : pairs) {
    if (skip_signature && p.key == "X-Amz-Signature") continue;
    encoded.emplace_back(text::percent_encode(p.key), text::percent_encode(p.value));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

// The query as sent, its pairs sorted ("k" as "k="): what clients that do not re-encode sign.
std::string raw_sorted_query(std::string_view raw, bool skip_signature) {
  std::vector<std::pair<std::string_view, std::string_view>> parts;
  for (size_t start = 0; start <= raw.size();) {
    size_t end = raw.find('&', start);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view part = raw.substr(start, end - start);
    start = end + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string_view k = part.substr(0, eq);
    if (skip_signature && decoded_or_raw(k) == "X-Amz-Signature") continue;
    parts.emplace_back(k, eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& [k, v] : parts) {
    if (!out.empty()) out += '&';
    out += fmt::format("{}={}", k, v);
  }
  return out;
}

// Values trimmed, inner runs of spaces collapsed, repeated headers joined with ','.
std::string canonical_headers(const Headers& headers, const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) {
    std::string joined;
    bool first = true;
    for (const auto& [n, v] : headers) {
      if (!iequals(n, name)) continue;
      std::string value;
      bool in_space = false;
      for (const char c : trim(v)) {
        if (c == ' ' || c == '\t') {
          if (!in_space) value += ' ';
          in_space = true;
        } else {
          value += c;
          in_space = false;
        }
      }
      if (!first) joined += ',';
      joined += value;
      first = false;
    }
    out += name + ":" + joined + "\n";
  }
  return out;
}

std::string join(const std::vector<std::string>& names, char separator) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += separator;
    out += n;
  }
  return out;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string canonical_uri(std::string_view raw_path) {
  const auto decoded = text::percent_decode(raw_path);
  if (!decoded) return std::string(raw_path);
  std::string out = text::percent_encode_path(*decoded);
  return out.empty() ? "/" : out;
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request) {
  return fmt::format("{}\n{}\n{}\n{}", kAlgorithm, amz_date, scope, sha256_hex(canonical_request));
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Credential {
  std::string access_key;
  std::string date;
  std::string region;
  std::string service;
};

// "AK/20130524/us-east-1/s3/aws4_request"; the access key itself may not hold '/'.
std::optional<Credential> parse_credential(std::string_view text) {
  const auto parts = split(text, '/');
  if (parts.size() != 5 || parts[0].empty() || parts[1].size() != 8 || parts[2].empty() ||
      parts[4] != "aws4_request") {
    return std::nullopt;
  }
  return Credential{parts[0], parts[1], parts[2], parts[3]};
}

Status malformed(std::string_view why) {
  return Status::invalid_argument("The authorization header is malformed; {}", why)
      .with_reason("AuthorizationHeaderMalformed");
}

Status query_error(std::string_view why) {
  return Status::invalid_argument("{}", why).with_reason("AuthorizationQueryParametersError");
}

struct Parsed {
  Credential credential;
  std::vector<std::string> signed_headers;
  std::string signature;
  std::string amz_date;
  int64_t signed_at = 0;
  std::string payload_hash;  // as it enters the canonical request
  bool is_presigned = false;
};

Result<Parsed> parse_header_auth(const SigningInput& input, std::string_view authorization) {
  Parsed p;
  std::string_view rest = trim(authorization);
  if (rest.substr(0, kAlgorithm.size()) != kAlgorithm)
    return malformed("the algorithm must be AWS4-HMAC-SHA256");
  rest.remove_prefix(kAlgorithm.size());
  if (rest.empty() || (rest.front() != ' ' && rest.front() != '\t')) {
    return malformed("the algorithm must be AWS4-HMAC-SHA256");
  }
  std::optional<std::string> credential, signed_headers, signature;
  for (const std::string& field : split(rest, ',')) {
    const std::string_view f = trim(field);
    const size_t eq = f.find('=');
    if (eq == std::string_view::npos) return malformed(fmt::format("'{}' is not key=value", f));
    const std::string_view key = trim(f.substr(0, eq));
    const std::string value(trim(f.substr(eq + 1)));
    if (key == "Credential")
      credential = value;
    else if (key == "SignedHeaders")
      signed_headers = value;
    else if (key == "Signature")
      signature = value;
  }
  if (!credential || !signed_headers || !signature)
    return malformed("Credential, SignedHeaders and Signature are required");
  auto parsed = parse_credential(*credential);
  if (!parsed)
    return malformed(
        fmt::format("the Credential '{}' is not AK/date/region/service/aws4_request", *credential));
  p.credential = std::move(*parsed);
  p.signed_headers = split(*signed_headers, ';');
  p.signature = *signature;
  const Headers& headers = headers_of(input);
  if (auto d = header(headers, "x-amz-date")) {
    p.amz_date = std::string(*d);
    auto t = parse_amz_date(*d);
    if (!t)
      return Status::permission_denied("x-amz-date '{}' is not YYYYMMDDTHHMMSSZ", *d)
          .with_reason("AccessDenied");
    p.signed_at = *t;
  } else if (auto http_date = header(headers, "Date")) {
    auto t = parse_http_date(*http_date);
    if (!t)
      return Status::permission_denied("Date '{}' is not an HTTP date", *http_date)
          .with_reason("AccessDenied");
    p.signed_at = *t;
    p.amz_date = format_amz_date(*t);
  } else {
    return Status::permission_denied(
               "AWS authentication requires a valid Date or x-amz-date header")
        .with_reason("AccessDenied");
  }
  const auto payload = header(headers, "x-amz-content-sha256");
  if (!payload) {
    // Generic SigV4 signers (curl --aws-sigv4 before 8.x) leave the header out and sign
    // the body's hash. Without a body that hash is known, so such requests are accepted.
    const auto length = header(headers, "Content-Length");
    const bool has_body = (length && trim(*length) != "0") || header(headers, "Transfer-Encoding");
    if (has_body) {
      return Status::invalid_argument(
                 "Missing required header for this request: x-amz-content-sha256")
          .with_reason("InvalidRequest");
    }
    p.payload_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  } else {
    p.payload_hash = std::string(*payload);
  }
  return p;
}

Result<Parsed> parse_query_auth(const std::vector<QueryPair>& pairs) {
  Parsed p;
  p.is_presigned = true;
  const auto algorithm = query_value(pairs, "X-Amz-Algorithm");
  if (algorithm != std::optional<std::string>(std::string(kAlgorithm))) {
    return query_error("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
  }
  const auto credential = query_value(pairs, "X-Amz-Credential");
  const auto date = query_value(pairs, "X-Amz-Date");
  const auto expires = query_value(pairs, "X-Amz-Expires");
  const auto signed_headers = query_value(pairs, "X-Amz-SignedHeaders");
  const auto signature = query_value(pairs, "X-Amz-Signature");
  if (!credential || !date || !expires || !signed_headers || !signature) {
    return query_error(
        "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, "
        "X-Amz-Signature, "
        "X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.");
  }
  auto parsed = parse_credential(*credential);
  if (!parsed)
    return query_error(
        fmt::format("Error parsing the X-Amz-Credential parameter '{}'", *credential));
  p.credential = std::move(*parsed);
  auto t = parse_amz_date(*date);
  if (!t)
    return query_error(fmt::format("X-Amz-Date '{}' must be in the ISO8601 Long Format", *date));
  p.signed_at = *t;
  p.amz_date = *date;
  int64_t seconds = 0;
  const auto [end, ec] =
      std::from_chars(expires->data(), expires->data() + expires->size(), seconds);
  if (ec != std::errc() || end != expires->data() + expires->size()) {
    return query_error("X-Amz-Expires should be a number");
  }
  // A URL that can never be valid is denied as an expired one is (403 AccessDenied, as
  // AWS answers), not a malformed request.
  if (seconds < 1) {
    return Status::permission_denied("X-Amz-Expires must be a positive number of seconds, not {}", seconds)
        .with_reason("AccessDenied");
  }
  if (seconds > kMaxPresignedExpiry) {
    return Status::permission_denied("X-Amz-Expires must be less than a week (in seconds) that is 604800")
        .with_reason("AccessDenied");
  }
  p.signed_headers = split(*signed_headers, ';');
  p.signature = *signature;
  p.payload_hash = query_value(pairs, "X-Amz-Content-Sha256").value_or("UNSIGNED-PAYLOAD");
  return p;
}

Result<PayloadKind> payload_kind(std::string_view hash) {
  if (hash == "UNSIGNED-PAYLOAD") return PayloadKind::kUnsigned;
  if (hash == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") return PayloadKind::kStreamingSigned;
  if (hash == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
    return PayloadKind::kStreamingSignedTrailer;
  if (hash == "STREAMING-UNSIGNED-PAYLOAD-TRAILER") return PayloadKind::kStreamingUnsignedTrailer;
  const bool is_hex =
      hash.size() == 64 && std::all_of(hash.begin(), hash.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      });
  if (is_hex) return PayloadKind::kSignedHash;
  return Status::invalid_argument(
             "x-amz-content-sha256 '{}' is neither a SHA-256 nor a known payload mode", hash)
      .with_reason("InvalidArgument");
}

}  // namespace

std::string signing_key(std::string_view secret, std::string_view date, std::string_view region,
                        std::string_view service) {
  // Four HMACs per request were 8.5 % of a target's CPU on 100 KiB GETs; the key changes
  // once a day per credential, so each thread remembers the last few it derived.
  struct Entry {
    std::string secret, date, region, service, key;
  };
  thread_local std::array<Entry, 4> recent;
  thread_local size_t next_slot = 0;
  for (const Entry& e : recent) {
    if (!e.key.empty() && e.date == date && e.secret == secret && e.region == region && e.service == service) {
      return e.key;
    }
  }
  std::string key = hmac_sha256("AWS4" + std::string(secret), date);
  key = hmac_sha256(key, region);
  key = hmac_sha256(key, service);
  key = hmac_sha256(key, "aws4_request");
  recent[next_slot] = Entry{std::string(secret), std::string(date), std::string(region), std::string(service), key};
  next_slot = (next_slot + 1) % recent.size();
  return key;
}

AuthKind auth_kind(const SigningInput& input) {
  if (auto a = header(headers_of(input), "Authorization")) {
    const std::string_view value = trim(*a);
    if (value.substr(0, kAlgorithm.size()) == kAlgorithm) return AuthKind::kHeader;
    if (value.substr(0, 4) == "AWS ") return AuthKind::kSigV2;
    return AuthKind::kHeader;  // malformed: verify() says how
  }
  const auto pairs = query_pairs(input.raw_query);
  if (query_value(pairs, "X-Amz-Signature") || query_value(pairs, "X-Amz-Algorithm"))
    return AuthKind::kPresigned;
  if (query_value(pairs, "Signature")) return AuthKind::kSigV2;
  return AuthKind::kNone;
}

namespace {

// Sub-resources that enter a SigV2 CanonicalizedResource (AWS "Signing and authenticating
// REST requests"), sorted.
constexpr std::string_view kV2SubResources[] = {
    "acl", "cors", "delete", "lifecycle", "location", "logging", "notification", "partNumber", "policy",
    "requestPayment", "response-cache-control", "response-content-disposition", "response-content-encoding",
    "response-content-language", "response-content-type", "response-expires", "restore", "tagging", "torrent",
    "uploadId", "uploads", "versionId", "versioning", "versions", "website"};

// SigV2 (HMAC-SHA1), header "AWS key:signature" or query AWSAccessKeyId/Signature/Expires:
// boto3's and s3cmd's default presigned URLs are still of this kind. Path-style only.
Result<Authenticated> verify_v2(const SigningInput& input, const std::vector<QueryPair>& pairs,
                                const SecretLookup& secret_of, int64_t now_unix_seconds) {
  const Headers& headers = *input.headers;
  std::string access_key, signature, date_line;
  const bool is_query = !header(headers, "Authorization").has_value();
  if (is_query) {
    const auto key = query_value(pairs, "AWSAccessKeyId");
    const auto sig = query_value(pairs, "Signature");
    const auto expires = query_value(pairs, "Expires");
    if (!key || !sig || !expires) {
      return Status::permission_denied("Query-string authentication requires the Signature, Expires and "
                                       "AWSAccessKeyId parameters")
          .with_reason("AccessDenied");
    }
    int64_t when = 0;
    const auto [end, ec] = std::from_chars(expires->data(), expires->data() + expires->size(), when);
    if (ec != std::errc() || end != expires->data() + expires->size()) {
      return Status::permission_denied("Expires must be a number of seconds since the epoch").with_reason("AccessDenied");
    }
    if (now_unix_seconds > when) return Status::permission_denied("Request has expired").with_reason("AccessDenied");
    access_key = *key;
    signature = *sig;
    date_line = *expires;
  } else {
    const std::string_view value = trim(*header(headers, "Authorization")).substr(4);
    const size_t colon = value.rfind(':');
    if (colon == std::string_view::npos) return malformed("a SigV2 Authorization is \"AWS key:signature\"");
    access_key = std::string(trim(value.substr(0, colon)));
    signature = std::string(trim(value.substr(colon + 1)));
    std::optional<int64_t> when;
    if (auto amz = header(headers, "x-amz-date")) {
      when = parse_http_date(*amz);
    } else if (auto d = header(headers, "Date")) {
      when = parse_http_date(*d);
      date_line = std::string(*d);
    }
    if (!when) {
      return Status::permission_denied("AWS authentication requires a valid Date or x-amz-date header")
          .with_reason("AccessDenied");
    }
    if (std::llabs(now_unix_seconds - *when) > kMaxSkewSeconds) {
      return Status::permission_denied("The difference between the request time and the current time is too large.")
          .with_reason("RequestTimeTooSkewed");
    }
  }
  const auto secret = secret_of(access_key);
  if (!secret) {
    return Status::permission_denied("The AWS Access Key Id you provided does not exist in our records.")
        .with_reason("InvalidAccessKeyId");
  }
  std::vector<std::pair<std::string, std::string>> amz;
  for (const auto& [n, v] : headers) {
    std::string name = lower(n);
    if (name.rfind("x-amz-", 0) != 0) continue;
    auto it = std::find_if(amz.begin(), amz.end(), [&](const auto& p) { return p.first == name; });
    if (it == amz.end()) {
      amz.emplace_back(std::move(name), std::string(trim(v)));
    } else {
      it->second += "," + std::string(trim(v));
    }
  }
  std::sort(amz.begin(), amz.end());
  std::string text = fmt::format("{}\n{}\n{}\n{}\n", input.method, header(headers, "Content-MD5").value_or(""),
                                 header(headers, "Content-Type").value_or(""), date_line);
  for (const auto& [n, v] : amz) text += n + ":" + v + "\n";
  text += input.raw_path.empty() ? std::string_view("/") : input.raw_path;
  char separator = '?';
  for (const std::string_view sub : kV2SubResources) {
    for (const auto& p : pairs) {
      if (p.key != sub) continue;
      text += separator;
      text += p.key;
      if (!p.value.empty() || std::string_view(p.key).substr(0, 9) == "response-") text += "=" + p.value;
      separator = '&';
    }
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha1(), secret->data(), static_cast<int>(secret->size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &length);
  if (!equal_in_constant_time(base64::encode({mac, length}), signature)) {
    return Status::permission_denied(
               "The request signature we calculated does not match the signature you provided. Check your key "
               "and signing method.")
        .with_reason("SignatureDoesNotMatch");
  }
  Authenticated out;
  out.access_key = access_key;
  out.is_presigned = is_query;
  out.payload = PayloadKind::kUnsigned;
  return out;
}

}  // namespace

Result<Authenticated> verify(const SigningInput& input, const SecretLookup& secret_of,
                             int64_t now_unix_seconds) {
  const AuthKind kind = auth_kind(input);
  if (kind == AuthKind::kNone) return Status::permission_denied("Access Denied").with_reason("AccessDenied");
  if (kind == AuthKind::kSigV2) return verify_v2(input, query_pairs(input.raw_query), secret_of, now_unix_seconds);
  const auto pairs = query_pairs(input.raw_query);
  const Headers& request_headers = headers_of(input);
  if (kind == AuthKind::kHeader &&
      (query_value(pairs, "X-Amz-Algorithm") || query_value(pairs, "X-Amz-Signature") ||
       query_value(pairs, "Signature"))) {
    return Status::invalid_argument(
               "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, "
               "Signature query string "
               "parameter or the Authorization header should be specified")
        .with_reason("InvalidArgument");
  }
  Parsed p;
  int64_t expires = 0;
  if (kind == AuthKind::kHeader) {
    ASSIGN_OR_RETURN(p, parse_header_auth(input, *header(request_headers, "Authorization")));
  } else {
    ASSIGN_OR_RETURN(p, parse_query_auth(pairs));
    const std::string text = *query_value(pairs, "X-Amz-Expires");  // parse_query_auth checked it
    std::from_chars(text.data(), text.data() + text.size(), expires);
  }
  if (std::find(p.signed_headers.begin(), p.signed_headers.end(), "host") ==
      p.signed_headers.end()) {
    return (kind == AuthKind::kHeader ? malformed("the host header must be signed")
                                      : query_error("X-Amz-SignedHeaders must include host"));
  }
  if (p.credential.service != "s3") {
    const std::string why = fmt::format(
        "Credential should be scoped to correct service: 's3', not '{}'", p.credential.service);
    return kind == AuthKind::kHeader ? malformed(why) : query_error(why);
  }
  const auto secret = secret_of(p.credential.access_key);
  if (!secret) {
    return Status::permission_denied(
               "The AWS Access Key Id you provided does not exist in our records.")
        .with_reason("InvalidAccessKeyId");
  }
  if (p.amz_date.substr(0, 8) != p.credential.date) {
    return (kind == AuthKind::kHeader
                ? malformed(fmt::format("Invalid credential date \"{}\"; it must match x-amz-date",
                                        p.credential.date))
                : query_error("Invalid credential date; it must match X-Amz-Date"));
  }
  ASSIGN_OR_RETURN(const PayloadKind payload, payload_kind(p.payload_hash));

  const std::string scope = fmt::format("{}/{}/{}/aws4_request", p.credential.date,
                                        p.credential.region, p.credential.service);
  const std::string key =
      signing_key(*secret, p.credential.date, p.credential.region, p.credential.service);
  std::vector<std::string> names;
  for (const auto& n : p.signed_headers) names.push_back(lower(n));
  const std::string headers = canonical_headers(request_headers, names);
  // Clients differ in which characters they escape. S3's canonical forms (decoded, then
  // re-encoded) come first; then the path and the query exactly as sent (botocore signs
  // both raw), so every client that signed what it sent is accepted.
  std::vector<std::string> uris = {canonical_uri(input.raw_path)};
  if (const std::string raw(input.raw_path.empty() ? "/" : input.raw_path); raw != uris[0])
    uris.push_back(raw);
  std::vector<std::string> queries = {canonical_query(pairs, p.is_presigned)};
  if (std::string raw = raw_sorted_query(input.raw_query, p.is_presigned); raw != queries[0]) {
    queries.push_back(std::move(raw));
  }
  const std::string signed_names = join(names, ';');
  bool matched = false;
  for (const std::string& query : queries) {
    for (const std::string& uri : uris) {
      const std::string request = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", input.method, uri, query,
                                              headers, signed_names, p.payload_hash);
      const std::string expected =
          to_hex(hmac_sha256(key, string_to_sign(p.amz_date, scope, request)));
      matched = matched || equal_in_constant_time(expected, p.signature);
    }
  }
  if (!matched) {
    return Status::permission_denied(
               "The request signature we calculated does not match the signature you provided. "
               "Check your key "
               "and signing method.")
        .with_reason("SignatureDoesNotMatch");
  }
  if (kind == AuthKind::kHeader) {
    if (std::llabs(now_unix_seconds - p.signed_at) > kMaxSkewSeconds) {
      return Status::permission_denied(
                 "The difference between the request time and the current time is too large.")
          .with_reason("RequestTimeTooSkewed");
    }
  } else {
    if (now_unix_seconds > p.signed_at + expires) {
      return Status::permission_denied("Request has expired").with_reason("AccessDenied");
    }
    if (p.signed_at > now_unix_seconds + kMaxSkewSeconds) {
      return Status::permission_denied("Request is not valid yet").with_reason("AccessDenied");
    }
  }
  Authenticated out;
  out.access_key = p.credential.access_key;
  out.is_presigned = p.is_presigned;
  out.payload = payload;
  if (payload == PayloadKind::kSignedHash) out.payload_sha256_hex = lower(p.payload_hash);
  out.signing_key = key;
  out.amz_date = p.amz_date;
  out.scope = scope;
  out.seed_signature = p.signature;
  return out;
}

std::vector<std::pair<std::string, std::string>> sign(const SigningInput& input,
                                                      const SigningKey& key,
                                                      int64_t now_unix_seconds,
                                                      std::string_view payload_sha256_hex) {
  const std::string amz_date = format_amz_date(now_unix_seconds);
  const std::string date = amz_date.substr(0, 8);
  // Values this function sets replace any the caller left in, so none is signed twice.
  Headers headers;
  for (const auto& [n, v] : headers_of(input)) {
    if (!iequals(n, "authorization") && !iequals(n, "x-amz-date") &&
        !iequals(n, "x-amz-content-sha256")) {
      headers.emplace_back(n, v);
    }
  }
  headers.emplace_back("x-amz-date", amz_date);
  headers.emplace_back("x-amz-content-sha256", std::string(payload_sha256_hex));
  std::vector<std::string> names;
  for (const auto& [n, v] : headers) names.push_back(lower(n));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", date, key.region, key.service);
  const std::string request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", input.method, canonical_uri(input.raw_path),
                  canonical_query(query_pairs(input.raw_query), false),
                  canonical_headers(headers, names), join(names, ';'), payload_sha256_hex);
  const std::string k = signing_key(key.secret_key, date, key.region, key.service);
  const std::string signature = to_hex(hmac_sha256(k, string_to_sign(amz_date, scope, request)));
  return {{"Authorization",
           fmt::format("{} Credential={}/{}, SignedHeaders={}, Signature={}", kAlgorithm,
                       key.access_key, scope, join(names, ';'), signature)},
          {"x-amz-date", amz_date},
          {"x-amz-content-sha256", std::string(payload_sha256_hex)}};
}

std::string presign_query(const SigningInput& input, const SigningKey& key,
                          int64_t now_unix_seconds, int64_t expires_seconds) {
  const std::string amz_date = format_amz_date(now_unix_seconds);
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = fmt::format("{}/{}/{}/aws4_request", date, key.region, key.service);
  auto pairs = query_pairs(input.raw_query);
  pairs.push_back({"X-Amz-Algorithm", std::string(kAlgorithm)});
  pairs.push_back({"X-Amz-Credential", key.access_key + "/" + scope});
  pairs.push_back({"X-Amz-Date", amz_date});
  pairs.push_back({"X-Amz-Expires", std::to_string(expires_seconds)});
  pairs.push_back({"X-Amz-SignedHeaders", "host"});
  const std::string query = canonical_query(pairs, true);
  const std::vector<std::string> names = {"host"};
  const std::string request = fmt::format("{}\n{}\n{}\n{}\nhost\nUNSIGNED-PAYLOAD", input.method,
                                          canonical_uri(input.raw_path), query,
                                          canonical_headers(headers_of(input), names));
  const std::string k = signing_key(key.secret_key, date, key.region, key.service);
  return query +
         "&X-Amz-Signature=" + to_hex(hmac_sha256(k, string_to_sign(amz_date, scope, request)));
}

}  // namespace silo::s3
