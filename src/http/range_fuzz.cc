// libFuzzer target for the Range header (tools/fuzz.sh): whatever the bytes, parse_range
// ends, and a range it accepts lies inside the object.
#include <cstdint>
#include <string_view>

#include "http/range.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint64_t object_size = data[0] * 977ull + data[1];  // 0 .. ~250 KB, empty objects too
  const std::string_view header(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto range = silo::http::parse_range(header, object_size);
  if (range && *range) {
    if ((*range)->length == 0 || (*range)->first + (*range)->length > object_size) __builtin_trap();
  }
  std::ignore = silo::http::parse_closed_range(header);
  return 0;
}
