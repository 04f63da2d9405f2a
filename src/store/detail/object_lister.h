#pragma once

#include <span>

#include "base/result.h"
#include "base/strong_id.h"
#include "store/detail/meta_db.h"
#include "store/store.h"

namespace silo::store::detail {

// One page of `bucket`'s objects: a k-way merge by name of one RocksDB iterator per
// mountpath, reading metadata only. An object with records on two mountpaths (possible
// for a while after the mountpaths change) is listed once, with its newest record.
// A record that does not decode is skipped with an error log, so one damaged record does
// not make a whole bucket unlistable. Blocking.
Result<ListResult> list_objects(std::span<MetaDb* const> dbs, BucketId bucket,
                                const ListOptions& options);

}  // namespace silo::store::detail
