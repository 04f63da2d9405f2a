#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "store/detail/meta_db.h"
#include "store/file_system.h"

namespace silo::store::detail {

// A record whose file is missing or has another size than the record says: bytes that
// were acknowledged are gone (a drive or file system that lost synced data).
struct LostRecord {
  BucketId bucket;
  std::string name;
  std::string why;  // "file ... is missing", "file ... has N bytes, its record says M"
};

// Makes a mountpath's object files and metadata agree after an unclean shutdown: a file
// under `object_dir` that no record names (a crash between rename and metadata commit,
// or an old generation not yet unlinked) is unlinked. A record whose file is missing or
// has the wrong size is kept, with its file, and appended to `lost` (the store decides:
// docs/adr/0021). Files of records that do not decode are kept, so a damaged record does
// not also cost the bytes. Files are removed through `file_system`. Blocking; logs counts.
Status reconcile(FileSystem& file_system, const std::string& object_dir, MetaDb& meta,
                 std::vector<LostRecord>& lost);

enum class PartCheck {
  kUploadsOnly,  // only whole upload directories (after a clean shutdown)
  kFull,         // also every part record and part file (after an unclean one)
};

// Makes `parts_dir` (<mp>/parts/<bucket id>/<upload id>/<part>.<generation>) agree with
// the `uploads` metadata: removes the directory of every upload without a record (an
// aborted, completed or swept upload whose files were not all removed yet) and anything
// that is not an upload directory. With kFull also deletes part records whose file is
// missing, has another size or whose upload is gone, and unlinks part files that no part
// record names (a crash between rename and record, or a replaced part's old file). Files
// of part records that do not decode are kept. Files are removed through `file_system`.
// Blocking; logs counts.
Status reconcile_parts(FileSystem& file_system, const std::string& parts_dir, MetaDb& meta,
                       PartCheck check);

}  // namespace silo::store::detail
