#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/status.h"

namespace silo::s3 {

// The one set of naming rules: every front-end (S3, native API, CLI through them) and the
// store check names with these.
inline constexpr size_t kMaxObjectNameBytes = 1024;  // as S3

// AWS general purpose bucket naming rules: 3..63 characters of a-z 0-9 . -, starting and
// ending with a letter or digit, no "..", not an IPv4 address, none of AWS's reserved
// prefixes and suffixes. Error reason InvalidBucketName.
Status validate_bucket_name(std::string_view name);
// 1..1024 bytes (KeyTooLongError beyond) of valid UTF-8 without NUL (InvalidArgument
// otherwise: the store keeps names as protobuf strings). Names never become paths, so '/',
// "..", '%' and spaces are all fine.
Status validate_object_name(std::string_view name);

// The object an x-amz-copy-source header names: "bucket/key" or "/bucket/key", URL-encoded,
// maybe "?versionId=null" (no other version). InvalidArgument otherwise.
struct ObjectName {
  std::string bucket;
  std::string name;
};
Result<ObjectName> parse_copy_source(std::string_view value);

}  // namespace silo::s3
