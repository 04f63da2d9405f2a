#include "archive/detail/zip.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/detail/streams.h"

namespace silo::archive::detail {
namespace {

// APPNOTE.TXT 6.3: signatures and fixed record sizes.
constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint64_t kLocalHeaderBytes = 30;
constexpr uint64_t kCentralHeaderBytes = 46;
constexpr uint64_t kEndBytes = 22;
constexpr uint64_t kZip64EndBytes = 56;
constexpr uint64_t kZip64LocatorBytes = 20;
constexpr uint64_t kMaxCommentBytes = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kFlagEncrypted = 0x0001;
constexpr uint32_t kMethodStored = 0;
constexpr uint32_t kMethodDeflate = 8;
constexpr uint32_t kNoValue32 = 0xffffffff;  // "see the zip64 extra field"
constexpr uint16_t kNoValue16 = 0xffff;
constexpr unsigned kHostUnix = 3;
constexpr uint32_t kUnixTypeMask = 0170000, kUnixRegular = 0100000;
constexpr uint32_t kDosDirectory = 0x10;

uint16_t le16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | static_cast<uint8_t>(p[1]) << 8);
}
uint32_t le32(const char* p) { return le16(p) | static_cast<uint32_t>(le16(p + 2)) << 16; }
uint64_t le64(const char* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }

Status corrupt_zip(uint64_t at, std::string_view why) { return corrupt("zip archive", at, why); }

// Where the central directory lies, from the end record (and the zip64 one).
struct Directory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
};

Result<Directory> read_zip64_end(const ReadAt& read, uint64_t locator_at) {
  char locator[kZip64LocatorBytes];
  RETURN_IF_ERROR(read_exactly(read, locator_at, locator, "the zip64 end locator"));
  const uint64_t record_at = le64(locator + 8);
  if (record_at > locator_at || locator_at - record_at < kZip64EndBytes) {
    return corrupt_zip(locator_at, "a zip64 end record outside the archive");
  }
  char record[kZip64EndBytes];
  RETURN_IF_ERROR(read_exactly(read, record_at, record, "the zip64 end record"));
  if (le32(record) != kZip64EndSignature) return corrupt_zip(record_at, "a zip64 end record without its signature");
  if (le32(record + 16) != 0 || le32(record + 20) != 0 || le32(locator + 4) != 0) {
    return corrupt_zip(record_at, "an archive split over several disks");
  }
  Directory dir{.offset = le64(record + 48), .size = le64(record + 40), .entries = le64(record + 32)};
  if (dir.offset > record_at || dir.size > record_at - dir.offset) {
    return corrupt_zip(record_at, "a central directory outside the archive");
  }
  return dir;
}

Result<Directory> find_directory(const ReadAt& read, uint64_t size) {
  if (size < kEndBytes) {
    return not_an_archive(fmt::format("not a zip archive: {} bytes, less than its end record", size));
  }
  const uint64_t tail_at = size - std::min(size, kEndBytes + kMaxCommentBytes);
  std::string tail(size - tail_at, '\0');
  RETURN_IF_ERROR(read_exactly(read, tail_at, tail, "the end of the zip archive"));
  // The last end record whose comment fits in the bytes after it.
  std::optional<uint64_t> end_in_tail;
  for (size_t p = tail.size() - kEndBytes + 1; p-- > 0;) {
    if (le32(&tail[p]) == kEndSignature && p + kEndBytes + le16(&tail[p + 20]) <= tail.size()) {
      end_in_tail = p;
      break;
    }
  }
  if (!end_in_tail) {
    char head[4];
    RETURN_IF_ERROR(read_exactly(read, 0, head, "the first local header"));
    if (std::string_view(head, 4) == std::string_view("PK\x03\x04", 4)) {
      return corrupt_zip(size, "truncated: no end of central directory record");
    }
    return not_an_archive("not a zip archive: no end of central directory record");
  }
  const char* end = &tail[*end_in_tail];
  const uint64_t end_at = tail_at + *end_in_tail;
  if (end_at >= kZip64LocatorBytes) {
    char signature[4];
    RETURN_IF_ERROR(read_exactly(read, end_at - kZip64LocatorBytes, signature, "the zip64 end locator"));
    if (le32(signature) == kZip64LocatorSignature) return read_zip64_end(read, end_at - kZip64LocatorBytes);
  }
  if (le16(end + 10) == kNoValue16 || le32(end + 12) == kNoValue32 || le32(end + 16) == kNoValue32) {
    return corrupt_zip(end_at, "zip64 sizes without a zip64 end record");
  }
  if (le16(end + 4) != 0 || le16(end + 6) != 0 || le16(end + 8) != le16(end + 10)) {
    return corrupt_zip(end_at, "an archive split over several disks");
  }
  Directory dir{.offset = le32(end + 16), .size = le32(end + 12), .entries = le16(end + 10)};
  if (dir.offset > end_at || dir.size > end_at - dir.offset) {
    return corrupt_zip(end_at, "a central directory outside the archive");
  }
  return dir;
}

// Reads the central directory in order through a bounded buffer (a directory of 4 M
// entries is hundreds of MB; names are at most 64 KiB).
class Cursor {
 public:
  Cursor(const ReadAt& read, uint64_t begin, uint64_t end) : read_(read), next_at_(begin), end_(end), buffer_(kBytes) {}

  // The object offset of the next byte take() returns.
  uint64_t offset() const { return next_at_ - (filled_ - start_); }

  // The next `count` bytes (valid until the next call); CorruptArchive when the central
  // directory ends first.
  Result<std::string_view> take(size_t count) {
    if (filled_ - start_ < count) {
      std::copy(buffer_.begin() + static_cast<ptrdiff_t>(start_), buffer_.begin() + static_cast<ptrdiff_t>(filled_),
                buffer_.begin());
      filled_ -= start_;
      start_ = 0;
      while (filled_ < count) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer_.size() - filled_, end_ - next_at_));
        if (want == 0) return corrupt_zip(offset(), "truncated: the central directory ends inside an entry");
        ASSIGN_OR_RETURN(const size_t got, read_(next_at_, std::span<char>(buffer_.data() + filled_, want)));
        if (got == 0) return corrupt_zip(next_at_, "truncated: the object ends inside the central directory");
        filled_ += got;
        next_at_ += got;
      }
    }
    const std::string_view out(buffer_.data() + start_, count);
    start_ += count;
    return out;
  }

 private:
  static constexpr size_t kBytes = 256 * 1024;  // > one entry's fixed part + 64 KiB field

  const ReadAt& read_;
  uint64_t next_at_;  // the object offset of buffer_[filled_]
  const uint64_t end_;
  std::vector<char> buffer_;
  size_t start_ = 0, filled_ = 0;
};

// The 64-bit sizes and offset of a zip64 extra field (APPNOTE 4.5.3), for the fields whose
// 32-bit value is kNoValue32, in this order.
Status apply_zip64(std::string_view extra, uint64_t at, uint64_t* size, uint64_t* compressed_size,
                   uint64_t* local_at) {
  while (extra.size() >= 4) {
    const uint16_t id = le16(extra.data()), length = le16(extra.data() + 2);
    if (length > extra.size() - 4) break;  // a malformed field: only zip64 values matter here
    if (id == kZip64ExtraId) {
      std::string_view values = extra.substr(4, length);
      for (uint64_t* field : {size, compressed_size, local_at}) {
        if (*field != kNoValue32) continue;
        if (values.size() < 8) return corrupt_zip(at, "a zip64 extra field too short for its values");
        *field = le64(values.data());
        values.remove_prefix(8);
      }
      return Status::ok();
    }
    extra.remove_prefix(4 + length);
  }
  return Status::ok();
}

// Directories (a name ending in '/', or the attributes say so), symbolic links and
// devices are not members.
bool is_regular_file(std::string_view name, uint16_t made_by, uint32_t external) {
  if (name.ends_with('/')) return false;
  const uint32_t mode = external >> 16;
  if ((made_by >> 8) == kHostUnix && mode != 0) {
    const uint32_t type = mode & kUnixTypeMask;
    return type == 0 || type == kUnixRegular;
  }
  return (external & kDosDirectory) == 0;
}

struct LocalHeader {
  uint16_t flags = 0;
  uint64_t data_at = 0;  // the first byte of the member's compressed data
};

// The local header at `at`, whose name and extra field end at or before `limit`.
Result<LocalHeader> read_local_header(const ReadAt& read, uint64_t at, uint64_t limit) {
  if (at > limit || limit - at < kLocalHeaderBytes) return corrupt_zip(at, "a local header outside the archive");
  char header[kLocalHeaderBytes];
  RETURN_IF_ERROR(read_exactly(read, at, header, "a local header"));
  if (le32(header) != kLocalHeaderSignature) return corrupt_zip(at, "a local header without its signature");
  const uint64_t data_at = at + kLocalHeaderBytes + le16(header + 26) + le16(header + 28);
  if (data_at > limit) return corrupt_zip(at, "a local header running past the member data's end");
  return LocalHeader{.flags = le16(header + 6), .data_at = data_at};
}

}  // namespace

Result<wire::ArchiveIndex> index_zip(const ReadAt& read, uint64_t size) {
  ASSIGN_OR_RETURN(const Directory dir, find_directory(read, size));
  if (dir.entries > kMaxMembers) return corrupt_zip(dir.offset, fmt::format("more than {} members", kMaxMembers));
  if (dir.entries > dir.size / kCentralHeaderBytes) {
    return corrupt_zip(dir.offset, fmt::format("{} entries do not fit in a central directory of {} bytes",
                                               dir.entries, dir.size));
  }
  wire::ArchiveIndex index;
  index.set_format(wire::ARCHIVE_FORMAT_ZIP);
  Cursor cursor(read, dir.offset, dir.offset + dir.size);
  for (uint64_t i = 0; i < dir.entries; ++i) {
    const uint64_t at = cursor.offset();
    ASSIGN_OR_RETURN(const std::string_view h, cursor.take(kCentralHeaderBytes));
    if (le32(h.data()) != kCentralHeaderSignature) return corrupt_zip(at, "a central directory entry without its signature");
    const uint16_t made_by = le16(h.data() + 4), method = le16(h.data() + 10);
    const uint32_t crc32 = le32(h.data() + 16), external = le32(h.data() + 38);
    uint64_t compressed_size = le32(h.data() + 20), member_size = le32(h.data() + 24), local_at = le32(h.data() + 42);
    const uint16_t name_bytes = le16(h.data() + 28), extra_bytes = le16(h.data() + 30), comment_bytes = le16(h.data() + 32);
    ASSIGN_OR_RETURN(const std::string_view name_view, cursor.take(name_bytes));
    std::string name(name_view);
    ASSIGN_OR_RETURN(const std::string_view extra, cursor.take(extra_bytes));
    RETURN_IF_ERROR(apply_zip64(extra, at, &member_size, &compressed_size, &local_at));
    RETURN_IF_ERROR(cursor.take(comment_bytes).status());
    if (!is_regular_file(name, made_by, external)) continue;
    if (name.empty()) return corrupt_zip(at, "a member without a name");
    if (method == kMethodStored && compressed_size != member_size) {
      return corrupt_zip(at, fmt::format("a stored member of {} bytes that takes {}", member_size, compressed_size));
    }
    ASSIGN_OR_RETURN(const LocalHeader local, read_local_header(read, local_at, dir.offset));
    if (compressed_size > dir.offset - local.data_at) {
      return corrupt_zip(local_at, fmt::format("truncated: member data of {} bytes at offset {} runs into the "
                                               "central directory at {}",
                                               compressed_size, local.data_at, dir.offset));
    }
    wire::ArchiveMember& member = *index.add_members();
    member.set_name(std::move(name));
    member.set_offset(local_at);
    member.set_size(member_size);
    member.set_compressed_size(compressed_size);
    member.set_method(method);
    member.set_crc32(crc32);
  }
  return index;
}

Status read_zip_member(const ReadAt& read, uint64_t size, const wire::ArchiveMember& member, MemberRange range,
                       const Sink& sink) {
  if (member.method() != kMethodStored && member.method() != kMethodDeflate) {
    return Status::unimplemented("zip member {} is compressed with method {}: only stored (0) and deflate (8) are "
                                 "supported",
                                 member.name(), member.method());
  }
  ASSIGN_OR_RETURN(const LocalHeader local, read_local_header(read, member.offset(), size));
  if ((local.flags & kFlagEncrypted) != 0) return Status::unimplemented("zip member {} is encrypted", member.name());
  if (member.compressed_size() > size - local.data_at) {
    return corrupt_zip(member.offset(), "truncated: the member's data runs past the end of the archive");
  }
  const uint64_t data_end = local.data_at + member.compressed_size();
  std::unique_ptr<Stream> stream;
  if (member.method() == kMethodStored) {
    if (member.compressed_size() != member.size()) return corrupt_zip(member.offset(), "a stored member whose sizes differ");
    stream = open_stored(read, local.data_at + range.offset, data_end);
  } else {
    ASSIGN_OR_RETURN(stream, open_deflate(read, local.data_at, data_end));
    RETURN_IF_ERROR(stream->skip(range.offset, "the range's start"));
  }
  // The CRC-32 covers the whole member: only a read of all of it can check it.
  const bool is_whole = range.offset == 0 && range.length == member.size();
  uint32_t crc32 = 0;
  RETURN_IF_ERROR(send(*stream, range.length, sink, is_whole ? &crc32 : nullptr));
  if (is_whole) {
    char probe = 0;
    ASSIGN_OR_RETURN(const size_t extra, stream->read(std::span<char>(&probe, 1)));
    if (extra != 0) {
      return corrupt_zip(member.offset(), fmt::format("the member holds more than its size, {}", member.size()));
    }
    if (crc32 != member.crc32()) {
      return corrupt_zip(member.offset(), fmt::format("the member's CRC-32 is {:08x}, the central directory says {:08x}",
                                                      crc32, member.crc32()));
    }
  }
  return Status::ok();
}

}  // namespace silo::archive::detail
