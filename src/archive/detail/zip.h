#pragma once

// Zip archives (archive/compressed.h): the index from the central directory (zip64
// included), and one member's bytes, stored or inflated, starting at its local header.
#include <cstdint>

#include "archive/compressed.h"
#include "archive/tar_reader.h"
#include "base/result.h"
#include "wire/codec.h"

namespace silo::archive::detail {

// index_archive() for ZIP.
Result<wire::ArchiveIndex> index_zip(const ReadAt& read, uint64_t size);

// read_member() for ZIP; `range` lies within the member (the caller checked it).
Status read_zip_member(const ReadAt& read, uint64_t size, const wire::ArchiveMember& member, MemberRange range,
                       const Sink& sink);

}  // namespace silo::archive::detail
