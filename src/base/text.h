#pragma once

// Text rules every layer shares, each written once: UTF-8 validity (object names, S3 keys,
// the store's names) and the percent codec of URLs (native API paths, S3 canonical
// requests and routing, backend requests).
#include <string>
#include <string_view>

#include "base/result.h"

namespace silo::text {

// Whether `text` is well-formed UTF-8: no overlong forms, no surrogates, nothing past
// U+10FFFF.
bool is_utf8(std::string_view text);

// AWS UriEncode (RFC 3986 unreserved characters A-Z a-z 0-9 - . _ ~ kept, every other byte
// %XX in upper-case hex), for a path segment or a query key or value.
std::string percent_encode(std::string_view text);
// The same with '/' kept: a whole path or an object name in one.
std::string percent_encode_path(std::string_view text);
// Percent-decoding of a path or a query part; '+' stays '+' (S3 clients send a space as
// %20, and a literal '+' must survive). kInvalidArgument on a bad or truncated escape.
Result<std::string> percent_decode(std::string_view text);

}  // namespace silo::text
