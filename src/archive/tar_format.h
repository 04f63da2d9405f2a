#pragma once

// The tar header block (POSIX.1-1988 ustar, with GNU and POSIX.1-2001 pax extensions),
// shared by the reader and the writer.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace silo::archive {

inline constexpr uint64_t kBlockSize = 512;
using Block = std::array<char, kBlockSize>;

// Field offsets and widths.
inline constexpr size_t kNameAt = 0, kNameWidth = 100;
inline constexpr size_t kModeAt = 100, kUidAt = 108, kGidAt = 116;
inline constexpr size_t kSizeAt = 124, kSizeWidth = 12;
inline constexpr size_t kMtimeAt = 136;
inline constexpr size_t kChecksumAt = 148, kChecksumWidth = 8;
inline constexpr size_t kTypeFlagAt = 156;
inline constexpr size_t kMagicAt = 257;
inline constexpr size_t kPrefixAt = 345, kPrefixWidth = 155;

inline constexpr char kGnuLongName = 'L';
inline constexpr char kGnuLongLink = 'K';
inline constexpr char kGnuSparse = 'S';
inline constexpr char kPaxHeader = 'x';

inline uint64_t round_up_to_block(uint64_t n) { return (n + kBlockSize - 1) / kBlockSize * kBlockSize; }

inline bool is_zero_block(const Block& block) {
  for (char c : block) {
    if (c != 0) return false;
  }
  return true;
}

// A regular file: '0', NUL (old tar) or '7' (contiguous).
inline bool is_file_type(char type) { return type == '0' || type == '\0' || type == '7'; }
// Links, devices, directories and FIFOs: no data follows their header.
inline bool has_no_data(char type) { return type >= '1' && type <= '6'; }

// The header checksum: the byte sum with the checksum field as spaces. Writers disagree
// on signed or unsigned bytes; both are accepted.
inline bool has_valid_checksum(const Block& block) {
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kBlockSize; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumWidth;
    const char c = in_field ? ' ' : block[i];
    unsigned_sum += static_cast<unsigned char>(c);
    signed_sum += static_cast<signed char>(c);
  }
  uint64_t stored = 0;
  bool has_digit = false;
  for (size_t i = kChecksumAt; i < kChecksumAt + kChecksumWidth; ++i) {
    const char c = block[i];
    if (c == ' ' && !has_digit) continue;
    if (c < '0' || c > '7') break;
    stored = stored * 8 + static_cast<uint64_t>(c - '0');
    has_digit = true;
  }
  return has_digit && (stored == unsigned_sum || static_cast<int64_t>(stored) == signed_sum);
}

// The size field: octal digits, or GNU's base-256 (first byte's high bit set). nullopt
// when malformed, negative or past 2^62.
inline std::optional<uint64_t> parse_size_field(const Block& block) {
  const auto* f = reinterpret_cast<const unsigned char*>(block.data() + kSizeAt);
  uint64_t value = 0;
  if (f[0] & 0x80) {
    if (f[0] & 0x40) return std::nullopt;  // negative
    value = f[0] & 0x3f;
    for (size_t i = 1; i < kSizeWidth; ++i) {
      if (value >> 54) return std::nullopt;
      value = (value << 8) | f[i];
    }
    return value;
  }
  size_t i = 0;
  while (i < kSizeWidth && f[i] == ' ') ++i;
  bool has_digit = false;
  for (; i < kSizeWidth && f[i] >= '0' && f[i] <= '7'; ++i) {
    value = value * 8 + static_cast<uint64_t>(f[i] - '0');
    has_digit = true;
  }
  if (i < kSizeWidth && f[i] != ' ' && f[i] != '\0') return std::nullopt;
  if (!has_digit) return 0;
  return value;
}

// Decimal digits only (a PAX size), nullopt otherwise or past 2^62.
inline std::optional<uint64_t> parse_decimal_size(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value >> 62) return std::nullopt;
  return value;
}

// The member name of a header: POSIX ustar joins prefix "/" name; GNU's "ustar  " magic
// uses the prefix area for other things.
inline std::string header_name(const Block& block) {
  const std::string_view raw_name(block.data() + kNameAt, kNameWidth);
  const std::string_view name = raw_name.substr(0, std::min(raw_name.find('\0'), raw_name.size()));
  const bool is_posix_ustar = std::string_view(block.data() + kMagicAt, 6) == std::string_view("ustar\0", 6);
  if (!is_posix_ustar) return std::string(name);
  const std::string_view raw_prefix(block.data() + kPrefixAt, kPrefixWidth);
  const std::string_view prefix = raw_prefix.substr(0, std::min(raw_prefix.find('\0'), raw_prefix.size()));
  if (prefix.empty()) return std::string(name);
  return std::string(prefix) + "/" + std::string(name);
}

}  // namespace silo::archive
