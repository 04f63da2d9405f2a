#include "archive/compressed.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "archive/detail/streams.h"
#include "archive/detail/zip.h"

namespace silo::archive {
namespace {

// What index_tar() is told the size of a decompressed stream is: it is known only at the
// stream's end, and this bound keeps its offset arithmetic far from overflow. A stream that
// ends early reads as the end of the object, which index_tar() reports as truncated.
constexpr uint64_t kUnknownStreamSize = uint64_t{1} << 60;

// A decompression bomb's guard for the index build, which must decompress a stream whole:
// at most this many times the compressed size (past a floor). gzip's ratio tops out near
// 1,000:1 (runs of zeros), LZ4's near 250:1; tar shards of images or text stay far below.
constexpr uint64_t kMaxInflation = 200;
constexpr uint64_t kInflationFloor = 64 << 20;

// After the end-of-archive blocks, the rest of the stream is decompressed only so that its
// checksums are checked; a writer pads a tar to its record size (GNU tar: 10 KiB).
constexpr uint64_t kMaxTrailingBytes = 16 << 20;

Result<std::unique_ptr<detail::Stream>> open_stream(wire::ArchiveFormat format, const ReadAt& read, uint64_t size) {
  if (format == wire::ARCHIVE_FORMAT_TGZ) return detail::open_gzip(read, size);
  return detail::open_lz4(read, size);
}

std::string_view stream_name(wire::ArchiveFormat format) {
  return format == wire::ARCHIVE_FORMAT_TGZ ? "gzip" : "LZ4";
}

// The tar inside a gzip or LZ4 stream, parsed by index_tar() as the stream decompresses:
// it reads forward only (headers, skipping member data).
Result<wire::ArchiveIndex> index_compressed_tar(wire::ArchiveFormat format, const ReadAt& read, uint64_t size) {
  ASSIGN_OR_RETURN(const std::unique_ptr<detail::Stream> stream, open_stream(format, read, size));
  const uint64_t max_stream_bytes =
      size > UINT64_MAX / kMaxInflation ? UINT64_MAX : std::max(kInflationFloor, size * kMaxInflation);
  const auto read_stream = [&](std::span<char> out) -> Result<size_t> {
    if (stream->position() > max_stream_bytes) {
      return detail::corrupt(fmt::format("{} stream", stream_name(format)), 0,
                             fmt::format("it decompresses to more than {} bytes, {} times its size",
                                         max_stream_bytes, kMaxInflation));
    }
    return stream->read(out);
  };
  std::vector<char> scratch;
  const ReadAt forward = [&](uint64_t offset, std::span<char> out) -> Result<size_t> {
    if (offset < stream->position()) {
      return Status::internal("the tar index read back to {} in a stream at {}", offset, stream->position());
    }
    scratch.resize(64 * 1024);
    while (stream->position() < offset) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(offset - stream->position(), scratch.size()));
      ASSIGN_OR_RETURN(const size_t n, read_stream(std::span<char>(scratch.data(), want)));
      if (n == 0) return size_t{0};
    }
    return read_stream(out);
  };
  Result<wire::ArchiveIndex> index = index_tar(forward, kUnknownStreamSize);
  if (!index) {
    Status s = index.status();
    if (s.reason() == "CorruptArchive" && s.message().starts_with("corrupt tar")) {
      s.annotate("in the {} stream (offsets are of the decompressed tar)", stream_name(format));
    }
    return s;
  }
  // The stream's checksums come at its end: read it through, so that a flipped bit in a
  // member's data fails here, at install, rather than passing unseen.
  const uint64_t end_of_tar = stream->position();
  std::vector<char> rest(64 * 1024);
  while (true) {
    ASSIGN_OR_RETURN(const size_t n, read_stream(rest));
    if (n == 0) break;
    if (stream->position() - end_of_tar > kMaxTrailingBytes) {
      return detail::corrupt(fmt::format("{} stream", stream_name(format)), end_of_tar,
                             fmt::format("more than {} bytes after the end of the tar", kMaxTrailingBytes));
    }
  }
  index->set_format(format);
  return index;
}

}  // namespace

wire::ArchiveFormat sniff_format(std::string_view head) {
  if (head.starts_with("\x1f\x8b")) return wire::ARCHIVE_FORMAT_TGZ;
  if (head.starts_with(std::string_view("\x04\x22\x4d\x18", 4))) return wire::ARCHIVE_FORMAT_TAR_LZ4;
  if (head.starts_with(std::string_view("PK\x03\x04", 4)) || head.starts_with(std::string_view("PK\x05\x06", 4))) {
    return wire::ARCHIVE_FORMAT_ZIP;
  }
  return wire::ARCHIVE_FORMAT_TAR;
}

Result<wire::ArchiveFormat> sniff_format(const ReadAt& read, uint64_t size) {
  char head[4] = {};
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size, sizeof head));
  RETURN_IF_ERROR(detail::read_exactly(read, 0, std::span<char>(head, want), "the first bytes"));
  return sniff_format(std::string_view(head, want));
}

Result<wire::ArchiveIndex> index_archive(wire::ArchiveFormat format, const ReadAt& read, uint64_t size) {
  switch (format) {
    case wire::ARCHIVE_FORMAT_TAR: return index_tar(read, size);
    case wire::ARCHIVE_FORMAT_TGZ:
    case wire::ARCHIVE_FORMAT_TAR_LZ4: return index_compressed_tar(format, read, size);
    case wire::ARCHIVE_FORMAT_ZIP: return detail::index_zip(read, size);
    default: return Status::invalid_argument("no archive format {}", static_cast<int>(format));
  }
}

Status read_member(wire::ArchiveFormat format, const ReadAt& read, uint64_t size, const wire::ArchiveMember& member,
                   MemberRange range, const Sink& sink) {
  if (range.offset > member.size() || range.length > member.size() - range.offset) {
    return Status::out_of_range("bytes {}+{} of member {}, which has {}", range.offset, range.length, member.name(),
                                member.size());
  }
  if (member.offset() > UINT64_MAX - member.size()) {
    return detail::corrupt("archive index", member.offset(), "a member past any archive's end");
  }
  switch (format) {
    case wire::ARCHIVE_FORMAT_TAR: {
      if (member.offset() > size || member.size() > size - member.offset()) {
        return detail::corrupt("tar archive", member.offset(), "a member past the end of the archive");
      }
      const uint64_t begin = member.offset() + range.offset;
      const std::unique_ptr<detail::Stream> stream = detail::open_stored(read, begin, begin + range.length);
      return detail::send(*stream, range.length, sink, nullptr);
    }
    case wire::ARCHIVE_FORMAT_TGZ:
    case wire::ARCHIVE_FORMAT_TAR_LZ4: {
      // No random access into a compressed stream: decompress from its start, discard what
      // comes before the range, and stop at the range's end (never further).
      ASSIGN_OR_RETURN(const std::unique_ptr<detail::Stream> stream, open_stream(format, read, size));
      RETURN_IF_ERROR(stream->skip(member.offset() + range.offset, fmt::format("member {}", member.name())));
      return detail::send(*stream, range.length, sink, nullptr);
    }
    case wire::ARCHIVE_FORMAT_ZIP: return detail::read_zip_member(read, size, member, range, sink);
    default: return Status::invalid_argument("no archive format {}", static_cast<int>(format));
  }
}

}  // namespace silo::archive
