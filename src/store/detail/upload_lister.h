#pragma once

#include <span>

#include "base/result.h"
#include "base/strong_id.h"
#include "store/detail/meta_db.h"
#include "store/store.h"

namespace silo::store::detail {

// One page of `bucket`'s multipart uploads: a k-way merge of one `uploads` iterator per
// mountpath, in key order, which is (name, upload id) order (meta_db.h), skipping part
// records. An upload record that does not decode is skipped with an error log. Blocking.
Result<UploadList> list_uploads(std::span<MetaDb* const> dbs, BucketId bucket,
                                const UploadListOptions& options);

}  // namespace silo::store::detail
