// libFuzzer target for the compressed and zip archive indexes and member reads
// (tools/fuzz.sh builds and runs it with ASan and UBSan). The first byte picks the format
// (0 tgz, 1 tar.lz4, 2 zip, else sniffed); the rest is the object. Whatever the bytes:
// index_archive() ends, every member read of what it indexed ends (bounded by what the
// member says it holds), and no read hands its sink more than kMaxChunkBytes at once or
// more bytes than were asked for.
#include <cstdint>
#include <string_view>

#include "archive/compressed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  namespace archive = silo::archive;
  using silo::wire::ArchiveFormat;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const archive::ReadAt read = archive::read_bytes(bytes);
  ArchiveFormat format = data[0] == 0 ? silo::wire::ARCHIVE_FORMAT_TGZ
                         : data[0] == 1 ? silo::wire::ARCHIVE_FORMAT_TAR_LZ4
                         : data[0] == 2 ? silo::wire::ARCHIVE_FORMAT_ZIP
                                        : archive::sniff_format(bytes.substr(0, 4));
  const auto index = archive::index_archive(format, read, bytes.size());
  if (!index) return 0;
  int reads = 0;
  for (const auto& member : index->members()) {
    if (++reads > 64) break;  // bounded work per input
    // A member of a hostile archive may claim any size: read at most its first 1 MiB.
    const uint64_t length = std::min<uint64_t>(member.size(), 1 << 20);
    uint64_t got = 0;
    const silo::Status status = archive::read_member(
        format, read, bytes.size(), member, archive::MemberRange{.offset = 0, .length = length},
        [&got](std::span<const char> chunk) {
          if (chunk.size() > archive::kMaxChunkBytes) __builtin_trap();
          got += chunk.size();
          return silo::Status::ok();
        });
    if (got > length) __builtin_trap();
    if (status.is_ok() && got != length) __builtin_trap();
  }
  return 0;
}
