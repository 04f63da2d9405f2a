#pragma once

#include <memory>
#include <optional>
#include <string>

#include "access/policy.h"
#include "cluster/cluster_maps.h"
#include "config/config.h"
#include "http/server.h"
#include "s3/chunked.h"
#include "s3/checksum.h"
#include "s3/errors.h"
#include "s3/route.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

namespace silo::s3api {

// The users who may sign requests: the admin of the config and those of the bucket map.
// Thread-safe (reads the current map snapshot).
class Users {
 public:
  Users(const config::AuthConfig& auth, const cluster::ClusterMaps& maps) : auth_(auth), maps_(maps) {}
  std::optional<std::string> secret_of(std::string_view access_key) const;
  bool is_admin(std::string_view access_key) const;

 private:
  const config::AuthConfig auth_;
  const cluster::ClusterMaps& maps_;
};

// One S3 request once routed and authenticated; lives as long as its exchange.
struct S3Request {
  s3::Route route;
  s3::QueryParams query;
  std::optional<s3::Authenticated> auth;  // nullopt: an anonymous request
  access::Subject subject;                // who asks, for access decisions
  std::string request_id;                 // x-amz-request-id of the answer
  std::string resource;                   // "/bucket/key", for error bodies
};

s3::SigningInput signing_input(const http::RequestHead& head);

// SigV4 (header or presigned) against `users`; nullopt when the request carries no
// signature at all. Errors carry the S3 code as reason (SignatureDoesNotMatch, ...).
Result<std::optional<s3::Authenticated>> authenticate(const http::RequestHead& head, const Users& users,
                                                      int64_t now_unix_seconds);

// Who sent `head`, signed as `auth` (nullopt: anonymous): admin or not, and its address.
access::Subject subject_of(const http::RequestHead& head, const std::optional<s3::Authenticated>& auth,
                           const Users& users);

// Routes and authenticates an S3 request. Errors carry the S3 code as reason.
Result<S3Request> parse_s3_request(const http::RequestHead& head, const Users& users, const config::S3Config& s3,
                                   int64_t now_unix_seconds);

std::string new_request_id();

// Silo keeps no per-object owner: every owner element names the cluster.
inline constexpr std::string_view kOwnerId = "silo";
// <Owner><ID>silo</ID><DisplayName>silo</DisplayName></Owner> (or another element name).
void add_owner(s3::XmlWriter& xml, std::string_view element = "Owner");
// The canned ACL every bucket and object has: FULL_CONTROL for the owner, plus READ for
// everyone when the bucket allows anonymous reads. Silo does not take ACL writes.
std::string acl_xml(bool anonymous_read);
// What a PutBucketAcl / PutObjectAcl asks of Silo's access model, which keeps access per
// bucket (anonymous reads or none): whether anonymous clients may read. Canned ACLs only
// (x-amz-acl); grants (x-amz-grant-*, an AccessControlPolicy body) and canned ACLs Silo can
// not honour (public-read-write, aws-exec-read, log-delivery-write) are NotImplemented.
Result<bool> canned_acl_read(const http::Headers& headers, std::string_view body);

// A response head with the headers every S3 answer carries.
http::ResponseHead s3_head(const S3Request* request, int status = 200);
// Sends `status` as an S3 XML error (headers only for HEAD). Send failures are ignored.
http::Awaitable<void> send_s3_error(http::Exchange& exchange, const Status& status, s3::Subject subject,
                                    const S3Request* request);
http::Awaitable<Status> send_xml(http::Exchange& exchange, const S3Request& request, std::string xml,
                                 int status = 200);

// The body of an S3 request as the client meant it: aws-chunked bodies decoded (every chunk
// signature checked when signed), a declared x-amz-content-sha256 checked at the end.
// read() fails with the S3 reason (SignatureDoesNotMatch, XAmzContentSHA256Mismatch,
// IncompleteBody) instead of ending; trailers() is complete once read() returned 0.
class PayloadReader final : public http::BodyReader {
 public:
  // Errors: InvalidArgument (a streaming body without x-amz-decoded-content-length).
  static Result<std::unique_ptr<PayloadReader>> create(http::Exchange& exchange, const S3Request& request);
  http::Awaitable<Result<size_t>> read(std::span<char> buffer) override;
  bool is_done() const override { return is_done_; }
  // The payload's length when known up front (Content-Length, or x-amz-decoded-content-length).
  std::optional<uint64_t> length() const { return length_; }
  const std::vector<std::pair<std::string, std::string>>& trailers() const;

 private:
  PayloadReader(http::BodyReader& raw, std::optional<uint64_t> length) : raw_(raw), length_(length) {}
  http::Awaitable<Result<size_t>> read_chunked(std::span<char> buffer);

  http::BodyReader& raw_;
  std::optional<uint64_t> length_;
  std::unique_ptr<s3::ChunkedDecoder> decoder_;
  std::unique_ptr<s3::Sha256> sha256_;
  std::string expected_sha256_;
  std::vector<char> in_;  // raw bytes read but not yet decoded: [in_begin_, in_end_)
  size_t in_begin_ = 0;
  size_t in_end_ = 0;
  bool raw_done_ = false;
  bool is_done_ = false;
  std::vector<std::pair<std::string, std::string>> no_trailers_;
};

}  // namespace silo::s3api
