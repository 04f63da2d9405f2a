#include "s3api/s3_request.h"

#include <strings.h>

#include <charconv>
#include <random>

#include "base/hash.h"
#include "s3/xml.h"

namespace silo::s3api {
namespace {

constexpr size_t kChunkedInputBytes = 64 * 1024;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> Users::secret_of(std::string_view access_key) const {
  if (access_key == auth_.admin_access_key) return auth_.admin_secret_key;
  const auto map = maps_.bucket_map();
  for (const auto& user : map->users()) {
    if (user.access_key() == access_key) return user.secret_key();
  }
  return std::nullopt;
}

bool Users::is_admin(std::string_view access_key) const {
  if (access_key == auth_.admin_access_key) return true;
  const auto map = maps_.bucket_map();
  for (const auto& user : map->users()) {
    if (user.access_key() == access_key) return user.is_admin();
  }
  return false;
}

s3::SigningInput signing_input(const http::RequestHead& head) {
  std::string_view target = head.target;
  const size_t q = target.find('?');
  s3::SigningInput input;
  input.method = head.method_text;
  input.raw_path = target.substr(0, q);
  input.raw_query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  input.headers = &head.headers.fields();
  return input;
}

Result<std::optional<s3::Authenticated>> authenticate(const http::RequestHead& head, const Users& users,
                                                      int64_t now_unix_seconds) {
  const s3::SigningInput input = signing_input(head);
  switch (s3::auth_kind(input)) {
    case s3::AuthKind::kNone: return std::optional<s3::Authenticated>();
    case s3::AuthKind::kSigV2:
    case s3::AuthKind::kHeader:
    case s3::AuthKind::kPresigned: break;
  }
  ASSIGN_OR_RETURN(s3::Authenticated auth,
                   s3::verify(input, [&users](std::string_view key) { return users.secret_of(key); },
                              now_unix_seconds));
  return std::optional<s3::Authenticated>(std::move(auth));
}

Result<S3Request> parse_s3_request(const http::RequestHead& head, const Users& users, const config::S3Config& s3,
                                   int64_t now_unix_seconds) {
  S3Request request;
  request.request_id = new_request_id();
  ASSIGN_OR_RETURN(request.query, s3::parse_query(head.query));
  s3::RouteInput in;
  in.method = head.method_text;
  in.path = head.path;
  in.query = &request.query;
  in.host = head.headers.get("Host").value_or("");
  in.has_copy_source = head.headers.has("x-amz-copy-source");
  in.domains = &s3.domains;
  ASSIGN_OR_RETURN(request.route, s3::route(in));
  request.resource = request.route.bucket.empty() ? "/" : "/" + request.route.bucket;
  if (!request.route.key.empty()) request.resource += "/" + request.route.key;
  ASSIGN_OR_RETURN(request.auth, authenticate(head, users, now_unix_seconds));
  request.subject = subject_of(head, request.auth, users);
  return request;
}

access::Subject subject_of(const http::RequestHead& head, const std::optional<s3::Authenticated>& auth,
                           const Users& users) {
  access::Subject subject;
  if (auth) {
    subject.access_key = auth->access_key;
    subject.is_admin = users.is_admin(auth->access_key);
  }
  subject.source_ip = head.remote_address;
  subject.secure_transport = head.is_tls;
  return subject;
}

std::string new_request_id() {
  thread_local std::mt19937_64 random(std::random_device{}());
  return fmt::format("{:016X}", random());
}

void add_owner(s3::XmlWriter& xml, std::string_view element) {
  xml.open(element).element("ID", kOwnerId).element("DisplayName", kOwnerId).close();
}

std::string acl_xml(bool anonymous_read) {
  // XmlWriter has no attributes; the Grantee elements need xsi:type, so they are spliced in.
  constexpr std::string_view kXsi = R"( xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance")";
  std::string grants = fmt::format(
      R"(<Grant><Grantee{} xsi:type="CanonicalUser"><ID>{}</ID><DisplayName>{}</DisplayName></Grantee>)"
      R"(<Permission>FULL_CONTROL</Permission></Grant>)",
      kXsi, kOwnerId, kOwnerId);
  if (anonymous_read) {
    grants += fmt::format(R"(<Grant><Grantee{} xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI>)"
                          R"(</Grantee><Permission>READ</Permission></Grant>)",
                          kXsi);
  }
  return fmt::format(R"(<?xml version="1.0" encoding="UTF-8"?>)"
                     R"(<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
                     R"(<Owner><ID>{}</ID><DisplayName>{}</DisplayName></Owner>)"
                     R"(<AccessControlList>{}</AccessControlList></AccessControlPolicy>)",
                     kOwnerId, kOwnerId, grants);
}

Result<bool> canned_acl_read(const http::Headers& headers, std::string_view body) {
  for (const auto& [name, value] : headers.fields()) {
    if (name.size() > 12 && ::strncasecmp(name.c_str(), "x-amz-grant-", 12) == 0) {
      return Status::unimplemented("Silo takes canned ACLs (x-amz-acl), not grants ({})", name)
          .with_reason("NotImplemented");
    }
  }
  const auto acl = headers.get("x-amz-acl");
  if (!acl) {
    if (!body.empty()) {
      return Status::unimplemented("Silo takes canned ACLs (x-amz-acl), not an AccessControlPolicy body")
          .with_reason("NotImplemented");
    }
    return Status::invalid_argument("a PutAcl needs x-amz-acl (a canned ACL)").with_reason("InvalidRequest");
  }
  // Every signed user may read every bucket: authenticated-read and the owner ACLs grant
  // nothing more than private does.
  if (*acl == "private" || *acl == "authenticated-read" || *acl == "bucket-owner-read" ||
      *acl == "bucket-owner-full-control") {
    return false;
  }
  if (*acl == "public-read") return true;
  if (*acl == "public-read-write" || *acl == "aws-exec-read" || *acl == "log-delivery-write") {
    return Status::unimplemented("Silo can not honour the canned ACL {}: anonymous clients may only read", *acl)
        .with_reason("NotImplemented");
  }
  return Status::invalid_argument("{} is not a canned ACL", *acl).with_reason("InvalidArgument");
}

http::ResponseHead s3_head(const S3Request* request, int status) {
  http::ResponseHead head;
  head.status = status;
  head.headers.set("Server", "Silo");
  head.headers.set("x-amz-request-id", request != nullptr ? request->request_id : new_request_id());
  return head;
}

http::Awaitable<void> send_s3_error(http::Exchange& exchange, const Status& status, s3::Subject subject,
                                    const S3Request* request) {
  if (exchange.response().has_begun()) co_return;  // too late: the server closes the connection
  const s3::S3Error error = s3::to_s3_error(status, subject);
  http::ResponseHead head = s3_head(request, error.http_status);
  std::string body;
  if (error.http_status != 304) {
    head.headers.set("Content-Type", "application/xml");
    std::vector<std::pair<std::string, std::string>> extra;
    if (request != nullptr && !request->route.bucket.empty()) extra.emplace_back("BucketName", request->route.bucket);
    if (request != nullptr && !request->route.key.empty()) extra.emplace_back("Key", request->route.key);
    body = s3::error_xml(error, request != nullptr ? request->resource : exchange.request().path,
                         head.headers.get("x-amz-request-id").value_or(""), extra);
  }
  if (error.http_status == 405) head.headers.set("Allow", "GET, PUT, HEAD, DELETE, POST");
  std::ignore = co_await exchange.response().send(std::move(head), std::move(body));  // client gone
}

http::Awaitable<Status> send_xml(http::Exchange& exchange, const S3Request& request, std::string xml, int status) {
  http::ResponseHead head = s3_head(&request, status);
  head.headers.set("Content-Type", "application/xml");
  co_return co_await exchange.response().send(std::move(head), std::move(xml));
}

Result<std::unique_ptr<PayloadReader>> PayloadReader::create(http::Exchange& exchange, const S3Request& request) {
  const http::RequestHead& head = exchange.request();
  std::unique_ptr<PayloadReader> reader(new PayloadReader(exchange.body(), head.content_length));
  if (!request.auth) return reader;
  const s3::Authenticated& auth = *request.auth;
  switch (auth.payload) {
    case s3::PayloadKind::kUnsigned: return reader;
    case s3::PayloadKind::kSignedHash:
      reader->sha256_ = std::make_unique<s3::Sha256>();
      reader->expected_sha256_ = auth.payload_sha256_hex;
      return reader;
    case s3::PayloadKind::kStreamingSigned:
    case s3::PayloadKind::kStreamingSignedTrailer:
    case s3::PayloadKind::kStreamingUnsignedTrailer: break;
  }
  const auto decoded = head.headers.get("x-amz-decoded-content-length");
  if (!decoded || !parse_u64(*decoded)) {
    return Status::invalid_argument("an aws-chunked body needs x-amz-decoded-content-length")
        .with_reason("MissingContentLength");
  }
  reader->length_ = parse_u64(*decoded);
  std::optional<s3::ChunkSigning> signing;
  if (auth.payload != s3::PayloadKind::kStreamingUnsignedTrailer) {
    signing = s3::ChunkSigning{auth.signing_key, auth.amz_date, auth.scope, auth.seed_signature};
  }
  reader->decoder_ = std::make_unique<s3::ChunkedDecoder>(std::move(signing),
                                                          auth.payload != s3::PayloadKind::kStreamingSigned);
  reader->in_.resize(kChunkedInputBytes);
  return reader;
}

const std::vector<std::pair<std::string, std::string>>& PayloadReader::trailers() const {
  return decoder_ ? decoder_->trailers() : no_trailers_;
}

http::Awaitable<Result<size_t>> PayloadReader::read(std::span<char> buffer) {
  if (is_done_) co_return size_t{0};
  if (decoder_) co_return co_await read_chunked(buffer);
  CO_ASSIGN_OR_RETURN(const size_t n, co_await raw_.read(buffer));
  if (sha256_) {
    if (n > 0) {
      sha256_->update({buffer.data(), n});
    } else if (!iequals(sha256_->hex(), expected_sha256_)) {
      co_return Status::invalid_argument("the body's SHA-256 is not the x-amz-content-sha256 it was signed with")
          .with_reason("XAmzContentSHA256Mismatch");
    }
  }
  if (n == 0) is_done_ = true;
  co_return n;
}

http::Awaitable<Result<size_t>> PayloadReader::read_chunked(std::span<char> buffer) {
  for (;;) {
    if (in_begin_ == in_end_ && !raw_done_) {
      CO_ASSIGN_OR_RETURN(const size_t n, co_await raw_.read(in_));
      in_begin_ = 0;
      in_end_ = n;
      raw_done_ = n == 0;
    }
    CO_ASSIGN_OR_RETURN(const s3::ChunkedDecoder::Step step,
                        decoder_->decode({in_.data() + in_begin_, in_end_ - in_begin_}, buffer));
    in_begin_ += step.consumed;
    if (step.produced > 0) co_return step.produced;
    if (decoder_->is_done()) {
      size_t extra = in_end_ - in_begin_;
      if (extra == 0 && !raw_done_) {
        CO_ASSIGN_OR_RETURN(extra, co_await raw_.read(in_));
      }
      if (extra != 0) {
        co_return Status::invalid_argument("bytes follow the end of the aws-chunked body").with_reason("IncompleteBody");
      }
      is_done_ = true;
      co_return size_t{0};
    }
    if (raw_done_ && in_begin_ == in_end_) {
      CO_RETURN_IF_ERROR(decoder_->finish());
      co_return Status::invalid_argument("the aws-chunked body ended early").with_reason("IncompleteBody");
    }
  }
}

}  // namespace silo::s3api
