#include "archive/tar_reader.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "archive/tar_format.h"

namespace silo::archive {
namespace {

Status corrupt(uint64_t at, std::string_view why) {
  return Status::invalid_argument("corrupt tar archive at offset {}: {}", at, why).with_reason("CorruptArchive");
}

// Reads exactly out.size() bytes at `offset`, or says the archive is truncated there.
Status read_exactly(const ReadAt& read, uint64_t offset, std::span<char> out, std::string_view what) {
  size_t done = 0;
  while (done < out.size()) {
    ASSIGN_OR_RETURN(const size_t n, read(offset + done, out.subspan(done)));
    if (n == 0) return corrupt(offset, fmt::format("truncated: {} ends early", what));
    done += n;
  }
  return Status::ok();
}

// What a PAX extended header says about the next member: its path and size.
struct Pax {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// "LEN key=value\n" records (POSIX.1-2001 pax); unknown keys are skipped.
Result<Pax> parse_pax(std::string_view text, uint64_t at) {
  Pax pax;
  while (!text.empty()) {
    uint64_t length = 0;
    size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && length <= text.size()) {
      length = length * 10 + static_cast<uint64_t>(text[i] - '0');
      ++i;
    }
    if (i == 0 || i >= text.size() || text[i] != ' ' || length <= i + 1 || length > text.size() ||
        text[length - 1] != '\n') {
      return corrupt(at, "malformed PAX record");
    }
    const std::string_view record = text.substr(i + 1, length - i - 2);
    const size_t eq = record.find('=');
    if (eq == std::string_view::npos) return corrupt(at, "PAX record without '='");
    const std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
    if (key == "path") {
      pax.path = std::string(value);
    } else if (key == "size") {
      const std::optional<uint64_t> size = parse_decimal_size(value);
      if (!size) return corrupt(at, "PAX size is not a decimal number");
      pax.size = size;
    }
    text.remove_prefix(length);
  }
  return pax;
}

}  // namespace

ReadAt read_bytes(std::string_view bytes) {
  return [bytes](uint64_t offset, std::span<char> out) -> Result<size_t> {
    if (offset >= bytes.size()) return size_t{0};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), bytes.size() - offset));
    std::copy_n(bytes.data() + offset, n, out.data());
    return n;
  };
}

Result<wire::ArchiveIndex> index_tar(const ReadAt& read, uint64_t size) {
  wire::ArchiveIndex index;
  index.set_format(wire::ARCHIVE_FORMAT_TAR);
  if (size < kBlockSize) {
    return Status::invalid_argument("not a tar archive: {} bytes, less than one header", size)
        .with_reason("NotAnArchive");
  }
  Block block;
  std::optional<std::string> next_name;  // from a GNU long name or a PAX path
  uint64_t next_size = 0;                // from a PAX size, when has_next_size
  bool has_next_size = false;
  bool is_extended = false;              // an extended header waits for its member
  uint64_t at = 0;
  bool saw_header = false;
  bool is_ended = false;  // the end-of-archive zero block was read
  while (at < size) {
    if (size - at < kBlockSize) return corrupt(at, "truncated: a partial header block");
    RETURN_IF_ERROR(read_exactly(read, at, block, "a header block"));
    if (is_zero_block(block)) {
      is_ended = true;  // the end of the archive (a second zero block follows)
      break;
    }
    if (!has_valid_checksum(block)) {
      if (!saw_header) {
        return Status::invalid_argument("not a tar archive: the first header's checksum does not match")
            .with_reason("NotAnArchive");
      }
      return corrupt(at, "header checksum does not match");
    }
    saw_header = true;
    const std::optional<uint64_t> header_size = parse_size_field(block);
    if (!header_size) return corrupt(at, "unreadable size field");
    const char type = block[kTypeFlagAt];
    const uint64_t data_at = at + kBlockSize;
    const bool is_extension = type == kPaxHeader || type == kGnuLongName || type == kGnuLongLink;
    const uint64_t size_here = is_extension ? *header_size : (has_next_size ? next_size : *header_size);
    if (size_here > size - data_at) {
      return corrupt(at, fmt::format("truncated: a member of {} bytes at offset {}, the archive ends at {}", size_here,
                                     data_at, size));
    }
    const uint64_t next_at = data_at + round_up_to_block(size_here);
    if (type == kGnuLongName || type == kGnuLongLink || type == kPaxHeader) {
      const uint64_t limit = type == kPaxHeader ? kMaxPaxHeaderBytes : kMaxNameBytes;
      if (size_here > limit) return corrupt(at, fmt::format("an extended header of {} bytes", size_here));
      std::string text(size_here, '\0');
      RETURN_IF_ERROR(read_exactly(read, data_at, text, "an extended header"));
      if (type == kGnuLongName) {
        next_name = text.substr(0, std::min(text.find('\0'), text.size()));
      } else if (type == kPaxHeader) {
        ASSIGN_OR_RETURN(Pax pax, parse_pax(text, at));
        if (pax.path) next_name = std::move(pax.path);
        if (pax.size) {
          next_size = *pax.size;
          has_next_size = true;
        }
      }
      is_extended = true;
      at = next_at;
      continue;
    }
    if (type == kGnuSparse) return corrupt(at, "sparse members are not supported");
    if (is_file_type(type)) {
      std::string name = next_name ? std::move(*next_name) : header_name(block);
      if (name.empty()) return corrupt(at, "a member without a name");
      if (name.size() > kMaxNameBytes) return corrupt(at, "a member name past 64 KiB");
      if (static_cast<uint64_t>(index.members_size()) >= kMaxMembers) {
        return corrupt(at, fmt::format("more than {} members", kMaxMembers));
      }
      wire::ArchiveMember& member = *index.add_members();
      member.set_name(std::move(name));
      member.set_offset(data_at);
      member.set_size(size_here);
    }
    next_name.reset();
    has_next_size = false;
    is_extended = false;
    // Directories, links and devices carry no data whatever their size field says (as
    // GNU tar and Python's tarfile read them); other types are skipped by their size.
    at = has_no_data(type) ? data_at : next_at;
  }
  if (is_extended) return corrupt(at, "truncated: an extended header without its member");
  // Every writer ends an archive with zero blocks: bytes that end at a header boundary
  // without them were cut there, and may have held more members.
  if (!is_ended) return corrupt(at, "truncated: the archive ends without its end-of-archive blocks");
  return index;
}

}  // namespace silo::archive
