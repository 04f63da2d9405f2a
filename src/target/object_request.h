#pragma once

// One object request as the object service (object_service.cc) serves it, whichever
// front-end it came through: the native API (/v1/objects/{bucket}/{name}) or S3. The
// front-ends parse into it and shape the answer; what is done is decided here, once.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "s3api/s3_request.h"
#include "http/message.h"
#include "s3/checksum.h"
#include "s3/conditions.h"
#include "shards/shards.h"
#include "wire/codec.h"

namespace silo::target {

enum class ObjectOp { kPut, kGet, kHead, kDelete, kCopy };

// If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since as sent (or their
// x-amz-copy-source-if-* forms for a copy source). A GET or HEAD evaluates all four; a
// write (PUT, CopyObject, CompleteMultipartUpload) the first two, at commit.
struct Preconditions {
  std::optional<std::string> if_match;
  std::optional<std::string> if_none_match;
  std::optional<std::string> if_modified_since;
  std::optional<std::string> if_unmodified_since;

  // Views into this object: valid while it lives.
  s3::Conditions view() const;
  bool has_write_conditions() const { return if_match || if_none_match; }
  bool operator==(const Preconditions&) const = default;
};
// The conditions among `headers` whose names start with `prefix` ("" or
// "x-amz-copy-source-").
Preconditions preconditions_from(const http::Headers& headers, std::string_view prefix);

// An x-amz-checksum-* a PUT or UploadPart asks for: given in a header, announced as a
// trailer, or only named by x-amz-sdk-checksum-algorithm (computed and stored).
struct ChecksumSpec {
  s3::ChecksumAlgorithm algorithm = s3::ChecksumAlgorithm::kCrc32;
  std::optional<std::string> expected;  // the header's value
  bool from_trailer = false;
  bool operator==(const ChecksumSpec&) const = default;
};
// A decimal of digits only (query parameters such as partNumber, max-parts); nullopt for
// anything else, or past uint64_t.
std::optional<uint64_t> parse_decimal(std::string_view text);

// Errors (InvalidRequest): two x-amz-checksum-* values, an unknown trailer or algorithm.
Result<std::vector<ChecksumSpec>> checksum_specs(const http::Headers& headers);

// x-amz-copy-source: "bucket/key" or "/bucket/key", URL-encoded, maybe "?versionId=null".
enum class Directive { kCopy, kReplace };
struct CopySource {
  std::string bucket;
  std::string name;
  Directive metadata = Directive::kCopy;  // x-amz-metadata-directive
  Directive tagging = Directive::kCopy;   // x-amz-tagging-directive
  std::optional<std::string> range;       // x-amz-copy-source-range (UploadPartCopy only)
  Preconditions conditions;               // x-amz-copy-source-if-*
  bool operator==(const CopySource&) const = default;
};

// UploadPart and UploadPartCopy write one part of a multipart upload, not the object.
struct PartTarget {
  std::string upload_id;
  int number = 0;  // 1..10000
  bool operator==(const PartTarget&) const = default;
};

// Lives no longer than its exchange (it may point at the exchange's S3Request).
struct ObjectRequest {
  ObjectOp op = ObjectOp::kGet;
  std::string bucket;
  std::string name;
  // Set when the request came through S3: the answer is S3-shaped (S3 headers, XML
  // errors), the body may be aws-chunked, and the conditions and checksums apply. Null
  // for the native API, which answers JSON.
  const s3api::S3Request* s3 = nullptr;

  // Reads (GET, HEAD).
  std::optional<std::string> range;  // the Range header
  std::optional<int> part_number;    // ?partNumber= of a GetObject
  // S3: a GET evaluates them, a PUT or copy checks If-Match / If-None-Match at commit.
  Preconditions conditions;
  bool wants_checksums = false;  // answer the stored x-amz-checksum-* values
  // ?archpath= / archmode= / archlist=: a read of the archive's members (docs/shards.md).
  std::optional<shards::ArchiveRead> archive;
  // response-content-type=... and the like: header name, value.
  std::vector<std::pair<std::string, std::string>> response_headers;

  // Writes (PUT, copy).
  wire::ObjectRecord attributes;                // Content-*, Cache-Control, Expires, metadata, tags
  std::optional<std::string> expected_md5_hex;  // Content-MD5
  std::vector<ChecksumSpec> checksums;
  // The native API's Content-Length, checked by the store at commit. (An S3 body may be
  // aws-chunked: its length is checked once decoded.)
  std::optional<uint64_t> expected_size;
  uint64_t max_size = 0;  // the most bytes the body (or copy source) may have
  std::optional<PartTarget> part;
  std::optional<CopySource> copy_source;

  bool is_s3() const { return s3 != nullptr; }
  bool is_read() const { return op == ObjectOp::kGet || op == ObjectOp::kHead; }
  // An S3 HEAD reads the record only; a native HEAD opens the file as its GET does, so
  // that a missing or unreadable copy is found (and repaired) by a HEAD too.
  bool reads_record_only() const { return is_s3() && op == ObjectOp::kHead && !archive; }
  // Reads or keeps what exists, so that during a rebalance an object not moved here yet
  // is copied here first (GET and HEAD read from where it still is instead).
  bool reads_existing() const {
    return op == ObjectOp::kCopy || (op == ObjectOp::kPut && conditions.has_write_conditions());
  }
};

// PUT, GET, HEAD, DELETE /v1/objects/{bucket}/{name}. `max_object_size` bounds a PUT
// (cluster.s3.max_object_size, as for S3). Errors: another method (kInvalidArgument), bad
// attributes or Content-MD5, a Content-Length past the bound (EntityTooLarge).
Result<ObjectRequest> parse_native_request(const http::RequestHead& head, std::string bucket,
                                           std::string name, uint64_t max_object_size);

// PutObject, UploadPart, GetObject, HeadObject, DeleteObject, CopyObject, UploadPartCopy.
// Errors carry the S3 reason (InvalidRequest, InvalidArgument, InvalidTag, ...);
// kUnimplemented for other operations.
Result<ObjectRequest> parse_s3_request(const http::RequestHead& head, const s3api::S3Request& s3,
                                       uint64_t max_object_size);

// The bytes of an object a GET or HEAD answers with.
struct ByteSelection {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool is_partial = false;            // 206 with Content-Range
  std::optional<size_t> parts_count;  // x-amz-mp-parts-count of a part of a multipart object
  bool operator==(const ByteSelection&) const = default;
};
// The part or Range the request names within `record` (the object as clients see it).
// Errors: kOutOfRange with reason InvalidPartNumber, or InvalidRange for a range that is
// not satisfiable (an unparsable Range is ignored: the whole object).
Result<ByteSelection> select_bytes(const ObjectRequest& request, const wire::ObjectRecord& record);

// The attributes of a copy: the source's (as its native GET answered them in
// `source_headers`) or the request's, per directive, and the source's checksums.
Result<wire::ObjectRecord> copy_attributes(const ObjectRequest& request,
                                           const http::Headers& source_headers);

}  // namespace silo::target
