#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "http/message.h"
#include "wire/codec.h"

namespace silo::s3api {

inline constexpr const char* kUserMetadataPrefix = "x-amz-meta-";
// An object's tags, URL-query encoded, on native GET/HEAD answers (CopyObject reads them).
inline constexpr const char* kTagsHeader = "X-Silo-Tagging";

// The S3 ETag of a stored object, unquoted: the MD5 of a single-part object, or
// "<md5 of the part md5s>-<parts>" of a multipart one.
std::string etag_of(const wire::ObjectRecord& record);
// An ETag as clients send it ("\"abc\"" or "abc"), without the quotes.
std::string unquote_etag(std::string_view etag);
// EntityTooLarge (400): an upload of `size` bytes past `max_size` (cluster.s3.max_object_size).
Status too_large(uint64_t size, uint64_t max_size);
// too_large() for a request whose Content-Length is past `max_size`, else ok: a node that
// relays a request refuses it so before reading its body, as its owner would (no request
// body may exceed the largest object).
Status check_relayed_length(const http::RequestHead& request, uint64_t max_size);
// "Sun, 22 Nov 2026 13:45:01 GMT" (RFC 9110 IMF-fixdate).
std::string http_date(int64_t unix_nanos);
// ETag, Last-Modified, Content-* , Cache-Control, Expires, Accept-Ranges, x-amz-meta-*,
// x-amz-tagging-count and the tags of a stored object; its x-amz-checksum-* too when asked.
void add_object_headers(const wire::ObjectRecord& record, http::Headers& headers, bool with_checksums);
// The descriptive attributes a PUT (or a copy source's answer) carries in its headers:
// Content-Type/Encoding/Disposition/Language, Cache-Control, Expires, x-amz-meta-*, and
// the tags of `tags_header` (x-amz-tagging on a PUT). Errors carry the S3 reason
// (MetadataTooLarge, InvalidTag).
Result<wire::ObjectRecord> attributes_from_headers(const http::Headers& headers, std::string_view tags_header);
// The Content-MD5 header as hex; nullopt without one. InvalidDigest when malformed.
Result<std::optional<std::string>> content_md5_hex(const http::Headers& headers);
// Tags as "k1=v1&k2=v2" (URL-query encoding).
std::string encode_tags(const google::protobuf::Map<std::string, std::string>& tags);

}  // namespace silo::s3api
