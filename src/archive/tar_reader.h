#pragma once

// The index of a tar archive: where each member's bytes are (docs/shards.md "Formats").
// Parsed by hand for exact offsets: POSIX ustar (with its name prefix), GNU long names
// ('L') and PAX extended headers ('x': path, size). Only the headers are read.
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "base/result.h"
#include "wire/codec.h"

namespace silo::archive {

// Reads up to out.size() bytes at `offset`; fewer only at the end of the object.
using ReadAt = std::function<Result<size_t>(uint64_t offset, std::span<char> out)>;

// A ReadAt over bytes in memory (`bytes` must outlive it).
ReadAt read_bytes(std::string_view bytes);

// Limits that keep a hostile archive from costing more than its headers.
inline constexpr uint64_t kMaxMembers = 4'000'000;
inline constexpr uint64_t kMaxNameBytes = 64 * 1024;       // a GNU long name or PAX path
inline constexpr uint64_t kMaxPaxHeaderBytes = 1 << 20;    // one PAX extended header

// The regular-file members of the tar archive of `size` bytes that `read` reads, in
// archive order (directories, links and devices are not members; a name stored twice
// is two members). Errors (kInvalidArgument, reason "NotAnArchive" when the first header
// is not a tar header, else "CorruptArchive"): a header whose checksum fails, a member
// or extended header that runs past the end, an archive without its end-of-archive zero
// block (truncated at a header boundary), sizes and names past the limits above, sparse
// members. The read's own errors pass through.
Result<wire::ArchiveIndex> index_tar(const ReadAt& read, uint64_t size);

}  // namespace silo::archive
