#pragma once

#include <string>

#include "base/status.h"
#include "store/detail/meta_db.h"

namespace silo::store::detail {

// Makes a mountpath's object files and metadata agree after an unclean shutdown:
// a record whose file is missing or has the wrong size is deleted; a file under
// `object_dir` that no record names (a crash between rename and metadata commit, or an
// old generation not yet unlinked) is unlinked. Files of records that do not decode are
// kept, so a damaged record does not also cost the bytes. Blocking; logs counts.
Status reconcile(const std::string& object_dir, MetaDb& meta);

}  // namespace silo::store::detail
