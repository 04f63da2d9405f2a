#pragma once

#include <cstdint>
#include <string>

#include "http/message.h"
#include "wire/codec.h"

namespace silo::target {

inline constexpr const char* kUserMetadataPrefix = "x-amz-meta-";

// "Sun, 22 Nov 2026 13:45:01 GMT" (RFC 9110 IMF-fixdate).
std::string http_date(int64_t unix_nanos);
// ETag, Last-Modified, Content-Type, Accept-Ranges and x-amz-meta-* of a stored object.
void add_object_headers(const wire::ObjectRecord& record, http::Headers& headers);

}  // namespace silo::target
