#pragma once

#include <string>
#include <string_view>

// RFC 2047 encoded words in header values, as S3 treats user metadata (x-amz-meta-*):
// values are decoded before they are stored and encoded when they hold what a header
// cannot carry as is, so a non-ASCII value survives every HTTP client.
namespace silo::s3 {

// Decodes each `=?charset?B|Q?text?=` word of `value` (charsets UTF-8, US-ASCII and
// ISO-8859-1, the last turned into UTF-8; whitespace between adjacent words dropped, as
// RFC 2047 6.2 says). Anything that is not a well-formed word of those stays as it is.
std::string decode_encoded_words(std::string_view value);

// `value` as is when it is printable ASCII (tab and space included); otherwise one
// `=?UTF-8?B?...?=` word of its bytes.
std::string encode_header_value(std::string_view value);

}  // namespace silo::s3
