#include "archive/detail/streams.h"

#include <archive.h>
#include <archive_entry.h>
#include <zlib.h>
// libarchive's format codes are macros that shadow wire::ARCHIVE_FORMAT_TAR and _ZIP.
#undef ARCHIVE_FORMAT_TAR
#undef ARCHIVE_FORMAT_ZIP

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace silo::archive::detail {
namespace {

// Compressed bytes are read this many at a time.
constexpr size_t kInputChunk = 64 * 1024;

// gzip (RFC 1952) members, or one raw deflate stream (a zip member), through zlib: it
// checks each gzip member's CRC-32 and length, which libarchive 3.6's gzip filter skips.
class ZlibStream final : public Stream {
 public:
  enum class Kind { kGzip, kRawDeflate };

  ZlibStream(const ReadAt& read, uint64_t begin, uint64_t end, Kind kind)
      : read_(read), next_in_at_(begin), end_(end), kind_(kind), input_(kInputChunk) {}
  ZlibStream(const ZlibStream&) = delete;
  ZlibStream& operator=(const ZlibStream&) = delete;
  ~ZlibStream() override {
    if (is_initialized_) inflateEnd(&z_);
  }

  Status init() {
    const int rc = inflateInit2(&z_, kind_ == Kind::kGzip ? 16 + MAX_WBITS : -MAX_WBITS);
    if (rc != Z_OK) return Status::resource_exhausted("zlib inflateInit2 failed ({})", rc);
    is_initialized_ = true;
    return Status::ok();
  }

 private:
  std::string_view what() const { return kind_ == Kind::kGzip ? "gzip stream" : "deflate data"; }
  uint64_t compressed_at() const { return next_in_at_ - z_.avail_in; }

  Status fill() {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(input_.size(), end_ - next_in_at_));
    if (want == 0) return corrupt(what(), next_in_at_, "truncated: the compressed data ends early");
    ASSIGN_OR_RETURN(const size_t got, read_(next_in_at_, std::span<char>(input_.data(), want)));
    if (got == 0) return corrupt(what(), next_in_at_, "truncated: the object ends early");
    z_.next_in = reinterpret_cast<Bytef*>(input_.data());
    z_.avail_in = static_cast<uInt>(got);
    next_in_at_ += got;
    return Status::ok();
  }

  bool has_input() const { return z_.avail_in > 0 || next_in_at_ < end_; }

  // After a gzip member: another member follows (`cat a.gz b.gz`), or zero bytes to the
  // end (as gzip(1) accepts), or nothing. A raw deflate stream simply ends.
  Status end_member() {
    if (kind_ == Kind::kRawDeflate || !has_input()) {
      is_done_ = true;
      return Status::ok();
    }
    if (z_.avail_in == 0) RETURN_IF_ERROR(fill());
    if (z_.next_in[0] == 0x1f) {
      if (inflateReset(&z_) != Z_OK) return Status::internal("zlib inflateReset failed");
      return Status::ok();
    }
    while (true) {
      for (uInt i = 0; i < z_.avail_in; ++i) {
        if (z_.next_in[i] != 0) return corrupt(what(), compressed_at() + i, "bytes after the end of the gzip stream");
      }
      z_.avail_in = 0;
      if (next_in_at_ >= end_) break;
      RETURN_IF_ERROR(fill());
    }
    is_done_ = true;
    return Status::ok();
  }

  Result<size_t> read_some(std::span<char> out) override {
    if (is_done_ || out.empty()) return size_t{0};
    const uInt asked = static_cast<uInt>(std::min<size_t>(out.size(), kInputChunk * 16));
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = asked;
    // zlib may still hold output (the rest of a match) with no input left, so inflate runs
    // before more input is read; a turn without output and without input fills it, or
    // says the data is truncated, so the loop always moves or ends.
    while (z_.avail_out == asked && !is_done_) {
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        RETURN_IF_ERROR(end_member());
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return corrupt(what(), compressed_at(), z_.msg != nullptr ? z_.msg : "inflate failed");
      } else if (z_.avail_out == asked && z_.avail_in == 0) {
        RETURN_IF_ERROR(fill());
      }
    }
    return static_cast<size_t>(asked - z_.avail_out);
  }

  const ReadAt& read_;
  uint64_t next_in_at_;  // the object offset of the next compressed byte to read
  const uint64_t end_;
  const Kind kind_;
  std::vector<char> input_;
  z_stream z_{};
  bool is_initialized_ = false;
  bool is_done_ = false;
};

// LZ4 frames through libarchive's built-in decoder (raw format: the decompressed bytes as
// one entry). libarchive checks block and content checksums when the frame has them.
class Lz4Stream final : public Stream {
 public:
  Lz4Stream(const ReadAt& read, uint64_t size) : read_(read), size_(size), input_(kInputChunk) {}
  Lz4Stream(const Lz4Stream&) = delete;
  Lz4Stream& operator=(const Lz4Stream&) = delete;
  ~Lz4Stream() override {
    if (archive_ != nullptr) archive_read_free(archive_);
  }

  Status open() {
    archive_ = archive_read_new();
    if (archive_ == nullptr) return Status::resource_exhausted("libarchive: out of memory");
    // ARCHIVE_WARN would mean libarchive runs an external `lz4` program: never here.
    if (archive_read_support_filter_lz4(archive_) != ARCHIVE_OK) {
      return Status::unimplemented("this libarchive has no built-in LZ4 decoder");
    }
    if (archive_read_support_format_raw(archive_) != ARCHIVE_OK) return failure();
    if (archive_read_open2(archive_, this, nullptr, &Lz4Stream::on_read, nullptr, nullptr) != ARCHIVE_OK) {
      return failure();
    }
    if (archive_filter_code(archive_, 0) != ARCHIVE_FILTER_LZ4) {
      return corrupt("LZ4 stream", 0, "a frame header libarchive does not accept");
    }
    archive_entry* entry = nullptr;
    const int rc = archive_read_next_header(archive_, &entry);
    if (rc == ARCHIVE_EOF) {
      is_done_ = true;
    } else if (rc != ARCHIVE_OK) {
      return failure();
    }
    return Status::ok();
  }

 private:
  static la_ssize_t on_read(struct archive* a, void* self_data, const void** buffer) {
    auto* self = static_cast<Lz4Stream*>(self_data);
    const uint64_t want = std::min<uint64_t>(self->input_.size(), self->size_ - self->next_in_at_);
    if (want == 0) return 0;
    Result<size_t> got = self->read_(self->next_in_at_, std::span<char>(self->input_.data(), want));
    if (!got || *got == 0) {
      self->read_error_ = got ? corrupt("LZ4 stream", self->next_in_at_, "truncated: the object ends early")
                              : got.status();
      archive_set_error(a, EIO, "read failed");
      return -1;
    }
    *buffer = self->input_.data();
    self->next_in_at_ += *got;
    return static_cast<la_ssize_t>(*got);
  }

  // The reason of libarchive's last failure: our read's error, or the decoder's.
  Status failure() const {
    if (!read_error_.is_ok()) return read_error_;
    const char* message = archive_error_string(archive_);
    return corrupt("LZ4 stream", next_in_at_,
                   fmt::format("{} (offset: of the compressed bytes read so far)",
                               message != nullptr ? message : "libarchive failed"));
  }

  Result<size_t> read_some(std::span<char> out) override {
    if (is_done_ || out.empty()) return size_t{0};
    const la_ssize_t n = archive_read_data(archive_, out.data(), out.size());
    if (n < 0) return failure();
    if (n == 0) is_done_ = true;
    return static_cast<size_t>(n);
  }

  const ReadAt& read_;
  const uint64_t size_;
  uint64_t next_in_at_ = 0;
  std::vector<char> input_;  // what on_read last handed libarchive
  struct archive* archive_ = nullptr;
  Status read_error_;
  bool is_done_ = false;
};

class StoredStream final : public Stream {
 public:
  StoredStream(const ReadAt& read, uint64_t begin, uint64_t end) : read_(read), at_(begin), end_(end) {}

 private:
  Result<size_t> read_some(std::span<char> out) override {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), end_ - at_));
    if (want == 0) return size_t{0};
    ASSIGN_OR_RETURN(const size_t got, read_(at_, out.first(want)));
    if (got == 0) return corrupt("stored data", at_, "truncated: the object ends early");
    at_ += got;
    return got;
  }

  const ReadAt& read_;
  uint64_t at_;
  const uint64_t end_;
};

}  // namespace

Status corrupt(std::string_view what, uint64_t at, std::string_view why) {
  return Status::invalid_argument("corrupt {} at offset {}: {}", what, at, why).with_reason("CorruptArchive");
}

Status not_an_archive(std::string_view why) {
  return Status::invalid_argument("{}", why).with_reason("NotAnArchive");
}

Status read_exactly(const ReadAt& read, uint64_t offset, std::span<char> out, std::string_view what) {
  size_t done = 0;
  while (done < out.size()) {
    ASSIGN_OR_RETURN(const size_t n, read(offset + done, out.subspan(done)));
    if (n == 0) return corrupt("archive", offset, fmt::format("truncated: {} ends early", what));
    done += n;
  }
  return Status::ok();
}

Result<size_t> Stream::read(std::span<char> out) {
  ASSIGN_OR_RETURN(const size_t n, read_some(out));
  position_ += n;
  return n;
}

Status Stream::skip(uint64_t count, std::string_view what) {
  std::vector<char> scratch(static_cast<size_t>(std::min<uint64_t>(count, kInputChunk)));
  while (count > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(count, scratch.size()));
    ASSIGN_OR_RETURN(const size_t n, read(std::span<char>(scratch.data(), want)));
    if (n == 0) return corrupt("decompressed stream", position(), fmt::format("truncated: it ends before {}", what));
    count -= n;
  }
  return Status::ok();
}

Status Stream::read_exactly(std::span<char> out, std::string_view what) {
  size_t done = 0;
  while (done < out.size()) {
    ASSIGN_OR_RETURN(const size_t n, read(out.subspan(done)));
    if (n == 0) return corrupt("decompressed stream", position(), fmt::format("truncated: it ends before {}", what));
    done += n;
  }
  return Status::ok();
}

Status send(Stream& stream, uint64_t length, const Sink& sink, uint32_t* crc32) {
  std::vector<char> chunk(static_cast<size_t>(std::min<uint64_t>(length, kMaxChunkBytes)));
  while (length > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length, chunk.size()));
    RETURN_IF_ERROR(stream.read_exactly(std::span<char>(chunk.data(), want), "the end of the member"));
    if (crc32 != nullptr) {
      *crc32 = static_cast<uint32_t>(::crc32(*crc32, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(want)));
    }
    RETURN_IF_ERROR(sink(std::span<const char>(chunk.data(), want)));
    length -= want;
  }
  return Status::ok();
}

Result<std::unique_ptr<Stream>> open_gzip(const ReadAt& read, uint64_t size) {
  char magic[2] = {};
  if (size < sizeof magic) return not_an_archive(fmt::format("not a gzip stream: {} bytes", size));
  RETURN_IF_ERROR(read_exactly(read, 0, magic, "the gzip header"));
  if (magic[0] != '\x1f' || magic[1] != '\x8b') return not_an_archive("not a gzip stream: no gzip magic");
  auto stream = std::make_unique<ZlibStream>(read, 0, size, ZlibStream::Kind::kGzip);
  RETURN_IF_ERROR(stream->init());
  return std::unique_ptr<Stream>(std::move(stream));
}

Result<std::unique_ptr<Stream>> open_lz4(const ReadAt& read, uint64_t size) {
  char magic[4] = {};
  if (size < sizeof magic) return not_an_archive(fmt::format("not an LZ4 frame: {} bytes", size));
  RETURN_IF_ERROR(read_exactly(read, 0, magic, "the LZ4 frame header"));
  if (std::string_view(magic, 4) != std::string_view("\x04\x22\x4d\x18", 4)) {
    return not_an_archive("not an LZ4 frame: no LZ4 magic");
  }
  auto stream = std::make_unique<Lz4Stream>(read, size);
  RETURN_IF_ERROR(stream->open());
  return std::unique_ptr<Stream>(std::move(stream));
}

Result<std::unique_ptr<Stream>> open_deflate(const ReadAt& read, uint64_t begin, uint64_t end) {
  auto stream = std::make_unique<ZlibStream>(read, begin, end, ZlibStream::Kind::kRawDeflate);
  RETURN_IF_ERROR(stream->init());
  return std::unique_ptr<Stream>(std::move(stream));
}

std::unique_ptr<Stream> open_stored(const ReadAt& read, uint64_t begin, uint64_t end) {
  return std::make_unique<StoredStream>(read, begin, end);
}

}  // namespace silo::archive::detail
