#pragma once

#include <string_view>

#include "base/status.h"

namespace silo::s3 {

// AWS general purpose bucket naming rules: 3..63 characters of a-z 0-9 . -, starting and
// ending with a letter or digit, no "..", not an IPv4 address, none of AWS's reserved
// prefixes and suffixes. Error reason InvalidBucketName.
Status validate_bucket_name(std::string_view name);
// 1..1024 bytes (KeyTooLongError beyond) of valid UTF-8 (InvalidArgument otherwise: the
// store keeps names as protobuf strings).
Status validate_object_key(std::string_view key);

}  // namespace silo::s3
