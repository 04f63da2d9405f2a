#pragma once

// Archives of every format Silo indexes (docs/shards.md "Formats"): plain tar, gzip- and
// LZ4-compressed tar (.tgz/.tar.gz, .tar.lz4) and zip. Builds their index and reads one
// member's bytes, decompressed, through a caller's ReadAt (pure: no files of its own).
//
// What ArchiveMember.offset means depends on the format (proto/object_record.proto):
//   tar       the member's first data byte in the object (send it with sendfile);
//   tgz, lz4  its first data byte in the decompressed stream. A read decompresses the
//             stream from its start and discards what precedes the member, so its cost
//             grows with the member's position in the archive (a compressed stream has no
//             random access); a tgz's CRC-32 covers the whole stream, so only the index
//             build (which decompresses it all) checks it;
//   zip       its local file header; compressed_size, method and crc32 come from the
//             central directory. A read starts at the member (no other member is
//             inflated) and checks the CRC-32 when it covers the whole member.
//
// Errors, as index_tar's: kInvalidArgument with reason "NotAnArchive" (the bytes are not
// of the format) or "CorruptArchive" (truncated or corrupt; the message says where: an
// offset in the object, or in the decompressed stream for a tar inside tgz/lz4);
// kUnimplemented for a zip member compressed with a method other than stored (0) or
// deflate (8), or encrypted. The ReadAt's own errors pass through. Hostile archives cost
// at most index_tar's limits (names 64 KiB, 4 M members); a read never decompresses past
// the end of the range it was asked for.
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "archive/tar_reader.h"
#include "base/result.h"
#include "wire/codec.h"

namespace silo::archive {

// The most bytes a member read hands its Sink at once. A read holds about this much, plus
// its decompressor's state (zlib's 32 KiB window; libarchive's LZ4 block, up to 4 MiB when
// the frame says so), whatever the member's size.
inline constexpr size_t kMaxChunkBytes = 256 * 1024;

// Takes the next bytes of a member, in order, at most kMaxChunkBytes at a time (the span
// is valid only during the call). An error stops the read, which returns it.
using Sink = std::function<Status(std::span<const char> bytes)>;

// The format an object's first bytes say it has (for objects whose name says nothing):
// gzip (1f 8b) -> TGZ, an LZ4 frame (04 22 4d 18) -> TAR_LZ4, "PK\3\4" or an empty zip's
// "PK\5\6" -> ZIP, anything else -> TAR. Four bytes are enough.
wire::ArchiveFormat sniff_format(std::string_view head);
// The same, reading the first bytes of the `size`-byte object through `read`.
Result<wire::ArchiveFormat> sniff_format(const ReadAt& read, uint64_t size);

// The index of the `format` archive of `size` bytes that `read` reads: the regular-file
// members in archive order (directories, links and devices are not members; a zip entry
// whose name ends in '/' is a directory). TAR is index_tar(). TGZ and TAR_LZ4 decompress
// the whole stream once, checking its checksums (a gzip member's CRC-32 and length, an LZ4
// frame's content checksum when it has one); ZIP reads the central directory (zip64
// included) and each member's local header, never the members' data.
Result<wire::ArchiveIndex> index_archive(wire::ArchiveFormat format, const ReadAt& read, uint64_t size);

// Bytes [offset, offset + length) of a member's decompressed data.
struct MemberRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Sends `range` of `member` (from this object's index, in `format`) to `sink`, in chunks
// of at most kMaxChunkBytes, then returns. A range that reaches past the member's size is
// kOutOfRange (nothing sent); a member the bytes do not hold is CorruptArchive. Other
// errors (see above) can come after some bytes went to the sink (a CRC-32 is known only at
// the member's end, a truncated stream only where it ends): the caller must then fail the
// answer it was sending (close the connection short of its length), never complete it.
// TAR works too (a plain copy; Shards sends tar members with sendfile instead).
// Blocks only in `read` and `sink`; CPU-bound for tgz/tar.lz4 (see above).
Status read_member(wire::ArchiveFormat format, const ReadAt& read, uint64_t size, const wire::ArchiveMember& member,
                   MemberRange range, const Sink& sink);

}  // namespace silo::archive
