#include "http/range.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace silo::http {
namespace {

// Parses a non-empty run of decimal digits; nullopt on anything else or overflow.
std::optional<uint64_t> parse_u64(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

Result<std::optional<ByteRange>> parse_range(std::string_view header, uint64_t size) {
  constexpr std::string_view kUnit = "bytes=";
  header = trim(header);
  if (!header.starts_with(kUnit)) return std::optional<ByteRange>();
  const std::string_view spec = trim(header.substr(kUnit.size()));
  if (spec.find(',') != std::string_view::npos) return std::optional<ByteRange>();
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::optional<ByteRange>();
  const std::string_view first_text = trim(spec.substr(0, dash));
  const std::string_view last_text = trim(spec.substr(dash + 1));

  if (first_text.empty()) {
    const std::optional<uint64_t> suffix = parse_u64(last_text);
    if (!suffix) return std::optional<ByteRange>();
    // S3 answers 416 InvalidRange for any range on an empty object, suffix ranges included.
    if (*suffix == 0 || size == 0) {
      return Status::out_of_range("range {} not satisfiable for {} bytes", header, size);
    }
    const uint64_t length = std::min(*suffix, size);
    return std::optional<ByteRange>(ByteRange{size - length, length});
  }

  const std::optional<uint64_t> first = parse_u64(first_text);
  if (!first) return std::optional<ByteRange>();
  uint64_t last = 0;
  if (last_text.empty()) {
    last = UINT64_MAX;
  } else {
    const std::optional<uint64_t> parsed_last = parse_u64(last_text);
    // RFC 9110: a last-pos before first-pos makes the range invalid, hence ignored.
    if (!parsed_last || *parsed_last < *first) return std::optional<ByteRange>();
    last = *parsed_last;
  }
  if (*first >= size) {
    return Status::out_of_range("range {} not satisfiable for {} bytes", header, size);
  }
  last = std::min(last, size - 1);
  return std::optional<ByteRange>(ByteRange{*first, last - *first + 1});
}

std::optional<ByteRange> parse_closed_range(std::string_view header) {
  constexpr std::string_view kUnit = "bytes=";
  if (!header.starts_with(kUnit)) return std::nullopt;
  const std::string_view spec = header.substr(kUnit.size());
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::optional<uint64_t> first = parse_u64(spec.substr(0, dash));
  const std::optional<uint64_t> last = parse_u64(spec.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  return ByteRange{*first, *last - *first + 1};
}

}  // namespace silo::http
