#pragma once

#include <string_view>

#include "base/result.h"

namespace silo::cluster {

inline constexpr size_t kMaxObjectNameBytes = 1024;  // as S3

// S3 bucket naming rules: 3-63 characters of a-z, 0-9, '.', '-', starting and ending
// with a letter or digit, no "..", not an IP address. Errors name the broken rule.
Status validate_bucket_name(std::string_view name);
// Any non-empty byte string up to 1,024 bytes without NUL. Names never become paths,
// so '/', "..", '%' and spaces are all fine.
Status validate_object_name(std::string_view name);

}  // namespace silo::cluster
