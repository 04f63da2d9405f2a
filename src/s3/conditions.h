#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace silo::s3 {

struct Conditions {
  std::optional<std::string_view> if_match;
  std::optional<std::string_view> if_none_match;
  std::optional<std::string_view> if_modified_since;
  std::optional<std::string_view> if_unmodified_since;
};

enum class ConditionResult { kProceed, kNotModified, kPreconditionFailed };

// GET/HEAD (RFC 9110 13.2.2 as S3 applies it): If-Match false -> 412, and If-Match true
// overrides If-Unmodified-Since; If-Unmodified-Since false (alone) -> 412; If-None-Match
// matching -> 304, and If-None-Match not matching overrides If-Modified-Since;
// If-Modified-Since not modified (alone) -> 304. ETag lists, "*" and W/ are understood;
// an unparsable date is ignored.
ConditionResult evaluate_read(const Conditions& c, std::string_view etag_unquoted, int64_t last_modified_unix_seconds);
// x-amz-copy-source-if-*: the same tests, every failure kPreconditionFailed.
ConditionResult evaluate_copy_source(const Conditions& c, std::string_view etag_unquoted,
                                     int64_t last_modified_unix_seconds);
// PUT / CompleteMultipartUpload: If-None-Match "*" fails (PreconditionFailed) when the
// object exists; If-Match fails when it does not (NoSuchKey) or the ETag differs.
Status evaluate_write(const Conditions& c, const std::string* current_etag_unquoted);

}  // namespace silo::s3
