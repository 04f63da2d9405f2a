#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace silo::http {

// One satisfiable byte range [first, first + length) of an object.
struct ByteRange {
  uint64_t first = 0;
  uint64_t length = 0;
  bool operator==(const ByteRange&) const = default;
};

// Parses a Range header value ("bytes=0-99", "bytes=100-", "bytes=-100") against an
// object of `size` bytes, as RFC 9110 and S3 do:
// - nullopt: the header should be ignored and the whole object sent (syntax not
//   understood, or several ranges, which S3 does not support either);
// - kOutOfRange: not satisfiable (first >= size, or a zero-length suffix) -> 416;
// - a range clamped to the object's end otherwise.
Result<std::optional<ByteRange>> parse_range(std::string_view header, uint64_t size);

// A closed range "bytes=FIRST-LAST" (both offsets, FIRST <= LAST), as
// x-amz-copy-source-range takes it; nullopt on any other form.
std::optional<ByteRange> parse_closed_range(std::string_view header);

}  // namespace silo::http
