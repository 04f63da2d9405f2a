#pragma once

// Writes a tar stream member by member (the answers of sample reads and batch GET,
// docs/shards.md): each member is header(), then exactly `size` bytes, then padding(size);
// end() closes the archive. POSIX ustar headers; a name past 100 bytes or a size past
// ustar's 8 GiB gets a PAX extended header first (GNU tar, Python and WebDataset read it).
#include <cstdint>
#include <string>
#include <string_view>

namespace silo::archive {

// The header block(s) of a regular-file member of `size` bytes, mode 0644, modified at
// `mtime_unix_seconds`.
std::string tar_header(std::string_view name, uint64_t size, int64_t mtime_unix_seconds);
// The zero bytes that round a member of `size` bytes up to a whole block.
std::string tar_padding(uint64_t size);
// The end of the archive: two zero blocks.
inline constexpr uint64_t kTarEndBytes = 1024;
std::string tar_end();
// The bytes a member takes in the stream: its header(s), data and padding.
uint64_t tar_member_bytes(std::string_view name, uint64_t size);

}  // namespace silo::archive
