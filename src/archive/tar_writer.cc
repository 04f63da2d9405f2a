#include "archive/tar_writer.h"

#include <fmt/format.h>

#include <cstring>

#include "archive/tar_format.h"

namespace silo::archive {
namespace {

constexpr uint64_t kMaxOctalSize = (uint64_t{1} << 33) - 1;  // 11 octal digits

void put(Block& block, size_t at, std::string_view text) { std::memcpy(block.data() + at, text.data(), text.size()); }

// One ustar header block of `type`.
Block ustar_block(std::string_view name, uint64_t size, int64_t mtime, char type) {
  Block block{};
  put(block, kNameAt, name.substr(0, kNameWidth));
  put(block, kModeAt, "0000644");
  put(block, kUidAt, "0000000");
  put(block, kGidAt, "0000000");
  put(block, kSizeAt, fmt::format("{:011o}", size <= kMaxOctalSize ? size : 0));
  put(block, kMtimeAt, fmt::format("{:011o}", static_cast<uint64_t>(mtime < 0 ? 0 : mtime) & kMaxOctalSize));
  block[kTypeFlagAt] = type;
  put(block, kMagicAt, std::string_view("ustar\0" "00", 8));
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlockSize; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumWidth;
    sum += in_field ? ' ' : static_cast<unsigned char>(block[i]);
  }
  put(block, kChecksumAt, fmt::format("{:06o}", sum));
  block[kChecksumAt + 6] = '\0';
  block[kChecksumAt + 7] = ' ';
  return block;
}

// One "LEN key=value\n" record; LEN counts itself.
std::string pax_record(std::string_view key, std::string_view value) {
  const size_t body = 1 + key.size() + 1 + value.size() + 1;  // " key=value\n"
  size_t length = body + 1;
  while (std::to_string(length).size() + body != length) ++length;
  return fmt::format("{} {}={}\n", length, key, value);
}

std::string pax_records(std::string_view name, uint64_t size) {
  std::string records;
  if (name.size() > kNameWidth) records += pax_record("path", name);
  if (size > kMaxOctalSize) records += pax_record("size", std::to_string(size));
  return records;
}

}  // namespace

std::string tar_header(std::string_view name, uint64_t size, int64_t mtime_unix_seconds) {
  std::string out;
  const std::string records = pax_records(name, size);
  if (!records.empty()) {
    const Block pax = ustar_block("PaxHeader", records.size(), mtime_unix_seconds, kPaxHeader);
    out.append(pax.data(), pax.size());
    out += records;
    out += tar_padding(records.size());
  }
  const Block header = ustar_block(name, size, mtime_unix_seconds, '0');
  out.append(header.data(), header.size());
  return out;
}

std::string tar_padding(uint64_t size) { return std::string(round_up_to_block(size) - size, '\0'); }

std::string tar_end() { return std::string(kTarEndBytes, '\0'); }

uint64_t tar_member_bytes(std::string_view name, uint64_t size) {
  const std::string records = pax_records(name, size);
  const uint64_t pax = records.empty() ? 0 : kBlockSize + round_up_to_block(records.size());
  return pax + kBlockSize + round_up_to_block(size);
}

}  // namespace silo::archive
