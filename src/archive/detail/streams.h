#pragma once

// Decompressed streams read forward from a start, for the compressed formats
// (archive/compressed.h): a gzip stream (zlib), an LZ4 frame (libarchive), a raw deflate
// stream or stored bytes of one zip member. Not thread-safe; one reader at a time.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "archive/compressed.h"
#include "archive/tar_reader.h"
#include "base/result.h"

namespace silo::archive::detail {

// kInvalidArgument, reason "CorruptArchive": "corrupt `what` at offset `at`: `why`".
Status corrupt(std::string_view what, uint64_t at, std::string_view why);
// kInvalidArgument, reason "NotAnArchive".
Status not_an_archive(std::string_view why);
// Reads exactly out.size() bytes at `offset`, or says the `what` is truncated there.
Status read_exactly(const ReadAt& read, uint64_t offset, std::span<char> out, std::string_view what);

// Bytes read in order from the start of a stream.
class Stream {
 public:
  virtual ~Stream() = default;
  // Up to out.size() bytes (at least one while the stream has more); 0 only at its end,
  // once the stream's own checks (checksums, trailers) passed.
  Result<size_t> read(std::span<char> out);
  // Discards `count` bytes; CorruptArchive (`what` is truncated) when the stream ends first.
  Status skip(uint64_t count, std::string_view what);
  // Fills `out` exactly; CorruptArchive when the stream ends first.
  Status read_exactly(std::span<char> out, std::string_view what);
  // Bytes read or skipped so far.
  uint64_t position() const { return position_; }

 private:
  virtual Result<size_t> read_some(std::span<char> out) = 0;  // read()'s contract
  uint64_t position_ = 0;
};

// Sends the stream's next `length` bytes to `sink` in chunks of at most kMaxChunkBytes,
// and folds them into `*crc32` (zlib's running CRC-32) unless it is null. CorruptArchive
// when the stream ends first.
Status send(Stream& stream, uint64_t length, const Sink& sink, uint32_t* crc32);

// The gzip stream (one or more gzip members, as `cat a.gz b.gz` makes, then only zero
// bytes) in the `size` bytes `read` reads. NotAnArchive unless it starts with gzip's magic.
Result<std::unique_ptr<Stream>> open_gzip(const ReadAt& read, uint64_t size);
// The LZ4 frames in the `size` bytes `read` reads. NotAnArchive unless the bytes start
// with an LZ4 frame's magic. Blocks in read() only.
Result<std::unique_ptr<Stream>> open_lz4(const ReadAt& read, uint64_t size);
// The raw deflate stream in bytes [begin, end) of the object: it must end at or before
// `end` (a zip member's compressed data).
Result<std::unique_ptr<Stream>> open_deflate(const ReadAt& read, uint64_t begin, uint64_t end);
// Bytes [begin, end) of the object as they are.
std::unique_ptr<Stream> open_stored(const ReadAt& read, uint64_t begin, uint64_t end);

}  // namespace silo::archive::detail
